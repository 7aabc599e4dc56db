"""Test models for EXP and BATCH_MATMUL (issue 13, group B), written with
aot.testing.tflite_builder; shared by the host tests and the emulator test."""

from __future__ import annotations

import numpy as np

from aot.testing.tflite_builder import TFLiteModelBuilder


def f32(value: float) -> float:
    return float(np.float32(value))


def zero_point(rng: np.random.Generator) -> int:
    """Zero points favouring the extremes, where saturation bugs hide."""
    return int(rng.choice([-128, 127, 0, int(rng.integers(-128, 128))]))


def add_batch_matmul(
    b: TFLiteModelBuilder,
    rng: np.random.Generator,
    lhs: int,
    lhs_shape: tuple[int, ...],
    lhs_scale: float,
    rhs: int,
    rhs_shape: tuple[int, ...],
    rhs_scale: float,
    adj_x: bool,
    adj_y: bool,
) -> tuple[int, tuple[int, ...], float]:
    """Append a BATCH_MATMUL; returns its output tensor, shape and scale (chosen so the
    products spread over the int8 range and saturate at the tails)."""
    rows = lhs_shape[-1] if adj_x else lhs_shape[-2]
    depth = lhs_shape[-2] if adj_x else lhs_shape[-1]
    cols = rhs_shape[-2] if adj_y else rhs_shape[-1]
    batch = tuple(np.broadcast_shapes(lhs_shape[:-2], rhs_shape[:-2]))
    shape = (*batch, rows, cols)
    scale = f32(lhs_scale * rhs_scale * 128 * 128 * np.sqrt(depth) * rng.uniform(0.3, 1) / 127)
    y = b.add_tensor("y", shape, "int8", scale=scale, zero_point=int(rng.integers(-30, 30)))
    b.add_operator("BATCH_MATMUL", [lhs, rhs], [y], {"adj_x": adj_x, "adj_y": adj_y})
    return y, shape, scale


def matmul_exp_rsqrt_model(seed: int = 3) -> bytes:
    """x [2, 3, 8] @ constant [8, 6] (BATCH_MATMUL), then EXP, then RSQRT: the three
    operators in one model for the emulator."""
    rng = np.random.default_rng(seed)
    b = TFLiteModelBuilder()
    x_scale = f32(0.04)
    x = b.add_input("x", (2, 3, 8), "int8", scale=x_scale, zero_point=-7)
    w_scale = f32(0.02)
    w = b.add_constant(
        "w", rng.integers(-127, 128, (8, 6), dtype=np.int8), scale=w_scale, zero_point=0
    )
    y, shape, y_scale = add_batch_matmul(
        b, rng, x, (2, 3, 8), x_scale, w, (8, 6), w_scale, False, False
    )
    del y_scale
    z = b.add_tensor("z", shape, "int8", scale=f32(0.5), zero_point=-128)
    b.add_operator("EXP", [y], [z])
    # EXP's output never goes below its zero point, so RSQRT (LiteRT refuses values below
    # the zero point) sees valid inputs only.
    r = b.add_tensor("r", shape, "int8", scale=f32(0.01), zero_point=-100)
    b.add_operator("RSQRT", [z], [r])
    b.mark_output(r)
    return b.build()
