"""TFLite's int16 activations (LOGISTIC, TANH, SOFTMAX with int16 input and output) as TE
computes, bit-exact with LiteRT's reference integer kernels (docs/int8.md, "16x8").

LOGISTIC and TANH interpolate one 256-entry table of sigmoid(i/24) in 0.16 fixed point;
SOFTMAX looks up TFLite's two 513-entry int16 tables (exp on [-10, 0] and 1/(1+x) on
[0, 1]) with 7-bit linear interpolation. The tables are built at import time by the
functions below and enter the computes as constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tvm import te, tirx

from aot.ops.fixedpoint import (
    c32,
    c64,
    clamp_expr,
    count_leading_zeros_expr,
    multiply_by_quantized_multiplier_expr,
    tflite_round,
)
from aot.ops.int8 import ELEMWISE

Expr = Any  # a tvm PrimExpr

# TFLite's sigmoid table is round(65536 * sigmoid(i / 24)) (capped at 65535) except at
# these entries, which it holds one higher (its interpolation error is smaller there).
_SIGMOID_TABLE_ROUNDED_UP = (
    4, 8, 12, 14, 15, 16, 17, 19, 20, 21, 22, 25, 27, 28, 29, 30, 31, 33, 34, 35, 37, 39,
    40, 41, 43, 44, 45, 46, 49, 50, 54, 62, 63, 64, 66, 82, 86, 93, 100, 103, 112, 116,
    135, 255,
)  # fmt: skip


def sigmoid_table() -> np.ndarray:
    """TFLite's ``sigmoid_table_uint16``: sigmoid(i / 24) in 0.16 for i in [0, 256)."""
    table = [min(65535, math.floor(65536 / (1 + math.exp(-i / 24)) + 0.5)) for i in range(256)]
    for i in _SIGMOID_TABLE_ROUNDED_UP:
        table[i] += 1
    return np.asarray(table, dtype=np.uint16)


def int16_lut(
    fn: Callable[[float], float], input_scale: float, input_zp: int, output_scale: float
) -> np.ndarray:
    """TFLite ``LUTPopulate<int16_t>`` in double (output zero point 0): 512 samples of
    ``fn`` over the int16 input range plus the end point, each biased by half the
    interpolation error at the midpoint of its interval."""
    input_min = input_scale * (-32768 - input_zp)
    input_max = input_scale * (32767 - input_zp)
    step = (input_max - input_min) / 512
    inverse = 65536 / (output_scale * 32767 - output_scale * -32768)

    def clamped(value: float) -> int:
        return int(min(max(value, -32768.0), 32767.0))

    table = []
    for i in range(512):
        start = input_min + i * step
        sample = tflite_round(fn(start) * inverse)
        interpolated = tflite_round((fn(input_min + (i + 1) * step) * inverse + sample) / 2)
        midpoint = tflite_round(fn(start + step / 2) * inverse)
        table.append(clamped(sample - tflite_round((interpolated - midpoint) / 2)))
    table.append(clamped(tflite_round(fn(input_max) * inverse)))
    return np.asarray(table, dtype=np.int16)


def softmax_tables() -> tuple[np.ndarray, np.ndarray]:
    """SOFTMAX's exp table (input [-10, 0]) and 1/(1+x) table (input [0, 1]), both with
    output scale 2/65535 as TFLite's SoftmaxPrepare builds them."""
    exp_lut = int16_lut(math.exp, 10.0 / 65535, 32767, 2.0 / 65535)
    reciprocal_lut = int16_lut(lambda x: 1.0 / (1.0 + x), 1.0 / 65535, -32768, 2.0 / 65535)
    return exp_lut, reciprocal_lut


def _table_value(table: te.Tensor, index: Expr) -> Expr:
    return table[index].astype("int32")


def _scaled_input(x: Expr, multiplier: int, left_shift: int) -> Expr:
    """``(x * multiplier + round) >> left_shift`` in int32, as both kernels scale."""
    half = (1 << (left_shift - 1)) if left_shift > 0 else 0
    return (x.astype("int32") * c32(multiplier) + c32(half)) >> c32(left_shift)


def _interpolated(table: te.Tensor, magnitude: Expr, fraction_bits: int, saturated: int) -> Expr:
    """The table read at ``magnitude / 2**fraction_bits``, interpolated on the low bits;
    ``saturated`` from entry 255 on. The index is clamped so no read is out of bounds
    whichever branch a compiler evaluates first."""
    whole = magnitude >> c32(fraction_bits)
    index = tirx.min(whole, c32(254))
    low, high = _table_value(table, index), _table_value(table, index + c32(1))
    fraction = magnitude & c32((1 << fraction_bits) - 1)
    value = (low << c32(fraction_bits)) + fraction * (high - low)
    return tirx.Select(whole >= c32(255), c32(saturated), value)


