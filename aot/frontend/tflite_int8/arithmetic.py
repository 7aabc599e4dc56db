"""More int8 operators of the TFLite importer (issue 13, group B): EXP, BATCH_MATMUL, RSQRT.

Registered into ``tflite_int8``'s handler table when that module loads; the arithmetic of
each is written down in docs/int8.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8.importer import _expf, _handler, _Importer, _options, _TensorInfo
from aot.ops import fixedpoint as fp


@_handler("EXP")
def _exp(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    imp.per_tensor(out, "output")
    # LiteRT's int8 EXP is a 256-entry table of expf, built like LOGISTIC's.
    table = relax.const(_exp_table(x, out))
    return imp.emit(bb, int8.lookup_table, imp.value(ins[0]), table, name="exp_int8")


def _exp_table(x: _TensorInfo, out: _TensorInfo) -> np.ndarray:
    """``LUTPopulate`` with expf, in float32 like LOGISTIC's table (entry i for input
    value i - 128). Where expf overflows float32 or the rescaled value leaves the int32
    range, TFLite's float-to-int conversion is undefined behaviour; aot saturates those
    entries to 127 (docs/int8.md)."""
    inverse_scale = np.float32(1) / np.float32(out.s)
    table = np.empty(256, dtype=np.int8)
    with np.errstate(over="ignore", invalid="ignore"):
        for i, q in enumerate(range(-128, 128)):
            dequantized = np.float32(x.s) * np.float32(q - x.zp)
            scaled = float(np.float32(_expf(dequantized) * inverse_scale))
            if not scaled < 2.0**31:  # also inf and nan
                table[i] = 127
                continue
            quantized = int(np.float32(fp.tflite_round(scaled)) + np.float32(out.zp))
            table[i] = min(max(quantized, -128), 127)
    return table


@_handler("BATCH_MATMUL")
def _batch_matmul(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import arithmetic as ops

    a, b = imp.tensors[ins[0]], imp.tensors[ins[1]]
    for t, role in ((a, "input 1"), (b, "input 2"), (out, "output")):
        imp.expect(t, ["int8"], role)
        imp.per_tensor(t, role)
    opts = _options(op, "BatchMatMulOptions")
    adj_x = bool(opts.AdjX()) if opts is not None else False
    adj_y = bool(opts.AdjY()) if opts is not None else False
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise imp.unsupported("both inputs must have at least 2 dimensions")
    rows, depth = (a.shape[-1], a.shape[-2]) if adj_x else (a.shape[-2], a.shape[-1])
    depth_b, cols = (b.shape[-1], b.shape[-2]) if adj_y else (b.shape[-2], b.shape[-1])
    if depth != depth_b:
        raise imp.unsupported(f"inner dimensions {depth} and {depth_b} differ")
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        raise imp.unsupported(
            f"batch dimensions {list(a.shape[:-2])} and {list(b.shape[:-2])} do not broadcast"
        ) from None
    if out.shape != (*batch, rows, cols):
        raise imp.unsupported(f"output shape {list(out.shape)} is not {[*batch, rows, cols]}")
    # batch_matmul.cc's Prepare: the double product of the float scales.
    m, s = fp.checked_quantize_multiplier(a.s * b.s / out.s)
    return imp.emit(
        bb, ops.batch_matmul, imp.value(ins[0]), imp.value(ins[1]),
        name="batch_matmul_int8", out_shape=out.shape, adj_x=adj_x, adj_y=adj_y,
        lhs_zp=a.zp, rhs_zp=b.zp, output_zp=out.zp, multiplier=m, shift=s,
    )  # fmt: skip


# -- RSQRT: TFLite's integer inverse square root, as a 256-entry table ---------------------
# Python integers standing in for int32 arithmetic, gemmlowp's rules (truncating division,
# wrap-around, saturation where gemmlowp saturates).

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def _wrap32(value: int) -> int:
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


def _srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul (int32)."""
    if a == b == _INT32_MIN:
        return _INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    total = ab + nudge
    quotient = abs(total) >> 31  # C's division truncates toward zero
    return quotient if total >= 0 else -quotient


