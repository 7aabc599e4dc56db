"""TRANSPOSE_CONV and LOG_SOFTMAX (issue 13, group E) bit-exact with LiteRT's reference
kernels on seeded random one-operator models; the generated C on the host too; the SQRT
refusal."""

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
from tests.int8.more_models import f32, zero_point
from tests.int8.ops_e_models import log_softmax_model, ops_e_model, random_transpose_conv_model

pytestmark = pytest.mark.unit

SEEDS = range(12)


@pytest.mark.parametrize("seed", SEEDS)
def test_transpose_conv(seed: int) -> None:
    """Strides 1-3, SAME and VALID with every output size the converter may write,
    per-tensor and per-channel weights, with and without bias, each fused activation."""
    model, in_shape = random_transpose_conv_model(seed)
    rng = np.random.default_rng(seed)
    assert_bit_exact(model, [[random_input(rng, in_shape)] for _ in range(3)])


def test_transpose_conv_with_nonzero_weight_zero_point_is_unsupported() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 2, 2, 1), "int8", scale=0.1, zero_point=0)
    w = b.add_constant("w", np.ones((1, 2, 2, 1), np.int8), scale=0.1, zero_point=3)
    shape = b.add_constant("shape", np.array([1, 4, 4, 1], np.int32))
    y = b.add_tensor("y", (1, 4, 4, 1), "int8", scale=0.1, zero_point=0)
    b.add_operator("TRANSPOSE_CONV", [shape, w, x], [y], {"stride_h": 2, "stride_w": 2})
    b.mark_output(y)
    with pytest.raises(
        UnsupportedError, match=r"operator 0 \(TRANSPOSE_CONV\): weights 'w' have a nonzero"
    ):
        import_tflite_int8(b.build())


@pytest.mark.parametrize("seed", SEEDS)
def test_log_softmax(seed: int) -> None:
    """Input scales from 1e-3 to 1 (small ones keep every term, large ones cut most at
    diff_min), rows of 1 to 40 values, any rank; rows of one repeated value and rows
    spanning the whole int8 range."""
    rng = np.random.default_rng(1000 + seed)
    shape = [(3, int(rng.integers(1, 41))), (2, 2, int(rng.integers(1, 12))), (1, 40)][seed % 3]
    model = log_softmax_model(shape, f32(10 ** rng.uniform(-3, 0)), zero_point(rng))
    inputs = [[random_input(rng, shape)] for _ in range(3)]
    inputs.append([np.full(shape, int(rng.integers(-128, 128)), np.int8)])
    extremes = random_input(rng, shape)
    extremes[..., 0], extremes[..., -1] = -128, 127
    inputs.append([extremes])
    assert_bit_exact(model, inputs)


def test_log_softmax_needs_tflites_output_quantization() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 4), "int8", scale=1 / 256, zero_point=-128)
    b.add_operator("LOG_SOFTMAX", [x], [y])
    b.mark_output(y)
    with pytest.raises(
        UnsupportedError, match=r"operator 0 \(LOG_SOFTMAX\): the int8 output must have zero "
    ):
        import_tflite_int8(b.build())


def test_sqrt_refusal_says_tflite_has_no_int8_kernel() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 4), "int8", scale=0.1, zero_point=0)
    b.add_operator("SQRT", [x], [y])
    b.mark_output(y)
    with pytest.raises(UnsupportedError) as info:
        import_tflite_int8(b.build())
    message = str(info.value)
    assert "operator 0 (SQRT)" in message and "no int8 SQRT kernel" in message
    assert "float32" in message and "docs/operators.md" in message and "\n" not in message


@pytest.mark.toolchain
def test_ops_e_model_in_c_on_the_host(tmp_path: Path) -> None:
    path = tmp_path / "ops_e.tflite"
    path.write_bytes(ops_e_model())
    folder = build(path, tmp_path / "out", "host")
    rng = np.random.default_rng(8)
    batches = [[random_input(rng, (1, 3, 4, 3))] for _ in range(6)]
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        np.testing.assert_array_equal(outputs[0], run_tflite_reference(path, inputs)[0])
