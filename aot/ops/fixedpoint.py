"""TFLite's fixed-point arithmetic: import-time parameters (Python) and TE/TIR expressions.

Two halves, both following TFLite's reference kernels bit for bit:

* Python functions run once at import time on the model's float32 scales and produce the
  integers the kernels use (``quantize_multiplier`` is TFLite's ``QuantizeMultiplier``,
  ``activation_range`` its ``CalculateActivationRangeQuantized``, ...). Float32 arithmetic
  is done in ``numpy.float32`` where TFLite computes in ``float``, and in Python floats
  (IEEE double) where it computes in ``double``.
* ``*_expr`` functions build TIR expressions on int32 values. They use only integer add,
  multiply (int64 where TFLite widens), shifts, compares and selects: no float, no calls,
  no division, so the C backend emits plain C.

Integer values that TFLite keeps in int32 and may overflow (``x * (1 << left_shift)``)
are computed in int64 and truncated, which is what two's-complement C does in practice.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from tvm import tirx

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

# The kernels compute x * 2**shift in int32 before the fixed-point multiply (as TFLite's
# MultiplyByQuantizedMultiplier does), so a left shift above 30 overflows; a real
# multiplier of 2**30 or more means the model's scales are broken.
MAX_LEFT_SHIFT = 30


class MultiplierRangeError(ValueError):
    """A real multiplier that the kernels' fixed-point arithmetic cannot represent."""


# TFLite has two builds of MultiplyByQuantizedMultiplier: "single" rounding
# (TFLITE_SINGLE_ROUNDING=1: one 64-bit multiply, one rounding shift) and "double"
# rounding (gemmlowp SaturatingRoundingDoublingHighMul then RoundingDivideByPOT, the
# default). ai-edge-litert 2.3.0's reference kernels mix them (FULLY_CONNECTED single, the
# others double), so the importer sets the mode per operator (docs/int8.md, "Rounding").
ROUNDING_MODES = ("single", "double")
_ROUNDING: contextvars.ContextVar[str] = contextvars.ContextVar("tflite_rounding", default="double")


@contextmanager
def rounding_mode(mode: str) -> Iterator[None]:
    """Use ``mode`` ("single" or "double") for multipliers built inside the block."""
    if mode not in ROUNDING_MODES:
        raise ValueError(f"rounding mode {mode!r} is not one of {ROUNDING_MODES}")
    token = _ROUNDING.set(mode)
    try:
        yield
    finally:
        _ROUNDING.reset(token)


def single_rounding() -> bool:
    return _ROUNDING.get() == "single"


Expr = Any  # a tvm PrimExpr; TVM's Python types are too loose to be worth spelling out


# -- import time (Python) ---------------------------------------------------------------


def tflite_round(value: float) -> float:
    """``std::round``: halves away from zero (Python's ``round`` goes to even)."""
    magnitude = abs(value)
    whole = math.floor(magnitude)
    if magnitude - whole >= 0.5:  # exact for doubles (and float32 widened to double)
        whole += 1
    return math.copysign(whole, value)


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """TFLite ``QuantizeMultiplier``: ``real ~= multiplier * 2**(shift - 31)``.

    ``multiplier`` is in [2**30, 2**31) (or 0); ``shift`` is the left-shift exponent,
    negative for a right shift. In single-rounding mode shifts above 30 are capped, as
    TFLite's single-rounding build does.
    """
    if real_multiplier == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real_multiplier)
    q_fixed = int(tflite_round(fraction * (1 << 31)))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:  # TFLite flushes tiny multipliers to zero
        shift, q_fixed = 0, 0
    if single_rounding() and shift > 30:  # the single-rounding kernel needs shift <= 30
        shift, q_fixed = 30, (1 << 31) - 1
    return q_fixed, shift


def checked_quantize_multiplier(
    real_multiplier: float, allow_zero: bool = False
) -> tuple[int, int]:
    """``quantize_multiplier`` for a multiplier from a model's scales: refuses what the
    kernels cannot compute (not finite, negative, or a left shift above MAX_LEFT_SHIFT).

    Unless ``allow_zero`` (one channel of several: a dead channel is real), a multiplier
    that flushes to 0 is refused too: every output would be the zero point, whatever the
    input, which no trained model has.
    """
    if not math.isfinite(real_multiplier) or real_multiplier < 0:
        raise MultiplierRangeError(f"the requantization multiplier is {real_multiplier:g}")
    if not allow_zero and 0 < real_multiplier < 2.0**-32:
        raise MultiplierRangeError(
            f"the requantization multiplier {real_multiplier:g} is below 2**-32 (every output "
            "would be the zero point)"
        )
    multiplier, shift = quantize_multiplier(real_multiplier)
    if shift > MAX_LEFT_SHIFT:
        raise MultiplierRangeError(
            f"the requantization multiplier {real_multiplier:g} needs a left shift of {shift} "
            f"(the int8 kernels support at most {MAX_LEFT_SHIFT})"
        )
    return multiplier, shift


