"""Stateful TFLite integer operators as TE computes: SVDF.

A stateful operator is split in two computes: one returns the next state from the
current one (the executor keeps it in the persistent pool between inferences, see
docs/memory_planning.md), the other the operator's output from that next state. Both
follow TFLite's ``reference_ops::EvalIntegerSVDF`` bit for bit (docs/int8.md, "SVDF").
"""

from __future__ import annotations

from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import c32, clamp_expr, multiply_by_quantized_multiplier_expr

Expr = Any


def svdf_state(
    data: te.Tensor,
    weights_feature: te.Tensor,
    state: te.Tensor,
    *,
    memory: int,
    input_zp: int,
    multiplier: int,
    shift: int,
) -> te.Tensor:
    """The next int16 state [batch, filters * memory]: each filter's memory shifted left
    by one, the newest entry the requantized feature product clamped to int16."""
    batch, depth = (int(d) for d in data.shape)
    filters = int(weights_feature.shape[0])
    rk = te.reduce_axis((0, depth), "rk")
    feature = te.compute(
        (batch, filters),
        lambda b, f: te.sum(
            weights_feature[f, rk].astype("int32") * (data[b, rk].astype("int32") - c32(input_zp)),
            axis=rk,
        ),
        name="feature",
    )

    def body(b: Expr, i: Expr) -> Expr:
        newest = clamp_expr(
            multiply_by_quantized_multiplier_expr(feature[b, i // memory], multiplier, shift),
            -32768,
            32767,
        ).astype("int16")
        # TFLite shifts the whole flattened state by one element; each filter's last slot
        # is then overwritten with the newest value, so only in-filter shifts survive.
        last = i % memory == memory - 1
        shifted = state[b, tirx.min(i + 1, filters * memory - 1)]
        return te.if_then_else(last, newest, shifted)

    return te.compute((batch, filters * memory), body, name="svdf_state")


def svdf_output(
    state: te.Tensor,
    weights_time: te.Tensor,
    bias: te.Tensor | None,
    *,
    rank: int,
    output_zp: int,
    multiplier: int,
    shift: int,
) -> te.Tensor:
    """The int8 output [batch, units]: the state times the time weights per filter,
    summed over ``rank`` filters per unit, plus bias, requantized and clamped to int8."""
    batch = int(state.shape[0])
    filters, memory = (int(d) for d in weights_time.shape)
    units = filters // rank
    rm = te.reduce_axis((0, memory), "rm")
    per_filter = te.compute(
        (batch, filters),
        lambda b, f: te.sum(
            weights_time[f, rm].astype("int32") * state[b, f * memory + rm].astype("int32"),
            axis=rm,
        ),
        name="time",
    )
    rr = te.reduce_axis((0, rank), "rr")
    reduced = te.compute(
        (batch, units), lambda b, u: te.sum(per_filter[b, u * rank + rr], axis=rr), name="units"
    )

    def body(b: Expr, u: Expr) -> Expr:
        total = reduced[b, u] if bias is None else reduced[b, u] + bias[u]
        scaled = multiply_by_quantized_multiplier_expr(total, multiplier, shift)
        # clamp(x + zp) as clamp(x, lo - zp, hi - zp) + zp: no int32 overflow in C.
        return (clamp_expr(scaled, -128 - output_zp, 127 - output_zp) + c32(output_zp)).astype(
            "int8"
        )

    return te.compute((batch, units), body, name="svdf_output")
