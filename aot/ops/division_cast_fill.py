"""TFLite ADD_N, DIV, CAST, ZEROS_LIKE, FILL and REDUCE_ALL as TE computes (ELU is a
lookup table, ``aot.ops.int8.lookup_table``).

Bit-exact with the reference kernels TFLite Micro runs (and LiteRT's, where LiteRT has
the dtype); the rules are in docs/int8.md. Multipliers, shifts and the divisor
reciprocals come from the importer, computed as TFLite's ``Prepare`` would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import (
    INT32_MAX,
    c32,
    c64,
    clamp_expr,
    multiply_by_quantized_multiplier_expr,
    multiply_by_quantized_multiplier_greater_than_one_expr,
    multiply_by_quantized_multiplier_smaller_than_one_expr,
    rounding_divide_by_pot_expr,
    single_rounding,
    srdhm_expr,
)
from aot.ops.int8 import BROADCAST, ELEMWISE, broadcast_load, scaled_input
from aot.ops.movement import _reduced_index

Expr = Any
INT32_MIN = -(1 << 31)


# -- import-time fixed point: GetReciprocal for the DIV divisor table ---------------------


def _srdhm(a: int, b: int) -> int:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on Python ints (see srdhm_expr)."""
    if a == b == INT32_MIN:
        return INT32_MAX
    return (a * b + (1 << 30)) >> 31


def _saturating_shift_left(x: int, exponent: int) -> int:
    return min(max(x << exponent, INT32_MIN), INT32_MAX)


def reciprocal(value: int) -> tuple[int, int]:
    """TFLite ``GetReciprocal(value, 31, &shift)`` for a positive int32: (1/(1+x) in Q0.31,
    shift) with value = (1 + x) * 2**shift, x in [0, 1), by gemmlowp's Newton-Raphson
    ``one_over_one_plus_x_for_x_in_0_1`` (three steps in Q2.29)."""
    leading_zeros = 32 - value.bit_length()
    shifted_minus_one = (value << leading_zeros) - (1 << 31)  # x in Q0.31
    half_denominator = (shifted_minus_one + INT32_MAX + 1) >> 1  # RoundingHalfSum(x, 1)
    x = 1515870810 + _srdhm(half_denominator, -1010580540)  # 48/17 - 32/17 d
    for _ in range(3):
        one_minus = (1 << 29) - _srdhm(half_denominator, x)
        x = x + _saturating_shift_left(_srdhm(x, one_minus), 2)
    return _saturating_shift_left(x, 1), 31 - leading_zeros


# -- computes ---------------------------------------------------------------------------


def _activation_clamp(value: Expr, act_min: int, act_max: int, dtype: str) -> Expr:
    return clamp_expr(value, act_min, act_max).astype(dtype)


