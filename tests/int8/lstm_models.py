"""Integer UNIDIRECTIONAL_SEQUENCE_LSTM test models written with aot.testing.tflite_builder,
quantized as TFLite's converter quantizes a full-integer LSTM: int8 input, weights and
output state, int32 biases, an int16 cell state with a power-of-two scale, and the five
intermediate tensors (gate results, hidden state). Shared by the host and emulator tests."""

from __future__ import annotations

import numpy as np

from aot.testing.tflite_builder import TFLiteModelBuilder


def _f32(value: float) -> float:
    return float(np.float32(value))


def lstm_model(
    rng: np.random.Generator,
    batch: int = 1,
    steps: int = 3,
    n_input: int = 5,
    n_cell: int = 4,
    cifg: bool = False,
    time_major: bool = False,
    cell_clip: float = 0.0,
    cell_scale_log2: int = -11,
    peephole: bool = False,
    layer_norm: bool = False,
    projection: bool = False,
    activation: str = "TANH",
) -> bytes:
    """One LSTM; weights scaled so that the gate inputs span a few units of Q3.12 (the
    activations' interesting range) and now and then saturate. ``peephole`` adds int16
    cell-to-gate weights; ``layer_norm`` and ``projection`` add those weights, which aot
    refuses."""
    b = TFLiteModelBuilder()
    x_scale = _f32(rng.uniform(0.02, 0.08))
    x_shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    x = b.add_input("x", x_shape, "int8", scale=x_scale, zero_point=int(rng.integers(-30, 30)))
    h_scale = _f32(rng.uniform(1.0, 1.6) / 128)
    h_zp = int(rng.integers(-10, 10))

    def weights(name: str, cols: int, other_scale: float) -> tuple[int, float]:
        w = rng.integers(-127, 128, (n_cell, cols), dtype=np.int8)
        scale = _f32(rng.uniform(2.0, 6.0) / (127 * 60 * np.sqrt(cols) * other_scale))
        return b.add_constant(name, w, scale=scale, zero_point=0), scale

    inputs = [x] + [-1] * 23
    for g, gate in enumerate(("input", "forget", "cell", "output")):
        if cifg and g == 0:
            continue
        inputs[1 + g], wi_scale = weights(f"{gate}_w", n_input, x_scale)
        inputs[5 + g], _ = weights(f"{gate}_r", n_cell, h_scale)
        unit = 1 / (wi_scale * x_scale)
        bias = rng.integers(-int(unit), int(unit) + 1, n_cell, dtype=np.int32)
        inputs[12 + g] = b.add_constant(
            f"{gate}_bias", bias, scale=_f32(wi_scale * x_scale), zero_point=0
        )
    inputs[18] = b.add_tensor(
        "output_state", (batch, n_cell), "int8", scale=h_scale, zero_point=h_zp, is_variable=True
    )
    inputs[19] = b.add_tensor(
        "cell_state", (batch, n_cell), "int16", scale=2.0**cell_scale_log2, zero_point=0,
        is_variable=True,
    )  # fmt: skip
    ones16 = np.ones(n_cell, np.int16)
    if peephole:
        for i in range(10 if cifg else 9, 12):  # cell_to_{input, forget, output}
            w16 = rng.integers(-1024, 1024, n_cell, dtype=np.int16)
            inputs[i] = b.add_constant(f"peephole{i}", w16, scale=2.0**-10, zero_point=0)
    if layer_norm:
        for i in range(20, 24):
            inputs[i] = b.add_constant(f"layer_norm{i}", ones16, scale=2.0**-10, zero_point=0)
    if projection:
        w = np.ones((n_cell, n_cell), np.int8)
        inputs[16] = b.add_constant("projection", w, scale=0.01, zero_point=0)
    y_shape = (*x_shape[:2], n_cell)
    y = b.add_tensor("y", y_shape, "int8", scale=h_scale, zero_point=h_zp)
    intermediates = [
        b.add_tensor(f"{gate}_intermediate", (batch, n_cell), "int16", scale=2.0**-12, zero_point=0)
        for gate in ("input", "forget", "cell", "output")
    ]
    intermediates.append(
        b.add_tensor("hidden", (batch, n_cell), "int8", scale=h_scale, zero_point=h_zp)
    )
    op = b.add_operator(
        "UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [y],
        {"time_major": time_major, "cell_clip": cell_clip, "fused_activation_function": activation},
    )  # fmt: skip
    b.set_intermediates(op, intermediates)
    b.mark_output(y)
    return b.build()
