"""int8 handlers: SUB, MINIMUM, MAXIMUM, SQUARED_DIFFERENCE, LEAKY_RELU, PRELU, ABS, NEG and
CONCATENATION (with requantization).

Registered into ``aot.frontend.tflite_int8``'s handler table when that module is imported;
each computes its multipliers as TFLite's ``Prepare`` does (float32 where TFLite divides
floats, double where it widens first) and emits a compute from ``aot.ops.elementwise``.
The rules are in docs/int8.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8.importer import (
    _ACTIVATIONS,
    _broadcast_shape,
    _handler,
    _Importer,
    _options,
    _required_options,
    _TensorInfo,
)
from aot.ops import fixedpoint as fp


def _f32_ratio(*factors: float, divisor: float) -> float:
    """``a * b / c`` in float32, as TFLite computes products of ``float`` scales."""
    product = np.float32(1)
    for f in factors:
        product = np.float32(product * np.float32(f))
    return float(np.float32(product / np.float32(divisor)))


def _binary(
    imp: _Importer, ins: list[int], out: _TensorInfo, dtypes: tuple[str, ...] = ("int8",)
) -> tuple[_TensorInfo, _TensorInfo]:
    a, b = imp.tensors[ins[0]], imp.tensors[ins[1]]
    imp.expect(a, list(dtypes), "input 1")
    for t, role in ((a, "input 1"), (b, "input 2"), (out, "output")):
        imp.expect(t, [a.dtype], role)
        imp.per_tensor(t, role)
    _broadcast_shape(imp, a.shape, b.shape, out.shape)
    return a, b


def _same_quantization(imp: _Importer, t: _TensorInfo, out: _TensorInfo, role: str) -> None:
    if (np.float32(t.s), t.zp) != (np.float32(out.s), out.zp):
        raise imp.unsupported(
            f"{role} {t.name!r} is quantized differently from the output (TFLite's int8 "
            f"{imp.op_name} works on the stored values, so they must agree)"
        )


def _smaller_than_one(imp: _Importer, real: float, what: str) -> tuple[int, int]:
    if not 0.0 < real < 1.0:
        raise imp.unsupported(
            f"the {what} multiplier {real:g} from the tensors' scales is not in (0, 1), "
            "which TFLite's int8 kernel requires"
        )
    return fp.quantize_multiplier_smaller_than_one(real)


@_handler("SUB")
def _sub(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import elementwise as ew

    a, b = _binary(imp, ins, out)
    opts = _options(op, "SubOptions")
    act_min, act_max = (-128, 127) if opts is None else imp.activation(opts, out)
    left_shift = 20  # PrepareGeneralSubOp, int8
    twice_max = 2 * float(max(np.float32(a.s), np.float32(b.s)))
    m1, s1 = _smaller_than_one(imp, a.s / twice_max, "input 1")
    m2, s2 = _smaller_than_one(imp, b.s / twice_max, "input 2")
    mo, so = _smaller_than_one(imp, twice_max / ((1 << left_shift) * out.s), "output")
    return imp.emit(
        bb, ew.sub, imp.value(ins[0]), imp.value(ins[1]), name="sub_int8",
        out_shape=out.shape, lhs_offset=-a.zp, rhs_offset=-b.zp, left_shift=left_shift,
        lhs_multiplier=m1, lhs_shift=s1, rhs_multiplier=m2, rhs_shift=s2,
        output_multiplier=mo, output_shift=so, output_zp=out.zp, act_min=act_min,
        act_max=act_max,
    )  # fmt: skip


@_handler("SQUARED_DIFFERENCE")
def _squared_difference(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import elementwise as ew

    a, b = _binary(imp, ins, out)
    left_shift = 7  # squared_difference.cc, int8
    twice_max = 2 * float(max(np.float32(a.s), np.float32(b.s)))
    m1, s1 = _smaller_than_one(imp, a.s / twice_max, "input 1")
    m2, s2 = _smaller_than_one(imp, b.s / twice_max, "input 2")
    real_out = (twice_max * twice_max) / ((1 << (left_shift * 2)) * out.s)
    mo, so = _smaller_than_one(imp, real_out, "output")
    return imp.emit(
        bb, ew.squared_difference, imp.value(ins[0]), imp.value(ins[1]),
        name="squared_difference_int8", out_shape=out.shape, lhs_offset=-a.zp,
        rhs_offset=-b.zp, left_shift=left_shift, lhs_multiplier=m1, lhs_shift=s1,
        rhs_multiplier=m2, rhs_shift=s2, output_multiplier=mo, output_shift=so,
        output_zp=out.zp,
    )  # fmt: skip


@_handler("MAXIMUM", "MINIMUM")
def _maximum_minimum(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import elementwise as ew

    # int16 too: TFLite's kernel compares stored values of any integer type.
    a, b = _binary(imp, ins, out, ("int8", "int16"))
    _same_quantization(imp, a, out, "input 1")
    _same_quantization(imp, b, out, "input 2")
    is_max = imp.op_name == "MAXIMUM"
    return imp.emit(
        bb, ew.maximum_minimum, imp.value(ins[0]), imp.value(ins[1]),
        name=f"{imp.op_name.lower()}_{a.dtype}", out_shape=out.shape, is_max=is_max,
    )  # fmt: skip


@_handler("LEAKY_RELU")
def _leaky_relu(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import elementwise as ew

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    opts = _required_options(imp, op, "LeakyReluOptions")
    alpha = float(np.float32(opts.Alpha()))
    if not alpha >= 0.0:
        raise imp.unsupported(f"alpha {alpha:g} is negative")
    # LeakyReluPrepare: float scale * float alpha / float scale, then QuantizeMultiplier.
    m_id, s_id = fp.checked_quantize_multiplier(_f32_ratio(x.s, divisor=out.s))
    m_a, s_a = fp.checked_quantize_multiplier(
        _f32_ratio(x.s, alpha, divisor=out.s), allow_zero=True
    )
    return imp.emit(
        bb, ew.leaky_relu, imp.value(ins[0]), name="leaky_relu_int8", input_zp=x.zp,
        output_zp=out.zp, identity_multiplier=m_id, identity_shift=s_id,
        alpha_multiplier=m_a, alpha_shift=s_a,
    )  # fmt: skip


@_handler("PRELU")
def _prelu(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import elementwise as ew

    x, alpha = _binary(imp, ins, out)
    if len(out.shape) > 4:
        raise imp.unsupported("PRELU supports at most 4 dimensions (as TFLite)")
    m1, s1 = fp.checked_quantize_multiplier(_f32_ratio(x.s, divisor=out.s))
    m2, s2 = fp.checked_quantize_multiplier(_f32_ratio(x.s, alpha.s, divisor=out.s))
    return imp.emit(
        bb, ew.prelu, imp.value(ins[0]), imp.value(ins[1]), name="prelu_int8",
        out_shape=out.shape, input_offset=-x.zp, alpha_offset=-alpha.zp, output_zp=out.zp,
        positive_multiplier=m1, positive_shift=s1, negative_multiplier=m2, negative_shift=s2,
    )  # fmt: skip


@_handler("ABS")
def _abs(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import elementwise as ew

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    rescale = np.float32(x.s) != np.float32(out.s)
    m, s = fp.checked_quantize_multiplier(_f32_ratio(x.s, divisor=out.s)) if rescale else (0, 0)
    return imp.emit(
        bb, ew.abs_int8, imp.value(ins[0]), name="abs_int8", input_zp=x.zp, output_zp=out.zp,
        rescale=bool(rescale), multiplier=m, shift=s,
    )  # fmt: skip


@_handler("NEG")
def _neg(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import elementwise as ew

    x = imp.tensors[ins[0]]
    if x.dtype == "float32":  # between a DEQUANTIZE and a QUANTIZE (LayerNormalization)
        imp.expect(out, ["float32"], "output")
        return imp.emit(bb, ew.negate_float32, imp.value(ins[0]), name="neg_float32")
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    _same_quantization(imp, x, out, "input")
    return imp.emit(bb, ew.negate, imp.value(ins[0]), name="neg_int8")


@_handler("CONCATENATION")
def _concatenation(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import elementwise as ew
    from aot.ops import int8

    imp.expect(out, ["int8"], "output")
    imp.per_tensor(out, "output")
    opts = _required_options(imp, op, "ConcatenationOptions")
    if _ACTIVATIONS.get(opts.FusedActivationFunction()) != "NONE":
        raise imp.unsupported("a fused activation on CONCATENATION is not supported")
    axis = opts.Axis() % len(out.shape)
    zps, multipliers, shifts = [], [], []
    for i in ins:
        t = imp.tensors[i]
        imp.expect(t, ["int8"], "input")
        imp.per_tensor(t, "input")
        zps.append(t.zp)
        if (t.s, t.zp) == (out.s, out.zp):
            multipliers.append(0)  # a plain copy
            shifts.append(0)
        else:
            # What QUANTIZE (int8 -> int8) computes: Requantize with scale_in / scale_out.
            m, s = fp.checked_quantize_multiplier(t.s / out.s)
            multipliers.append(m)
            shifts.append(s)
    values = [imp.value(i) for i in ins]
    if not any(multipliers):
        return imp.emit(
            bb, int8.concatenate, *values, name="concatenation_int8", axis=axis,
            out_shape=out.shape,
        )  # fmt: skip
    return imp.emit(
        bb, ew.concatenate_requantize, *values, name="concatenation_requantize_int8",
        axis=axis, out_shape=out.shape, input_zps=zps, multipliers=multipliers, shifts=shifts,
        output_zp=out.zp,
    )  # fmt: skip
