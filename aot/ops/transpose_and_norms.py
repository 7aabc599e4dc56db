"""More TFLite int8 operators as TE computes (issue 13, group E): TRANSPOSE_CONV,
LOG_SOFTMAX and L2_NORMALIZATION, bit-exact with TFLite's reference integer kernels
(docs/int8.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    c32,
    c64,
    clamp_expr,
    multiply_by_quantized_multiplier_expr,
    rounding_divide_by_pot_expr,
    saturating_left_shift_expr,
    srdhm_expr,
)
from aot.ops.int8 import (
    Param,
    _one_over_one_plus_x_for_x_in_0_1,
    _requantize_stage,
    _shape,
    _stage,
    exp_on_negative_values,
)

Expr = Any


def _reaching_input(
    data: te.Tensor,
    where: tuple[Expr, Expr, Expr, Expr],
    tap: tuple[Expr, Expr],
    strides: tuple[int, int],
    padding: tuple[int, int],
    fill: Expr,
) -> Expr:
    """The input pixel that output pixel ``where`` = (n, y, x, c) gets through kernel tap
    (ky, kx) of a transposed convolution (``oy = iy * stride - pad + ky``), or ``fill``
    where none does."""
    n, y, x, c = where
    _, in_h, in_w, _ = _shape(data)
    sh, sw = strides
    ty = y + padding[0] - tap[0]
    tx = x + padding[1] - tap[1]
    iy = tirx.floordiv(ty, sh) if sh > 1 else ty
    ix = tirx.floordiv(tx, sw) if sw > 1 else tx
    conditions = [ty >= 0, iy < in_h, tx >= 0, ix < in_w]
    if sh > 1:
        conditions.append(tirx.floormod(ty, sh) == 0)
    if sw > 1:
        conditions.append(tirx.floormod(tx, sw) == 0)
    return tirx.if_then_else(tirx.all(*conditions), data[n, iy, ix, c], fill)


def transpose_conv2d(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None,
    multiplier: Param,
    shift: Param,
    *,
    out_shape: Sequence[int],
    strides: tuple[int, int],
    padding: tuple[int, int],
    packed_shift_base: int | None = None,
    input_zp: int,
    output_zp: int,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::TransposeConv``: NHWC data, OHWI weights.

    TFLite scatters each input pixel over the output; here each output pixel gathers the
    input pixels that reach it (``oy = iy * stride - pad + ky``), so no int32 scratch of
    the output's size exists. The sum is exact in int32 either way, so the order of the
    terms does not change the result.
    """
    in_c = _shape(data)[3]
    _, k_h, k_w, _ = _shape(weight)
    ry = te.reduce_axis((0, k_h), "ry")
    rx = te.reduce_axis((0, k_w), "rx")
    rc = te.reduce_axis((0, in_c), "rc")

    def tap(n: Expr, y: Expr, x: Expr, o: Expr) -> Expr:
        # A tap no input pixel reaches reads the zero point: it adds exactly 0.
        fill = tirx.const(input_zp, "int8")
        value = _reaching_input(data, (n, y, x, rc), (ry, rx), strides, padding, fill)
        return (value.astype("int32") - c32(input_zp)) * weight[o, ry, rx, rc].astype("int32")

    acc = te.compute(
        tuple(out_shape),
        lambda n, y, x, o: te.sum(tap(n, y, x, o), axis=[ry, rx, rc]),
        name="acc",
        tag="transpose_conv2d_nhwc_int8",
    )
    return _requantize_stage(
        acc, bias, multiplier, shift, output_zp, act_min, act_max, packed_shift_base
    )


# -- LOG_SOFTMAX (gemmlowp fixed point, reference_integer_ops::LogSoftmax) ---------------

