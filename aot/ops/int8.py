"""TFLite int8 operators as TE computes, bit-exact with TFLite's reference integer kernels.

Each function takes TE tensors (int8 activations, int8 weights, int32 biases, per-channel
int32 multipliers and int8 shifts) plus Python integers computed at import time, and
returns one TE tensor. Accumulators are int32 inside a kernel; every kernel ends by
requantizing, adding the output zero point and clamping to the fused activation range, so
its output is int8 and FuseOps has nothing to stitch together after it.

Index arithmetic avoids division where the shapes allow (size-1 dimensions are skipped);
value arithmetic is integer only except QUANTIZE/DEQUANTIZE, which convert from/to float
by definition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tvm import te, tirx

from aot.ops.fixedpoint import (
    INT32_MAX,
    as_expr,
    c32,
    c64,
    clamp_expr,
    count_leading_zeros_expr,
    dtype_of,
    multiply_by_quantized_multiplier_expr,
    multiply_by_quantized_multiplier_greater_than_one_expr,
    multiply_by_quantized_multiplier_smaller_than_one_expr,
    rounding_divide_by_pot_expr,
    saturating_left_shift_expr,
    srdhm_expr,
    wrapping_shift_left_expr,
)

Expr = Any
Param = int | te.Tensor  # a per-tensor integer, or a per-channel constant tensor

ELEMWISE = "elemwise"
INJECTIVE = "injective"
BROADCAST = "broadcast"


# Per-channel requantization packed in one int32: bit 30 of a normalized multiplier
# (in [2**30, 2**31)) is always set and bit 31 always clear, so those two bits can hold the
# channel's shift relative to the layer's smallest shift. 4 bytes per channel instead of 5.
PACKED_SHIFT_BITS = 2
_MULTIPLIER_MASK = (1 << 30) - 1


def pack_requant(multipliers: Sequence[int], shifts: Sequence[int]) -> np.ndarray | None:
    """The packed int32 array, or None when a multiplier is not normalized or the shifts
    span more than ``2**PACKED_SHIFT_BITS`` values."""
    base = min(shifts)
    if max(shifts) - base >= 1 << PACKED_SHIFT_BITS:
        return None
    if any(not (1 << 30) <= m < (1 << 31) for m in multipliers):
        return None
    words = [(m & _MULTIPLIER_MASK) | ((s - base) << 30) for m, s in zip(multipliers, shifts)]
    return np.array(words, dtype=np.uint32).view(np.int32)


def _unpack_requant(packed: te.Tensor, channel: Expr, base: int) -> tuple[Expr, Expr]:
    word = as_expr(packed[channel])
    multiplier = (word & c32(_MULTIPLIER_MASK)) | c32(1 << 30)
    # An arithmetic shift: the & keeps just the offset bits even when bit 31 is set.
    shift = ((word >> c32(30)) & c32((1 << PACKED_SHIFT_BITS) - 1)) + c32(base)
    return multiplier, shift


def _channel(param: Param, channel: Expr) -> Expr | int:
    if isinstance(param, te.Tensor):
        return param[channel].astype("int32")
    return int(param)


_dtype = dtype_of


def _shape(t: te.Tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in t.shape)


def _unravel(flat: Expr, shape: Sequence[int]) -> list[Expr]:
    """Row-major indices of ``flat`` in ``shape``; size-1 dimensions need no division."""
    indices: list[Expr] = [None] * len(shape)  # type: ignore[list-item]
    live = [i for i, d in enumerate(shape) if d != 1]
    for i, d in enumerate(shape):
        if d == 1:
            indices[i] = tirx.const(0, _dtype(flat))
    rest = flat
    for pos, i in enumerate(reversed(live)):
        if pos == len(live) - 1:
            indices[i] = rest
        else:
            indices[i] = tirx.floormod(rest, shape[i])
            rest = tirx.floordiv(rest, shape[i])
    return indices


def _ravel(indices: Sequence[Expr], shape: Sequence[int]) -> Expr:
    flat = None
    for index, d in zip(indices, shape):
        if d == 1:
            continue
        flat = index if flat is None else flat * d + index
    return flat if flat is not None else tirx.const(0, "int64")


def _requantize_clamp(
    acc: Expr, multiplier: Expr | int, shift: Expr | int, out_zp: int, lo: int, hi: int
) -> Expr:
    scaled = multiply_by_quantized_multiplier_expr(acc, multiplier, shift)
    return _add_zero_point_clamp(scaled, out_zp, lo, hi, "int8")


def _add_zero_point_clamp(value: Expr, zero_point: int, lo: int, hi: int, dtype: str) -> Expr:
    """clamp(value + zero_point, lo, hi), computed as clamp(value, lo - zp, hi - zp) + zp.

    The two are equal wherever the int32 sum is defined, but with a large multiplier
    (damaged scales that still validate) ``value + zp`` could overflow, which is undefined
    behaviour in C. Clamping first keeps every step in range at the same cost in
    instructions (int64 arithmetic here cost 1-2% on Cortex-M4)."""
    zp = int(zero_point)
    return (clamp_expr(value, int(lo) - zp, int(hi) - zp) + c32(zp)).astype(dtype)


# -- convolutions and fully connected ----------------------------------------------------


def conv2d(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None,
    multiplier: Param,
    shift: Param,
    *,
    out_shape: Sequence[int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int],
    packed_shift_base: int | None = None,
    input_zp: int,
    output_zp: int,
    act_min: int,
    act_max: int,
    zero_point_in_bias: bool = False,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::ConvPerChannel``: NHWC data, OHWI weights, groups.

    Taps outside the image read the input zero point, which contributes exactly 0
    (TFLite skips them), so no padded copy of the input is made. With
    ``zero_point_in_bias`` the caller has folded ``-input_zp * sum(w)`` into the bias and
    the taps multiply the raw input.
    """
    _, in_h, in_w, in_c = _shape(data)
    out_c, k_h, k_w, group_c = _shape(weight)
    per_group = out_c // (in_c // group_c)
    ry = te.reduce_axis((0, k_h), "ry")
    rx = te.reduce_axis((0, k_w), "rx")
    rc = te.reduce_axis((0, group_c), "rc")

    def tap(n: Expr, y: Expr, x: Expr, o: Expr) -> Expr:
        iy = y * strides[0] - padding[0] + ry * dilation[0]
        ix = x * strides[1] - padding[1] + rx * dilation[1]
        ic = rc if group_c == in_c else tirx.floordiv(o, per_group) * group_c + rc
        inside = _in_image(iy, ix, in_h, in_w)
        value = tirx.if_then_else(inside, data[n, iy, ix, ic], tirx.const(input_zp, "int8"))
        wide = value.astype("int32")
        if not zero_point_in_bias:
            wide = wide - c32(input_zp)
        return wide * weight[o, ry, rx, rc].astype("int32")

    acc = te.compute(
        tuple(out_shape),
        lambda n, y, x, o: te.sum(tap(n, y, x, o), axis=[ry, rx, rc]),
        name="acc",
        tag="conv2d_nhwc_int8",
    )
    return _requantize_stage(
        acc, bias, multiplier, shift, output_zp, act_min, act_max, packed_shift_base
    )


