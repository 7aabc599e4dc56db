"""int8/uint8 ONNX operators as TE computes, identical to onnxruntime's CPU kernels.

onnxruntime (MLAS) requantizes in float: the int32 accumulator is converted to float32,
multiplied by a float32 scale, clamped to the output range (less the zero point) and
rounded to nearest even, then the zero point is added. TFLite's fixed-point multipliers
(``aot.ops.int8``) give different results, so these kernels carry their own requantize.
Tensors are NCHW as in the ONNX file; weights keep their ONNX layout (OIHW for Conv).

The C that these computes print to must not fuse a multiply into a following add (a
contracted ``a*b+c`` rounds once where onnxruntime rounds twice): the rounding below only
compares the product, it never adds to it, and QLinearAdd computes its fused multiply-adds
in double, where they are exact (docs/int8.md, "onnxruntime").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import c32
from aot.ops.int8 import ELEMWISE, INJECTIVE, _in_image, _shape

Expr = Any
Scale = float | te.Tensor  # a per-tensor float32 scale, or one per output channel

RANGES = {"int8": (-128, 127), "uint8": (0, 255)}


def f32(value: float) -> Expr:
    return tirx.const(value, "float32")


def round_half_even_expr(value: Expr) -> Expr:
    """float32 -> int32, ties to even (``_mm_cvtps_epi32``, ``nearbyintf``), for |value| <
    2**22. Built from a truncating cast and comparisons only, so no C compiler can fuse
    the product that ``value`` usually is into an add, and no FPU rounding mode matters."""
    whole = value.astype("int32")
    base = whole.astype("float32")
    odd = (whole & c32(1)) != c32(0)
    half_up = base + f32(0.5)
    half_down = base - f32(0.5)
    up = tirx.Or(value > half_up, tirx.And(value == half_up, odd))
    down = tirx.Or(value < half_down, tirx.And(value == half_down, odd))
    return whole + tirx.Select(up, c32(1), c32(0)) - tirx.Select(down, c32(1), c32(0))


def requantize_float_expr(
    acc: Expr,
    scale: Expr,
    zero_point: int,
    out_dtype: str,
    act_min: int | None = None,
    act_max: int | None = None,
) -> Expr:
    """MLAS ``MlasRequantizeOutput``: float(acc) * scale, clamped to [lo - zp, hi - zp] in
    float, rounded to nearest even, plus zp. Clamping first keeps the conversion defined;
    it equals rounding first because the bounds are integers. ``act_min``/``act_max``
    narrow [lo, hi] for a folded Relu/Clip."""
    lo, hi = RANGES[out_dtype]
    lo = lo if act_min is None else max(lo, act_min)
    hi = hi if act_max is None else min(hi, act_max)
    product = acc.astype("float32") * scale
    bounded = tirx.max(tirx.min(product, f32(float(hi - zero_point))), f32(float(lo - zero_point)))
    return (round_half_even_expr(bounded) + c32(zero_point)).astype(out_dtype)


def _scale(scale: Scale, channel: Expr) -> Expr:
    if isinstance(scale, te.Tensor):
        return scale[channel]
    return f32(float(scale))


def _requantize_stage(
    acc: te.Tensor,
    bias: te.Tensor | None,
    scale: Scale,
    axis: int,
    zp: int,
    dtype: str,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    def body(*idx: Expr) -> Expr:
        channel = idx[axis]
        total = acc[idx] if bias is None else acc[idx] + bias[channel]
        return requantize_float_expr(total, _scale(scale, channel), zp, dtype, act_min, act_max)

    return te.compute(acc.shape, body, name="requantize", tag=ELEMWISE)


def _wide(value: Expr, zero_point: int | Expr) -> Expr:
    if isinstance(zero_point, int) and zero_point == 0:
        return value.astype("int32")
    return value.astype("int32") - (c32(zero_point) if isinstance(zero_point, int) else zero_point)


# -- convolution and matrix products ------------------------------------------------------


def _conv_acc(
    data: te.Tensor,
    weight: te.Tensor,
    out_shape: Sequence[int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    pads: tuple[int, int],
    group: int,
    input_zp: int,
    weight_zp: int,
    name: str,
) -> te.Tensor:
    """The int32 sum of (x - x_zp) * (w - w_zp) over NCHW data and OIHW weights; padded
    taps read x_zp and so add 0."""
    _, _, in_h, in_w = _shape(data)
    out_c, group_c, k_h, k_w = _shape(weight)
    per_group = out_c // group
    rc = te.reduce_axis((0, group_c), "rc")
    ry = te.reduce_axis((0, k_h), "ry")
    rx = te.reduce_axis((0, k_w), "rx")

    def tap(n: Expr, o: Expr, y: Expr, x: Expr) -> Expr:
        iy = y * strides[0] - pads[0] + ry * dilations[0]
        ix = x * strides[1] - pads[1] + rx * dilations[1]
        ic = rc if group == 1 else tirx.floordiv(o, per_group) * group_c + rc
        inside = _in_image(iy, ix, in_h, in_w)
        value = tirx.if_then_else(inside, data[n, ic, iy, ix], tirx.const(input_zp, data.dtype))
        return _wide(value, input_zp) * _wide(weight[o, rc, ry, rx], weight_zp)

    return te.compute(
        tuple(out_shape),
        lambda n, o, y, x: te.sum(tap(n, o, y, x), axis=[rc, ry, rx]),
        name=name,
        tag="conv2d_nchw_qlinear",
    )


def qlinear_conv2d(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None,
    scale: Scale,
    *,
    out_shape: Sequence[int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    pads: tuple[int, int],
    group: int,
    input_zp: int,
    weight_zp: int,
    output_zp: int,
    out_dtype: str,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """onnxruntime ``QLinearConv``: the int32 accumulator plus the int32 bias, requantized
    per output channel (axis 1)."""
    acc = _conv_acc(
        data, weight, out_shape, strides, dilations, pads, group, input_zp, weight_zp, "acc"
    )
    return _requantize_stage(acc, bias, scale, 1, output_zp, out_dtype, act_min, act_max)


def qlinear_matmul(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None,
    scale: Scale,
    *,
    out_shape: Sequence[int],
    transpose_weight: bool,
    input_zp: int,
    weight_zp: int,
    output_zp: int | None,
    out_dtype: str,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """onnxruntime ``QLinearMatMul``/``QGemm``/``MatMulInteger``: data [..., K] times a
    constant weight [K, N] ([N, K] when ``transpose_weight``), int32 accumulation, plus an
    int32 bias per column, requantized unless ``output_zp`` is None (int32 output)."""
    depth = _shape(data)[-1]
    rk = te.reduce_axis((0, depth), "rk")

    def body(*idx: Expr) -> Expr:
        x = _wide(data[(*idx[:-1], rk)], input_zp)
        w = weight[idx[-1], rk] if transpose_weight else weight[rk, idx[-1]]
        return te.sum(x * _wide(w, weight_zp), axis=rk)

    acc = te.compute(tuple(out_shape), body, name="acc", tag="dense_qlinear")
    if output_zp is None:
        if bias is None:
            return acc
        return te.compute(acc.shape, lambda *i: acc[i] + bias[i[-1]], name="bias_add", tag=ELEMWISE)
    return _requantize_stage(
        acc, bias, scale, len(out_shape) - 1, output_zp, out_dtype, act_min, act_max
    )


def conv_integer2d(
    data: te.Tensor,
    weight: te.Tensor,
    *,
    out_shape: Sequence[int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    pads: tuple[int, int],
    group: int,
    input_zp: int,
    weight_zp: int,
) -> te.Tensor:
    """ONNX ``ConvInteger``: the int32 accumulator of :func:`qlinear_conv2d`, no requantize."""
    return _conv_acc(
        data, weight, out_shape, strides, dilations, pads, group, input_zp, weight_zp,
        "conv_integer",
    )  # fmt: skip


# -- pooling ------------------------------------------------------------------------------


def qlinear_global_average_pool(
    data: te.Tensor, *, scale: float, input_zp: int, output_zp: int, out_dtype: str
) -> te.Tensor:
    """MLAS ``MlasQLinearGlobalAveragePool``: sum - x_zp * H * W, requantized with
    x_scale / (y_scale * H * W) (computed in float32 at import time)."""
    n, c, h, w = _shape(data)
    ry = te.reduce_axis((0, h), "ry")
    rx = te.reduce_axis((0, w), "rx")
    acc = te.compute(
        (n, c, 1, 1),
        lambda b, ch, _y, _x: te.sum(data[b, ch, ry, rx].astype("int32"), axis=[ry, rx]),
        name="acc",
        tag="pool_sum_qlinear",
    )

    def body(*idx: Expr) -> Expr:
        shifted = acc[idx] - c32(input_zp * h * w)
        return requantize_float_expr(shifted, f32(scale), output_zp, out_dtype)

    return te.compute(acc.shape, body, name="requantize", tag=ELEMWISE)


def max_pool2d(
    data: te.Tensor,
    *,
    out_shape: Sequence[int],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int],
    dilations: tuple[int, int],
) -> te.Tensor:
    """ONNX ``MaxPool`` on int8/uint8 NCHW: the largest in-image tap (padding never wins)."""
    _, _, in_h, in_w = _shape(data)
    lowest = RANGES[str(data.dtype)][0]
    ry = te.reduce_axis((0, kernel[0]), "ry")
    rx = te.reduce_axis((0, kernel[1]), "rx")

    def tap(n: Expr, c: Expr, y: Expr, x: Expr) -> Expr:
        iy = y * strides[0] - pads[0] + ry * dilations[0]
        ix = x * strides[1] - pads[1] + rx * dilations[1]
        inside = _in_image(iy, ix, in_h, in_w)
        return tirx.if_then_else(inside, data[n, c, iy, ix], tirx.const(lowest, data.dtype))

    return te.compute(
        tuple(out_shape),
        lambda n, c, y, x: te.max(tap(n, c, y, x), axis=[ry, rx]),
        name="max_pool",
        tag="pool_max_qlinear",
    )


# -- elementwise --------------------------------------------------------------------------


def qlinear_add(
    lhs: te.Tensor,
    rhs: te.Tensor,
    *,
    out_shape: Sequence[int],
    lhs_ratio: float,
    rhs_ratio: float,
    fixed: float,
    lhs_first: bool,
    out_dtype: str,
    offset: int = 0,
) -> te.Tensor:
    """MLAS ``MlasQLinearAddKernelAvx2Helper`` with numpy broadcasting:
    t = fma(b, r_b, fixed); t = fma(a, r_a, t); round to nearest even; saturate. When the
    first input is the one broadcast within onnxruntime's spans, onnxruntime swaps the
    operands, so ``lhs_first`` runs a's fma first (and the importer computes ``fixed`` with
    the roles swapped too).

    Each product of an 8-bit value and a float32 ratio is exact in double and so is the sum
    (the importer checks that the bits fit in 53), so the double sum rounded once to float32
    is the fused multiply-add, on any C compiler and FPU. ``a``/``b`` enter as raw values:
    the zero points are folded into ``fixed`` as onnxruntime does. ``offset`` 128 adds
    to int8 values to compute on their uint8 form (onnxruntime's x86 optimizer turns int8
    QDQ pairs into uint8 ones) and subtracts from the uint8 result."""
    from aot.ops.int8 import broadcast_load

    lo, hi = RANGES["uint8" if offset else out_dtype]

    def fma(value: Expr, ratio: float, addend: Expr) -> Expr:
        wide = value.astype("int32") + c32(offset) if offset else value.astype("int32")
        product = wide.astype("float64") * tirx.const(ratio, "float64")
        return (product + addend.astype("float64")).astype("float32")

    def body(*idx: Expr) -> Expr:
        a = broadcast_load(lhs, idx)
        b = broadcast_load(rhs, idx)
        if lhs_first:
            total = fma(b, rhs_ratio, fma(a, lhs_ratio, f32(fixed)))
        else:
            total = fma(a, lhs_ratio, fma(b, rhs_ratio, f32(fixed)))
        # _mm256_cvtps_epi32 then saturating packs: clamp first, same result in range.
        bounded = tirx.max(tirx.min(total, f32(float(hi))), f32(float(lo)))
        rounded = round_half_even_expr(bounded)
        return (rounded - c32(offset) if offset else rounded).astype(out_dtype)

    return te.compute(tuple(out_shape), body, name="qlinear_add", tag=ELEMWISE)


def dequantized_add(
    lhs: te.Tensor,
    rhs: te.Tensor,
    lhs_table: te.Tensor | None,
    rhs_table: te.Tensor | None,
    *,
    out_shape: Sequence[int],
    scale: float,
    zero_point: int,
    out_dtype: str,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """A QDQ Add that onnxruntime runs in float (an int8 group, an int32 bias): the two
    dequantized float32 operands added in float32, then ``QuantizeLinear`` (x / scale,
    clamped, nearest even, plus zp) into [act_min, act_max]. An operand with a table is
    int8/uint8 and read through it (its DequantizeLinear, a load that no C compiler can
    fuse into the add); one without is already float32 (a dequantized constant)."""
    return _dequantized_binary(
        lhs, rhs, lhs_table, rhs_table, lambda a, b: a + b, "dequantized_add", out_shape,
        scale, zero_point, out_dtype, act_min, act_max,
    )  # fmt: skip


def dequantized_mul(
    lhs: te.Tensor,
    rhs: te.Tensor,
    lhs_table: te.Tensor | None,
    rhs_table: te.Tensor | None,
    *,
    out_shape: Sequence[int],
    scale: float,
    zero_point: int,
    out_dtype: str,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    """:func:`dequantized_add` for a QDQ Mul onnxruntime runs in float: the float32
    product of the dequantized operands (it feeds a division, which no compiler fuses)."""
    return _dequantized_binary(
        lhs, rhs, lhs_table, rhs_table, lambda a, b: a * b, "dequantized_mul", out_shape,
        scale, zero_point, out_dtype, act_min, act_max,
    )  # fmt: skip


def _dequantized_binary(
    lhs: te.Tensor,
    rhs: te.Tensor,
    lhs_table: te.Tensor | None,
    rhs_table: te.Tensor | None,
    combine: Any,
    name: str,
    out_shape: Sequence[int],
    scale: float,
    zero_point: int,
    out_dtype: str,
    act_min: int,
    act_max: int,
) -> te.Tensor:
    from aot.ops.int8 import broadcast_load

    lo, hi = RANGES[out_dtype]
    lo, hi = max(lo, act_min), min(hi, act_max)

    def operand(t: te.Tensor, table: te.Tensor | None, idx: Sequence[Expr]) -> Expr:
        value = broadcast_load(t, idx)
        return value if table is None else table[_byte(value)]

    def body(*idx: Expr) -> Expr:
        total = combine(operand(lhs, lhs_table, idx), operand(rhs, rhs_table, idx))
        quotient = total / f32(scale)
        bounded = tirx.max(
            tirx.min(quotient, f32(float(hi - zero_point))), f32(float(lo - zero_point))
        )
        return (round_half_even_expr(bounded) + c32(zero_point)).astype(out_dtype)

    return te.compute(tuple(out_shape), body, name=name, tag=ELEMWISE)


def qlinear_mul(
    lhs: te.Tensor,
    rhs: te.Tensor,
    *,
    out_shape: Sequence[int],
    ratio: float,
    lhs_zp: int,
    rhs_zp: int,
    output_zp: int,
    out_dtype: str,
    offset: int = 0,
) -> te.Tensor:
    """MLAS ``MlasQLinearMulKernel`` (SSE2, the x86 path) with numpy broadcasting:
    f32(float(a - zp_a) * float(b - zp_b) (exact) * ratio), plus zp in float32, rounded
    to nearest even (so a .5 tie goes to the even neighbour of the sum, not of the
    product), saturated; ``ratio`` is float32 a_scale * b_scale / y_scale.

    The product is clamped to one step past the output range before the zero point is
    added (values beyond saturate either way), so no C compiler can fuse the multiply
    into that add. ``offset`` 128 computes an int8 operator as onnxruntime does on its
    uint8 form (zero points + 128): the zero point added in float32 is then 128 more."""
    from aot.ops.int8 import broadcast_load

    lo, hi = RANGES[out_dtype]
    lo, hi, zp = lo + offset, hi + offset, output_zp + offset

    def body(*idx: Expr) -> Expr:
        a = _wide(broadcast_load(lhs, idx), lhs_zp)
        b = _wide(broadcast_load(rhs, idx), rhs_zp)
        product = (a * b).astype("float32") * f32(ratio)
        top, bottom = float(hi - zp + 1), float(lo - zp - 1)
        bounded = tirx.max(tirx.min(product, f32(top)), f32(bottom))
        shifted = bounded + f32(float(zp))
        clamped = tirx.max(tirx.min(shifted, f32(float(hi))), f32(float(lo)))
        rounded = round_half_even_expr(clamped)
        return (rounded - c32(offset) if offset else rounded).astype(out_dtype)

    return te.compute(tuple(out_shape), body, name="qlinear_mul", tag=ELEMWISE)


def qlinear_average_pool(
    data: te.Tensor,
    dequantized: te.Tensor,
    *,
    out_shape: Sequence[int],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int],
    count_include_pad: bool,
    output_scale: float,
    output_zp: int,
) -> te.Tensor:
    """onnxruntime ``QLinearAveragePool`` (NCHW): the float32 sum of the dequantized
    in-image taps, row by row, divided by the tap count, then
    nearbyintf(y / y_scale + y_zp) saturated.

    ``dequantized`` holds x_scale * (x - x_zp) for each byte: read from a table, a tap is
    a load, which no C compiler can fuse with the running sum into a multiply-add (the
    Cortex-M4 build would, and round once where onnxruntime rounds twice)."""
    _, _, in_h, in_w = _shape(data)
    lo, hi = RANGES[str(data.dtype)]
    ry = te.reduce_axis((0, kernel[0]), "ry")
    rx = te.reduce_axis((0, kernel[1]), "rx")

    def tap(n: Expr, c: Expr, y: Expr, x: Expr) -> Expr:
        iy = y * strides[0] - pads[0] + ry
        ix = x * strides[1] - pads[1] + rx
        inside = _in_image(iy, ix, in_h, in_w)
        value = dequantized[_byte(data[n, c, iy, ix])]
        # Adding +0.0 for a padded tap leaves the sum as onnxruntime's, which skips it.
        return tirx.if_then_else(inside, value, f32(0.0))

    total = te.compute(
        tuple(out_shape),
        lambda n, c, y, x: te.sum(tap(n, c, y, x), axis=[ry, rx]),
        name="sum",
        tag="pool_sum_qlinear",
    )

    def extent(start: Expr, size: int, k: int) -> Expr:
        return tirx.min(start + k, size) - tirx.max(start, 0)

    def body(n: Expr, c: Expr, y: Expr, x: Expr) -> Expr:
        if count_include_pad:
            count = f32(float(kernel[0] * kernel[1]))
        else:
            ys, xs = y * strides[0] - pads[0], x * strides[1] - pads[1]
            taps = extent(ys, in_h, kernel[0]) * extent(xs, in_w, kernel[1])
            count = taps.astype("int32").astype("float32")
        mean = total[n, c, y, x] / count
        shifted = mean / f32(output_scale) + f32(float(output_zp))
        bounded = tirx.max(tirx.min(shifted, f32(float(hi))), f32(float(lo)))
        return round_half_even_expr(bounded).astype(str(data.dtype))

    return te.compute(tuple(out_shape), body, name="qlinear_average_pool", tag=ELEMWISE)


def _byte(value: Expr) -> Expr:
    """The unsigned byte of an int8/uint8 value: the index of onnxruntime's tables."""
    return value.astype("int32") & c32(255)


