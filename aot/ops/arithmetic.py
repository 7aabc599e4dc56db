"""More TFLite int8 operators as TE computes (issue 13, group B): BATCH_MATMUL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te

from aot.ops.fixedpoint import c32, clamp_expr, multiply_by_quantized_multiplier_expr

Expr = Any


def _batch_index(idx: Sequence[Expr], shape: Sequence[int], out_batch: int) -> list[Expr]:
    """The batch indices of one operand, broadcast (numpy rules) against the output's."""
    rank = len(shape) - 2
    lead = list(idx[out_batch - rank : out_batch])
    return [0 if d == 1 else i for i, d in zip(lead, shape[:rank])]


def batch_matmul(
    lhs: te.Tensor,
    rhs: te.Tensor,
    *,
    out_shape: Sequence[int],
    adj_x: bool,
    adj_y: bool,
    lhs_zp: int,
    rhs_zp: int,
    output_zp: int,
    multiplier: int,
    shift: int,
) -> te.Tensor:
    """TFLite ``reference_ops::BatchMatMul`` (int8): sum over depth of (lhs - zp) *
    (rhs - zp) per batch, requantized by one multiplier, clamped to int8."""
    lhs_shape = [int(d) for d in lhs.shape]
    rhs_shape = [int(d) for d in rhs.shape]
    depth = lhs_shape[-2] if adj_x else lhs_shape[-1]
    out_batch = len(out_shape) - 2
    rk = te.reduce_axis((0, depth), "rk")

    def acc(*idx: Expr) -> Expr:
        i, j = idx[-2], idx[-1]
        lb = _batch_index(idx, lhs_shape, out_batch)
        rb = _batch_index(idx, rhs_shape, out_batch)
        x = lhs[(*lb, rk, i)] if adj_x else lhs[(*lb, i, rk)]
        y = rhs[(*rb, j, rk)] if adj_y else rhs[(*rb, rk, j)]
        return te.sum(
            (x.astype("int32") - c32(lhs_zp)) * (y.astype("int32") - c32(rhs_zp)), axis=rk
        )

    total = te.compute(tuple(out_shape), acc, name="acc")

    def body(*idx: Expr) -> Expr:
        scaled = multiply_by_quantized_multiplier_expr(total[idx], multiplier, shift)
        # clamp(x + zp) as clamp(x, lo - zp, hi - zp) + zp: no int32 overflow in C.
        clamped = clamp_expr(scaled, -128 - output_zp, 127 - output_zp)
        return (clamped + c32(output_zp)).astype("int8")

    return te.compute(tuple(out_shape), body, name="batch_matmul")