# Q5.26 input differences (as SOFTMAX), Q12.19 sum of exponentials, Q4.27 output.
_INPUT_INTEGER_BITS = 5
_SUM_INTEGER_BITS = 12
_OUTPUT_INTEGER_BITS = 4
# log_x_for_x_greater_than_or_equal_to_1<5> accumulates with one more integer bit.
_LOG_ACCUM_INTEGER_BITS = 6
_LOG_2 = 1488522236  # the gemmlowp Q0.31 constants of log_x_for_x_greater_than_or_equal_to_1
_SQRT_SQRT_HALF = 1805811301
_SQRT_HALF = 1518500250
_ALPHA_N = 117049297
_ALPHA_D = 127690142
_ALPHA_I = 1057819769
_ALPHA_F = 638450708
_SHIFTED_QUARTER = 1 << 23  # Rescale<6>(1/4): 2**29 rounded down by 2**6


def _count_leading_zeros(x: Expr) -> Expr:
    """Leading zeros of a non-negative int32, as ``count_leading_zeros_expr`` but written
    with shifts: lowering inlines a stage of compares and selects into each use, and the
    log's stages use each count several times (TVM's simplifier then took 30 s)."""
    wide = x.astype("int64")
    total = c32(0)
    for j in range(32):
        total = total + tirx.Select((wide >> c64(j)) == c64(0), c32(1), c32(0))
    return total


def _saturating_pot_var(x: Expr, exponent: Expr) -> Expr:
    """TFLite ``SaturatingRoundingMultiplyByPOTParam`` for a run-time exponent >= 0."""
    wide, e = x.astype("int64"), exponent.astype("int64")
    threshold = (c64(1) << (c64(31) - e)) - c64(1)
    shifted = (wide << e).astype("int32")
    shifted = tirx.Select(wide > threshold, c32(INT32_MAX), shifted)
    return tirx.Select(wide < c64(0) - threshold, c32(INT32_MIN), shifted)


def _saturating_add(a: Expr, b: Expr) -> Expr:
    """TFLite ``SaturatingAddNonGemmlowp`` / ``SaturatingSub`` (pass ``-b``) on int32."""
    total = a.astype("int64") + b.astype("int64")
    return tirx.max(tirx.min(total, c64(INT32_MAX)), c64(INT32_MIN)).astype("int32")


def _add32(*terms: Expr | int) -> Expr:
    """gemmlowp's raw ``+`` of int32 values: two's complement wrap-around, summed in int64
    so the C has no signed overflow."""
    total = c64(0)
    for term in terms:
        total = total + (c64(term) if isinstance(term, int) else term.astype("int64"))
    return total.astype("int32")


def _sub32(a: Expr, b: Expr) -> Expr:
    """gemmlowp's raw ``-`` of int32 values (wrap-around), computed in int64."""
    return (a.astype("int64") - b.astype("int64")).astype("int32")