def lookup_table(data: te.Tensor, table: te.Tensor) -> te.Tensor:
    """A 256-entry table indexed by the value's byte (QLinearSigmoid, QLinearLeakyRelu)."""
    return te.compute(data.shape, lambda *idx: table[_byte(data[idx])], name="lut", tag=ELEMWISE)


def qlinear_concat(
    *inputs: te.Tensor, axis: int, out_shape: Sequence[int], tables: Sequence[bool]
) -> te.Tensor:
    """onnxruntime ``QLinearConcat``: ``inputs`` are the tensors followed by one 256-entry
    table for each input whose flag in ``tables`` is set (a plain copy otherwise)."""
    tensors = inputs[: len(tables)]
    lut = iter(inputs[len(tables) :])
    luts = [next(lut) if flag else None for flag in tables]
    sizes = [_shape(t)[axis] for t in tensors]

    def body(*idx: Expr) -> Expr:
        result = None
        start = 0
        for t, table, size in zip(tensors, luts, sizes):
            local = list(idx)
            local[axis] = idx[axis] - start
            value = t[tuple(local)]
            if table is not None:
                value = table[_byte(value)]
            result = (
                value if result is None else tirx.if_then_else(idx[axis] >= start, value, result)
            )
            start += size
        return result

    return te.compute(tuple(out_shape), body, name="qlinear_concat", tag=INJECTIVE)


