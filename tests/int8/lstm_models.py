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
    n_output: int | None = None,
    projection_bias: bool = False,
    proj_clip: float = 0.0,
    activation: str = "TANH",
    activation_dtype: str = "int8",
) -> bytes:
    """One LSTM; weights scaled so that the gate inputs span a few units of Q3.12 (the
    activations' interesting range) and now and then saturate. ``peephole`` adds int16
    cell-to-gate weights; ``layer_norm`` int16 coefficients per gate (the gate biases
    then in coefficient_scale / 1024 units, the gate intermediates calibrated);
    ``projection`` int8 [n_output, n_cell] weights, optionally a bias and a clip.
    ``activation_dtype`` "int16" writes the 16x8 form as TFLite Micro's kernel reads it
    (int16 input, output and output state, symmetric; int64 gate biases; no
    intermediate tensors, which TFLite Micro cannot allocate)."""
    n_output = n_cell if n_output is None else n_output
    wide = activation_dtype == "int16"
    b = TFLiteModelBuilder()
    x_scale = _f32(rng.uniform(0.02, 0.08) / (256 if wide else 1))
    x_shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    x_zp = 0 if wide else int(rng.integers(-30, 30))
    x = b.add_input("x", x_shape, activation_dtype, scale=x_scale, zero_point=x_zp)
    h_scale = _f32(rng.uniform(1.0, 1.6) / (32768 if wide else 128))
    h_zp = 0 if wide else int(rng.integers(-10, 10))

    def weights(name: str, rows: int, cols: int, other_scale: float) -> tuple[int, float]:
        w = rng.integers(-127, 128, (rows, cols), dtype=np.int8)
        scale = _f32(rng.uniform(2.0, 6.0) / (127 * 60 * np.sqrt(cols) * other_scale))
        return b.add_constant(name, w, scale=scale, zero_point=0), scale

    ln_scales = [_f32(2.0 ** rng.uniform(-13, -10)) for _ in range(4)]
    inputs = [x] + [-1] * 23
    for g, gate in enumerate(("input", "forget", "cell", "output")):
        if cifg and g == 0:
            continue
        inputs[1 + g], wi_scale = weights(f"{gate}_w", n_cell, n_input, x_scale)
        inputs[5 + g], _ = weights(f"{gate}_r", n_cell, n_output, h_scale)
        # Without layer norm the bias adds to the products (their scale); with it, to
        # the normalized gate (coefficient scale / 1024), up to about one unit.
        unit = 1024 / ln_scales[g] if layer_norm else 1 / (wi_scale * x_scale)
        bias = rng.integers(-int(unit), int(unit) + 1, n_cell).astype(
            np.int64 if wide else np.int32
        )
        bias_scale = ln_scales[g] / 1024 if layer_norm else wi_scale * x_scale
        inputs[12 + g] = b.add_constant(f"{gate}_bias", bias, scale=_f32(bias_scale), zero_point=0)
    inputs[18] = b.add_tensor(
        "output_state", (batch, n_output), activation_dtype, scale=h_scale, zero_point=h_zp,
        is_variable=True,
    )  # fmt: skip
    inputs[19] = b.add_tensor(
        "cell_state", (batch, n_cell), "int16", scale=2.0**cell_scale_log2, zero_point=0,
        is_variable=True,
    )  # fmt: skip
    if peephole:
        for i in range(10 if cifg else 9, 12):  # cell_to_{input, forget, output}
            w16 = rng.integers(-1024, 1024, n_cell, dtype=np.int16)
            inputs[i] = b.add_constant(f"peephole{i}", w16, scale=2.0**-10, zero_point=0)
    if layer_norm:
        # Coefficients near 1.0 (as a trained layer norm has them), some far from it.
        for g in range(1 if cifg else 0, 4):
            coefficients = (rng.uniform(0.3, 2.0, n_cell) / ln_scales[g]).astype(np.int16)
            inputs[20 + g] = b.add_constant(
                f"layer_norm{g}", coefficients, scale=ln_scales[g], zero_point=0
            )
    # The hidden state (output gate times tanh of the cell) lies in [-1, 1].
    hidden_scale = _f32(rng.uniform(0.6, 1.0) / 128) if projection else h_scale
    hidden_zp = int(rng.integers(-8, 8)) if projection else h_zp
    if projection:
        # Outputs over a good part of the output state's range.
        p_scale = _f32(rng.uniform(0.5, 1.5) * h_scale * 64 / np.sqrt(n_cell))
        p = rng.integers(-127, 128, (n_output, n_cell), dtype=np.int8)
        inputs[16] = b.add_constant("projection", p, scale=p_scale, zero_point=0)
        if projection_bias:
            unit = 1 / (p_scale * hidden_scale)
            values = rng.integers(-int(unit), int(unit) + 1, n_output, dtype=np.int32)
            inputs[17] = b.add_constant(
                "projection_bias", values, scale=_f32(p_scale * hidden_scale), zero_point=0
            )
    y_shape = (*x_shape[:2], n_output)
    y = b.add_tensor("y", y_shape, activation_dtype, scale=h_scale, zero_point=h_zp)
    gate_scales = [_f32(2.0 ** rng.uniform(-12, -9)) if layer_norm else 2.0**-12 for _ in range(4)]
    intermediates = [
        b.add_tensor(f"{gate}_intermediate", (batch, n_cell), "int16", scale=s, zero_point=0)
        for gate, s in zip(("input", "forget", "cell", "output"), gate_scales, strict=True)
    ]
    intermediates.append(
        b.add_tensor(
            "hidden", (batch, n_cell), activation_dtype, scale=hidden_scale, zero_point=hidden_zp
        )
    )
    options = {
        "time_major": time_major,
        "cell_clip": cell_clip,
        "proj_clip": proj_clip,
        "fused_activation_function": activation,
    }
    op = b.add_operator("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [y], options)
    if not wide:
        b.set_intermediates(op, intermediates)
    b.mark_output(y)
    return b.build()


def tflm_session(model: bytes, plan: list) -> list[np.ndarray]:
    """TFLite Micro's interpreter (the 16x8 LSTM's reference) over a session plan as
    aot.testing.harness.run_session takes it: states carried across invoke() calls,
    reset() at each RESET."""
    from tflite_micro.python.tflite_micro import runtime

    interpreter = runtime.Interpreter.from_bytes(model)
    outputs = []
    for entry in plan:
        if isinstance(entry, str):
            interpreter.reset()
            continue
        interpreter.set_input(entry[0], 0)
        interpreter.invoke()
        outputs.append(interpreter.get_output(0).copy())
    return outputs


def int16_session_plan(seed: int, shape: tuple[int, ...]) -> list:
    """Six int16 inferences, a reset, then the first three inputs again."""
    from aot.testing.harness import RESET
    from tests.int8.harness import random_input

    rng = np.random.default_rng(seed)
    inputs = [[random_input(rng, shape, "int16")] for _ in range(6)]
    return [*inputs, RESET, *inputs[:3]]