def _log_of_sum(total: te.Tensor, shape: tuple[int, ...]) -> te.Tensor:
    """TFLite ``log_x_for_x_greater_than_or_equal_to_1<5>`` of a Q12.19 value (> 0) -> Q5.26."""
    clz_a = _stage(shape, "log_clz_a")(lambda *o: _count_leading_zeros(total[o]))
    # clz_a - 1 never saturates: it moves the top bit to bit 30.
    r_a = _stage(shape, "log_r_a")(
        lambda *o: saturating_left_shift_expr(
            srdhm_expr(_saturating_pot_var(total[o], clz_a[o] - c32(1)), _SQRT_HALF), 1
        )
    )
    z_b = _stage(shape, "log_z_b")(lambda *o: srdhm_expr(total[o], _SQRT_HALF))
    headroom_b = _stage(shape, "log_headroom_b")(lambda *o: _count_leading_zeros(z_b[o]) - c32(1))
    bits = 31 - _LOG_ACCUM_INTEGER_BITS

    def r_body(*o: Expr) -> Expr:
        return tirx.min(r_a[o], _saturating_pot_var(total[o], headroom_b[o]))

    def pow2_body(*o: Expr) -> Expr:
        # (12 - headroom) << 25 stays far from saturation: |12 - headroom| <= 20.
        a = (c32(_SUM_INTEGER_BITS) - clz_a[o]) * c32(1 << bits)
        b = (c32(_SUM_INTEGER_BITS) - headroom_b[o]) * c32(1 << bits)
        a = _saturating_add(a, c32(_SHIFTED_QUARTER))
        b = _saturating_add(b, c32(-_SHIFTED_QUARTER))
        return tirx.max(a, b)

    r = _stage(shape, "log_r")(r_body)
    pow2 = _stage(shape, "log_pow2")(pow2_body)
    # RoundingHalfSum(r, sqrt_sqrt_half): both positive, so (sum + 1) / 2 is a shift.
    p = _stage(shape, "log_p")(
        lambda *o: ((r[o].astype("int64") + c64(_SQRT_SQRT_HALF + 1)) >> c64(1)).astype("int32")
    )
    q = _stage(shape, "log_q")(lambda *o: _add32(r[o], r[o], -2 * _SQRT_SQRT_HALF))
    sq = _stage(shape, "log_sq")(lambda *o: srdhm_expr(q[o], q[o]))
    num = _stage(shape, "log_num")(
        lambda *o: _add32(srdhm_expr(q[o], r[o]), srdhm_expr(srdhm_expr(q[o], sq[o]), _ALPHA_N))
    )
    denominator = _stage(shape, "log_denominator")(
        lambda *o: _add32(
            srdhm_expr(p[o], _add32(_ALPHA_I, q[o], srdhm_expr(sq[o], _ALPHA_D))),
            srdhm_expr(q[o], _ALPHA_F),
        )
    )
    reciprocal = _one_over_one_plus_x_for_x_in_0_1(denominator)

    def result(*o: Expr) -> Expr:
        num_scaled = rounding_divide_by_pot_expr(num[o], _LOG_ACCUM_INTEGER_BITS)
        accum = _add32(srdhm_expr(pow2[o], _LOG_2), srdhm_expr(num_scaled, reciprocal[o]))
        # Rescale<5> from 6 integer bits: a saturating doubling.
        return saturating_left_shift_expr(accum, _LOG_ACCUM_INTEGER_BITS - _INPUT_INTEGER_BITS)

    return _stage(shape, "log_sum")(result)


