"""TFLite int8 comparisons (bool results), logical operators, SELECT_V2, REDUCE_MIN and the
copies MIRROR_PAD, REVERSE_V2, BROADCAST_TO, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND and
GATHER_ND, as TE computes (issue 13, group D).

Bit-exact with LiteRT's reference kernels; the rules are in docs/int8.md. Scaling
parameters come from the importer; binary and ternary operators broadcast like numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import c32, multiply_by_quantized_multiplier_smaller_than_one_expr
from aot.ops.int8 import BROADCAST, INJECTIVE, broadcast_load
from aot.ops.movement import _reduced_index, _shape

Expr = Any

# TFLite's comparison functors on the scaled (or plain int32) values.
_COMPARE = {
    "EQUAL": lambda a, b: a == b,
    "NOT_EQUAL": lambda a, b: a != b,
    "GREATER": lambda a, b: a > b,
    "GREATER_EQUAL": lambda a, b: a >= b,
    "LESS": lambda a, b: a < b,
    "LESS_EQUAL": lambda a, b: a <= b,
}
COMPARISONS = tuple(_COMPARE)
LOGICAL = ("LOGICAL_AND", "LOGICAL_OR")
# reference_ops::ComparisonWithScaling shifts both offset inputs left by 8.
COMPARISON_LEFT_SHIFT = 8


def compare_scaled(
    lhs: te.Tensor,
    rhs: te.Tensor,
    *,
    out_shape: Sequence[int],
    op: str,
    lhs_offset: int,
    rhs_offset: int,
    lhs_multiplier: int,
    lhs_shift: int,
    rhs_multiplier: int,
    rhs_shift: int,
) -> te.Tensor:
    """TFLite ``ComparisonWithScaling`` (int8): each input ``MBQM<1((x + offset) << 8)``
    with its own scale's multiplier, then compared. Two stored values may scale to the
    same value, so the scaling is kept even when both inputs share their quantization."""

    def scaled(t: te.Tensor, idx: Sequence[Expr], offset: int, mult: int, sh: int) -> Expr:
        value = (broadcast_load(t, idx).astype("int32") + c32(offset)) * c32(
            1 << COMPARISON_LEFT_SHIFT
        )  # |x + offset| <= 255, so the product fits int32
        return multiply_by_quantized_multiplier_smaller_than_one_expr(value, mult, sh)

    fn = _COMPARE[op]
    return te.compute(
        tuple(out_shape),
        lambda *idx: fn(
            scaled(lhs, idx, lhs_offset, lhs_multiplier, lhs_shift),
            scaled(rhs, idx, rhs_offset, rhs_multiplier, rhs_shift),
        ),
        name=op.lower(),
        tag=BROADCAST,
    )


def compare(lhs: te.Tensor, rhs: te.Tensor, *, out_shape: Sequence[int], op: str) -> te.Tensor:
    """TFLite ``ComparisonImpl`` on unquantized values (int32): a plain comparison."""
    fn = _COMPARE[op]
    return te.compute(
        tuple(out_shape),
        lambda *idx: fn(broadcast_load(lhs, idx), broadcast_load(rhs, idx)),
        name=op.lower(),
        tag=BROADCAST,
    )


def logical(lhs: te.Tensor, rhs: te.Tensor, *, out_shape: Sequence[int], op: str) -> te.Tensor:
    """LOGICAL_AND / LOGICAL_OR on bool tensors, numpy broadcasting."""
    combine = tirx.And if op == "LOGICAL_AND" else tirx.Or
    return te.compute(
        tuple(out_shape),
        lambda *idx: combine(broadcast_load(lhs, idx), broadcast_load(rhs, idx)),
        name=op.lower(),
        tag=BROADCAST,
    )


def logical_not(data: te.Tensor) -> te.Tensor:
    return te.compute(
        _shape(data), lambda *idx: tirx.Not(data[idx]), name="logical_not", tag=BROADCAST
    )


def select_v2(
    condition: te.Tensor, lhs: te.Tensor, rhs: te.Tensor, *, out_shape: Sequence[int]
) -> te.Tensor:
    """TFLite ``BroadcastSelect5DSlow``: the stored value of ``lhs`` where the condition
    holds, else of ``rhs``, all three broadcast to the output."""
    return te.compute(
        tuple(out_shape),
        lambda *idx: tirx.Select(
            broadcast_load(condition, idx), broadcast_load(lhs, idx), broadcast_load(rhs, idx)
        ),
        name="select_v2",
        tag=BROADCAST,
    )


def reduce_min(
    data: te.Tensor, *, axes: Sequence[int], keep_dims: bool, out_shape: Sequence[int]
) -> te.Tensor:
    """TFLite REDUCE_MIN on int8: the minimum of the stored values."""
    in_shape = _shape(data)
    raxes = [te.reduce_axis((0, in_shape[a]), f"r{a}") for a in axes]
    index = _reduced_index(in_shape, axes, keep_dims, raxes)
    return te.compute(
        tuple(out_shape),
        lambda *o: te.min(data[index(o)], axis=raxes),
        name="reduce_min",
        tag="reduce_min_int8",
    )


def _const(value: int, like: Expr) -> Expr:
    return tirx.const(value, str(like.ty))


def mirror_pad(
    data: te.Tensor, *, paddings: Sequence[tuple[int, int]], offset: int, out_shape: Sequence[int]
) -> te.Tensor:
    """TFLite MIRROR_PAD: ``offset`` 1 (REFLECT) leaves the edge out of the mirror, 0
    (SYMMETRIC) repeats it. The importer checks that each pad fits the mirrored range."""
    in_shape = _shape(data)

    def source(o: Expr, before: int, size: int) -> Expr:
        i = o - _const(before, o)
        below = _const(offset - 1, o) - i  # -1 -> offset, -2 -> offset + 1, ...
        above = _const(2 * size - 1 - offset, o) - i  # size -> size - 1 - offset, ...
        return tirx.Select(i < _const(0, o), below, tirx.Select(i >= _const(size, o), above, i))

    def body(*idx: Expr) -> Expr:
        return data[
            tuple(source(o, before, size) for o, (before, _), size in zip(idx, paddings, in_shape))
        ]

    return te.compute(tuple(out_shape), body, name="mirror_pad", tag=INJECTIVE)


def reverse(data: te.Tensor, *, axes: Sequence[int]) -> te.Tensor:
    """TFLite REVERSE_V2: the order of each axis in ``axes`` reversed."""
    shape = _shape(data)

    def body(*idx: Expr) -> Expr:
        return data[
            tuple(_const(shape[a] - 1, o) - o if a in axes else o for a, o in enumerate(idx))
        ]

    return te.compute(shape, body, name="reverse_v2", tag=INJECTIVE)


def broadcast_to(data: te.Tensor, *, out_shape: Sequence[int]) -> te.Tensor:
    """TFLite BROADCAST_TO: numpy broadcasting of the stored values."""
    return te.compute(
        tuple(out_shape),
        lambda *idx: broadcast_load(data, idx),
        name="broadcast_to",
        tag=BROADCAST,
    )


def space_to_batch_nd(
    data: te.Tensor,
    *,
    block: Sequence[int],
    pads_before: Sequence[int],
    pad_value: int,
    out_shape: Sequence[int],
) -> te.Tensor:
    """TFLite ``reference_ops::SpaceToBatchND``: output batch ``b = (off) * N + n`` with
    the block offset ``off`` row-major over the block; padded positions hold ``pad_value``
    (the output zero point)."""
    in_shape = _shape(data)
    batch = in_shape[0]
    spatial = len(block)

    def body(*idx: Expr) -> Expr:
        b = idx[0]
        n = tirx.floormod(b, _const(batch, b))
        rest = tirx.floordiv(b, _const(batch, b))
        offsets = []
        for k in reversed(range(spatial)):
            offsets.append(tirx.floormod(rest, _const(block[k], b)))
            rest = tirx.floordiv(rest, _const(block[k], b))
        offsets.reverse()
        positions, inside = [], []
        for k in range(spatial):
            o = idx[1 + k]
            p = o * _const(block[k], o) + offsets[k].astype(str(o.ty)) - _const(pads_before[k], o)
            inside.append(tirx.all(p >= _const(0, o), p < _const(in_shape[1 + k], o)))
            # Clamped, so the read stays in bounds where the pad value is chosen.
            positions.append(tirx.max(tirx.min(p, _const(in_shape[1 + k] - 1, o)), _const(0, o)))
        value = data[(n, *positions, *idx[1 + spatial :])]
        return tirx.Select(tirx.all(*inside), value, tirx.const(pad_value, data.dtype))

    return te.compute(tuple(out_shape), body, name="space_to_batch_nd", tag=INJECTIVE)


def batch_to_space_nd(
    data: te.Tensor, *, block: Sequence[int], crops_before: Sequence[int], out_shape: Sequence[int]
) -> te.Tensor:
    """TFLite ``reference_ops::BatchToSpaceND``: the inverse of SPACE_TO_BATCH_ND, with the
    leading crop of each spatial dimension skipped (the trailing crop is never read)."""
    out_batch = int(out_shape[0])
    spatial = len(block)

    def body(*idx: Expr) -> Expr:
        n = idx[0]
        off = _const(0, n)
        positions = []
        for k in range(spatial):
            p = idx[1 + k] + _const(crops_before[k], idx[1 + k])
            off = off * _const(block[k], n) + tirx.floormod(p, _const(block[k], p)).astype(
                str(n.ty)
            )
            positions.append(tirx.floordiv(p, _const(block[k], p)))
        return data[(off * _const(out_batch, n) + n, *positions, *idx[1 + spatial :])]

    return te.compute(tuple(out_shape), body, name="batch_to_space_nd", tag=INJECTIVE)


def gather_nd(data: te.Tensor, indices: te.Tensor, *, out_shape: Sequence[int]) -> te.Tensor:
    """TFLite GATHER_ND: ``out[i..., rest...] = data[indices[i..., :], rest...]``. An index
    outside its dimension is clamped (TFLite fails the inference; a clamped read keeps the
    C in bounds), as GATHER does."""
    in_shape = _shape(data)
    index_shape = _shape(indices)
    depth = index_shape[-1]
    outer = len(index_shape) - 1

    def body(*idx: Expr) -> Expr:
        lead = idx[:outer]
        position = []
        for k in range(depth):
            dtype = str(idx[0].ty) if idx else "int32"
            v = indices[(*lead, tirx.const(k, dtype))].astype(dtype)
            v = tirx.max(tirx.min(v, tirx.const(in_shape[k] - 1, dtype)), tirx.const(0, dtype))
            position.append(v)
        return data[(*position, *idx[outer:])]

    return te.compute(tuple(out_shape), body, name="gather_nd", tag=INJECTIVE)
