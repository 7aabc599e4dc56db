"""16x8 operators (int16 activations, int8 weights; issue 13, group B) bit-exact with
LiteRT's reference kernels: randomized FULLY_CONNECTED and ADD models in Relax, and the
generated C of a small int16 model on the host."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.errors import UnsupportedError
from aot.frontend.tflite_int8 import import_tflite_int8
from aot.testing.harness import build, run_many
from aot.testing.reference import run_tflite_reference
from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.harness import assert_bit_exact, random_input
from tests.int8.int16_models import add_fully_connected_16x8, f32, fc_16x8_model

pytestmark = pytest.mark.unit

SEEDS = range(8)
ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


@pytest.mark.parametrize("seed", SEEDS)
def test_fully_connected_16x8(seed: int) -> None:
    rng = np.random.default_rng(800 + seed)
    depth, channels = int(rng.integers(1, 24)), int(rng.integers(1, 9))
    in_shape = [(3, depth), (1, 2, depth), (2, 1, 1, depth), (4, depth)][seed % 4]
    b = TFLiteModelBuilder()
    x_scale = f32(rng.uniform(1e-4, 1e-3))
    x = b.add_input("x", in_shape, "int16", scale=x_scale, zero_point=0)
    bias_dtype = [None, "int64", "int32", "int64"][seed % 4]
    # Without keep_num_dims the output is [batches, channels], as LiteRT resizes it.
    y, _ = add_fully_connected_16x8(
        b, rng, x, x_scale, depth, (int(np.prod(in_shape[:-1])), channels),
        per_channel=seed % 2 == 0,
        bias_dtype=bias_dtype, activation=ACTIVATIONS[seed // 2 % 4],
    )  # fmt: skip
    b.mark_output(y)
    inputs = [[random_input(rng, in_shape, "int16")] for _ in range(3)]
    assert_bit_exact(b.build(), inputs)


@pytest.mark.parametrize("seed", SEEDS)
def test_add_16x8(seed: int) -> None:
    rng = np.random.default_rng(900 + seed)
    shapes = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 5)), ((3,), (1,))]
    a_shape, b_shape = shapes[seed % 4]
    a_scale, b_scale = f32(rng.uniform(1e-4, 1e-2)), f32(rng.uniform(1e-4, 1e-2))
    b = TFLiteModelBuilder()
    lhs = b.add_input("a", a_shape, "int16", scale=a_scale, zero_point=0)
    rhs = b.add_input("b", b_shape, "int16", scale=b_scale, zero_point=0)
    out_shape = tuple(np.broadcast_shapes(a_shape, b_shape))
    out_scale = f32(max(a_scale, b_scale) * rng.uniform(0.5, 2.5))
    y = b.add_tensor("y", out_shape, "int16", scale=out_scale, zero_point=0)
    options = {"pot_scale_int16": False, "fused_activation_function": ACTIVATIONS[seed % 4]}
    b.add_operator("ADD", [lhs, rhs], [y], options)
    b.mark_output(y)
    inputs = [
        [random_input(rng, a_shape, "int16"), random_input(rng, b_shape, "int16")] for _ in range(3)
    ]
    assert_bit_exact(b.build(), inputs)


def test_add_16x8_power_of_two_path_is_unsupported() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "int16", scale=2.0**-12, zero_point=0)
    y = b.add_input("y", (1, 4), "int16", scale=2.0**-12, zero_point=0)
    z = b.add_tensor("z", (1, 4), "int16", scale=2.0**-11, zero_point=0)
    b.add_operator("ADD", [x, y], [z])  # pot_scale_int16 defaults to true
    b.mark_output(z)
    with pytest.raises(UnsupportedError, match=r"operator 0 \(ADD\): int16 ADD with pot_scale"):
        import_tflite_int8(b.build())


def test_fully_connected_16x8_needs_symmetric_activations() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "int16", scale=1e-3, zero_point=5)
    w = b.add_constant("w", np.ones((2, 4), np.int8), scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 2), "int16", scale=1e-3, zero_point=0)
    b.add_operator("FULLY_CONNECTED", [x, w, -1], [y])
    b.mark_output(y)
    with pytest.raises(
        UnsupportedError, match=r"operator 0 \(FULLY_CONNECTED\): input 'x' has zero point 5"
    ):
        import_tflite_int8(b.build())


@pytest.mark.toolchain
def test_fc_16x8_model_in_c_on_the_host(tmp_path: Path) -> None:
    path = tmp_path / "fc16.tflite"
    path.write_bytes(fc_16x8_model())
    folder = build(path, tmp_path / "out", "host")
    rng = np.random.default_rng(12)
    batches = [[random_input(rng, (2, 16), "int16")] for _ in range(6)]
    for inputs, outputs in zip(batches, run_many(folder, batches)):
        np.testing.assert_array_equal(outputs[0], run_tflite_reference(path, inputs)[0])
