"""Stateful TFLite integer operators as TE computes: SVDF.

A stateful operator is split in two computes: one returns the next state from the
current one (the executor keeps it in the persistent pool between inferences, see
docs/memory_planning.md), the other the operator's output from that next state. Both
follow TFLite's ``reference_ops::EvalIntegerSVDF`` bit for bit (docs/int8.md, "SVDF"), and
for the int8 state with int8 time weights (TFLite Micro's form) its
``EvalIntegerSvdfReference<int8_t>``: the state's zero point is added to the clamped
newest entry and subtracted again in the time product.
"""

from __future__ import annotations

from typing import Any

import numpy as np
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
    state_zp: int = 0,
) -> te.Tensor:
    """The next state [batch, filters * memory] (int16 or int8): each filter's memory
    shifted left by one, the newest entry the requantized feature product clamped to the
    state's type, plus the state's zero point."""
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

    info = np.iinfo(str(state.dtype))

    def body(b: Expr, i: Expr) -> Expr:
        clamped = clamp_expr(
            multiply_by_quantized_multiplier_expr(feature[b, i // memory], multiplier, shift),
            int(info.min),
            int(info.max),
        )
        # TFLite Micro clamps before adding the zero point and stores the sum in the
        # state's type, so the sum wraps (two's complement) when it leaves the range.
        newest = (clamped + c32(state_zp) if state_zp else clamped).astype(str(state.dtype))
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
    state_zp: int = 0,
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
            weights_time[f, rm].astype("int32")
            * (state[b, f * memory + rm].astype("int32") - c32(state_zp)),
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
