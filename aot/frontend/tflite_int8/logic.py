"""int8 handlers (issue 13, group D): the comparisons EQUAL, NOT_EQUAL, GREATER,
GREATER_EQUAL, LESS, LESS_EQUAL (bool results), LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT,
SELECT_V2, REDUCE_MIN, and the copies MIRROR_PAD, REVERSE_V2, BROADCAST_TO,
SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND and GATHER_ND; and the refusal of the float-only
operators (``FLOAT_ONLY``).

Registered into ``aot.frontend.tflite_int8``'s handler table when that module is imported;
the bool tensors they produce and consume live between operators as one byte per value.
Kernels are in ``aot.ops.logic``; the rules are in docs/int8.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8 import elementwise as _elementwise
from aot.frontend.tflite_int8 import movement as _movement
from aot.frontend.tflite_int8.importer import (
    UNSUPPORTED_REASONS,
    _broadcast_shape,
    _handler,
    _Importer,
    _options,
    _TensorInfo,
)
from aot.ops import fixedpoint as fp
from aot.ops.logic import COMPARISONS, LOGICAL

# Operators TensorFlow Lite Micro registers that run in float only: TFLite Micro's kernels
# take float32, and LiteRT's reference kernels either take float32 only (FLOOR, SIN, COS,
# SQUARE, L2_POOL_2D) or are not built into BUILTIN_REF at all (CEIL, ROUND). LiteRT has
# an int8 table for LOG, TFLite Micro does not, so an int8 LOG would not run on a device.
# TFLite Micro's SQRT (IsNumericSupportedType), FLOOR_DIV and FLOOR_MOD take float32 only.
FLOAT_ONLY = (
    "CEIL", "COS", "FLOOR", "FLOOR_DIV", "FLOOR_MOD", "L2_POOL_2D", "LOG", "ROUND", "SIN",
    "SQRT", "SQUARE",
)  # fmt: skip
for _name in FLOAT_ONLY:  # SQRT keeps the importer's own wording
    UNSUPPORTED_REASONS.setdefault(
        _name,
        "a float operator (TFLite Micro runs it in float32 only, so an int8 model cannot "
        "contain it); import the float model with the float frontend (--frontend "
        "relax-tflite)",
    )


def _comparison_multiplier(imp: _Importer, t: _TensorInfo, role: str) -> tuple[int, int]:
    # ComparisonQuantized: QuantizeMultiplierSmallerThanOneExp(double(input scale)), which
    # TFLite checks to lie in (0, 1) (it aborts otherwise).
    if not 0.0 < t.s < 1.0:
        raise imp.unsupported(
            f"{role} {t.name!r} has scale {t.s:g}; TFLite's int8 comparison needs a scale in (0, 1)"
        )
    return fp.quantize_multiplier_smaller_than_one(t.s)


@_handler(*COMPARISONS)
def _comparison(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    a, b = imp.tensors[ins[0]], imp.tensors[ins[1]]
    imp.expect(a, ["int8", "int32"], "input 1")
    imp.expect(b, [a.dtype], "input 2")
    imp.expect(out, ["bool"], "output")
    _broadcast_shape(imp, a.shape, b.shape, out.shape)
    name = f"{imp.op_name.lower()}_{a.dtype}"
    if a.dtype == "int32":
        return imp.emit(
            bb, ops.compare, imp.value(ins[0]), imp.value(ins[1]), name=name,
            out_shape=out.shape, op=imp.op_name,
        )  # fmt: skip
    imp.per_tensor(a, "input 1")
    imp.per_tensor(b, "input 2")
    m1, s1 = _comparison_multiplier(imp, a, "input 1")
    m2, s2 = _comparison_multiplier(imp, b, "input 2")
    return imp.emit(
        bb, ops.compare_scaled, imp.value(ins[0]), imp.value(ins[1]), name=name,
        out_shape=out.shape, op=imp.op_name, lhs_offset=-a.zp, rhs_offset=-b.zp,
        lhs_multiplier=m1, lhs_shift=s1, rhs_multiplier=m2, rhs_shift=s2,
    )  # fmt: skip


@_handler(*LOGICAL)
def _logical(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    a, b = imp.tensors[ins[0]], imp.tensors[ins[1]]
    imp.expect(a, ["bool"], "input 1")
    imp.expect(b, ["bool"], "input 2")
    imp.expect(out, ["bool"], "output")
    _broadcast_shape(imp, a.shape, b.shape, out.shape)
    return imp.emit(
        bb, ops.logical, imp.value(ins[0]), imp.value(ins[1]),
        name=imp.op_name.lower(), out_shape=out.shape, op=imp.op_name,
    )  # fmt: skip


@_handler("LOGICAL_NOT")
def _logical_not(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    x = imp.tensors[ins[0]]
    imp.expect(x, ["bool"], "input")
    imp.expect(out, ["bool"], "output")
    if x.shape != out.shape:
        raise imp.unsupported(f"output shape {list(out.shape)} is not the input's")
    return imp.emit(bb, ops.logical_not, imp.value(ins[0]), name="logical_not")


@_handler("SELECT_V2")
def _select_v2(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    if len(ins) != 3:
        raise imp.unsupported(f"expected 3 inputs (condition, x, y), found {len(ins)}")
    cond, x, y = (imp.tensors[i] for i in ins)
    imp.expect(cond, ["bool"], "condition")
    imp.expect(x, ["int8", "int32"], "input x")
    imp.expect(y, [x.dtype], "input y")
    imp.expect(out, [x.dtype], "output")
    if x.dtype == "int8":
        # TFLite copies stored values: only meaningful when all three agree.
        imp.per_tensor(out, "output")
        _elementwise._same_quantization(imp, x, out, "input x")
        _elementwise._same_quantization(imp, y, out, "input y")
    try:
        shape = tuple(np.broadcast_shapes(cond.shape, x.shape, y.shape))
    except ValueError as exc:
        raise imp.unsupported(
            f"shapes {list(cond.shape)}, {list(x.shape)} and {list(y.shape)} do not broadcast"
        ) from exc
    if shape != tuple(out.shape):
        raise imp.unsupported(
            f"output shape {list(out.shape)} is not the broadcast shape {list(shape)}"
        )
    if len(shape) > 5:
        raise imp.unsupported("SELECT_V2 supports at most 5 dimensions (as TFLite)")
    return imp.emit(
        bb, ops.select_v2, *(imp.value(i) for i in ins), name=f"select_v2_{x.dtype}",
        out_shape=out.shape,
    )  # fmt: skip


@_handler("REDUCE_MIN")
def _reduce_min(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    x = imp.tensors[ins[0]]
    _movement._int8_pair(imp, x, out)
    axes, keep_dims = _movement._reduce_axes(imp, op, ins, x, out)
    return imp.emit(
        bb, ops.reduce_min, imp.value(ins[0]), name="reduce_min_int8", axes=axes,
        keep_dims=keep_dims, out_shape=out.shape,
    )  # fmt: skip


# -- copies: the stored values move, so input and output share quantization --------------


def _pairs(imp: _Importer, index: int, rank: int, what: str) -> list[tuple[int, int]]:
    values = _movement._ints(imp, index, what)
    if len(values) != 2 * rank:
        raise imp.unsupported(f"{what} must be [{rank}, 2], found {len(values)} values")
    return [(values[2 * k], values[2 * k + 1]) for k in range(rank)]


def _check_shape(imp: _Importer, out: _TensorInfo, expected) -> None:
    if tuple(expected) != tuple(out.shape):
        raise imp.unsupported(f"output shape {list(out.shape)} is not {list(expected)}")


@_handler("MIRROR_PAD")
def _mirror_pad(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    x = imp.tensors[ins[0]]
    _movement._int8_pair(imp, x, out)
    paddings = _pairs(imp, ins[1], len(x.shape), "the paddings")
    opts = _options(op, "MirrorPadOptions")
    # MirrorPadMode: REFLECT (0) leaves the edge out of the mirror, SYMMETRIC (1) repeats it.
    offset = 1 if opts is None or int(opts.Mode()) == 0 else 0
    for (before, after), size in zip(paddings, x.shape):
        if min(before, after) < 0 or max(before, after) > size - offset:
            raise imp.unsupported(
                f"paddings {[before, after]} do not fit a dimension of {size} "
                f"(at most {size - offset} in {'REFLECT' if offset else 'SYMMETRIC'} mode)"
            )
    _check_shape(imp, out, [s + a + b for s, (a, b) in zip(x.shape, paddings)])
    return imp.emit(
        bb, ops.mirror_pad, imp.value(ins[0]), name="mirror_pad_int8",
        paddings=tuple(paddings), offset=offset, out_shape=out.shape,
    )  # fmt: skip


@_handler("REVERSE_V2")
def _reverse_v2(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    x = imp.tensors[ins[0]]
    _movement._int8_pair(imp, x, out)
    rank = len(x.shape)
    axes = sorted({_movement._axis(imp, a, rank) for a in _movement._ints(imp, ins[1], "the axes")})
    _check_shape(imp, out, x.shape)
    return imp.emit(bb, ops.reverse, imp.value(ins[0]), name="reverse_v2_int8", axes=tuple(axes))


@_handler("BROADCAST_TO")
def _broadcast_to(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    x = imp.tensors[ins[0]]
    _movement._int8_pair(imp, x, out)
    shape = _movement._ints(imp, ins[1], "the shape")
    _broadcast_shape(imp, x.shape, tuple(shape), out.shape)
    if len(x.shape) > len(shape):
        raise imp.unsupported(f"the shape {shape} has fewer dimensions than the input")
    return imp.emit(
        bb, ops.broadcast_to, imp.value(ins[0]), name="broadcast_to_int8",
        out_shape=out.shape,
    )  # fmt: skip


def _block_shape(imp: _Importer, ins: list[int], x: _TensorInfo) -> list[int]:
    if len(x.shape) not in (3, 4):
        raise imp.unsupported(f"expected a 3-D or 4-D input, found {len(x.shape)}-D (as TFLite)")
    block = _movement._ints(imp, ins[1], "the block shape")
    if len(block) != len(x.shape) - 2 or min(block) < 1:
        raise imp.unsupported(
            f"the block shape {block} must hold one value >= 1 per spatial dimension"
        )
    return block


@_handler("SPACE_TO_BATCH_ND")
def _space_to_batch(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    x = imp.tensors[ins[0]]
    # int16 too (a dilated Conv1D in a 16x8 export): the stored values are moved as they are.
    _movement._int8_pair(imp, x, out, ("int8", "int16"))
    block = _block_shape(imp, ins, x)
    pads = _pairs(imp, ins[2], len(block), "the paddings")
    spatial = []
    for size, b, (before, after) in zip(x.shape[1:], block, pads):
        padded = size + before + after
        if min(before, after) < 0 or padded % b:
            raise imp.unsupported(f"the padded size {padded} is not a multiple of block {b}")
        spatial.append(padded // b)
    _check_shape(imp, out, [x.shape[0] * int(np.prod(block)), *spatial, *x.shape[1 + len(block) :]])
    return imp.emit(
        bb, ops.space_to_batch_nd, imp.value(ins[0]), name=f"space_to_batch_nd_{x.dtype}",
        block=tuple(block), pads_before=tuple(p[0] for p in pads), pad_value=out.zp,
        out_shape=out.shape,
    )  # fmt: skip


@_handler("BATCH_TO_SPACE_ND")
def _batch_to_space(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    x = imp.tensors[ins[0]]
    _movement._int8_pair(imp, x, out, ("int8", "int16"))
    block = _block_shape(imp, ins, x)
    crops = _pairs(imp, ins[2], len(block), "the crops")
    count = int(np.prod(block))
    if x.shape[0] % count:
        raise imp.unsupported(f"the batch {x.shape[0]} is not a multiple of the block {block}")
    spatial = []
    for size, b, (before, after) in zip(x.shape[1:], block, crops):
        cropped = size * b - before - after
        if min(before, after) < 0 or cropped <= 0:
            raise imp.unsupported(f"the crops {[before, after]} leave nothing of {size * b}")
        spatial.append(cropped)
    _check_shape(imp, out, [x.shape[0] // count, *spatial, *x.shape[1 + len(block) :]])
    return imp.emit(
        bb, ops.batch_to_space_nd, imp.value(ins[0]), name=f"batch_to_space_nd_{x.dtype}",
        block=tuple(block), crops_before=tuple(c[0] for c in crops), out_shape=out.shape,
    )  # fmt: skip


@_handler("GATHER_ND")
def _gather_nd(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import logic as ops

    x, indices = imp.tensors[ins[0]], imp.tensors[ins[1]]
    _movement._int8_pair(imp, x, out)
    imp.expect(indices, ["int32", "int64", "int16"], "indices")
    depth = indices.shape[-1] if indices.shape else 0
    if not 1 <= depth <= len(x.shape):
        raise imp.unsupported(
            f"the indices' last dimension {depth} must be in [1, {len(x.shape)}] (the rank)"
        )
    _check_shape(imp, out, [*indices.shape[:-1], *x.shape[depth:]])
    if indices.data is not None:
        limits = np.asarray(x.shape[:depth])
        if (indices.data < 0).any() or (indices.data >= limits).any():
            raise imp.unsupported(f"an index is outside the input's shape {list(x.shape)}")
    return imp.emit(
        bb, ops.gather_nd, imp.value(ins[0]), imp.value(ins[1]), name="gather_nd_int8",
        out_shape=out.shape,
    )  # fmt: skip
