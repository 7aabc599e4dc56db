"""TFLite indexing and shape operators as TE computes: EMBEDDING_LOOKUP,
DYNAMIC_UPDATE_SLICE, CUMSUM and BROADCAST_ARGS (SHAPE, and BROADCAST_ARGS of constant
shapes, fold to constants at import time; ``copy`` writes such a value when it is a
model output).

Values are copied as stored (no requantization); BROADCAST_ARGS and the int32/int64
CUMSUM compute in their tensors' own integer type, the int8 CUMSUM in TFLite's fixed
point. Indices read at run time are clamped into range, so the C never reads or writes
out of bounds where TFLite would fail the inference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import (
    c32,
    clamp_expr,
    multiply_by_quantized_multiplier_smaller_than_one_expr,
)
from aot.ops.int8 import INJECTIVE

Expr = Any


def _shape(t: te.Tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in t.shape)


def _clamp(value: Expr, low: int, high: int, dtype: str) -> Expr:
    value = value.astype(dtype)
    return tirx.max(tirx.min(value, tirx.const(high, dtype)), tirx.const(low, dtype))


def embedding_lookup(ids: te.Tensor, table: te.Tensor) -> te.Tensor:
    """out[i, ...] = table[ids[i], ...]; an id outside [0, rows) is clamped (TFLite fails
    the inference there)."""
    rows, *rest = _shape(table)

    def body(i: Expr, *inner: Expr) -> Expr:
        row = _clamp(ids[i], 0, rows - 1, ids.dtype)
        return table[(row, *inner)]

    return te.compute((_shape(ids)[0], *rest), body, name="embedding_lookup", tag=INJECTIVE)


def embedding_lookup_hybrid(ids: te.Tensor, table: te.Tensor, *, scale: float) -> te.Tensor:
    """The hybrid form: rows of an int8 table (zero point 0) times its scale, in float32."""
    rows = embedding_lookup(ids, table)
    factor = tirx.const(scale, "float32")
    return te.compute(
        _shape(rows), lambda *i: rows[i].astype("float32") * factor, name="dequantized"
    )


def dynamic_update_slice(operand: te.Tensor, update: te.Tensor, starts: te.Tensor) -> te.Tensor:
    """``operand`` with ``update`` written at ``starts``; each start is clamped to
    [0, operand_dim - update_dim] first, as XLA's DynamicUpdateSlice (and TFLite) does."""
    dims, sizes = _shape(operand), _shape(update)
    dtype = str(starts.dtype)
    first = [_clamp(starts[d], 0, dims[d] - sizes[d], dtype) for d in range(len(dims))]

    def body(*idx: Expr) -> Expr:
        inside = tirx.const(True, "bool")
        offsets = []
        for d, i in enumerate(idx):
            offset = i.astype(dtype) - first[d]
            inside = tirx.all(inside, offset >= 0, offset < sizes[d])
            # Clamped so that the read stays in bounds where the select discards it.
            offsets.append(_clamp(offset, 0, sizes[d] - 1, dtype))
        return tirx.if_then_else(inside, update[tuple(offsets)], operand[idx])

    return te.compute(dims, body, name="dynamic_update_slice", tag=INJECTIVE)


def cumsum(data: te.Tensor, *, axis: int, exclusive: bool, reverse: bool) -> te.Tensor:
    """TFLite CUMSUM in the tensor's own integer type: out[.., j, ..] sums data[.., k, ..]
    over k <= j (k >= j with ``reverse``), the k == j term left out when ``exclusive``."""
    dims = _shape(data)
    k = te.reduce_axis((0, dims[axis]), name="k")

    def body(*idx: Expr) -> Expr:
        j = idx[axis]
        earlier = k > j if reverse else k < j  # the terms summed before position j
        taken = earlier if exclusive else tirx.any(earlier, k == j)
        value = data[(*idx[:axis], k, *idx[axis + 1 :])]
        return te.sum(tirx.if_then_else(taken, value, tirx.const(0, data.dtype)), axis=k)

    return te.compute(dims, body, name="cumsum")


# reference_ops::CumSum (int8) moves each input 20 bits up before scaling, as ADD does.
CUMSUM_LEFT_SHIFT = 20


def cumsum_int8(
    data: te.Tensor,
    *,
    axis: int,
    exclusive: bool,
    reverse: bool,
    input_zp: int,
    input_multiplier: int,
    input_shift: int,
    output_multiplier: int,
    output_shift: int,
    output_zp: int,
) -> te.Tensor:
    """TFLite's int8 CUMSUM (``reference_ops::CumSum``, the kernel TFLite Micro runs):
    each term ``MBQM((x - zp_in) << 20, input multiplier)``, summed in int32 onto a start
    value that is ``-zp_in`` scaled the same way (the reference initialises its
    accumulator so), then ``MBQM(sum, output multiplier) + zp_out`` clamped to int8."""
    dims = _shape(data)
    k = te.reduce_axis((0, dims[axis]), name="k")

    def scaled(centred: Expr) -> Expr:
        shifted = centred * c32(1 << CUMSUM_LEFT_SHIFT)
        return multiply_by_quantized_multiplier_smaller_than_one_expr(
            shifted, input_multiplier, input_shift
        )

    def total(*idx: Expr) -> Expr:
        j = idx[axis]
        earlier = k > j if reverse else k < j  # the terms summed before position j
        taken = earlier if exclusive else tirx.any(earlier, k == j)
        value = data[(*idx[:axis], k, *idx[axis + 1 :])].astype("int32") - c32(input_zp)
        return te.sum(tirx.if_then_else(taken, scaled(value), c32(0)), axis=k)

    sums = te.compute(dims, total, name="cumsum_terms")
    start = scaled(c32(-input_zp))

    def body(*idx: Expr) -> Expr:
        rescaled = multiply_by_quantized_multiplier_smaller_than_one_expr(
            sums[idx] + start, output_multiplier, output_shift
        )
        return clamp_expr(rescaled + c32(output_zp), -128, 127).astype("int8")

    return te.compute(dims, body, name="cumsum_int8")


def broadcast_args(lhs: te.Tensor, rhs: te.Tensor, *, out_size: int) -> te.Tensor:
    """The broadcast of two shape vectors, aligned at their last entries: where one is 1
    (or absent) the other. Incompatible shapes, which TFLite refuses, give the left one's
    entry."""
    n_lhs, n_rhs = _shape(lhs)[0], _shape(rhs)[0]
    one = tirx.const(1, lhs.dtype)

    def entry(t: te.Tensor, count: int, i: Expr) -> Expr:
        position = i - (out_size - count)
        return tirx.if_then_else(position >= 0, t[tirx.max(position, 0)], one)

    def body(i: Expr) -> Expr:
        a, b = entry(lhs, n_lhs, i), entry(rhs, n_rhs, i)
        return tirx.if_then_else(a == one, b, a)

    return te.compute((out_size,), body, name="broadcast_args", tag=INJECTIVE)


def copy(values: te.Tensor, *, out_shape: Sequence[int]) -> te.Tensor:
    """A copy of a value no operator computes (a folded constant, a model input, a
    variable's value at the start of the inference) where a buffer must hold it."""
    return te.compute(tuple(out_shape), lambda *i: values[i], name="copy", tag=INJECTIVE)
