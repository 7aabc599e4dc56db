"""SVDF test models written with aot.testing.tflite_builder, with the scales a converter
would choose from the value ranges (the state covers the feature products, the output the
time-weighted sums), shared by the host and the emulator tests."""

from __future__ import annotations

import numpy as np

from aot.testing.harness import RESET
from aot.testing.tflite_builder import TFLiteModelBuilder
from aot.validate.reference import TFLiteReference
from tests.int8.harness import random_input


def _f32(value: float) -> float:
    return float(np.float32(value))


def add_svdf(
    b: TFLiteModelBuilder,
    rng: np.random.Generator,
    x: int,
    x_shape: tuple[int, int],
    x_scale: float,
    filters: int,
    memory: int,
    rank: int,
    bias: bool = True,
    name: str = "svdf",
) -> tuple[int, float]:
    """Append one SVDF reading tensor ``x``; returns its output tensor and scale."""
    batch, depth = x_shape
    units = filters // rank
    wf = rng.integers(-127, 128, (filters, depth), dtype=np.int8)
    wf_scale = _f32(rng.uniform(0.002, 0.02))
    feature_max = np.abs(wf.astype(np.int64)).sum(axis=1).max() * 128 * x_scale * wf_scale
    # Below the worst case, so large inputs saturate the int16 state now and then.
    st_scale = _f32(feature_max * rng.uniform(0.3, 0.8) / 32767)
    wt = rng.integers(-32767, 32768, (filters, memory), dtype=np.int16)
    wt_scale = _f32(rng.uniform(1e-5, 1e-4))
    typical = np.abs(wt.astype(np.int64)).sum(axis=1).max() * rank * 12000
    out_scale = _f32(typical * st_scale * wt_scale / 127)
    wf_t = b.add_constant(f"{name}_wf", wf, scale=wf_scale, zero_point=0)
    wt_t = b.add_constant(f"{name}_wt", wt, scale=wt_scale, zero_point=0)
    bias_t = -1
    if bias:
        values = rng.integers(-(1 << 20), 1 << 20, units, dtype=np.int32)
        bias_t = b.add_constant(
            f"{name}_bias", values, scale=_f32(st_scale * wt_scale), zero_point=0
        )
    state = b.add_tensor(
        f"{name}_state", (batch, filters * memory), "int16", scale=st_scale, zero_point=0,
        is_variable=True,
    )  # fmt: skip
    y = b.add_tensor(
        f"{name}_out", (batch, units), "int8", scale=out_scale,
        zero_point=int(rng.integers(-20, 20)),
    )  # fmt: skip
    b.add_operator("SVDF", [x, wf_t, wt_t, bias_t, state], [y], {"rank": rank})
    return y, out_scale


def svdf_model(
    rng: np.random.Generator,
    batch: int = 1,
    depth: int = 8,
    filters: int = 6,
    memory: int = 5,
    rank: int = 2,
    bias: bool = True,
) -> bytes:
    """One SVDF."""
    b = TFLiteModelBuilder()
    x_scale = _f32(rng.uniform(0.01, 0.1))
    x = b.add_input(
        "x", (batch, depth), "int8", scale=x_scale, zero_point=int(rng.integers(-128, 128))
    )
    y, _ = add_svdf(b, rng, x, (batch, depth), x_scale, filters, memory, rank, bias)
    b.mark_output(y)
    return b.build()


def svdf_keyword_model(seed: int = 13) -> bytes:
    """A small keyword-spotting shape as in TFLite Micro's micro_speech SVDF model: two
    stacked SVDF layers (two states in the persistent pool), then FULLY_CONNECTED."""
    rng = np.random.default_rng(seed)
    b = TFLiteModelBuilder()
    x_scale = _f32(0.05)
    x = b.add_input("features", (1, 20), "int8", scale=x_scale, zero_point=-3)
    h1, s1 = add_svdf(b, rng, x, (1, 20), x_scale, 16, 6, 2, name="svdf1")
    h2, s2 = add_svdf(b, rng, h1, (1, 8), s1, 8, 4, 1, name="svdf2")
    w = rng.integers(-127, 128, (4, 8), dtype=np.int8)
    w_scale = _f32(0.01)
    w_t = b.add_constant("fc_w", w, scale=w_scale, zero_point=0)
    out_scale = _f32(s2 * w_scale * 8 * 64 / 127)
    y = b.add_tensor("scores", (1, 4), "int8", scale=out_scale, zero_point=2)
    b.add_operator("FULLY_CONNECTED", [h2, w_t, -1], [y])
    b.mark_output(y)
    return b.build()


def litert_session(model: bytes, plan: list) -> list[np.ndarray]:
    """LiteRT over the same plan as aot.testing.harness.run_session: state carried across
    invoke() calls, reset_all_variables() at each RESET."""
    reference = TFLiteReference(model)
    outputs = []
    for entry in plan:
        if isinstance(entry, str):
            reference.interpreter.reset_all_variables()
        else:
            outputs.append(reference.run(list(entry))[0])
    return outputs


def session_plan(seed: int, shape: tuple[int, ...]) -> list:
    """Six inferences, a reset, then the first three inputs again: after the reset they
    must give the first three outputs again."""
    rng = np.random.default_rng(seed)
    inputs = [[random_input(rng, shape)] for _ in range(6)]
    return [*inputs, RESET, *inputs[:3]]