def quantize_multiplier_smaller_than_one(real_multiplier: float) -> tuple[int, int]:
    """TFLite ``QuantizeMultiplierSmallerThanOneExp`` (used by ADD): shift <= 0."""
    if not 0.0 < real_multiplier < 1.0:
        raise MultiplierRangeError(f"the multiplier {real_multiplier:g} is not in (0, 1)")
    multiplier, shift = quantize_multiplier(real_multiplier)
    if shift > 0:
        raise MultiplierRangeError(f"the multiplier {real_multiplier:g} is not in (0, 1)")
    return multiplier, shift


def quantize_multiplier_greater_than_one(real_multiplier: float) -> tuple[int, int]:
    """TFLite ``QuantizeMultiplierGreaterThanOne`` (softmax input scaling): shift >= 0."""
    if not math.isfinite(real_multiplier) or real_multiplier <= 1.0:
        raise MultiplierRangeError(f"the multiplier {real_multiplier:g} is not > 1")
    multiplier, shift = checked_quantize_multiplier(real_multiplier)
    if shift < 0:
        raise MultiplierRangeError(f"the multiplier {real_multiplier:g} is not > 1")
    return multiplier, shift


def quantize_f32(value: float, scale: float, zero_point: int) -> int:
    """``zero_point + (int)TfLiteRound(f / scale)`` with float32 division, as in TFLite."""
    with np.errstate(over="ignore"):
        quotient = float(np.float32(value) / np.float32(scale))
    # An activation bound beyond int32 saturates: every caller clamps to the type's range.
    quotient = min(max(quotient, -(2.0**32)), 2.0**32)
    return zero_point + int(tflite_round(quotient))


def activation_range(
    activation: str, scale: float, zero_point: int, qmin: int = -128, qmax: int = 127
) -> tuple[int, int]:
    """TFLite ``CalculateActivationRangeQuantized`` for a fused activation name."""
    if activation == "NONE":
        return qmin, qmax
    if activation == "RELU":
        return max(qmin, quantize_f32(0.0, scale, zero_point)), qmax
    if activation == "RELU6":
        return (
            max(qmin, quantize_f32(0.0, scale, zero_point)),
            min(qmax, quantize_f32(6.0, scale, zero_point)),
        )
    if activation == "RELU_N1_TO_1":
        return (
            max(qmin, quantize_f32(-1.0, scale, zero_point)),
            min(qmax, quantize_f32(1.0, scale, zero_point)),
        )
    raise ValueError(f"fused activation {activation} has no quantized range")


def downscale_multiplier_to_int16(multiplier: int) -> int:
    """TFLite ``DownScaleInt32ToInt16Multiplier`` (HARD_SWISH)."""
    rounding_offset = 1 << 15
    if multiplier >= INT32_MAX - rounding_offset:
        return 2**15 - 1
    return (multiplier + rounding_offset) >> 16


def calculate_input_radius(integer_bits: int, left_shift: int, total_signed_bits: int = 31) -> int:
    """TFLite ``CalculateInputRadius`` (softmax)."""
    max_rescaled = (
        1.0
        * ((1 << integer_bits) - 1)
        * (1 << (total_signed_bits - integer_bits))
        / (1 << left_shift)
    )
    return math.floor(max_rescaled)


# -- run time (TIR expressions on int32) ------------------------------------------------


def c32(value: int) -> Expr:
    return tirx.const(int(value), "int32")


def c64(value: int) -> Expr:
    return tirx.const(int(value), "int64")


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer)


def as_i32(value: Expr | int) -> Expr:
    return c32(value) if _is_int(value) else value


def select(cond: Expr, a: Expr | int, b: Expr | int) -> Expr:
    return tirx.Select(cond, as_i32(a), as_i32(b))


def clamp_expr(x: Expr, lo: int, hi: int) -> Expr:
    return tirx.max(tirx.min(x, as_i32(hi)), as_i32(lo))


def dtype_of(expr: Expr) -> str:
    return str(expr.ty)


def as_expr(value: Any) -> Any:
    """A TE tensor element (``TensorSlice``) as a PrimExpr; ints and exprs unchanged.

    ``TensorSlice == TensorSlice`` is Python object equality, not a TIR comparison.
    """
    return value.asobject() if hasattr(value, "asobject") else value


