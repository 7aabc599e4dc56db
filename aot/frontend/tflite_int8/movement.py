"""int8 handlers: SLICE, SPLIT, SPLIT_V, PACK, UNPACK, GATHER, DEPTH_TO_SPACE, SPACE_TO_DEPTH,
ARG_MAX, ARG_MIN, REDUCE_MAX, SUM, RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR.

Registered into ``aot.frontend.tflite_int8``'s handler table when that module is imported.
Shapes, axes, block sizes and resize coordinates are resolved here, at import time; the
kernels (``aot.ops.movement``, ``aot.ops.int8.strided_slice``) only copy, compare or
interpolate. The rules are in docs/int8.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8 import elementwise as _elementwise
from aot.frontend.tflite_int8.importer import (
    _handler,
    _Importer,
    _options,
    _required_options,
    _TensorInfo,
)
from aot.ops import fixedpoint as fp

_INDEX_DTYPES = ["int32", "int64"]
# SLICE, SPLIT, SPLIT_V, UNPACK and PACK copy stored values; LiteRT and TFLite Micro run
# them on int16 as on int8.
_COPY_DTYPES = ["int8", "int16"]


def _int8_pair(
    imp: _Importer, x: _TensorInfo, out: _TensorInfo, dtypes: tuple[str, ...] = ("int8",)
) -> None:
    imp.expect(x, list(dtypes), "input")
    imp.expect(out, [x.dtype], "output")
    imp.per_tensor(x, "input")
    _elementwise._same_quantization(imp, x, out, "input")


def _ints(imp: _Importer, index: int, what: str) -> list[int]:
    imp.expect(imp.tensors[index], _INDEX_DTYPES, what)
    return [int(v) for v in imp.constant(index, what).reshape(-1)]


def _axis(imp: _Importer, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise imp.unsupported(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def _slice(imp: _Importer, bb: Any, value: Any, x: _TensorInfo, begin, sizes, out_shape) -> Any:
    """One output of SLICE/SPLIT/UNPACK: ``sizes`` elements from ``begin`` per dimension,
    reshaped to ``out_shape``."""
    from aot.ops import int8

    if tuple(sizes) == tuple(x.shape) and tuple(out_shape) == tuple(x.shape):
        return value
    return imp.emit(
        bb, int8.strided_slice, value, name=f"strided_slice_{x.dtype}", begin=list(begin),
        strides=[1] * len(begin), out_shape_full=list(sizes), out_shape=tuple(out_shape),
    )  # fmt: skip


def _outputs(imp: _Importer, op: Any) -> list[_TensorInfo]:
    return [imp.tensors[int(i)] for i in op.OutputsAsNumpy()]


@_handler("SLICE")
def _slice_op(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    x = imp.tensors[ins[0]]
    _int8_pair(imp, x, out, _COPY_DTYPES)
    begin, size = _ints(imp, ins[1], "begin"), _ints(imp, ins[2], "size")
    if not len(begin) == len(size) == len(x.shape):
        raise imp.unsupported("begin and size must have one entry per input dimension")
    sizes = []
    for b, s, d in zip(begin, size, x.shape):
        s = d - b if s == -1 else s
        if b < 0 or s < 0 or b + s > d:
            raise imp.unsupported(f"slice begin {begin} size {size} does not fit {list(x.shape)}")
        sizes.append(s)
    if tuple(sizes) != tuple(out.shape):
        raise imp.unsupported(f"output shape {list(out.shape)} is not the slice {sizes}")
    return _slice(imp, bb, imp.value(ins[0]), x, begin, sizes, out.shape)


def _split_outputs(
    imp: _Importer, bb: Any, op: Any, x: _TensorInfo, value: Any, axis: int, parts: list[int]
) -> list[Any]:
    outs = _outputs(imp, op)
    if len(outs) != len(parts):
        raise imp.unsupported(f"{len(outs)} outputs for {len(parts)} parts")
    results, start = [], 0
    for info, part in zip(outs, parts):
        imp.expect(info, [x.dtype], "output")
        if x.quantized:
            _elementwise._same_quantization(imp, x, info, "input")
        shape = list(x.shape)
        shape[axis] = part
        if tuple(shape) != tuple(info.shape):
            raise imp.unsupported(f"output {info.name!r} has shape {list(info.shape)}, not {shape}")
        begin = [0] * len(shape)
        begin[axis] = start
        results.append(_slice(imp, bb, value, x, begin, shape, shape))
        start += part
    return results


@_handler("SPLIT", multi_output=True)
def _split(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    x = imp.tensors[ins[1]]
    # float32 too: Keras' unrolled LSTM splits its gates between a DEQUANTIZE and
    # QUANTIZEs; a split copies values, so it is exact in any type.
    imp.expect(x, [*_COPY_DTYPES, "float32"], "input")
    imp.per_tensor(x, "input")
    (axis,) = _ints(imp, ins[0], "the axis")
    axis = _axis(imp, axis, len(x.shape))
    opts = _required_options(imp, op, "SplitOptions")
    count = int(opts.NumSplits())
    if count <= 0 or x.shape[axis] % count:
        raise imp.unsupported(f"dimension {x.shape[axis]} does not split into {count} parts")
    parts = [x.shape[axis] // count] * count
    return _split_outputs(imp, bb, op, x, imp.value(ins[1]), axis, parts)


@_handler("SPLIT_V", multi_output=True)
def _split_v(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    x = imp.tensors[ins[0]]
    imp.expect(x, _COPY_DTYPES, "input")
    imp.per_tensor(x, "input")
    parts = _ints(imp, ins[1], "the split sizes")
    (axis,) = _ints(imp, ins[2], "the axis")
    axis = _axis(imp, axis, len(x.shape))
    if parts.count(-1) == 1:  # one size may be inferred
        parts[parts.index(-1)] = x.shape[axis] - (sum(parts) + 1)
    if any(p < 0 for p in parts) or sum(parts) != x.shape[axis]:
        raise imp.unsupported(f"split sizes {parts} do not add up to {x.shape[axis]}")
    return _split_outputs(imp, bb, op, x, imp.value(ins[0]), axis, parts)


@_handler("UNPACK", multi_output=True)
def _unpack(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    x = imp.tensors[ins[0]]
    imp.expect(x, _COPY_DTYPES, "input")
    imp.per_tensor(x, "input")
    opts = _required_options(imp, op, "UnpackOptions")
    axis = _axis(imp, int(opts.Axis()), len(x.shape))
    outs = _outputs(imp, op)
    if len(outs) != x.shape[axis]:
        raise imp.unsupported(f"{len(outs)} outputs for dimension {x.shape[axis]}")
    shape = list(x.shape)
    shape[axis] = 1
    squeezed = tuple(d for i, d in enumerate(x.shape) if i != axis)
    results = []
    for k, info in enumerate(outs):
        imp.expect(info, [x.dtype], "output")
        _elementwise._same_quantization(imp, x, info, "input")
        if tuple(info.shape) != squeezed:
            raise imp.unsupported(f"output {info.name!r} is not of shape {list(squeezed)}")
        begin = [0] * len(shape)
        begin[axis] = k
        results.append(_slice(imp, bb, imp.value(ins[0]), x, begin, shape, squeezed))
    return results


@_handler("PACK")
def _pack(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import movement as mv

    imp.expect(out, _COPY_DTYPES, "output")
    opts = _required_options(imp, op, "PackOptions")
    axis = _axis(imp, int(opts.Axis()), len(out.shape))
    first = imp.tensors[ins[0]]
    expected = list(first.shape)
    expected.insert(axis, len(ins))
    if tuple(expected) != tuple(out.shape):
        raise imp.unsupported(f"output shape {list(out.shape)} is not {expected}")
    for i in ins:
        t = imp.tensors[i]
        _int8_pair(imp, t, out, (out.dtype,))
        if t.shape != first.shape:
            raise imp.unsupported("every input must have the same shape")
    return imp.emit(
        bb, mv.pack, *[imp.value(i) for i in ins], name=f"pack_{out.dtype}", axis=axis,
        out_shape=out.shape,
    )  # fmt: skip


@_handler("TILE")
def _tile(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    """Keras 3's UpSampling2D exports EXPAND_DIMS -> TILE -> RESHAPE on int8."""
    from aot.ops import movement as mv

    x = imp.tensors[ins[0]]
    _int8_pair(imp, x, out, tuple(_COPY_DTYPES))
    imp.expect(imp.tensors[ins[1]], _INDEX_DTYPES, "multiples")
    multiples = [int(m) for m in imp.constant(ins[1], "the multiples").reshape(-1)]
    if len(multiples) != len(x.shape) or any(m < 1 for m in multiples):
        raise imp.unsupported(
            f"multiples {multiples} must hold one whole number >= 1 per input dimension "
            f"({len(x.shape)})"
        )
    expected = [size * m for size, m in zip(x.shape, multiples, strict=True)]
    if expected != list(out.shape):
        raise imp.unsupported(f"output shape {list(out.shape)} is not {expected}")
    return imp.emit(bb, mv.tile, imp.value(ins[0]), name=f"tile_{out.dtype}", out_shape=out.shape)


