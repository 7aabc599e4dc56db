"""More TFLite int8 operators as TE computes (issue 13, group E): TRANSPOSE_CONV and
L2_NORMALIZATION, bit-exact with TFLite's reference integer kernels (docs/int8.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import (
    c32,
)
from aot.ops.int8 import Param, _requantize_stage, _shape

Expr = Any


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
    _, in_h, in_w, in_c = _shape(data)
    _, k_h, k_w, _ = _shape(weight)
    ry = te.reduce_axis((0, k_h), "ry")
    rx = te.reduce_axis((0, k_w), "rx")
    rc = te.reduce_axis((0, in_c), "rc")
    sh, sw = strides

    def tap(n: Expr, y: Expr, x: Expr, o: Expr) -> Expr:
        ty = y + padding[0] - ry
        tx = x + padding[1] - rx
        iy = tirx.floordiv(ty, sh) if sh > 1 else ty
        ix = tirx.floordiv(tx, sw) if sw > 1 else tx
        conditions = [ty >= 0, iy < in_h, tx >= 0, ix < in_w]
        if sh > 1:
            conditions.append(tirx.floormod(ty, sh) == 0)
        if sw > 1:
            conditions.append(tirx.floormod(tx, sw) == 0)
        # A tap no input pixel reaches reads the zero point: it adds exactly 0.
        value = tirx.if_then_else(
            tirx.all(*conditions), data[n, iy, ix, rc], tirx.const(input_zp, "int8")
        )
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