def srdhm_expr(a: Expr, b: Expr | int) -> Expr:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on int32.

    gemmlowp adds a sign-dependent nudge and divides by 2**31 rounding toward zero; for
    both signs that equals ``(a*b + 2**30) >> 31`` (arithmetic shift), so the product is
    used once and no division or select on it is needed.
    """
    a, b = as_expr(a), as_expr(b)
    ab = a.astype("int64") * (c64(b) if _is_int(b) else b.astype("int64"))
    high = (ab + c64(1 << 30)) >> c64(31)
    if _is_int(b) and b != INT32_MIN:  # only INT32_MIN * INT32_MIN exceeds int32
        return high.astype("int32")
    # The saturating case, INT32_MIN * INT32_MIN, is the one result above INT32_MAX, so a
    # clamp replaces gemmlowp's equality test (which TVM's simplifier folds away).
    return tirx.min(high, c64(INT32_MAX)).astype("int32")


def rounding_divide_by_pot_expr(x: Expr, exponent: Expr | int) -> Expr:
    """gemmlowp ``RoundingDivideByPOT``: x / 2**exponent, halves away from zero.

    gemmlowp's mask/threshold form equals ``(x + 2**(e-1) - (x < 0)) >> e`` for e > 0
    (and x for e == 0); computed in int64 so the addition cannot overflow.
    """
    x, exponent = as_expr(x), as_expr(exponent)
    wide = x.astype("int64")
    if _is_int(exponent):
        if exponent == 0:
            return x
        half = c64(1 << (int(exponent) - 1))
        negative = wide >> c64(63)  # -1 for negative x, else 0
        return ((wide + half + negative) >> c64(int(exponent))).astype("int32")
    e = exponent.astype("int64")
    half = (c64(1) << e) >> c64(1)
    negative = tirx.Select(wide < c64(0), tirx.min(half, c64(1)), c64(0))
    return ((wide + half - negative) >> e).astype("int32")


def wrapping_shift_left_expr(x: Expr, shift: Expr | int) -> Expr:
    """``x * (1 << shift)`` in int32 with two's-complement wrap-around."""
    if _is_int(shift):
        if shift == 0:
            return x
        return (x.astype("int64") * c64(1 << int(shift))).astype("int32")
    return (x.astype("int64") << shift.astype("int64")).astype("int32")


def multiply_by_quantized_multiplier_expr(
    x: Expr, multiplier: Expr | int, shift: Expr | int
) -> Expr:
    """TFLite ``MultiplyByQuantizedMultiplier`` in the current rounding mode.

    single: ``(x * m + 2**(30 - shift)) >> (31 - shift)`` in int64;
    double: ``RoundingDivideByPOT(SRDHM(x * 2**left, m), right)``.
    """
    if single_rounding():
        wide = x.astype("int64") * (
            c64(multiplier) if _is_int(multiplier) else multiplier.astype("int64")
        )
        if _is_int(shift):
            total = 31 - int(shift)
            return ((wide + c64(1 << (total - 1))) >> c64(total)).astype("int32")
        total = c64(31) - shift.astype("int64")
        return ((wide + (c64(1) << (total - c64(1)))) >> total).astype("int32")
    if _is_int(shift):
        left, right = max(int(shift), 0), max(-int(shift), 0)
    else:
        left = tirx.max(shift, c32(0))
        right = tirx.max(c32(0) - shift, c32(0))
    return rounding_divide_by_pot_expr(
        srdhm_expr(wrapping_shift_left_expr(x, left), multiplier), right
    )


def multiply_by_quantized_multiplier_smaller_than_one_expr(
    x: Expr, multiplier: int, left_shift: int
) -> Expr:
    """TFLite ``MultiplyByQuantizedMultiplierSmallerThanOneExp`` (ADD): SRDHM then RDBPOT."""
    if single_rounding():
        return multiply_by_quantized_multiplier_expr(x, multiplier, left_shift)
    return rounding_divide_by_pot_expr(srdhm_expr(x, multiplier), -left_shift)


def multiply_by_quantized_multiplier_greater_than_one_expr(
    x: Expr, multiplier: int, left_shift: int
) -> Expr:
    """TFLite ``MultiplyByQuantizedMultiplierGreaterThanOne`` (softmax input scaling)."""
    if single_rounding():
        return multiply_by_quantized_multiplier_expr(x, multiplier, left_shift)
    return srdhm_expr(wrapping_shift_left_expr(x, left_shift), multiplier)


def saturating_left_shift_expr(x: Expr, exponent: int) -> Expr:
    """gemmlowp ``SaturatingRoundingMultiplyByPOT`` with a positive exponent (int32)."""
    threshold = (1 << (31 - exponent)) - 1
    shifted = wrapping_shift_left_expr(x, exponent)
    shifted = tirx.Select(x > c32(threshold), c32(INT32_MAX), shifted)
    return tirx.Select(x < c32(-threshold), c32(INT32_MIN), shifted)


def count_leading_zeros_expr(x: Expr) -> Expr:
    """Leading zeros of a non-negative int32 (as uint32): the count of j in [0, 32) with
    x < 2**j. A flat sum of compares, so no intrinsic and no nested expression tree."""
    wide = x.astype("int64")
    total = c32(0)
    for j in range(32):
        total = total + tirx.Select(wide < c64(1 << j), c32(1), c32(0))
    return total