def depthwise_conv2d(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None,
    multiplier: Param,
    shift: Param,
    *,
    out_shape: Sequence[int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int],
    depth_multiplier: int,
    packed_shift_base: int | None = None,
    input_zp: int,
    output_zp: int,
    act_min: int,
    act_max: int,
    zero_point_in_bias: bool = False,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::DepthwiseConvPerChannel``: weights [1, KH, KW, O].

    ``zero_point_in_bias`` as for :func:`conv2d`."""
    _, in_h, in_w, _ = _shape(data)
    _, k_h, k_w, _ = _shape(weight)
    ry = te.reduce_axis((0, k_h), "ry")
    rx = te.reduce_axis((0, k_w), "rx")

    def tap(n: Expr, y: Expr, x: Expr, o: Expr) -> Expr:
        iy = y * strides[0] - padding[0] + ry * dilation[0]
        ix = x * strides[1] - padding[1] + rx * dilation[1]
        ic = o if depth_multiplier == 1 else tirx.floordiv(o, depth_multiplier)
        inside = _in_image(iy, ix, in_h, in_w)
        value = tirx.if_then_else(inside, data[n, iy, ix, ic], tirx.const(input_zp, "int8"))
        wide = value.astype("int32")
        if not zero_point_in_bias:
            wide = wide - c32(input_zp)
        return wide * weight[0, ry, rx, o].astype("int32")

    acc = te.compute(
        tuple(out_shape),
        lambda n, y, x, o: te.sum(tap(n, y, x, o), axis=[ry, rx]),
        name="acc",
        tag="depthwise_conv2d_nhwc_int8",
    )
    return _requantize_stage(
        acc, bias, multiplier, shift, output_zp, act_min, act_max, packed_shift_base
    )


def fully_connected(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None,
    multiplier: Param,
    shift: Param,
    *,
    out_shape: Sequence[int],
    packed_shift_base: int | None = None,
    input_zp: int,
    weight_zp: int,
    output_zp: int,
    act_min: int,
    act_max: int,
    zero_point_in_bias: bool = False,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::FullyConnected`` (and its per-channel variant).

    The input is read as [batches, depth] whatever its rank, like TFLite does.
    ``zero_point_in_bias`` as for :func:`conv2d` (only with weight_zp == 0).
    """
    _, depth = _shape(weight)
    in_shape = _shape(data)
    out_shape = tuple(out_shape)
    rk = te.reduce_axis((0, depth), "rk")

    def element(batch: Expr, k: Expr) -> Expr:
        if in_shape[-1] == depth:
            return data[(*_unravel(batch, in_shape[:-1]), k)]
        return data[tuple(_unravel(batch * depth + k, in_shape))]

    def body(*idx: Expr) -> Expr:
        batch = _ravel(idx[:-1], out_shape[:-1])
        x = element(batch, rk).astype("int32")
        if not zero_point_in_bias:
            x = x - c32(input_zp)
        w = weight[idx[-1], rk].astype("int32") - c32(weight_zp)
        return te.sum(x * w, axis=rk)

    acc = te.compute(out_shape, body, name="acc", tag="dense_int8")
    return _requantize_stage(
        acc, bias, multiplier, shift, output_zp, act_min, act_max, packed_shift_base
    )


def _requantize_stage(
    acc: te.Tensor,
    bias: te.Tensor | None,
    multiplier: Param,
    shift: Param,
    output_zp: int,
    act_min: int,
    act_max: int,
    packed_shift_base: int | None = None,
) -> te.Tensor:
    def body(*idx: Expr) -> Expr:
        channel = idx[-1]
        total = acc[idx] if bias is None else acc[idx] + bias[channel]
        if packed_shift_base is not None:
            mult, sh = _unpack_requant(multiplier, channel, packed_shift_base)
        else:
            mult, sh = _channel(multiplier, channel), _channel(shift, channel)
        return _requantize_clamp(total, mult, sh, output_zp, act_min, act_max)

    return te.compute(acc.shape, body, name="requantize", tag=ELEMWISE)


# -- elementwise binary -------------------------------------------------------------------


def _broadcast_index(idx: Sequence[Expr], shape: Sequence[int], out_rank: int) -> tuple:
    offset = out_rank - len(shape)
    return tuple(
        tirx.const(0, _dtype(idx[offset + i])) if d == 1 else idx[offset + i]
        for i, d in enumerate(shape)
    )


def broadcast_load(t: te.Tensor, idx: Sequence[Expr]) -> Expr:
    """``t`` at output index ``idx`` under numpy broadcasting (size-1 dims read index 0)."""
    return t[_broadcast_index(idx, _shape(t), len(idx))]


def scaled_input(
    t: te.Tensor, idx: Sequence[Expr], offset: int, left_shift: int, multiplier: int, shift: int
) -> Expr:
    """The input stage of TFLite's quantized ADD, SUB, SQUARED_DIFFERENCE and ADD_N: the
    broadcast int8 value plus its offset, shifted left (wrapping, as the int32 C code) and
    scaled to the common scale by a multiplier smaller than one."""
    value = broadcast_load(t, idx).astype("int32") + c32(offset)
    shifted = wrapping_shift_left_expr(value, left_shift)
    return multiply_by_quantized_multiplier_smaller_than_one_expr(shifted, multiplier, shift)


def add(
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
    """TFLite ``reference_integer_ops::AddFunc`` with numpy broadcasting."""

    def body(*idx: Expr) -> Expr:
        raw_sum = scaled_input(
            lhs, idx, lhs_offset, left_shift, lhs_multiplier, lhs_shift
        ) + scaled_input(rhs, idx, rhs_offset, left_shift, rhs_multiplier, rhs_shift)
        out = multiply_by_quantized_multiplier_smaller_than_one_expr(
            raw_sum, output_multiplier, output_shift
        ) + c32(output_zp)
        return clamp_expr(out, act_min, act_max).astype("int8")

    return te.compute(tuple(out_shape), body, name="add", tag=BROADCAST)


def mul(
    lhs: te.Tensor,
    rhs: te.Tensor,
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
    """TFLite ``reference_integer_ops::MulElementwise`` with numpy broadcasting."""

    def body(*idx: Expr) -> Expr:
        a = broadcast_load(lhs, idx).astype("int32") + c32(lhs_offset)
        b = broadcast_load(rhs, idx).astype("int32") + c32(rhs_offset)
        return _requantize_clamp(
            a * b, output_multiplier, output_shift, output_zp, act_min, act_max
        )

    return te.compute(tuple(out_shape), body, name="mul", tag=BROADCAST)


# -- pooling ------------------------------------------------------------------------------


def _in_image(iy: Expr, ix: Expr, in_h: int, in_w: int) -> Expr:
    """Whether tap (iy, ix) lies inside the input image (else it is padding)."""
    return tirx.all(iy >= 0, iy < in_h, ix >= 0, ix < in_w)


def _window(
    y: Expr, x: Expr, strides: tuple[int, int], padding: tuple[int, int]
) -> tuple[Expr, Expr]:
    return y * strides[0] - padding[0], x * strides[1] - padding[1]


def average_pool2d(
    data: te.Tensor,
    *,
    out_shape: Sequence[int],
    filter_size: tuple[int, int],
    strides: tuple[int, int],
    padding: tuple[int, int],
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::AveragePool``: sum of in-image taps, rounded divide
    (int8 or int16, the input's type)."""
    _, in_h, in_w, _ = _shape(data)
    ry = te.reduce_axis((0, filter_size[0]), "ry")
    rx = te.reduce_axis((0, filter_size[1]), "rx")

    def tap(n: Expr, y: Expr, x: Expr, c: Expr) -> Expr:
        y0, x0 = _window(y, x, strides, padding)
        iy, ix = y0 + ry, x0 + rx
        inside = _in_image(iy, ix, in_h, in_w)
        return tirx.if_then_else(inside, data[n, iy, ix, c].astype("int32"), c32(0))

    acc = te.compute(
        tuple(out_shape),
        lambda n, y, x, c: te.sum(tap(n, y, x, c), axis=[ry, rx]),
        name="acc",
        tag="pool_sum_int8",
    )

    # The number of in-image taps per output position, as an int32 reduction: computed
    # from index arithmetic instead, TVM's simplifier widens it (and the division) to int64.
    cy = te.reduce_axis((0, filter_size[0]), "cy")
    cx = te.reduce_axis((0, filter_size[1]), "cx")

    def inside(y: Expr, x: Expr) -> Expr:
        y0, x0 = _window(y, x, strides, padding)
        iy, ix = y0 + cy, x0 + cx
        ok = _in_image(iy, ix, in_h, in_w)
        return tirx.Select(ok, c32(1), c32(0))

    counts = te.compute(
        tuple(out_shape[1:3]),
        lambda y, x: te.sum(inside(y, x), axis=[cy, cx]),
        name="count",
        tag="pool_count_int8",
    )

    def body(n: Expr, y: Expr, x: Expr, c: Expr) -> Expr:
        total = as_expr(acc[n, y, x, c])
        cnt = as_expr(counts[y, x])
        half = cnt >> c32(1)
        # C division truncates toward zero; int32 only.
        rounded = tirx.Select(
            total > c32(0), tirx.truncdiv(total + half, cnt), tirx.truncdiv(total - half, cnt)
        )
        return clamp_expr(rounded, act_min, act_max).astype(data.dtype)

    return te.compute(tuple(out_shape), body, name="average", tag=ELEMWISE)


def max_pool2d(
    data: te.Tensor,
    *,
    out_shape: Sequence[int],
    filter_size: tuple[int, int],
    strides: tuple[int, int],
    padding: tuple[int, int],
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """TFLite ``reference_integer_ops::MaxPool``: max over in-image taps, then clamp (int8
    or int16, the input's type)."""
    _, in_h, in_w, _ = _shape(data)
    ry = te.reduce_axis((0, filter_size[0]), "ry")
    rx = te.reduce_axis((0, filter_size[1]), "rx")

    def tap(n: Expr, y: Expr, x: Expr, c: Expr) -> Expr:
        y0, x0 = _window(y, x, strides, padding)
        iy, ix = y0 + ry, x0 + rx
        inside = _in_image(iy, ix, in_h, in_w)
        # The type's minimum is max's identity, so out-of-image taps change nothing.
        return tirx.if_then_else(inside, data[n, iy, ix, c], tirx.min_value(data.dtype))

    peak = te.compute(
        tuple(out_shape),
        lambda n, y, x, c: te.max(tap(n, y, x, c), axis=[ry, rx]),
        name="peak",
        tag="pool_max_int8",
    )
    return te.compute(
        tuple(out_shape),
        lambda *i: clamp_expr(peak[i].astype("int32"), act_min, act_max).astype(data.dtype),
        name="clamp",
        tag=ELEMWISE,
    )


def mean(
    data: te.Tensor,
    *,
    axes: Sequence[int],
    keep_dims: bool,
    out_shape: Sequence[int],
    input_zp: int,
    output_multiplier: int,
    output_shift: int,
    output_zp: int,
) -> te.Tensor:
    """TFLite ``reference_ops::QuantizedMeanOrSum`` (mean): int32 sum, one requantization
    (int8 or int16, the input's type).

    ``output_multiplier``/``output_shift`` already include 1/num_elements (import time).
    """
    in_shape = _shape(data)
    reduced = sorted(set(axes))
    count = 1
    for a in reduced:
        count *= in_shape[a]
    raxes = [te.reduce_axis((0, in_shape[a]), f"r{a}") for a in reduced]

    def index(idx: Sequence[Expr]) -> tuple:
        out: list[Expr] = []
        it = iter(idx)
        for a in range(len(in_shape)):
            if a in reduced:
                out.append(raxes[reduced.index(a)])
                if keep_dims:
                    next(it)
            else:
                out.append(next(it))
        return tuple(out)

    total = te.compute(
        tuple(out_shape),
        lambda *idx: te.sum(data[index(idx)].astype("int32"), axis=raxes),
        name="sum",
        tag="reduce_sum_int8",
    )

    def body(*idx: Expr) -> Expr:
        shifted = total[idx] - c32(input_zp * count)
        scaled = multiply_by_quantized_multiplier_expr(shifted, output_multiplier, output_shift)
        info = np.iinfo(str(data.dtype))
        return _add_zero_point_clamp(scaled, output_zp, info.min, info.max, str(data.dtype))

    return te.compute(tuple(out_shape), body, name="mean", tag=ELEMWISE)


# -- activations --------------------------------------------------------------------------


def requantize(
    data: te.Tensor,
    *,
    input_zp: int,
    output_multiplier: int,
    output_shift: int,
    output_zp: int,
    act_min: int,
    act_max: int,
    out_dtype: str = "int8",
) -> te.Tensor:
    """TFLite ``ReluX``/``Requantize``: (x - zp_in) * M + zp_out, clamped."""

    def body(*idx: Expr) -> Expr:
        value = data[idx].astype("int32") - c32(input_zp)
        out = multiply_by_quantized_multiplier_expr(value, output_multiplier, output_shift)
        return _add_zero_point_clamp(out, output_zp, act_min, act_max, out_dtype)

    return te.compute(data.shape, body, name="requantize", tag=ELEMWISE)


def lookup_table(data: te.Tensor, table: te.Tensor) -> te.Tensor:
    """Indexes a 256-entry table by the int8 value (LOGISTIC, TANH: TFLite's int8 LUTs)."""
    return te.compute(
        data.shape,
        lambda *idx: table[data[idx].astype("int32") + c32(128)],
        name="lut",
        tag=ELEMWISE,
    )


def _srdhm16(a: Expr, b: int) -> Expr:
    """gemmlowp int16 ``SaturatingRoundingDoublingHighMul`` with a constant ``b >= 0``.

    As for int32, nudge-and-truncate equals ``(a*b + 2**14) >> 15``; with b >= 0 the
    -32768 * -32768 saturation cannot happen.
    """
    return (a * c32(b) + c32(1 << 14)) >> c32(15)


def _sdhm16(a: Expr, b: Expr) -> Expr:
    """TFLite's int16 ``SaturatingDoublingHighMul``: truncating ``a*b / 2**15``.

    The saturating case (-32768 * -32768) is the one result above 32767, hence the min.
    """
    ab = a * b
    high = (ab + tirx.Select(ab < c32(0), c32((1 << 15) - 1), c32(0))) >> c32(15)
    return tirx.min(high, c32(32767))


def _saturating_left_shift16(value: Expr, amount: int) -> Expr:
    wide = value.astype("int64") * c64(1 << amount)
    return tirx.max(tirx.min(wide, c64(32767)), c64(-32768)).astype("int32")


def _wrap16(value: Expr) -> Expr:
    return value.astype("int16").astype("int32")


def hard_swish(
    data: te.Tensor,
    *,
    input_zp: int,
    output_zp: int,
    output_multiplier: int,
    output_exponent: int,
    reluish_multiplier: int,
    reluish_exponent: int,
) -> te.Tensor:
    """TFLite ``reference_ops::HardSwish`` (int16 fixed point), int16 wrap-around kept."""

    # Two stages so the int16 intermediate values are loads, not repeated expression trees.
    def reluish_body(*idx: Expr) -> Expr:
        hires = (data[idx].astype("int32") - c32(input_zp)) * c32(128)
        reluish = hires
        if reluish_exponent > 0:
            reluish = _saturating_left_shift16(reluish, reluish_exponent - 1)
        reluish = _srdhm16(reluish, reluish_multiplier)
        if reluish_exponent > 0:
            reluish = _saturating_left_shift16(reluish, 1)
        if reluish_exponent < 0:
            reluish = rounding_divide_by_pot_expr(reluish, -reluish_exponent)
        return (reluish + c32(1 << 15)) >> c32(1)

    reluish = te.compute(data.shape, reluish_body, name="reluish", tag=ELEMWISE)

    def body(*idx: Expr) -> Expr:
        hires = (data[idx].astype("int32") - c32(input_zp)) * c32(128)
        preshift = _srdhm16(hires, output_multiplier)
        out = rounding_divide_by_pot_expr(_sdhm16(reluish[idx], preshift), -output_exponent)
        out = _wrap16(out + c32(output_zp))
        return clamp_expr(out, -128, 127).astype("int8")

    return te.compute(data.shape, body, name="hard_swish", tag=ELEMWISE)


# -- softmax (gemmlowp fixed point, TFLite reference_ops::Softmax) ------------------------

_SCALED_DIFF_INTEGER_BITS = 5
_ACCUMULATION_INTEGER_BITS = 12


def _stage(shape: Sequence[int], name: str) -> Callable[[Callable[..., Expr]], te.Tensor]:
    """A softmax intermediate as its own (small) int32 stage: later uses are loads."""

    def make(fn: Callable[..., Expr]) -> te.Tensor:
        return te.compute(tuple(shape), fn, name=name, tag="softmax_int8")

    return make


def _barrel_step(
    prev: te.Tensor, rescaled: te.Tensor, a_mod: Callable[..., Expr], bit: int, multiplier: int
) -> Callable[..., Expr]:
    def step(*i: Expr) -> Expr:
        remainder = a_mod(*i) - rescaled[i]
        return tirx.Select(
            (remainder & c32(bit)) != c32(0), srdhm_expr(prev[i], multiplier), prev[i]
        )

    return step


def _newton_step(prev: te.Tensor, half_denominator: te.Tensor) -> Callable[..., Expr]:
    def refine(*i: Expr) -> Expr:
        one_minus = c32(1 << 29) - srdhm_expr(half_denominator[i], prev[i])  # F2 1 - d*x
        return prev[i] + saturating_left_shift_expr(srdhm_expr(prev[i], one_minus), 2)

    return refine


def exp_on_negative_values(rescaled: te.Tensor) -> te.Tensor:
    """gemmlowp ``exp_on_negative_values``: FixedPoint<int32, 5> (<= 0) -> FixedPoint<int32, 0>.

    The input range is cut into quarters: a degree-4 Taylor polynomial around -1/8 on
    [-1/4, 0) times exp(-2**k) for each set bit k of the remainder (the barrel shifter).
    """
    shape = _shape(rescaled)
    fractional_bits = 31 - _SCALED_DIFF_INTEGER_BITS
    one_quarter = 1 << (fractional_bits - 2)

    def a_mod(*i: Expr) -> Expr:  # (a mod 1/4) - 1/4, in [-1/4, 0)
        return (rescaled[i] & c32(one_quarter - 1)) - c32(one_quarter)

    # x = Rescale<0>(a_mod) + 1/8: the Taylor variable around -1/8, Q0.31
    x = _stage(shape, "exp_x")(
        lambda *i: saturating_left_shift_expr(a_mod(*i), _SCALED_DIFF_INTEGER_BITS) + c32(1 << 28)
    )
    x2 = _stage(shape, "exp_x2")(lambda *i: srdhm_expr(x[i], x[i]))

    def interval(*i: Expr) -> Expr:
        x3 = srdhm_expr(x2[i], x[i])
        x4_over_4 = rounding_divide_by_pot_expr(srdhm_expr(x2[i], x2[i]), 2)
        one_third = 715827883
        poly = rounding_divide_by_pot_expr(srdhm_expr(x4_over_4 + x3, one_third) + x2[i], 1)
        constant_term = 1895147668  # exp(-1/8) in Q0.31
        return c32(constant_term) + srdhm_expr(c32(constant_term), x[i] + poly)

    result = _stage(shape, "exp_poly")(interval)
    for exponent, multiplier in (
        (-2, 1672461947),
        (-1, 1302514674),
        (0, 790015084),
        (1, 290630308),
        (2, 39332535),
        (3, 720401),
        (4, 242),
    ):
        result = _stage(shape, "exp_barrel")(
            _barrel_step(result, rescaled, a_mod, 1 << (fractional_bits + exponent), multiplier)
        )
    return _stage(shape, "exp")(
        lambda *i: tirx.Select(tirx.EQ(as_expr(rescaled[i]), c32(0)), c32(INT32_MAX), result[i])
    )


def _one_over_one_plus_x_for_x_in_0_1(a: te.Tensor) -> te.Tensor:
    """gemmlowp Newton-Raphson reciprocal: ``a`` in [0, 1) as Q0.31 -> 1/(1+a) as Q0.31."""
    shape = _shape(a)
    # RoundingHalfSum(a, 1.0): the sum is non-negative here, so (sum + 1) / 2 is a shift.
    half_denominator = _stage(shape, "half_denominator")(
        lambda *i: ((a[i].astype("int64") + c64(INT32_MAX) + c64(1)) >> c64(1)).astype("int32")
    )
    # 48/17 - 32/17 * d, in Q2.29
    x = _stage(shape, "newton")(
        lambda *i: c32(1515870810) + srdhm_expr(half_denominator[i], -1010580540)
    )
    for _ in range(3):
        x = _stage(shape, "newton")(_newton_step(x, half_denominator))
    return _stage(shape, "reciprocal")(lambda *i: saturating_left_shift_expr(x[i], 1))


def softmax(
    data: te.Tensor,
    *,
    input_multiplier: int,
    input_left_shift: int,
    diff_min: int,
    out_dtype: str = "int8",
) -> te.Tensor:
    """TFLite ``reference_ops::Softmax`` for int8 -> int8 (output zp -128, scale 1/256) or,
    as TFLite Micro also runs it, int8 -> int16 (zp -32768, scale 1/65536)."""
    bits = 8 if out_dtype == "int8" else 16
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    shape = _shape(data)
    depth = shape[-1]
    outer = shape[:-1]
    rc = te.reduce_axis((0, depth), "rc")
    peak = te.compute(
        outer,
        lambda *o: te.max(data[(*o, rc)].astype("int32"), axis=rc),
        name="row_max",
        tag="softmax_int8",
    )

    def diff(idx: Sequence[Expr]) -> Expr:
        return data[tuple(idx)].astype("int32") - peak[tuple(idx[:-1])]

    rescaled = _stage(shape, "diff_rescaled")(
        lambda *i: multiply_by_quantized_multiplier_greater_than_one_expr(
            diff(i), input_multiplier, input_left_shift
        )
    )
    exps = exp_on_negative_values(rescaled)
    rs = te.reduce_axis((0, depth), "rs")

    def sum_body(*o: Expr) -> Expr:
        idx = (*o, rs)
        # Rescale<12> from Q0.31: divide by 2**12 (rounding)
        rescaled = rounding_divide_by_pot_expr(exps[idx], _ACCUMULATION_INTEGER_BITS)
        return te.sum(tirx.Select(diff(idx) >= c32(diff_min), rescaled, c32(0)), axis=rs)

    sum_of_exps = te.compute(outer, sum_body, name="sum_exp", tag="softmax_int8")
    clz = _stage(outer, "clz")(lambda *o: count_leading_zeros_expr(sum_of_exps[o]))
    shifted_sum_minus_one = _stage(outer, "shifted_sum")(
        lambda *o: (
            (sum_of_exps[o].astype("int64") << clz[o].astype("int64")) - c64(1 << 31)
        ).astype("int32")
    )
    scale = _one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one)

    def out_body(*idx: Expr) -> Expr:
        o = tuple(idx[:-1])
        num_bits_over_unit = c32(_ACCUMULATION_INTEGER_BITS) - clz[o]
        product = srdhm_expr(scale[o], exps[idx])
        unsat = rounding_divide_by_pot_expr(product, num_bits_over_unit + c32(31 - bits))
        value = clamp_expr(unsat + c32(lo), lo, hi)
        return tirx.Select(diff(idx) >= c32(diff_min), value, c32(lo)).astype(out_dtype)

    return te.compute(shape, out_body, name="softmax", tag="softmax_int8")


# -- data movement ------------------------------------------------------------------------


def reshape(data: te.Tensor, *, out_shape: Sequence[int]) -> te.Tensor:
    in_shape = _shape(data)
    out_shape = tuple(out_shape)
    return te.compute(
        out_shape,
        lambda *idx: data[tuple(_unravel(_ravel(idx, out_shape), in_shape))],
        name="reshape",
        tag=INJECTIVE,
    )


def pad(
    data: te.Tensor, *, paddings: Sequence[tuple[int, int]], out_shape: Sequence[int], value: int
) -> te.Tensor:
    """TFLite PAD/PADV2: pad value is the output zero point unless given."""
    in_shape = _shape(data)

    def body(*idx: Expr) -> Expr:
        src = [i - before for i, (before, _) in zip(idx, paddings)]
        inside = tirx.all(*[tirx.all(s >= 0, s < d) for s, d in zip(src, in_shape)])
        return tirx.if_then_else(inside, data[tuple(src)], tirx.const(value, data.dtype))

    return te.compute(tuple(out_shape), body, name="pad", tag=INJECTIVE)


def concatenate(*tensors: te.Tensor, axis: int, out_shape: Sequence[int]) -> te.Tensor:
    """TFLite int8 CONCATENATION: inputs share the output's quantization, a plain copy."""
    sizes = [_shape(t)[axis] for t in tensors]

    def body(*idx: Expr) -> Expr:
        position = idx[axis]
        starts = [sum(sizes[:k]) for k in range(len(sizes))]
        result = None
        # Later inputs override from their start on: position >= start picks the last match.
        for t, start in zip(tensors, starts):
            local = list(idx)
            local[axis] = position - start
            value = t[tuple(local)]
            result = (
                value if result is None else tirx.if_then_else(position >= start, value, result)
            )
        return result

    return te.compute(tuple(out_shape), body, name="concatenate", tag=INJECTIVE)


def strided_slice(
    data: te.Tensor,
    *,
    begin: Sequence[int],
    strides: Sequence[int],
    out_shape_full: Sequence[int],
    out_shape: Sequence[int],
) -> te.Tensor:
    """Output over the un-shrunk index space ``out_shape_full``, reshaped to ``out_shape``."""

    def body(*idx: Expr) -> Expr:
        full = (
            _unravel(_ravel(idx, out_shape), out_shape_full)
            if len(out_shape) != len(out_shape_full)
            else list(idx)
        )
        src = tuple(c64(b) + i * s for i, b, s in zip(full, begin, strides))
        return data[src]

    return te.compute(tuple(out_shape), body, name="strided_slice", tag=INJECTIVE)


def transpose(data: te.Tensor, *, perm: Sequence[int]) -> te.Tensor:
    in_shape = _shape(data)
    out_shape = tuple(in_shape[p] for p in perm)

    def body(*idx: Expr) -> Expr:
        src: list[Expr] = [None] * len(perm)  # type: ignore[list-item]
        for out_axis, in_axis in enumerate(perm):
            src[in_axis] = idx[out_axis]
        return data[tuple(src)]

    return te.compute(out_shape, body, name="transpose", tag=INJECTIVE)


# -- float boundaries ---------------------------------------------------------------------


def quantize(data: te.Tensor, *, scale: float, zero_point: int, out_dtype: str) -> te.Tensor:
    """TFLite ``AffineQuantize``: (int)TfLiteRound(x / scale) + zp, clamped; float32 math.

    Rounding is done with a truncating cast and the exact remainder instead of a libm
    call: ``x - trunc(x)`` is exact in float32, so halves go away from zero as in C.
    """
    lo, hi = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}[out_dtype]

    def body(*idx: Expr) -> Expr:
        quotient = data[idx] / tirx.const(scale, "float32")
        # Beyond +-2**30 every int8 result saturates; clamping first keeps the cast defined.
        bounded = tirx.max(
            tirx.min(quotient, tirx.const(2.0**30, "float32")), tirx.const(-(2.0**30), "float32")
        )

        whole = bounded.astype("int32")
        frac = bounded - whole.astype("float32")
        up = tirx.Select(frac >= tirx.const(0.5, "float32"), c32(1), c32(0))
        down = tirx.Select(frac <= tirx.const(-0.5, "float32"), c32(1), c32(0))
        return clamp_expr(whole + up - down + c32(zero_point), lo, hi).astype(out_dtype)

    return te.compute(data.shape, body, name="quantize", tag=ELEMWISE)


def dequantize(data: te.Tensor, *, scale: float, zero_point: int) -> te.Tensor:
    """TFLite ``Dequantize``: float(scale * (x - zp)); the float32 product is exact enough
    to equal TFLite's double product rounded to float (a 24-bit times 9-bit product)."""
    return te.compute(
        data.shape,
        lambda *idx: (
            (data[idx].astype("int32") - c32(zero_point)).astype("float32")
            * tirx.const(scale, "float32")
        ),
        name="dequantize",
        tag=ELEMWISE,
    )
