"""Handlers (issue 13): ADD_N, DIV, ELU, CAST, ZEROS_LIKE, FILL and REDUCE_ALL, in the dtypes
TensorFlow Lite Micro's kernels take and this importer carries between operators (int8,
int16, int32, bool). SQRT, FLOOR_DIV and FLOOR_MOD, which TFLite Micro runs in float32
only, are refused with the other float-only operators (``logic.FLOAT_ONLY``).

Registered into ``aot.frontend.tflite_int8``'s handler table when that module is imported.
Each computes what TFLite's ``Prepare`` computes (in its float or double arithmetic) and
emits a compute from ``aot.ops.division_cast_fill``; the rules are in docs/int8.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8 import movement as _movement
from aot.frontend.tflite_int8.importer import (
    _ACTIVATIONS,
    _broadcast_shape,
    _expf,
    _handler,
    _Importer,
    _lut,
    _options,
    _TensorInfo,
)
from aot.ops import fixedpoint as fp

_INT32_RANGE = (-(1 << 31), (1 << 31) - 1)
# reference_ops::AddN accumulates int32 terms of up to 255 * 2**20 / 2 onto a start term of
# up to 128 * 2**20 / 2 (the scaled input offset): at most 15 inputs fit.
_ADD_N_MAX_INT8_INPUTS = 15
_ADD_N_LEFT_SHIFT = 20  # kAddNIntegerShift
_CAST_DTYPES = ["int8", "int16", "int32"]


def _fused_activation(imp: _Importer, op: Any, table: str, out: _TensorInfo) -> tuple[int, int]:
    """The output range of the fused activation: quantized for int8, plain for int32
    (CalculateActivationRange<int32_t>)."""
    opts = _options(op, table)
    if opts is None:
        return (-128, 127) if out.dtype == "int8" else _INT32_RANGE
    if out.dtype == "int8":
        return imp.activation(opts, out)
    name = _ACTIVATIONS.get(opts.FusedActivationFunction(), "?")
    if name not in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"):
        raise imp.unsupported(f"fused activation {name} is not supported")
    return fp.activation_range(name, 1.0, 0, *_INT32_RANGE)


def _same_dtype(imp: _Importer, tensors: list[_TensorInfo], out: _TensorInfo, dtypes: list[str]):
    imp.expect(out, dtypes, "output")
    for k, t in enumerate(tensors):
        imp.expect(t, [out.dtype], f"input {k + 1}")


@_handler("ADD_N")
def _add_n(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import division_cast_fill as ops

    tensors = [imp.tensors[i] for i in ins]
    _same_dtype(imp, tensors, out, ["int8", "int32"])
    for k, t in enumerate(tensors):
        if t.shape != out.shape:
            raise imp.unsupported(
                f"input {k + 1} has shape {list(t.shape)}, not the output's {list(out.shape)} "
                "(ADD_N does not broadcast)"
            )
    values = [imp.value(i) for i in ins]
    if out.dtype == "int32":
        return imp.emit(bb, ops.add_n_int32, *values, name="add_n_int32")
    first = tensors[0]
    imp.per_tensor(out, "output")
    for k, t in enumerate(tensors):
        imp.per_tensor(t, f"input {k + 1}")
        if (t.s, t.zp) != (first.s, first.zp):
            raise imp.unsupported(
                f"input {k + 1} {t.name!r} is quantized differently from input 1 (TFLite "
                "Micro's int8 ADD_N requires one scale and zero point for all inputs)"
            )
    if len(ins) > _ADD_N_MAX_INT8_INPUTS:
        raise imp.unsupported(
            f"{len(ins)} inputs; at most {_ADD_N_MAX_INT8_INPUTS} fit TFLite Micro's int32 sum"
        )
    # add_n.cc CalculateOpData: double arithmetic on the float scales.
    twice_max = 2 * first.s
    m_in, s_in = fp.quantize_multiplier_smaller_than_one(first.s / twice_max)
    real_out = twice_max / ((1 << _ADD_N_LEFT_SHIFT) * out.s)
    if not 0.0 < real_out < 1.0:
        raise imp.unsupported(
            f"the output multiplier {real_out:g} from the tensors' scales is not in (0, 1), "
            "which TFLite Micro's int8 ADD_N requires"
        )
    m_out, s_out = fp.quantize_multiplier_smaller_than_one(real_out)
    return imp.emit(
        bb, ops.add_n, *values, name="add_n_int8", input_offset=-first.zp,
        left_shift=_ADD_N_LEFT_SHIFT, input_multiplier=m_in, input_shift=s_in,
        output_multiplier=m_out, output_shift=s_out, output_zp=out.zp, act_min=-128, act_max=127,
    )  # fmt: skip


# DIV: the total shift is output_shift - reciprocal shift (0..7) - headroom (22..31); the
# right shift it gives must stay in 0..63 (docs/int8.md, DIV).
_DIV_OUTPUT_SHIFTS = (-25, 22)


def divisor_reciprocals(zero_point: int) -> tuple[np.ndarray, np.ndarray]:
    """GetReciprocal(|q - zero_point|) for every stored int8 divisor q (entry q + 128), as
    int32 multipliers and shifts; the divisor equal to the zero point (LiteRT refuses it at
    run time) gets multiplier 0, so its quotient is 0."""
    from aot.ops.division_cast_fill import reciprocal

    multipliers = np.zeros(256, np.int32)
    shifts = np.zeros(256, np.int32)
    for k, q in enumerate(range(-128, 128)):
        magnitude = abs(q - zero_point)
        if magnitude:
            multipliers[k], shifts[k] = reciprocal(magnitude)
    return multipliers, shifts


def numerator_headrooms() -> np.ndarray:
    """CountLeadingSignBits(n) for every numerator n = +-(q1 - zero point) in [-255, 255]
    (entry n + 255): 31 less the bit length of n, or of ~n below zero."""
    return np.array([31 - (n if n >= 0 else ~n).bit_length() for n in range(-255, 256)], np.int8)


@_handler("DIV")
def _div(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import division_cast_fill as ops

    a, b = imp.tensors[ins[0]], imp.tensors[ins[1]]
    _same_dtype(imp, [a, b], out, ["int8", "int32"])
    _broadcast_shape(imp, a.shape, b.shape, out.shape)
    act_min, act_max = _fused_activation(imp, op, "DivOptions", out)
    lhs, rhs = imp.value(ins[0]), imp.value(ins[1])
    if out.dtype == "int32":
        if a.quantized or b.quantized:
            raise imp.unsupported("int32 DIV takes unquantized inputs (as TFLite Micro)")
        return imp.emit(
            bb, ops.divide_int32, lhs, rhs, name="div_int32", out_shape=out.shape,
            act_min=act_min, act_max=act_max,
        )  # fmt: skip
    for t, role in ((a, "input 1"), (b, "input 2"), (out, "output")):
        imp.per_tensor(t, role)
    # div.cc: the float quotient of the scales, widened to double for QuantizeMultiplier.
    real = float(np.float32(np.float32(a.s) / np.float32(np.float32(b.s) * np.float32(out.s))))
    multiplier, shift = fp.checked_quantize_multiplier(real)
    low, high = _DIV_OUTPUT_SHIFTS
    if not low <= shift <= high:
        raise imp.unsupported(
            f"the output multiplier {real:g} from the tensors' scales is outside 2**{low}.."
            f"2**{high}, where TFLite's int8 DIV shifts by more than 63 bits or to the left"
        )
    multipliers, shifts = divisor_reciprocals(b.zp)
    tables = (relax.const(t) for t in (multipliers, shifts, numerator_headrooms()))
    return imp.emit(
        bb, ops.divide, lhs, rhs, *tables,
        name="div_int8", out_shape=out.shape, lhs_offset=-a.zp, rhs_offset=-b.zp,
        output_multiplier=multiplier, output_shift=shift, output_zp=out.zp, act_min=act_min,
        act_max=act_max,
    )  # fmt: skip


def _elu(value: np.float32) -> np.float32:
    return np.float32(_expf(value) - np.float32(1)) if value < 0 else np.float32(value)


@_handler("ELU")
def _elu_op(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    imp.per_tensor(out, "output")
    # elu.cc: PopulateLookupTable with exp(x) - 1 below zero, in float32.
    table = relax.const(_lut(x, out, _elu))
    return imp.emit(bb, int8.lookup_table, imp.value(ins[0]), table, name="elu_int8")


@_handler("CAST")
def _cast(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import division_cast_fill as ops

    x = imp.tensors[ins[0]]
    # CAST converts stored values: quantization parameters play no part, so none is needed.
    for t, role, dtypes in ((x, "input", [*_CAST_DTYPES, "bool"]), (out, "output", _CAST_DTYPES)):
        if t.dtype not in dtypes:
            raise imp.unsupported(f"{role} {t.name!r} is {t.dtype}, expected {' or '.join(dtypes)}")
    if x.shape != out.shape:
        raise imp.unsupported(f"output shape {list(out.shape)} is not {list(x.shape)}")
    return imp.emit(
        bb, ops.cast, imp.value(ins[0]), name=f"cast_{x.dtype}_{out.dtype}", out_dtype=out.dtype
    )


@_handler("ZEROS_LIKE")
def _zeros_like(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import division_cast_fill as ops

    x = imp.tensors[ins[0]]
    for t, role in ((x, "input"), (out, "output")):
        if t.dtype not in ("int8", "int32"):
            raise imp.unsupported(f"{role} {t.name!r} is {t.dtype}, expected int8 or int32")
    if (x.dtype, x.shape) != (out.dtype, out.shape):
        raise imp.unsupported("the output's dtype and shape must be the input's")
    return imp.emit(bb, ops.zeros_like, imp.value(ins[0]), name=f"zeros_like_{out.dtype}")


@_handler("FILL")
def _fill(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import division_cast_fill as ops

    dims = _movement._ints(imp, ins[0], "the dims")
    value = imp.tensors[ins[1]]
    if dims != list(out.shape):
        raise imp.unsupported(f"the dims {dims} are not the output shape {list(out.shape)}")
    if value.shape != ():
        raise imp.unsupported(f"the value {value.name!r} must be a scalar")
    imp.expect(out, ["int8", "int32"], "output")
    imp.expect(value, [out.dtype], "value")
    if out.dtype == "int8":
        imp.per_tensor(out, "output")
        if (np.float32(value.s), value.zp) != (np.float32(out.s), out.zp):
            raise imp.unsupported(
                f"the value {value.name!r} is quantized differently from the output (FILL "
                "copies the stored value)"
            )
    return imp.emit(bb, ops.fill, imp.value(ins[1]), name=f"fill_{out.dtype}", out_shape=out.shape)


@_handler("REDUCE_ALL")
def _reduce_all(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import division_cast_fill as ops

    x = imp.tensors[ins[0]]
    imp.expect(x, ["bool"], "input")
    imp.expect(out, ["bool"], "output")
    axes, keep_dims = _movement._reduce_axes(imp, op, ins, x, out)
    return imp.emit(
        bb, ops.reduce_all, imp.value(ins[0]), name="reduce_all_bool", axes=axes,
        keep_dims=keep_dims, out_shape=out.shape,
    )  # fmt: skip
