"""TFLite int8 data-movement and selection operators as TE computes: GATHER, PACK,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, ARG_MAX/ARG_MIN, REDUCE_MAX, SUM, RESIZE_NEAREST_NEIGHBOR
and RESIZE_BILINEAR (SLICE, SPLIT, SPLIT_V and UNPACK are ``aot.ops.int8.strided_slice``).

Values are copied or compared as stored; only SUM and RESIZE_BILINEAR compute, in int32.
Resize coordinates are computed at import time (exactly as TFLite's kernels compute them)
and passed as small int32 tables, so the kernels do no float or division.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import c32, clamp_expr, multiply_by_quantized_multiplier_expr
from aot.ops.int8 import ELEMWISE, INJECTIVE

Expr = Any


def _shape(t: te.Tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in t.shape)


def gather(
    data: te.Tensor, indices: te.Tensor, *, axis: int, out_shape: Sequence[int]
) -> te.Tensor:
    """TFLite GATHER (batch_dims 0): out[a, i..., b] = data[a, indices[i...], b].

    An index outside [0, size) is clamped: TFLite fails the whole inference there, and a
    clamped read keeps the C free of out-of-bounds accesses."""
    # The indices' rank from the shapes: a scalar constant may arrive as a 1-element tensor.
    rank = len(out_shape) - len(_shape(data)) + 1
    size = _shape(data)[axis]

    def body(*idx: Expr) -> Expr:
        where = tuple(idx[axis : axis + rank]) if rank else (0,) * len(_shape(indices))
        position = indices[where]
        dtype = str(idx[0].ty) if idx else "int64"
        position = position.astype(dtype)
        position = tirx.max(tirx.min(position, tirx.const(size - 1, dtype)), tirx.const(0, dtype))
        return data[(*idx[:axis], position, *idx[axis + rank :])]

    return te.compute(tuple(out_shape), body, name="gather", tag=INJECTIVE)


def tile(data: te.Tensor, *, out_shape: Sequence[int]) -> te.Tensor:
    """TFLite TILE: ``data`` repeated along each axis, out[i] = data[i mod size] per axis."""
    sizes = _shape(data)

    def body(*idx: Expr) -> Expr:
        return data[tuple(tirx.floormod(i, size) for i, size in zip(idx, sizes, strict=True))]

    return te.compute(tuple(out_shape), body, name="tile", tag=INJECTIVE)


def pack(*tensors: te.Tensor, axis: int, out_shape: Sequence[int]) -> te.Tensor:
    """TFLite PACK: the inputs stacked along a new ``axis``."""

    def body(*idx: Expr) -> Expr:
        which = idx[axis]
        rest = (*idx[:axis], *idx[axis + 1 :])
        result = tensors[0][rest]
        for k in range(1, len(tensors)):
            result = tirx.if_then_else(which >= k, tensors[k][rest], result)
        return result

    return te.compute(tuple(out_shape), body, name="pack", tag=INJECTIVE)


def depth_to_space(data: te.Tensor, *, block: int) -> te.Tensor:
    """TFLite DEPTH_TO_SPACE (NHWC, DCR order)."""
    n, h, w, c = _shape(data)
    out_c = c // (block * block)

    def body(b: Expr, y: Expr, x: Expr, k: Expr) -> Expr:
        iy, by = tirx.floordiv(y, block), tirx.floormod(y, block)
        ix, bx = tirx.floordiv(x, block), tirx.floormod(x, block)
        return data[b, iy, ix, (by * block + bx) * out_c + k]

    return te.compute((n, h * block, w * block, out_c), body, name="depth_to_space", tag=INJECTIVE)


def space_to_depth(data: te.Tensor, *, block: int) -> te.Tensor:
    """TFLite SPACE_TO_DEPTH (NHWC): each block x block patch becomes channels."""
    n, h, w, c = _shape(data)

    def body(b: Expr, y: Expr, x: Expr, k: Expr) -> Expr:
        patch, channel = tirx.floordiv(k, c), tirx.floormod(k, c)
        by, bx = tirx.floordiv(patch, block), tirx.floormod(patch, block)
        return data[b, y * block + by, x * block + bx, channel]

    return te.compute(
        (n, h // block, w // block, c * block * block), body, name="space_to_depth", tag=INJECTIVE
    )


def _reduced_index(in_shape: Sequence[int], axes: Sequence[int], keep_dims: bool, raxes: list):
    def index(idx: Sequence[Expr]) -> tuple:
        out: list[Expr] = []
        it = iter(idx)
        for a in range(len(in_shape)):
            if a in axes:
                out.append(raxes[list(axes).index(a)])
                if keep_dims:
                    next(it)
            else:
                out.append(next(it))
        return tuple(out)

    return index


def arg_min_max(
    data: te.Tensor, *, axis: int, is_max: bool, out_dtype: str, out_shape: Sequence[int]
) -> te.Tensor:
    """TFLite ARG_MAX / ARG_MIN: the first index of the extreme value along ``axis``."""
    in_shape = _shape(data)
    size = in_shape[axis]
    r = te.reduce_axis((0, size), "r")
    index = _reduced_index(in_shape, [axis], False, [r])
    extreme = te.max if is_max else te.min
    best = te.compute(
        tuple(out_shape),
        lambda *o: extreme(data[index(o)], axis=r),
        name="extreme",
        tag="arg_reduce_int8",
    )
    r2 = te.reduce_axis((0, size), "r2")
    index2 = _reduced_index(in_shape, [axis], False, [r2])

    def first(*o: Expr) -> Expr:
        hit = tirx.EQ(data[index2(o)].asobject(), best[o].asobject())
        position = r2.var.astype("int32")
        return te.min(tirx.Select(hit, position, c32(size)), axis=r2)

    found = te.compute(tuple(out_shape), first, name="first", tag="arg_reduce_int8")
    return te.compute(
        tuple(out_shape), lambda *o: found[o].astype(out_dtype), name="arg", tag=ELEMWISE
    )


def reduce_max(
    data: te.Tensor, *, axes: Sequence[int], keep_dims: bool, out_shape: Sequence[int]
) -> te.Tensor:
    """TFLite REDUCE_MAX on int8: the maximum of the stored values."""
    in_shape = _shape(data)
    raxes = [te.reduce_axis((0, in_shape[a]), f"r{a}") for a in axes]
    index = _reduced_index(in_shape, axes, keep_dims, raxes)
    return te.compute(
        tuple(out_shape),
        lambda *o: te.max(data[index(o)], axis=raxes),
        name="reduce_max",
        tag="reduce_max_int8",
    )


def reduce_sum(
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
    """SUM on int8: sum(x - zp_in) requantized by scale_in / scale_out."""
    in_shape = _shape(data)
    raxes = [te.reduce_axis((0, in_shape[a]), f"r{a}") for a in axes]
    index = _reduced_index(in_shape, axes, keep_dims, raxes)
    total = te.compute(
        tuple(out_shape),
        lambda *o: te.sum(data[index(o)].astype("int32") - c32(input_zp), axis=raxes),
        name="sum",
        tag="reduce_sum_int8",
    )

    def body(*o: Expr) -> Expr:
        scaled = multiply_by_quantized_multiplier_expr(total[o], output_multiplier, output_shift)
        zp = int(output_zp)
        return (clamp_expr(scaled, -128 - zp, 127 - zp) + c32(zp)).astype("int8")

    return te.compute(tuple(out_shape), body, name="sum_requantize", tag=ELEMWISE)


def resize_nearest(
    data: te.Tensor, rows: te.Tensor, cols: te.Tensor, *, out_shape: Sequence[int]
) -> te.Tensor:
    """TFLite ``ResizeNearestNeighbor``: ``rows``/``cols`` hold each output row's and
    column's source index (int32)."""
    return te.compute(
        tuple(out_shape),
        lambda b, y, x, c: data[b, rows[y], cols[x], c],
        name="resize_nearest",
        tag=INJECTIVE,
    )