def qlinear_softmax(
    data: te.Tensor, table: te.Tensor, *, y_factor: float, output_zp: int
) -> te.Tensor:
    """onnxruntime ``QLinearSoftmax`` over the last axis: a float32 table of exp values
    indexed by (x - max) shifted to the table's end, their float32 sum in order, and
    nearbyintf(e * y_factor / sum) + zp, capped at the type's maximum."""
    shape = _shape(data)
    depth = shape[-1]
    signed = str(data.dtype) == "int8"
    rc = te.reduce_axis((0, depth), "rc")
    peak = te.compute(
        shape[:-1],
        lambda *o: te.max(data[(*o, rc)].astype("int32"), axis=rc),
        name="row_max",
        tag="softmax_qlinear",
    )

    def index(idx: Sequence[Expr]) -> Expr:
        top = 127 if signed else 255
        return (c32(top) - peak[tuple(idx[:-1])] + data[tuple(idx)].astype("int32")) & c32(255)

    rs = te.reduce_axis((0, depth), "rs")
    total = te.compute(
        shape[:-1],
        lambda *o: te.sum(table[index((*o, rs))], axis=rs),
        name="sum_exp",
        tag="softmax_qlinear",
    )

    def body(*idx: Expr) -> Expr:
        ratio = (table[index(idx)] * f32(y_factor)) / total[tuple(idx[:-1])]
        # A product past float32's range is inf; anything from 512 on saturates anyway,
        # and bounding it keeps the conversion to int32 defined.
        value = round_half_even_expr(tirx.min(ratio, f32(512.0))) + c32(output_zp)
        # The value is at least the zero point, so only the top needs a bound.
        return tirx.min(value, c32(RANGES[str(data.dtype)][1])).astype(str(data.dtype))

    return te.compute(shape, body, name="qlinear_softmax", tag="softmax_qlinear")


