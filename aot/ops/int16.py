"""TFLite 16x8 operators (int16 activations, int8 weights) as TE computes (issue 13,
group B), bit-exact with TFLite's reference integer kernels (docs/int8.md, "16x8")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import c32, c64
from aot.ops.int8 import ELEMWISE, broadcast_load

Expr = Any
Param = int | te.Tensor  # a per-tensor integer, or a per-channel constant tensor


def round_half_away_expr(value: Expr) -> Expr:
    """C ``round`` (halves away from zero) of a float64, exactly: ``x - trunc(x)`` is
    exact in binary floating point, so comparing it with 0.5 decides the tie."""
    whole = tirx.trunc(value)
    fraction = value - whole
    one = tirx.const(1.0, "float64")
    half = tirx.const(0.5, "float64")
    return tirx.Select(
        fraction >= half, whole + one, tirx.Select(fraction <= -half, whole - one, whole)
    )


def fully_connected(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None,
    scale: float | te.Tensor,
    *,
    out_shape: Sequence[int],
    weight_zp: int,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::FullyConnected`` (the variant with float scales)
    for int16 input and output (zero point 0), int8 weights and an int64 (or int32) bias:
    an int64 accumulator requantized in double, ``round(acc * s_in * s_w / s_out)``;
    ``scale`` is that double factor, or one per channel."""
    depth = int(weight.shape[1])
    in_shape = [int(d) for d in data.shape]
    out_shape = tuple(out_shape)
    rk = te.reduce_axis((0, depth), "rk")

    def unravel(position: Expr, shape: Sequence[int]) -> list[Expr]:
        index = []
        for d in reversed(shape):
            index.append(tirx.floormod(position, d) if d > 1 else c32(0))
            position = tirx.floordiv(position, d) if d > 1 else position
        return list(reversed(index))

    def acc(*idx: Expr) -> Expr:
        # The input is read as [batches, depth] whatever its rank, as TFLite does.
        batch = c32(0)
        for i, d in zip(idx[:-1], out_shape[:-1]):
            batch = batch * d + i
        if in_shape[-1] == depth:
            x = data[(*unravel(batch, in_shape[:-1]), rk)]
        else:
            x = data[tuple(unravel(batch * depth + rk, in_shape))]
        w = weight[idx[-1], rk].astype("int64") - c64(weight_zp)
        return te.sum(x.astype("int64") * w, axis=rk)

    total = te.compute(out_shape, acc, name="acc")

    def body(*idx: Expr) -> Expr:
        channel = idx[-1]
        value = total[idx] if bias is None else total[idx] + bias[channel].astype("int64")
        factor = tirx.const(scale, "float64") if isinstance(scale, float) else scale[channel]
        rounded = round_half_away_expr(value.astype("float64") * factor)
        # Clamped before the conversion: a double outside int32 has no C conversion.
        low, high = tirx.const(float(act_min), "float64"), tirx.const(float(act_max), "float64")
        return tirx.max(tirx.min(rounded, high), low).astype("int16")

    return te.compute(out_shape, body, name="fully_connected_int16")


def add(
    lhs: te.Tensor,
    rhs: te.Tensor,
    *,
    out_shape: Sequence[int],
    lhs_multiplier: int,
    lhs_shift: int,
    rhs_multiplier: int,
    rhs_shift: int,
    output_multiplier: int,
    output_shift: int,
    act_min: int,
    act_max: int,
    subtract: bool = False,
) -> te.Tensor:
    """TFLite's general int16 ADD and SUB (``pot_scale_int16`` false, or scales that are
    not powers of two): each input shifted left by 15 and scaled to twice the larger input
    scale, summed (or subtracted) in int32, scaled to the output (the int8 arithmetic with
    left shift 15 and zero points 0), numpy broadcasting."""
    from aot.ops.fixedpoint import (
        multiply_by_quantized_multiplier_smaller_than_one_expr,
        wrapping_shift_left_expr,
    )

    def scaled(t: te.Tensor, idx: Sequence[Expr], mult: int, sh: int) -> Expr:
        value = wrapping_shift_left_expr(broadcast_load(t, idx).astype("int32"), 15)
        return multiply_by_quantized_multiplier_smaller_than_one_expr(value, mult, sh)

    def body(*idx: Expr) -> Expr:
        first = scaled(lhs, idx, lhs_multiplier, lhs_shift)
        second = scaled(rhs, idx, rhs_multiplier, rhs_shift)
        raw = first - second if subtract else first + second
        out = multiply_by_quantized_multiplier_smaller_than_one_expr(
            raw, output_multiplier, output_shift
        )
        return tirx.max(tirx.min(out, c32(act_max)), c32(act_min)).astype("int16")

    return te.compute(tuple(out_shape), body, name="sub_int16" if subtract else "add_int16")


def add_power_of_two(
    lhs: te.Tensor,
    rhs: te.Tensor,
    *,
    out_shape: Sequence[int],
    lhs_shift: int,
    rhs_shift: int,
    subtract: bool,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite's power-of-two int16 ADD and SUB (``Add``/``Sub16``, the LSTM form): the
    input with the smaller scale divided by its power of two (rounding half away from
    zero), then a saturating int16 sum or difference, clamped to the activation range.
    Each ``*_shift`` is a right shift (0 for the input at the output's scale)."""
    from aot.ops.fixedpoint import rounding_divide_by_pot_expr

    def operand(t: te.Tensor, idx: Sequence[Expr], shift: int) -> Expr:
        return rounding_divide_by_pot_expr(broadcast_load(t, idx).astype("int32"), shift)

    def body(*idx: Expr) -> Expr:
        first, second = operand(lhs, idx, lhs_shift), operand(rhs, idx, rhs_shift)
        raw = first - second if subtract else first + second
        # int16 saturation first, then the activation range inside it: one clamp.
        low, high = max(act_min, -32768), min(act_max, 32767)
        return tirx.max(tirx.min(raw, c32(high)), c32(low)).astype("int16")

    name = "sub_pot_int16" if subtract else "add_pot_int16"
    return te.compute(tuple(out_shape), body, name=name)


def rescale_by_sign(
    data: te.Tensor,
    *,
    positive: tuple[int, int] | None,
    negative: tuple[int, int] | None,
    mirror_negative: bool,
) -> te.Tensor:
    """LEAKY_RELU and ABS on int16 (zero points 0): the value, negated when negative if
    ``mirror_negative`` (ABS), then ``MultiplyByQuantizedMultiplier`` by the (multiplier,
    shift) of its sign (None: kept as it is), saturated to int16."""
    from aot.ops.fixedpoint import clamp_expr, multiply_by_quantized_multiplier_expr

    def scaled(value: Expr, factor: tuple[int, int] | None) -> Expr:
        return value if factor is None else multiply_by_quantized_multiplier_expr(value, *factor)

    def body(*idx: Expr) -> Expr:
        value = data[idx].astype("int32")
        below = c32(0) - value if mirror_negative else value
        out = tirx.Select(value >= c32(0), scaled(value, positive), scaled(below, negative))
        return clamp_expr(out, -32768, 32767).astype("int16")

    return te.compute(data.shape, body, name="rescale_by_sign_int16", tag=ELEMWISE)
