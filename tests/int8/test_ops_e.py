"""TRANSPOSE_CONV, LOG_SOFTMAX and L2_NORMALIZATION (issue 13, group E) bit-exact with
LiteRT's reference kernels on seeded random one-operator models; the generated C on the
host too; the refusals (SQRT's included)."""

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
from tests.int8.math_models import f32, zero_point
from tests.int8.transpose_norm_models import (
    conv_16x8_chain_model,
    conv_16x8_model,
    l2_normalization_model,
    log_softmax_model,
    ops_e_model,
    random_transpose_conv_model,
)

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


@pytest.mark.parametrize("seed", SEEDS)
def test_l2_normalization(seed: int) -> None:
    """Rows of 1 to 60 values, ranks 2-3, any zero point; rows at the zero point (sum 0)
    and rows one step from it (the smallest sums, where the inverse square root's shift
    turns negative)."""
    rng = np.random.default_rng(1100 + seed)
    shape = [(3, int(rng.integers(1, 61))), (2, 2, int(rng.integers(1, 12))), (4, 3)][seed % 3]
    zp = zero_point(rng)
    model = l2_normalization_model(shape, f32(rng.uniform(0.01, 1)), zp)
    inputs = [[random_input(rng, shape)] for _ in range(3)]
    near = np.clip(zp + rng.integers(-1, 2, shape), -128, 127).astype(np.int8)
    inputs += [[near], [np.full(shape, zp, np.int8)]]
    assert_bit_exact(model, inputs)


def test_l2_normalization_of_a_sum_above_2_pow_29() -> None:
    """9000 values 255 steps from the zero point: TFLite's inverse square root first
    divides the sum by 4."""
    rng = np.random.default_rng(12)
    model = l2_normalization_model((1, 9000), 0.1, 127)
    big = np.full((1, 9000), -128, np.int8)
    assert_bit_exact(model, [[big], [random_input(rng, (1, 9000))]])


def test_l2_normalization_needs_tflites_output_quantization() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 4), "int8", scale=1 / 256, zero_point=0)
    b.add_operator("L2_NORMALIZATION", [x], [y])
    b.mark_output(y)
    with pytest.raises(
        UnsupportedError, match=r"operator 0 \(L2_NORMALIZATION\): the int8 output must have "
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


@pytest.mark.slow
@pytest.mark.toolchain
def test_ops_e_model_in_c_on_the_host(tmp_path: Path) -> None:
    path = tmp_path / "ops_e.tflite"
    path.write_bytes(ops_e_model())
    folder = build(path, tmp_path / "out", "host")
    rng = np.random.default_rng(8)
    batches = [[random_input(rng, (1, 3, 4, 3))] for _ in range(6)]
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        expected = run_tflite_reference(path, inputs)
        assert len(outputs) == len(expected) == 2
        for actual, reference in zip(outputs, expected, strict=True):
            np.testing.assert_array_equal(actual, reference)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_16x8(seed: int, depthwise: bool) -> None:
    """int16 activations: shapes, strides, dilation, SAME/VALID, per-tensor and per-channel
    weights, with and without bias, each fused activation; full-range int16 inputs."""
    model, in_shape = conv_16x8_model(seed, depthwise)
    rng = np.random.default_rng(seed)
    assert_bit_exact(model, [[random_input(rng, in_shape, "int16")] for _ in range(3)])


def test_conv_16x8_with_an_int32_bias_is_unsupported() -> None:
    model, _ = conv_16x8_model(1, False, "int32")
    with pytest.raises(
        UnsupportedError, match=r"operator 0 \(CONV_2D\): bias 'b' is int32; a 16x8 bias must"
    ):
        import_tflite_int8(model)


def test_conv_16x8_chain_model() -> None:
    rng = np.random.default_rng(3)
    model = conv_16x8_chain_model()
    assert_bit_exact(model, [[random_input(rng, (1, 5, 5, 2), "int16")] for _ in range(4)])


@pytest.mark.parametrize("seed", range(6))
def test_mul_16x8(seed: int) -> None:
    """int16 MUL: broadcasting, scales that saturate part of the results, each activation."""
    rng = np.random.default_rng(1300 + seed)
    lhs_shape, rhs_shape, out_shape = [
        ((2, 3, 4), (2, 3, 4), (2, 3, 4)),
        ((2, 3, 4), (4,), (2, 3, 4)),
        ((1, 5), (3, 1), (3, 5)),
    ][seed % 3]
    b = TFLiteModelBuilder()
    sa, sb = f32(rng.uniform(1e-4, 1e-3)), f32(rng.uniform(1e-4, 1e-3))
    x = b.add_input("a", lhs_shape, "int16", scale=sa, zero_point=0)
    w = b.add_input("b", rhs_shape, "int16", scale=sb, zero_point=0)
    so = f32(sa * sb * 32768 * rng.uniform(0.3, 3))
    y = b.add_tensor("y", out_shape, "int16", scale=so, zero_point=0)
    activation = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")[seed % 4]
    b.add_operator("MUL", [x, w], [y], {"fused_activation_function": activation})
    b.mark_output(y)
    inputs = [
        [random_input(rng, lhs_shape, "int16"), random_input(rng, rhs_shape, "int16")]
        for _ in range(3)
    ]
    assert_bit_exact(b.build(), inputs)