def _rdbpot(x: int, exponent: int) -> int:
    """gemmlowp RoundingDivideByPOT: halves away from zero."""
    if exponent == 0:
        return x
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def _saturating_pot(x: int, exponent: int) -> int:
    """gemmlowp SaturatingRoundingMultiplyByPOT<exponent>."""
    if exponent <= 0:
        return _rdbpot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    if x > threshold:
        return _INT32_MAX
    if x < -threshold:
        return _INT32_MIN
    return x << exponent


def _mbqm(x: int, multiplier: int, shift: int) -> int:
    """TFLite MultiplyByQuantizedMultiplier, double rounding (LiteRT's reference RSQRT)."""
    left, right = max(shift, 0), max(-shift, 0)
    return _rdbpot(_srdhm(_wrap32(x * (1 << left)), multiplier), right)


def _inv_sqrt_multiplier_exp(value: int) -> tuple[int, int]:
    """TFLite GetInvSqrtQuantizedMultiplierExp with reverse_shift -1: Newton-Raphson in
    gemmlowp fixed point (3 integer bits), five iterations from 1."""
    if value <= 1:
        return _INT32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    leading_zeros = 32 - value.bit_length()
    pairs = (leading_zeros - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    x_in = value >> 1
    half_input = _saturating_pot(x_in, -1)
    half_three = (1 << 28) + (1 << 27)
    x = 1 << 28  # F3 one
    for _ in range(5):
        # F3 * F3 * F3 has 9 integer bits, F3 * F3 six; Rescale<3> shifts back, saturating.
        x3 = _saturating_pot(_srdhm(_srdhm(x, x), x), 6)
        x = _saturating_pot(_wrap32(_srdhm(half_three, x) - _srdhm(half_input, x3)), 3)
    x = _srdhm(x, 1518500250)  # * sqrt(2) / 2 in F0
    if shift < 0:
        x = _wrap32(x << -shift)
        shift = 0
    return x, -shift


def rsqrt_table(
    input_scale: float, input_zp: int, output_scale: float, output_zp: int
) -> np.ndarray:
    """LiteRT's int8 RSQRT for every input value (entry i for i - 128): the inverse square
    root of (i - zp) as a quantized multiplier, rescaled to the output with 20 spare bits.
    Inputs at the zero point give 127; LiteRT refuses inputs below it at run time, aot
    gives 127 there too."""
    # SetRsqrtOutputMultiplier: sqrt and product in float32, the reciprocal in double.
    denominator = np.float32(np.sqrt(np.float32(input_scale))) * np.float32(output_scale)
    if not 0 < float(denominator) < float("inf"):
        raise fp.MultiplierRangeError(
            f"the RSQRT output multiplier 1 / (sqrt({input_scale:g}) * {output_scale:g}) "
            "is not finite"
        )
    multiplier, shift = fp.checked_quantize_multiplier(1.0 / float(denominator))
    k_shift = 20
    table = np.empty(256, dtype=np.int8)
    for index, q in enumerate(range(-128, 128)):
        value = q - input_zp
        if value <= 0:
            table[index] = 127
            continue
        inv, inv_shift = _inv_sqrt_multiplier_exp(value)
        data = _mbqm(1, inv, inv_shift + k_shift)
        out = _mbqm(data, multiplier, shift - k_shift) + output_zp
        table[index] = min(max(out, -128), 127)
    return table


@_handler("RSQRT")
def _rsqrt(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    imp.per_tensor(out, "output")
    table = relax.const(rsqrt_table(x.s, x.zp, out.s, out.zp))
    return imp.emit(bb, int8.lookup_table, imp.value(ins[0]), table, name="rsqrt_int8")