def add_n(
    *tensors: te.Tensor,
    input_offset: int,
    left_shift: int,
    input_multiplier: int,
    input_shift: int,
    output_multiplier: int,
    output_shift: int,
    output_zp: int,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite ``reference_ops::AddN`` (quantized, TFLite Micro's int8 ADD_N): every input
    scaled as ADD scales its inputs (all share one scale), summed in int32 onto a start
    value, requantized. The reference starts its sum at the input offset scaled so (the
    scaled stored value 0, not 0), and TFLite Micro's interpreter computes exactly that."""
    start = multiply_by_quantized_multiplier_smaller_than_one_expr(
        c32(input_offset * (1 << left_shift)), input_multiplier, input_shift
    )

    def body(*idx: Expr) -> Expr:
        total = start
        for t in tensors:
            term = scaled_input(t, idx, input_offset, left_shift, input_multiplier, input_shift)
            total = total + term
        out = multiply_by_quantized_multiplier_smaller_than_one_expr(
            total, output_multiplier, output_shift
        ) + c32(output_zp)
        return _activation_clamp(out, act_min, act_max, "int8")

    return te.compute(tensors[0].shape, body, name="add_n", tag=ELEMWISE)


def add_n_int32(*tensors: te.Tensor) -> te.Tensor:
    """TFLite ``reference_ops::AddN<int32_t>``: the plain sum, wrapping as int32 does in
    practice (computed in int64 and truncated, so the C has no signed overflow)."""

    def body(*idx: Expr) -> Expr:
        total = c64(0)
        for t in tensors:
            total = total + t[idx].astype("int64")
        return total.astype("int32")

    return te.compute(tensors[0].shape, body, name="add_n", tag=ELEMWISE)


def _rounding_divide_by_pot_as_litert(x: Expr, exponent: Expr) -> Expr:
    """gemmlowp ``RoundingDivideByPOT`` for exponents 0..63, as LiteRT's x86 build computes
    it. Above 31 the C++ is undefined: its mask ``(1ll << e) - 1`` truncates to -1 and the
    int32 shift count wraps to ``e - 32``, so the result is ``(x >> (e - 32)) + (x >= 0)``
    (0 / y gives 1, not 0). DIV reaches that whenever the numerator is small."""
    # ``& 31`` is that wrapped count, and a valid C shift in the branch not taken as well.
    wrapped = (x >> (exponent & c32(31))) + tirx.Select(x >= c32(0), c32(1), c32(0))
    return tirx.Select(exponent > c32(31), wrapped, rounding_divide_by_pot_expr(x, exponent))


def divide(
    lhs: te.Tensor,
    rhs: te.Tensor,
    reciprocals: te.Tensor,
    reciprocal_shifts: te.Tensor,
    headrooms: te.Tensor,
    *,
    out_shape: Sequence[int],
    lhs_offset: int,
    rhs_offset: int,
    output_multiplier: int,
    output_shift: int,
    output_zp: int,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite ``reference_ops::DivElementwise`` (int8) with numpy broadcasting.

    Tables computed at import time: ``reciprocals``/``reciprocal_shifts`` hold
    ``GetReciprocal(|q2 + rhs_offset|)`` for every stored divisor q2 (entry q2 + 128),
    ``headrooms`` ``CountLeadingSignBits(n)`` for every numerator n (entry n + 255). The
    fixed-point product is a stage of its own: the final shift reads it several times, and
    an inlined copy of a long expression per read is what stalls TVM's build.
    """
    shape = tuple(out_shape)

    def divisor_index(idx: Sequence[Expr]) -> Expr:
        return broadcast_load(rhs, idx).astype("int32") + c32(128)

    def numerator(idx: Sequence[Expr]) -> Expr:
        # The signs move to the numerator so that the divisor's reciprocal is positive.
        a = broadcast_load(lhs, idx).astype("int32") + c32(lhs_offset)
        b = broadcast_load(rhs, idx).astype("int32") + c32(rhs_offset)
        return tirx.Select(b < c32(0), c32(0) - a, a)

    def headroom(idx: Sequence[Expr]) -> Expr:
        return headrooms[numerator(idx) + c32(255)].astype("int32")

    def quotient(idx: Sequence[Expr]) -> Expr:
        return multiply_by_quantized_multiplier_greater_than_one_expr(
            numerator(idx), reciprocals[divisor_index(idx)], headroom(idx)
        )

    def total_shift(idx: Sequence[Expr]) -> Expr:
        return c32(output_shift) - reciprocal_shifts[divisor_index(idx)] - headroom(idx)

    if single_rounding():

        def body(*idx: Expr) -> Expr:
            # Beyond 62 the int64 shift would be undefined in C; the result is 0 either way.
            shift = tirx.max(total_shift(idx), c32(-62))
            scaled = multiply_by_quantized_multiplier_expr(quotient(idx), output_multiplier, shift)
            return _activation_clamp(scaled + c32(output_zp), act_min, act_max, "int8")

        return te.compute(shape, body, name="divide", tag=BROADCAST)

    product = te.compute(
        shape,
        lambda *idx: srdhm_expr(quotient(idx), output_multiplier),
        name="quotient_product",
        tag=BROADCAST,
    )

    def final(*idx: Expr) -> Expr:
        exponent = c32(0) - total_shift(idx)
        scaled = _rounding_divide_by_pot_as_litert(product[idx], exponent)
        return _activation_clamp(scaled + c32(output_zp), act_min, act_max, "int8")

    return te.compute(shape, final, name="divide", tag=BROADCAST)


def divide_int32(
    lhs: te.Tensor, rhs: te.Tensor, *, out_shape: Sequence[int], act_min: int, act_max: int
) -> te.Tensor:
    """TFLite ``reference_ops::Div<int32_t>``: C's division (toward zero), then the fused
    activation's range. A zero divisor (undefined in TFLite) gives 0, and INT32_MIN / -1
    gives INT32_MIN, as the wrapped result."""

    def body(*idx: Expr) -> Expr:
        a = broadcast_load(lhs, idx).astype("int64")
        b = broadcast_load(rhs, idx).astype("int64")
        safe = tirx.Select(b == c64(0), c64(1), b)
        quotient = tirx.Select(b == c64(0), c64(0), tirx.truncdiv(a, safe))
        return _activation_clamp(quotient.astype("int32"), act_min, act_max, "int32")

    return te.compute(tuple(out_shape), body, name="divide", tag=BROADCAST)


def cast(data: te.Tensor, *, out_dtype: str) -> te.Tensor:
    """TFLite ``CAST`` between integer types (and from bool): C's ``static_cast``, which
    keeps the low bits when narrowing (two's complement)."""

    def body(*idx: Expr) -> Expr:
        value = data[idx]
        if str(data.dtype) == "bool":
            return tirx.Select(value, tirx.const(1, out_dtype), tirx.const(0, out_dtype))
        return value.astype("int64").astype(out_dtype)

    return te.compute(data.shape, body, name="cast", tag=ELEMWISE)


def zeros_like(data: te.Tensor) -> te.Tensor:
    """TFLite ``ZEROS_LIKE``: the stored value 0 everywhere (not the zero point)."""
    return te.compute(
        data.shape, lambda *idx: tirx.const(0, str(data.dtype)), name="zeros_like", tag=ELEMWISE
    )


def fill(value: te.Tensor, *, out_shape: Sequence[int]) -> te.Tensor:
    """TFLite ``FILL``: the scalar's stored value everywhere (a constant scalar may arrive
    as a one-element vector)."""
    first = tuple(tirx.const(0, "int64") for _ in value.shape)
    return te.compute(tuple(out_shape), lambda *idx: value[first], name="fill", tag=BROADCAST)


def reduce_all(
    data: te.Tensor, *, axes: Sequence[int], keep_dims: bool, out_shape: Sequence[int]
) -> te.Tensor:
    """TFLite ``REDUCE_ALL`` on bool: true where every reduced value is true (the minimum
    of the values as 0/1)."""
    in_shape = tuple(int(d) for d in data.shape)
    raxes = [te.reduce_axis((0, in_shape[a]), f"r{a}") for a in axes]
    index = _reduced_index(in_shape, axes, keep_dims, raxes)
    as_int = te.compute(
        in_shape,
        lambda *idx: tirx.Select(data[idx], tirx.const(1, "int8"), tirx.const(0, "int8")),
        name="as_int",
        tag=ELEMWISE,
    )
    smallest = te.compute(
        tuple(out_shape),
        lambda *o: te.min(as_int[index(o)], axis=raxes),
        name="reduce_all",
        tag="reduce_all",
    )
    return te.compute(
        tuple(out_shape),
        lambda *o: smallest[o] != tirx.const(0, "int8"),
        name="reduce_all_bool",
        tag=ELEMWISE,
    )