def resize_bilinear(
    data: te.Tensor,
    rows: te.Tensor,
    cols: te.Tensor,
    *,
    out_shape: Sequence[int],
    single_rounding: bool,
) -> te.Tensor:
    """TFLite ``ResizeBilinearInteger``: ``rows[y] = (y0, y1, dy)`` and ``cols[x] =
    (x0, x1, dx)``, the two source indices and the Q10 distance from the first. The
    weighted sum of four int8 values has weights summing to 2**20 and fits int32."""

    def body(b: Expr, y: Expr, x: Expr, c: Expr) -> Expr:
        y0, y1, dy = rows[y, 0], rows[y, 1], rows[y, 2]
        x0, x1, dx = cols[x, 0], cols[x, 1], cols[x, 2]
        one = c32(1 << 10)

        def at(iy: Expr, ix: Expr) -> Expr:
            return data[b, iy, ix, c].astype("int32")

        total = (
            at(y0, x0) * (one - dy) * (one - dx)
            + at(y1, x0) * dy * (one - dx)
            + at(y0, x1) * (one - dy) * dx
            + at(y1, x1) * dy * dx
        )
        if single_rounding:
            return ((total + c32(1 << 19)) >> c32(20)).astype("int8")
        # (total + (total > 0 ? 2**19 : -2**19)) / 2**20, dividing toward zero.
        up = (total + c32(1 << 19)) >> c32(20)
        down = c32(0) - ((c32(0) - total + c32(1 << 19)) >> c32(20))
        return tirx.Select(total > c32(0), up, down).astype("int8")

    return te.compute(tuple(out_shape), body, name="resize_bilinear", tag=INJECTIVE)
