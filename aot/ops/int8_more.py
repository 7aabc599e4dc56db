"""TFLite int8 comparisons (bool results), logical operators, SELECT_V2 and REDUCE_MIN, as
TE computes (issue 13, group D).

Bit-exact with LiteRT's reference kernels; the rules are in docs/int8.md. Scaling
parameters come from the importer; binary and ternary operators broadcast like numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import c32, multiply_by_quantized_multiplier_smaller_than_one_expr
from aot.ops.int8 import BROADCAST
from aot.ops.int8_elementwise import _broadcast_load
from aot.ops.int8_movement import _reduced_index, _shape

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
        value = (_broadcast_load(t, idx).astype("int32") + c32(offset)) * c32(
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
        lambda *idx: fn(_broadcast_load(lhs, idx), _broadcast_load(rhs, idx)),
        name=op.lower(),
        tag=BROADCAST,
    )


def logical(lhs: te.Tensor, rhs: te.Tensor, *, out_shape: Sequence[int], op: str) -> te.Tensor:
    """LOGICAL_AND / LOGICAL_OR on bool tensors, numpy broadcasting."""
    combine = tirx.And if op == "LOGICAL_AND" else tirx.Or
    return te.compute(
        tuple(out_shape),
        lambda *idx: combine(_broadcast_load(lhs, idx), _broadcast_load(rhs, idx)),
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
            _broadcast_load(condition, idx), _broadcast_load(lhs, idx), _broadcast_load(rhs, idx)
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
