"""16x8 operators of the TFLite importer (issue 13, group B): int16 activations (zero
point 0, as TFLite's 16x8 quantization requires), int8 weights, int64 or int32 biases:
FULLY_CONNECTED, and ADD and SUB on both of TFLite's int16 paths (power-of-two and
general scales). The other int16 modules (``int16_activations``, ``int16_requantize``,
``int16_elementwise``) share this module's helpers.

Registered into ``tflite_int8``'s handler table when that module loads: each handler
takes the 16x8 form and hands an int8 one to the int8 handler it replaces, so one
operator name has one entry in the table. The arithmetic is in docs/int8.md ("16x8").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8 import elementwise  # noqa: F401  (SUB's int8 handler first)
from aot.frontend.tflite_int8 import importer as base
from aot.frontend.tflite_int8.importer import _HANDLERS, _Importer, _options, _TensorInfo
from aot.ops import fixedpoint as fp

_INT16_MIN, _INT16_MAX = -32768, 32767
_TENSOR_TYPE_INT32 = 2  # tflite TensorType.INT32


def _int16_activation(imp: _Importer, opts: Any, out: _TensorInfo) -> tuple[int, int]:
    """TFLite CalculateActivationRangeQuantized for an int16 output."""
    if opts is None:
        return _INT16_MIN, _INT16_MAX
    name = base._ACTIVATIONS.get(opts.FusedActivationFunction(), "?")
    if name not in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"):
        raise imp.unsupported(f"fused activation {name} is not supported")
    lo, hi = _INT16_MIN, _INT16_MAX
    bounds = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}
    if name in bounds:
        low, high = bounds[name]
        lo = max(lo, fp.quantize_f32(low, out.s, out.zp))
        if high is not None:
            hi = min(hi, fp.quantize_f32(high, out.s, out.zp))
    return lo, hi


def _symmetric(imp: _Importer, t: _TensorInfo, role: str) -> None:
    imp.expect(t, ["int16"], role)
    imp.per_tensor(t, role)
    if t.zp != 0:
        raise imp.unsupported(f"{role} {t.name!r} has zero point {t.zp}; 16x8 needs 0")


def _fully_connected_16x8(
    imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo
) -> Any:
    from tvm import relax

    from aot.ops import int16

    x, w = imp.tensors[ins[0]], imp.tensors[ins[1]]
    _symmetric(imp, x, "input")
    _symmetric(imp, out, "output")
    imp.expect(w, ["int8"], "weights")
    opts = _options(op, "FullyConnectedOptions")
    if opts is not None and opts.WeightsFormat() != 0:
        raise imp.unsupported("only the DEFAULT weights format is supported")
    if len(w.shape) != 2:
        raise imp.unsupported(f"weights {w.name!r} must be 2-D, found {list(w.shape)}")
    out_c, depth = w.shape
    if int(np.prod(x.shape)) % depth or out.shape[-1] != out_c:
        raise imp.unsupported(f"input {list(x.shape)} and output {list(out.shape)} do not fit")
    act_min, act_max = _int16_activation(imp, opts, out)
    # LiteRT's reference requantizes in double: s_in * s_w / s_out, per channel or not.
    scales = [x.s * s / out.s for s in (w.scale if len(w.scale) > 1 else w.scale[:1])]
    if len(scales) > 1 and len(scales) != out_c:
        raise imp.unsupported(f"weights {w.name!r} have {len(scales)} scales for {out_c} channels")
    scale: Any = scales[0] if len(set(scales)) == 1 else relax.const(np.asarray(scales, "float64"))
    weight_zp = w.zp if len(w.scale) == 1 else 0
    bias_type = opts.QuantizedBiasType() if opts is not None else 0
    bias = None
    if len(ins) > 2 and ins[2] >= 0:
        b = imp.tensors[ins[2]]
        # LiteRT reads an int32 bias only when the options say so (quantized_bias_type).
        expected = "int32" if bias_type == _TENSOR_TYPE_INT32 else "int64"
        if b.dtype != expected:
            raise imp.unsupported(
                f"bias {b.name!r} is {b.dtype}; with quantized_bias_type "
                f"{'INT32' if expected == 'int32' else 'unset'} it must be {expected}"
            )
        data = imp.constant(ins[2], "the bias")
        if data.size != out_c:
            raise imp.unsupported(f"bias {b.name!r} has {data.size} values for {out_c} channels")
        bias = relax.const(np.ascontiguousarray(data.reshape(out_c)))
    return imp.emit(
        bb, int16.fully_connected, imp.value(ins[0]), imp.value(ins[1]), bias, scale,
        name="fully_connected_int16", out_shape=out.shape, weight_zp=weight_zp,
        act_min=act_min, act_max=act_max,
    )  # fmt: skip


def checked_log2(scale: float) -> int | None:
    """TFLite ``CheckedLog2`` in float32: the exponent of a power-of-two scale (within
    1e-3 of an integer log2), else None."""
    log2 = np.float32(np.log(np.float32(scale))) * np.float32(1 / np.log(np.float32(2)))
    rounded = fp.tflite_round(float(log2))
    return int(rounded) if abs(float(np.float32(log2 - np.float32(rounded)))) < 1e-3 else None


def _add_sub_16x8(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    """ADD and SUB with int16 inputs: the power-of-two path when ``pot_scale_int16`` is set
    (the schema's default) and all three scales are powers of two, else the general one,
    as add.cc and sub.cc choose."""
    from aot.ops import int16

    a, b = imp.tensors[ins[0]], imp.tensors[ins[1]]
    for t, role in ((a, "input 1"), (b, "input 2"), (out, "output")):
        _symmetric(imp, t, role)
    base._broadcast_shape(imp, a.shape, b.shape, out.shape)
    subtract = imp.op_name == "SUB"
    opts = _options(op, "SubOptions" if subtract else "AddOptions")
    act_min, act_max = _int16_activation(imp, opts, out)
    exponents = [checked_log2(t.s) for t in (a, b, out)]
    if (opts is None or opts.PotScaleInt16()) and None not in exponents:
        lhs_shift, rhs_shift = exponents[0] - exponents[2], exponents[1] - exponents[2]
        if (
            max(lhs_shift, rhs_shift) > 0
            or min(lhs_shift, rhs_shift) < -15
            or (lhs_shift != 0 and rhs_shift != 0)
        ):
            raise imp.unsupported(
                "with power-of-two int16 scales one input must have the output's scale and "
                f"the other at most 2**15 times smaller (found shifts {lhs_shift}, {rhs_shift})"
            )
        # add.cc's power-of-two kernel reads both inputs flat: no broadcasting there.
        if not subtract and not a.shape == b.shape == out.shape:
            raise imp.unsupported(
                f"the power-of-two int16 ADD needs equal shapes, found {list(a.shape)} and "
                f"{list(b.shape)}; set pot_scale_int16 false for broadcasting"
            )
        return imp.emit(
            bb, int16.add_power_of_two, imp.value(ins[0]), imp.value(ins[1]),
            name=f"{imp.op_name.lower()}_pot_int16", out_shape=out.shape,
            lhs_shift=-lhs_shift, rhs_shift=-rhs_shift, subtract=subtract,
            act_min=act_min, act_max=act_max,
        )  # fmt: skip
    # PrepareGeneralSubOp and add.cc for int16: left shift 15, both inputs to twice the
    # larger scale.
    twice_max = 2 * float(max(np.float32(a.s), np.float32(b.s)))
    m1, s1 = fp.quantize_multiplier_smaller_than_one(a.s / twice_max)
    m2, s2 = fp.quantize_multiplier_smaller_than_one(b.s / twice_max)
    real_output = twice_max / ((1 << 15) * out.s)
    if real_output >= 1.0:
        raise imp.unsupported(
            f"the output multiplier {real_output:g} from the tensors' scales is not below 1 "
            "(the output scale is under 2**-14 of the inputs')"
        )
    mo, so = fp.quantize_multiplier_smaller_than_one(real_output)
    return imp.emit(
        bb, int16.add, imp.value(ins[0]), imp.value(ins[1]),
        name=f"{imp.op_name.lower()}_int16", out_shape=out.shape, lhs_multiplier=m1,
        lhs_shift=s1, rhs_multiplier=m2, rhs_shift=s2, output_multiplier=mo,
        output_shift=so, act_min=act_min, act_max=act_max, subtract=subtract,
    )  # fmt: skip


def _by_input_dtype(name: str, int16_handler: Any, or_output: bool = False) -> None:
    """Route an operator with an int16 input (or, with ``or_output``, an int16 output) to
    ``int16_handler``, the rest to the int8 handler registered before."""
    int8_handler = _HANDLERS[name]

    def handler(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
        if imp.tensors[ins[0]].dtype == "int16" or (or_output and out.dtype == "int16"):
            return int16_handler(imp, bb, op, ins, out)
        return int8_handler(imp, bb, op, ins, out)

    _HANDLERS[name] = handler


_by_input_dtype("FULLY_CONNECTED", _fully_connected_16x8)
_by_input_dtype("ADD", _add_sub_16x8)
_by_input_dtype("SUB", _add_sub_16x8)