def quantize_linear(data: te.Tensor, *, scale: float, zero_point: int, out_dtype: str) -> te.Tensor:
    """ONNX ``QuantizeLinear`` as MLAS does it: x / scale in float32, clamped to
    [lo - zp, hi - zp], rounded to nearest even, plus zp."""
    lo, hi = RANGES[out_dtype]

    def body(*idx: Expr) -> Expr:
        quotient = data[idx] / f32(scale)
        bounded = tirx.max(
            tirx.min(quotient, f32(float(hi - zero_point))), f32(float(lo - zero_point))
        )
        return (round_half_even_expr(bounded) + c32(zero_point)).astype(out_dtype)

    return te.compute(data.shape, body, name="quantize", tag=ELEMWISE)


def dequantize_linear(data: te.Tensor, *, scale: float, zero_point: int) -> te.Tensor:
    """ONNX ``DequantizeLinear``: float(int32(x) - zp) * scale, float32."""
    return te.compute(
        data.shape,
        lambda *idx: (data[idx].astype("int32") - c32(zero_point)).astype("float32") * f32(scale),
        name="dequantize",
        tag=ELEMWISE,
    )


__all__ = [
    "conv_integer2d",
    "dequantize_linear",
    "dequantized_add",
    "dequantized_mul",
    "lookup_table",
    "max_pool2d",
    "qlinear_add",
    "qlinear_average_pool",
    "qlinear_concat",
    "qlinear_conv2d",
    "qlinear_global_average_pool",
    "qlinear_matmul",
    "qlinear_mul",
    "qlinear_softmax",
    "quantize_linear",
    "requantize_float_expr",
    "round_half_even_expr",
]