def logistic(
    data: te.Tensor, table: te.Tensor, *, input_multiplier: int, input_left_shift: int
) -> te.Tensor:
    """``reference_integer_ops::Logistic`` for int16: the input scaled to 1/(3*4096)
    units, |x| read from the sigmoid table in 9-bit steps, mirrored for x < 0, Q0.15."""

    def body(*idx: Expr) -> Expr:
        x = _scaled_input(data[idx], input_multiplier, input_left_shift)
        value = _interpolated(table, tirx.abs(x), 9, 0x7FFF << 10)
        mirrored = tirx.Select(
            x >= c32(0), value + c32(1 << 9), c32((1 << 25) + (1 << 9) - 1) - value
        )
        return (mirrored >> c32(10)).astype("int16")

    return te.compute(data.shape, body, name="logistic_int16", tag=ELEMWISE)


def tanh(
    data: te.Tensor, table: te.Tensor, *, input_multiplier: int, input_left_shift: int
) -> te.Tensor:
    """``reference_integer_ops::Tanh`` for int16: tanh(x) = 2 sigmoid(2x) - 1 on the same
    table in 8-bit steps, Q0.15."""

    def body(*idx: Expr) -> Expr:
        x = _scaled_input(data[idx], input_multiplier, input_left_shift)
        value = _interpolated(table, tirx.abs(x), 8, 0xFFFF << 8)
        centred = tirx.Select(
            x >= c32(0),
            value - c32((1 << 23) - (1 << 7)),
            c32((1 << 23) + (1 << 7) - 1) - value,
        )
        return (centred >> c32(8)).astype("int16")

    return te.compute(data.shape, body, name="tanh_int16", tag=ELEMWISE)


def _lut_lookup(table: te.Tensor, value: Expr) -> Expr:
    """TFLite's int16 ``LUTLookup``: the high 9 bits index, the low 7 interpolate."""
    index = (value >> c32(7)) + c32(256)
    base = _table_value(table, index)
    slope = _table_value(table, index + c32(1)) - base
    delta = (slope * (value & c32(0x7F)) + c32(64)) >> c32(7)
    return (base + delta).astype("int16")


def softmax(
    data: te.Tensor,
    exp_table: te.Tensor,
    reciprocal_table: te.Tensor,
    *,
    input_multiplier: int,
    input_left_shift: int,
) -> te.Tensor:
    """``reference_ops::SoftmaxInt16`` over the last axis: exp of (x - row max) rescaled
    to [-65535, 0] ~ [-10, 0] from the exp table, their int32 sum normalised by its
    leading zeros, 1/sum from the reciprocal table, the product rounded to Q0.15."""
    shape = tuple(int(d) for d in data.shape)
    outer, depth = shape[:-1], shape[-1]
    rc = te.reduce_axis((0, depth), "rc")
    peak = te.compute(
        outer, lambda *o: te.max(data[(*o, rc)].astype("int32"), axis=rc), name="row_max",
        tag="softmax_int16",
    )  # fmt: skip

    def exp_of(idx: Sequence[Expr]) -> Expr:
        diff = data[tuple(idx)].astype("int32") - peak[tuple(idx[:-1])]
        scaled = multiply_by_quantized_multiplier_expr(diff, input_multiplier, input_left_shift)
        return _lut_lookup(exp_table, clamp_expr(scaled + c32(32767), -32768, 32767))

    # Kept in int16 as TFLite keeps them (in its output buffer) between the two passes.
    exps = te.compute(shape, lambda *i: exp_of(i), name="exps", tag="softmax_int16")
    rs = te.reduce_axis((0, depth), "rs")
    total = te.compute(
        outer, lambda *o: te.sum(exps[(*o, rs)].astype("int32"), axis=rs), name="sum_exp",
        tag="softmax_int16",
    )  # fmt: skip
    headroom = te.compute(
        outer, lambda *o: count_leading_zeros_expr(total[o]), name="clz", tag="softmax_int16"
    )

    def reciprocal_body(*o: Expr) -> Expr:
        shifted = (
            (total[o].astype("int64") << (headroom[o] - c32(1)).astype("int64")) + c64(1 << 13)
        ) >> c64(14)
        # 1/(1+x) for x = sum - 1, recentred from [0, 65535] to the table's int16 range.
        centred = shifted.astype("int32") - c32((1 << 15) + (1 << 16))
        return _lut_lookup(reciprocal_table, clamp_expr(centred, -32768, 32767)).astype("int32")

    reciprocal = te.compute(outer, reciprocal_body, name="reciprocal", tag="softmax_int16")

    def out_body(*idx: Expr) -> Expr:
        o = tuple(idx[:-1])
        right_shift = (c32(31) - headroom[o]).astype("int64")
        product = exps[idx].astype("int64") * reciprocal[o].astype("int64")
        rounded = (product + (c64(1) << (right_shift - c64(1)))) >> right_shift
        return clamp_expr(rounded.astype("int32"), 0, 32767).astype("int16")

    return te.compute(shape, out_body, name="softmax_int16", tag="softmax_int16")