def log_softmax(
    data: te.Tensor,
    *,
    input_multiplier: int,
    input_shift: int,
    reverse_multiplier: int,
    reverse_shift: int,
    diff_min: int,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::LogSoftmax`` (int8 -> int8, output zero point 127,
    scale 16/256) over the last axis. ``reverse_shift`` is the (non-positive) exponent of
    the reverse scaling multiplier."""
    shape = _shape(data)
    depth = shape[-1]
    outer = shape[:-1]
    rc = te.reduce_axis((0, depth), "rc")
    peak = te.compute(
        outer, lambda *o: te.max(data[(*o, rc)].astype("int32"), axis=rc), name="row_max"
    )

    def diff(idx: Sequence[Expr]) -> Expr:
        return data[tuple(idx)].astype("int32") - peak[tuple(idx[:-1])]

    rescaled = _stage(shape, "diff_rescaled")(
        lambda *i: multiply_by_quantized_multiplier_expr(diff(i), input_multiplier, input_shift)
    )
    exps = exp_on_negative_values(rescaled)
    rs = te.reduce_axis((0, depth), "rs")

    def sum_body(*o: Expr) -> Expr:
        idx = (*o, rs)
        term = rounding_divide_by_pot_expr(exps[idx], _SUM_INTEGER_BITS)  # Rescale<12>
        return te.sum(tirx.Select(diff(idx) >= c32(diff_min), term, c32(0)), axis=rs)

    total = te.compute(outer, sum_body, name="sum_exp")
    log_sum = _log_of_sum(total, outer)
    # Differences at or below this give -128: exp(diff) is negligible beside the sum.
    threshold = _stage(outer, "adjusted_diff_min")(
        lambda *o: tirx.max(
            c32(diff_min - 1),
            multiply_by_quantized_multiplier_expr(
                _add32(log_sum[o], INT32_MIN), reverse_multiplier, reverse_shift
            ),
        )
    )

    def out_body(*idx: Expr) -> Expr:
        o = tuple(idx[:-1])
        shifted = rescaled[idx].astype("int64") - log_sum[o].astype("int64")
        bits = 31 - _INPUT_INTEGER_BITS - _OUTPUT_INTEGER_BITS
        value = clamp_expr(rounding_divide_by_pot_expr(shifted, bits) + c32(127), -128, 127)
        return tirx.Select(diff(idx) > threshold[o], value, c32(-128)).astype("int8")

    return te.compute(shape, out_body, name="log_softmax")


# -- L2_NORMALIZATION (reference_integer_ops::L2Normalization) ---------------------------


def _cube(x: te.Tensor) -> Any:
    """Rescale<3>(x * x * x) of a Q3.28 value: F9 back to F3, a saturating left shift."""
    return lambda *o: saturating_left_shift_expr(srdhm_expr(srdhm_expr(x[o], x[o]), x[o]), 6)


def _newton_inv_sqrt(x: te.Tensor, cube: te.Tensor, half_input: te.Tensor, half_three: int) -> Any:
    """One Newton-Raphson step for 1 / sqrt: Rescale<3>(1.5 x - (input / 2) x^3)."""
    return lambda *o: saturating_left_shift_expr(
        _sub32(srdhm_expr(x[o], half_three), srdhm_expr(half_input[o], cube[o])), 3
    )


def inv_sqrt_multiplier(total: te.Tensor, shape: tuple[int, ...]) -> tuple[te.Tensor, te.Tensor]:
    """TFLite ``GetInvSqrtQuantizedMultiplierExp(total, -1)`` per row: the multiplier and
    the (left) shift of 1 / sqrt(total), by gemmlowp Newton-Raphson in Q3.28."""
    # The sum is below 2**31, so TFLite's "divide by 4 while >= 2**29" runs at most once.
    big = _stage(shape, "isqrt_big")(
        lambda *o: tirx.Select(total[o] >= c32(1 << 29), c32(1), c32(0))
    )
    reduced = _stage(shape, "isqrt_reduced")(lambda *o: total[o] >> (big[o] * c32(2)))
    pairs = _stage(shape, "isqrt_pairs")(
        lambda *o: tirx.max((_count_leading_zeros(reduced[o]) - c32(1)) // c32(2) - c32(1), c32(0))
    )
    # Normalized to [2**27, 2**29), then read as Q3.28 (one bit right).
    half_input = _stage(shape, "isqrt_half_input")(
        lambda *o: rounding_divide_by_pot_expr((reduced[o] << (pairs[o] * c32(2))) >> c32(1), 1)
    )
    half_three = (1 << 28) + (1 << 27)
    x = _stage(shape, "isqrt_x")(lambda *o: c32(1 << 28))
    for _ in range(5):
        cube = _stage(shape, "isqrt_cube")(_cube(x))
        x = _stage(shape, "isqrt_x")(_newton_inv_sqrt(x, cube, half_input, half_three))
    shift = _stage(shape, "isqrt_shift")(lambda *o: c32(11) + big[o] - pairs[o])

    def multiplier(*o: Expr) -> Expr:
        value = srdhm_expr(x[o], 1518500250)  # * sqrt(2) / 2
        # A negative right shift is moved into the multiplier (plain shift, as TFLite).
        moved = (value.astype("int64") << (c64(0) - shift[o].astype("int64"))).astype("int32")
        value = tirx.Select(shift[o] < c32(0), moved, value)
        return tirx.Select(total[o] <= c32(1), c32(INT32_MAX), value)

    def left_shift(*o: Expr) -> Expr:
        # -max(shift, 0): TFLite's right shift as a left one. (The max also keeps lowering
        # from inlining this stage into the several reads of it in MBQM.)
        return tirx.Select(total[o] <= c32(1), c32(0), c32(0) - tirx.max(shift[o], c32(0)))

    return (
        _stage(shape, "isqrt_multiplier")(multiplier),
        _stage(shape, "isqrt_left_shift")(left_shift),
    )


def l2_normalization(data: te.Tensor, *, input_zp: int) -> te.Tensor:
    """TFLite ``reference_integer_ops::L2Normalization``: int8 -> int8 (output zero point 0,
    scale 1/128) over the last axis."""
    shape = _shape(data)
    outer = shape[:-1]
    rc = te.reduce_axis((0, shape[-1]), "rc")

    def centred(idx: Sequence[Expr]) -> Expr:
        return data[tuple(idx)].astype("int32") - c32(input_zp)

    total = te.compute(
        outer, lambda *o: te.sum(centred((*o, rc)) * centred((*o, rc)), axis=rc), name="sum_sq"
    )
    multiplier, left_shift = inv_sqrt_multiplier(total, outer)

    def body(*idx: Expr) -> Expr:
        o = tuple(idx[:-1])
        scaled = multiply_by_quantized_multiplier_expr(
            centred(idx), multiplier[o], left_shift[o] + c32(7)
        )
        return clamp_expr(scaled, -128, 127).astype("int8")

    return te.compute(shape, body, name="l2_normalization")


# -- 16x8 convolutions (int16 activations, int8 weights, int64 accumulators) --------------


def multiply_by_quantized_multiplier_int64_expr(x: Expr, multiplier: Expr, shift: Expr) -> Expr:
    """TFLite ``MultiplyByQuantizedMultiplier(int64_t x, ...)`` (the 16x8 convolutions):
    the multiplier reduced to 16 bits, one rounding shift by ``15 - shift``."""
    m = multiplier.astype("int64") if not isinstance(multiplier, int) else c64(multiplier)
    reduced = tirx.Select(m < c64(0x7FFF0000), (m + c64(1 << 15)) >> c64(16), c64(0x7FFF))
    total = c64(15) - (shift.astype("int64") if not isinstance(shift, int) else c64(shift))
    return (x * reduced + (c64(1) << (total - c64(1)))) >> total


def conv2d_16x8(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None,
    multiplier: te.Tensor,
    shift: te.Tensor,
    *,
    out_shape: Sequence[int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int],
    depthwise: bool,
    depth_multiplier: int,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::ConvPerChannel`` / ``DepthwiseConvPerChannel`` for
    int16 input and output (zero point 0): padded taps read 0; an int64 accumulator plus
    the int64 (or int32) bias, requantized by the int64 MultiplyByQuantizedMultiplier."""
    _, in_h, in_w, in_c = _shape(data)
    _, k_h, k_w, w_last = _shape(weight)
    ry = te.reduce_axis((0, k_h), "ry")
    rx = te.reduce_axis((0, k_w), "rx")
    rc = None if depthwise else te.reduce_axis((0, w_last), "rc")
    group_c = w_last
    per_group = int(weight.shape[0]) // (in_c // group_c) if not depthwise else 1

    def tap(n: Expr, y: Expr, x: Expr, o: Expr) -> Expr:
        iy = y * strides[0] - padding[0] + ry * dilation[0]
        ix = x * strides[1] - padding[1] + rx * dilation[1]
        inside = tirx.all(iy >= 0, iy < in_h, ix >= 0, ix < in_w)
        if depthwise:
            ic = tirx.floordiv(o, depth_multiplier) if depth_multiplier > 1 else o
            w = weight[0, ry, rx, o]
        else:
            ic = rc if group_c == in_c else tirx.floordiv(o, per_group) * group_c + rc
            w = weight[o, ry, rx, rc]
        value = tirx.if_then_else(inside, data[n, iy, ix, ic], tirx.const(0, "int16"))
        return value.astype("int64") * w.astype("int64")

    axes = [ry, rx] if depthwise else [ry, rx, rc]
    acc = te.compute(
        tuple(out_shape),
        lambda n, y, x, o: te.sum(tap(n, y, x, o), axis=axes),
        name="acc",
        tag="conv2d_nhwc_int16",
    )

    def body(*idx: Expr) -> Expr:
        channel = idx[-1]
        total = acc[idx] if bias is None else acc[idx] + bias[channel].astype("int64")
        scaled = multiply_by_quantized_multiplier_int64_expr(
            total, multiplier[channel], shift[channel]
        )
        low, high = c64(act_min), c64(act_max)
        return tirx.max(tirx.min(scaled, high), low).astype("int16")

    return te.compute(acc.shape, body, name="requantize_int16")


def transpose_conv2d_16x8(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None,
    multiplier: te.Tensor,
    shift: te.Tensor,
    *,
    out_shape: Sequence[int],
    strides: tuple[int, int],
    padding: tuple[int, int],
    accumulator: str,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::TransposeConv`` for int16 input and output (zero
    point 0), gathering as :func:`transpose_conv2d` does. LiteRT instantiates it on the
    bias type: with ``accumulator`` "int64" the sum and the bias are int64 and requantized
    by the int64 MultiplyByQuantizedMultiplier; with "int32" (an int32 bias) the sum
    is int32 and so is the requantization, as for int8."""
    in_c = _shape(data)[3]
    _, k_h, k_w, _ = _shape(weight)
    ry = te.reduce_axis((0, k_h), "ry")
    rx = te.reduce_axis((0, k_w), "rx")
    rc = te.reduce_axis((0, in_c), "rc")

    def tap(n: Expr, y: Expr, x: Expr, o: Expr) -> Expr:
        fill = tirx.const(0, "int16")  # the zero point
        value = _reaching_input(data, (n, y, x, rc), (ry, rx), strides, padding, fill)
        return value.astype(accumulator) * weight[o, ry, rx, rc].astype(accumulator)

    acc = te.compute(
        tuple(out_shape),
        lambda n, y, x, o: te.sum(tap(n, y, x, o), axis=[ry, rx, rc]),
        name="acc",
        tag="transpose_conv2d_nhwc_int16",
    )

    def body(*idx: Expr) -> Expr:
        channel = idx[-1]
        total = acc[idx] if bias is None else acc[idx] + bias[channel].astype(accumulator)
        if accumulator == "int64":
            scaled = multiply_by_quantized_multiplier_int64_expr(
                total, multiplier[channel], shift[channel]
            )
            return tirx.max(tirx.min(scaled, c64(act_max)), c64(act_min)).astype("int16")
        scaled = multiply_by_quantized_multiplier_expr(total, multiplier[channel], shift[channel])
        return clamp_expr(scaled, act_min, act_max).astype("int16")

    return te.compute(acc.shape, body, name="requantize_int16")


def mul_16x8(
    lhs: te.Tensor,
    rhs: te.Tensor,
    *,
    out_shape: Sequence[int],
    output_multiplier: int,
    output_shift: int,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::MulElementwise`` for int16 (zero points 0): the int32
    product (at most 2**30) requantized by one multiplier, numpy broadcasting."""
    from aot.ops.int8 import broadcast_load

    def body(*idx: Expr) -> Expr:
        a = broadcast_load(lhs, idx).astype("int32")
        b = broadcast_load(rhs, idx).astype("int32")
        scaled = multiply_by_quantized_multiplier_expr(a * b, output_multiplier, output_shift)
        return clamp_expr(scaled, act_min, act_max).astype("int16")

    return te.compute(tuple(out_shape), body, name="mul_int16")
