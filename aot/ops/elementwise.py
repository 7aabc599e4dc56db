"""TFLite int8 elementwise operators (SUB, MINIMUM, MAXIMUM, SQUARED_DIFFERENCE, LEAKY_RELU,
PRELU, ABS, NEG) and CONCATENATION with requantization, as TE computes.

Bit-exact with TFLite's reference integer kernels; the rule each one follows is written
in docs/int8.md. Multipliers and shifts come from the importer (computed as TFLite's
``Prepare`` does); binary operators broadcast like numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import (
    c32,
    clamp_expr,
    multiply_by_quantized_multiplier_expr,
    multiply_by_quantized_multiplier_smaller_than_one_expr,
)
from aot.ops.int8 import BROADCAST, ELEMWISE, INJECTIVE, broadcast_load, scaled_input

Expr = Any


def _shape(t: te.Tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in t.shape)


def _offset_clamp(value: Expr, zero_point: int, lo: int = -128, hi: int = 127) -> Expr:
    """clamp(value + zero_point, lo, hi) as int8, clamping first so that the int32 sum
    cannot overflow (equal wherever TFLite's own sum is defined)."""
    zp = int(zero_point)
    return (clamp_expr(value, lo - zp, hi - zp) + c32(zp)).astype("int8")


def sub(
    lhs: te.Tensor,
    rhs: te.Tensor,
    *,
    out_shape: Sequence[int],
    lhs_offset: int,
    rhs_offset: int,
    left_shift: int,
    lhs_multiplier: int,
    lhs_shift: int,
    rhs_multiplier: int,
    rhs_shift: int,
    output_multiplier: int,
    output_shift: int,
    output_zp: int,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite ``reference_ops::BroadcastQuantSubSlow``: ADD's arithmetic with a minus."""

    def body(*idx: Expr) -> Expr:
        raw = scaled_input(
            lhs, idx, lhs_offset, left_shift, lhs_multiplier, lhs_shift
        ) - scaled_input(rhs, idx, rhs_offset, left_shift, rhs_multiplier, rhs_shift)
        out = multiply_by_quantized_multiplier_smaller_than_one_expr(
            raw, output_multiplier, output_shift
        ) + c32(output_zp)
        return clamp_expr(out, act_min, act_max).astype("int8")

    return te.compute(tuple(out_shape), body, name="sub", tag=BROADCAST)


def squared_difference(
    lhs: te.Tensor,
    rhs: te.Tensor,
    *,
    out_shape: Sequence[int],
    lhs_offset: int,
    rhs_offset: int,
    left_shift: int,
    lhs_multiplier: int,
    lhs_shift: int,
    rhs_multiplier: int,
    rhs_shift: int,
    output_multiplier: int,
    output_shift: int,
    output_zp: int,
) -> te.Tensor:
    """TFLite ``squared_difference::SquaredDifference`` (int8): both inputs scaled to a
    common scale after a left shift of 7, the difference squared (< 2**30), requantized."""
    diff = te.compute(
        tuple(out_shape),
        lambda *idx: (
            scaled_input(lhs, idx, lhs_offset, left_shift, lhs_multiplier, lhs_shift)
            - scaled_input(rhs, idx, rhs_offset, left_shift, rhs_multiplier, rhs_shift)
        ),
        name="raw_diff",
        tag=BROADCAST,
    )

    def body(*idx: Expr) -> Expr:
        square = diff[idx] * diff[idx]
        out = multiply_by_quantized_multiplier_smaller_than_one_expr(
            square, output_multiplier, output_shift
        )
        return _offset_clamp(out, output_zp)

    return te.compute(tuple(out_shape), body, name="squared_difference", tag=ELEMWISE)


def maximum_minimum(
    lhs: te.Tensor, rhs: te.Tensor, *, out_shape: Sequence[int], is_max: bool
) -> te.Tensor:
    """TFLite ``MaximumMinimumBroadcastSlow``: compares the stored int8 or int16 values."""
    pick = tirx.max if is_max else tirx.min
    return te.compute(
        tuple(out_shape),
        lambda *idx: pick(broadcast_load(lhs, idx), broadcast_load(rhs, idx)),
        name="maximum" if is_max else "minimum",
        tag=BROADCAST,
    )


def leaky_relu(
    data: te.Tensor,
    *,
    input_zp: int,
    output_zp: int,
    identity_multiplier: int,
    identity_shift: int,
    alpha_multiplier: int,
    alpha_shift: int,
) -> te.Tensor:
    """TFLite ``reference_ops::QuantizeLeakyRelu``: one multiplier for x >= 0, one for x < 0."""

    def body(*idx: Expr) -> Expr:
        value = data[idx].astype("int32") - c32(input_zp)
        scaled = tirx.Select(
            value >= c32(0),
            multiply_by_quantized_multiplier_expr(value, identity_multiplier, identity_shift),
            multiply_by_quantized_multiplier_expr(value, alpha_multiplier, alpha_shift),
        )
        return _offset_clamp(scaled, output_zp)

    return te.compute(data.shape, body, name="leaky_relu", tag=ELEMWISE)


def prelu(
    data: te.Tensor,
    alpha: te.Tensor,
    *,
    out_shape: Sequence[int],
    input_offset: int,
    alpha_offset: int,
    output_zp: int,
    positive_multiplier: int,
    positive_shift: int,
    negative_multiplier: int,
    negative_shift: int,
) -> te.Tensor:
    """TFLite ``reference_ops::BroadcastPrelu4DSlow``: x * alpha (requantized) for x < 0."""

    def body(*idx: Expr) -> Expr:
        value = broadcast_load(data, idx).astype("int32") + c32(input_offset)
        slope = broadcast_load(alpha, idx).astype("int32") + c32(alpha_offset)
        scaled = tirx.Select(
            value >= c32(0),
            multiply_by_quantized_multiplier_expr(value, positive_multiplier, positive_shift),
            multiply_by_quantized_multiplier_expr(
                value * slope, negative_multiplier, negative_shift
            ),
        )
        return _offset_clamp(scaled, output_zp)

    return te.compute(tuple(out_shape), body, name="prelu", tag=BROADCAST)


def abs_int8(
    data: te.Tensor,
    *,
    input_zp: int,
    output_zp: int,
    rescale: bool,
    multiplier: int,
    shift: int,
) -> te.Tensor:
    """TFLite ``AbsEvalQuantized``: |x - zp_in|, requantized only when the scales differ."""

    def body(*idx: Expr) -> Expr:
        value = data[idx].astype("int32") - c32(input_zp)
        magnitude = tirx.Select(value < c32(0), c32(0) - value, value)
        if rescale:
            magnitude = multiply_by_quantized_multiplier_expr(magnitude, multiplier, shift)
        return _offset_clamp(magnitude, output_zp)

    return te.compute(data.shape, body, name="abs", tag=ELEMWISE)


def negate(data: te.Tensor) -> te.Tensor:
    """TFLite ``neg::Negate`` on int8: the stored value negated, -128 wrapping to -128."""
    return te.compute(
        data.shape,
        lambda *idx: (c32(0) - data[idx].astype("int32")).astype("int8"),
        name="neg",
        tag=ELEMWISE,
    )


def negate_float32(data: te.Tensor) -> te.Tensor:
    """TFLite's float32 NEG (exact): Keras LayerNormalization's int8 export negates the
    mean between a DEQUANTIZE and a QUANTIZE."""
    return te.compute(data.shape, lambda *idx: -data[idx], name="neg_f32", tag=ELEMWISE)


def concatenate_requantize(
    *tensors: te.Tensor,
    axis: int,
    out_shape: Sequence[int],
    input_zps: Sequence[int],
    multipliers: Sequence[int],
    shifts: Sequence[int],
    output_zp: int,
) -> te.Tensor:
    """CONCATENATION whose inputs are requantized to the output (a multiplier of 0 marks an
    input that already has the output's quantization: a plain copy). Each requantized
    element is TFLite's int8 -> int8 ``Requantize``, what the converter's QUANTIZE before a
    concatenation computes."""
    sizes = [_shape(t)[axis] for t in tensors]
    starts = [sum(sizes[:k]) for k in range(len(sizes))]

    def element(k: int, t: te.Tensor, idx: Sequence[Expr]) -> Expr:
        value = t[tuple(idx)]
        if multipliers[k] == 0:
            return value
        centred = value.astype("int32") - c32(input_zps[k])
        scaled = multiply_by_quantized_multiplier_expr(centred, multipliers[k], shifts[k])
        return _offset_clamp(scaled, output_zp)

    def body(*idx: Expr) -> Expr:
        position = idx[axis]
        result = None
        # Later inputs override from their start on: position >= start picks the last match.
        for k, (t, start) in enumerate(zip(tensors, starts)):
            local = list(idx)
            local[axis] = position - start
            value = element(k, t, local)
            result = (
                value if result is None else tirx.if_then_else(position >= start, value, result)
            )
        return result

    return te.compute(tuple(out_shape), body, name="concatenate", tag=INJECTIVE)