@_handler("GATHER")
def _gather(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import movement as mv

    x, indices = imp.tensors[ins[0]], imp.tensors[ins[1]]
    _int8_pair(imp, x, out)
    imp.expect(indices, _INDEX_DTYPES, "indices")
    opts = _options(op, "GatherOptions")
    axis = _axis(imp, int(opts.Axis()) if opts is not None else 0, len(x.shape))
    if opts is not None and int(opts.BatchDims()) != 0:
        raise imp.unsupported("batch_dims other than 0 is not supported")
    expected = (*x.shape[:axis], *indices.shape, *x.shape[axis + 1 :])
    if tuple(expected) != tuple(out.shape):
        raise imp.unsupported(f"output shape {list(out.shape)} is not {list(expected)}")
    if indices.data is not None and (
        (indices.data < 0).any() or (indices.data >= x.shape[axis]).any()
    ):
        raise imp.unsupported(f"an index is outside [0, {x.shape[axis]})")
    return imp.emit(
        bb, mv.gather, imp.value(ins[0]), imp.value(ins[1]), name="gather_int8", axis=axis,
        out_shape=out.shape,
    )  # fmt: skip


@_handler("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
def _depth_space(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import movement as mv

    x = imp.tensors[ins[0]]
    _int8_pair(imp, x, out)
    to_space = imp.op_name == "DEPTH_TO_SPACE"
    table = "DepthToSpaceOptions" if to_space else "SpaceToDepthOptions"
    block = int(_required_options(imp, op, table).BlockSize())
    if len(x.shape) != 4 or block < 1:
        raise imp.unsupported("expected a 4-D NHWC input and a block size >= 1")
    n, h, w, c = x.shape
    if to_space:
        ok, expected = c % (block * block) == 0, (n, h * block, w * block, c // block**2)
    else:
        ok, expected = h % block == 0 and w % block == 0, (n, h // block, w // block, c * block**2)
    if not ok or tuple(expected) != tuple(out.shape):
        raise imp.unsupported(
            f"block size {block} does not map {list(x.shape)} to {list(out.shape)}"
        )
    fn = mv.depth_to_space if to_space else mv.space_to_depth
    return imp.emit(bb, fn, imp.value(ins[0]), name=f"{imp.op_name.lower()}_int8", block=block)


def _reduced_shape(shape: tuple[int, ...], axes: list[int], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


@_handler("ARG_MAX", "ARG_MIN")
def _arg_min_max(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import movement as mv

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, _INDEX_DTYPES, "output")
    axes = _ints(imp, ins[1], "the axis")
    if len(axes) != 1:
        raise imp.unsupported("exactly one axis is supported")
    axis = _axis(imp, axes[0], len(x.shape))
    expected = _reduced_shape(x.shape, [axis], False)
    if tuple(expected) != tuple(out.shape):
        raise imp.unsupported(f"output shape {list(out.shape)} is not {list(expected)}")
    return imp.emit(
        bb, mv.arg_min_max, imp.value(ins[0]), name=f"{imp.op_name.lower()}_int8", axis=axis,
        is_max=imp.op_name == "ARG_MAX", out_dtype=out.dtype, out_shape=out.shape,
    )  # fmt: skip


def _reduce_axes(imp: _Importer, op: Any, ins: list[int], x: _TensorInfo, out: _TensorInfo):
    axes = sorted({_axis(imp, a, len(x.shape)) for a in _ints(imp, ins[1], "the axes")})
    reducer = _options(op, "ReducerOptions")
    keep_dims = bool(reducer.KeepDims()) if reducer is not None else False
    expected = _reduced_shape(x.shape, axes, keep_dims)
    if tuple(expected) != tuple(out.shape):
        raise imp.unsupported(f"output shape {list(out.shape)} is not {list(expected)}")
    return axes, keep_dims


@_handler("REDUCE_MAX")
def _reduce_max(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import movement as mv

    x = imp.tensors[ins[0]]
    _int8_pair(imp, x, out)
    axes, keep_dims = _reduce_axes(imp, op, ins, x, out)
    return imp.emit(
        bb, mv.reduce_max, imp.value(ins[0]), name="reduce_max_int8", axes=axes,
        keep_dims=keep_dims, out_shape=out.shape,
    )  # fmt: skip


@_handler("SUM")
def _sum(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import movement as mv

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    axes, keep_dims = _reduce_axes(imp, op, ins, x, out)
    # PrepareMeanOrSum: QuantizeMultiplier(double(s_in) / double(s_out)); the sum is not
    # divided (QuantizedMeanOrSum with compute_sum).
    m, s = fp.checked_quantize_multiplier(x.s / out.s)
    return imp.emit(
        bb, mv.reduce_sum, imp.value(ins[0]), name="sum_int8", axes=axes, keep_dims=keep_dims,
        out_shape=out.shape, input_zp=x.zp, output_multiplier=m, output_shift=s,
        output_zp=out.zp,
    )  # fmt: skip


def _nearest_index(i: int, in_size: int, out_size: int, align: bool, half: bool) -> int:
    """TFLite ``GetNearestNeighbor``, in float32 as it computes."""
    if align and out_size > 1:
        scale = np.float32(in_size - 1) / np.float32(out_size - 1)
    else:
        scale = np.float32(in_size) / np.float32(out_size)
    offset = np.float32(0.5 if half else 0.0)
    position = np.float32(np.float32(np.float32(i) + offset) * scale)
    value = int(fp.tflite_round(float(position))) if align else int(np.floor(position))
    value = min(value, in_size - 1)
    return max(0, value) if half else value


def _bilinear_axis(out_size: int, in_size: int, align: bool, half: bool) -> np.ndarray:
    """(lower, upper, Q10 distance) per output index, as TFLite's
    ``ComputeInterpolationValuesInteger`` computes them (C division truncates)."""

    def cdiv(a: int, b: int) -> int:
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q

    scale = cdiv((1 << 10) * in_size + out_size // 2, out_size)
    if align and out_size > 1:
        scale = cdiv((1 << 10) * (in_size - 1) + (out_size - 1) // 2, out_size - 1)
    rows = []
    for v in range(out_size):
        scaled = v * scale + cdiv(scale, 2) - (1 << 9) if half else v * scale
        lower = max(cdiv(scaled, 1 << 10), 0)
        upper = min(cdiv(scaled + (1 << 10) - 1, 1 << 10), in_size - 1)
        rows.append((lower, upper, scaled - (1 << 10) * lower))
    return np.asarray(rows, dtype=np.int32)


@_handler("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR")
def _resize(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import movement as mv

    x = imp.tensors[ins[0]]
    nearest = imp.op_name == "RESIZE_NEAREST_NEIGHBOR"
    # The nearest neighbour copies values, so LiteRT's int16 form is the int8 one.
    _int8_pair(imp, x, out, tuple(_COPY_DTYPES) if nearest else ("int8",))
    if len(x.shape) != 4 or len(out.shape) != 4:
        raise imp.unsupported("expected 4-D NHWC input and output")
    size = _ints(imp, ins[1], "the output size")
    if len(size) != 2 or tuple(size) != tuple(out.shape[1:3]) or out.shape[::3] != x.shape[::3]:
        raise imp.unsupported(f"size {size} does not match output {list(out.shape)}")
    table = "ResizeNearestNeighborOptions" if nearest else "ResizeBilinearOptions"
    opts = _options(op, table)
    align = bool(opts.AlignCorners()) if opts is not None else False
    half = bool(opts.HalfPixelCenters()) if opts is not None else False
    if align and half:
        raise imp.unsupported("align_corners and half_pixel_centers together are invalid")
    (in_h, in_w), (out_h, out_w) = x.shape[1:3], out.shape[1:3]
    if nearest:
        rows = [_nearest_index(i, in_h, out_h, align, half) for i in range(out_h)]
        cols = [_nearest_index(i, in_w, out_w, align, half) for i in range(out_w)]
        return imp.emit(
            bb, mv.resize_nearest, imp.value(ins[0]), relax.const(np.asarray(rows, np.int32)),
            relax.const(np.asarray(cols, np.int32)), name="resize_nearest_int8",
            out_shape=out.shape,
        )  # fmt: skip
    rows_t = _bilinear_axis(out_h, in_h, align, half)
    cols_t = _bilinear_axis(out_w, in_w, align, half)
    for t, limit in ((rows_t, in_h), (cols_t, in_w)):
        if (t[:, :2] >= limit).any():  # TFLite would read outside the image
            raise imp.unsupported("the output size maps a pixel outside the input")
    return imp.emit(
        bb, mv.resize_bilinear, imp.value(ins[0]), relax.const(rows_t), relax.const(cols_t),
        name="resize_bilinear_int8", out_shape=out.shape, single_rounding=fp.single_rounding(),
    )  # fmt: skip
