"""TRANSPOSE_CONV in its 16x8 form (int16 activations with zero point 0, int8 weights,
an int64 or int32 bias or none) bit-exact with LiteRT's reference kernel on seeded random
one-operator models; the refusals. Also the int16 RESIZE_NEAREST_NEIGHBOR, which the
Keras 16x8 U-Net fixture puts between its transposed convolutions."""

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
from tests.int8.math_models import f32

pytestmark = pytest.mark.unit


def transpose_conv_16x8_model(
    seed: int,
    strides: tuple[int, int],
    same: bool,
    bias_dtype: str | None,
    *,
    activation: str = "NONE",
    bias_type_option: bool | None = None,
) -> tuple[bytes, tuple[int, ...]]:
    """One 16x8 TRANSPOSE_CONV with random geometry and per-channel (odd seeds: per-tensor)
    weights; the output scale spreads the sums over int16 and saturates the tails. An int32
    bias sets ``quantized_bias_type`` INT32 unless ``bias_type_option`` says otherwise."""
    rng = np.random.default_rng(1600 + seed)
    h, w, c = (int(v) for v in rng.integers(1, 6, 3))
    in_shape = (1 + seed % 2, h, w, c)
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    (sh, sw), out_c = strides, int(rng.integers(1, 5))
    # Every output size a converter may write for this input: ``extra`` below the stride.
    extra = (int(rng.integers(0, sh)), int(rng.integers(0, sw)))
    if same:
        oh, ow = h * sh - extra[0], w * sw - extra[1]
    else:
        oh, ow = (h - 1) * sh + kh + extra[0], (w - 1) * sw + kw + extra[1]
    out_shape = (in_shape[0], oh, ow, out_c)
    b = TFLiteModelBuilder()
    x_scale = f32(rng.uniform(1e-4, 1e-3))
    x = b.add_input("x", in_shape, "int16", scale=x_scale, zero_point=0)
    per_channel = seed % 2 == 0
    scales = [f32(v) for v in rng.uniform(0.005, 0.05, out_c if per_channel else 1)]
    weights = rng.integers(-127, 128, (out_c, kh, kw, c), dtype=np.int8)
    wt = b.add_constant(
        "w", weights, scale=scales, zero_point=[0] * len(scales), quantized_dimension=0
    )
    ins = [b.add_constant("shape", np.array(out_shape, np.int32)), wt, x]
    taps = kh * kw * c / (sh * sw)
    # A bias of this size moves an output over about half the int16 range.
    span = int(32768 * 128 * np.sqrt(taps) * 0.2)
    if bias_dtype is not None:
        values = rng.integers(-span, span, out_c).astype(bias_dtype)
        bias_scales = [f32(x_scale * scales[i % len(scales)]) for i in range(out_c)]
        ins.append(
            b.add_constant(
                "b", values, scale=bias_scales, zero_point=[0] * out_c, quantized_dimension=0
            )
        )
    out_scale = f32(x_scale * max(scales) * 32768 * 128 * np.sqrt(taps) * 0.4 / 32767)
    y = b.add_tensor("y", out_shape, "int16", scale=out_scale, zero_point=0)
    options = {
        "padding": "SAME" if same else "VALID",
        "stride_h": sh,
        "stride_w": sw,
        "fused_activation_function": activation,
    }
    if bias_type_option if bias_type_option is not None else bias_dtype == "int32":
        options["quantized_bias_type"] = "INT32"
    b.add_operator("TRANSPOSE_CONV", ins, [y], options)
    b.mark_output(y)
    return b.build(), in_shape


CASES = [
    # seed, strides, SAME, bias, activation
    (0, (1, 1), True, "int64", "NONE"),
    (1, (1, 1), False, None, "RELU"),
    (2, (2, 2), True, "int64", "RELU6"),
    (3, (2, 2), False, "int64", "NONE"),
    (4, (2, 2), True, None, "NONE"),
    (5, (2, 1), False, "int64", "RELU_N1_TO_1"),
    (6, (1, 2), True, "int32", "NONE"),
    (7, (2, 2), False, "int32", "RELU"),
    (8, (3, 2), True, "int64", "NONE"),
]


@pytest.mark.parametrize(("seed", "strides", "same", "bias", "activation"), CASES)
def test_transpose_conv_16x8(
    seed: int, strides: tuple[int, int], same: bool, bias: str | None, activation: str
) -> None:
    """Strides 1 to 3, SAME and VALID with every output size the converter may write,
    per-channel and per-tensor weights, int64, int32 and no bias, each fused activation;
    full-range int16 inputs."""
    model, in_shape = transpose_conv_16x8_model(seed, strides, same, bias, activation=activation)
    rng = np.random.default_rng(seed)
    assert_bit_exact(model, [[random_input(rng, in_shape, "int16")] for _ in range(3)])


def test_transpose_conv_16x8_without_bias_follows_the_bias_type_option() -> None:
    """With no bias, INT32 still selects LiteRT's int32 accumulator."""
    model, in_shape = transpose_conv_16x8_model(9, (2, 2), True, None, bias_type_option=True)
    rng = np.random.default_rng(9)
    assert_bit_exact(model, [[random_input(rng, in_shape, "int16")] for _ in range(3)])


def test_transpose_conv_16x8_int32_bias_without_the_option_is_unsupported() -> None:
    # LiteRT would read the int32 values as int64 ones.
    model, _ = transpose_conv_16x8_model(6, (2, 2), True, "int32", bias_type_option=False)
    with pytest.raises(
        UnsupportedError,
        match=r"operator 0 \(TRANSPOSE_CONV\): bias 'b' is int32; with quantized_bias_type "
        r"unset a 16x8 bias must be int64",
    ):
        import_tflite_int8(model)


def test_transpose_conv_16x8_with_an_input_zero_point_is_unsupported() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 2, 2, 1), "int16", scale=1e-3, zero_point=4)
    w = b.add_constant("w", np.ones((1, 2, 2, 1), np.int8), scale=0.1, zero_point=0)
    shape = b.add_constant("shape", np.array([1, 4, 4, 1], np.int32))
    y = b.add_tensor("y", (1, 4, 4, 1), "int16", scale=1e-3, zero_point=0)
    b.add_operator("TRANSPOSE_CONV", [shape, w, x], [y], {"stride_h": 2, "stride_w": 2})
    b.mark_output(y)
    with pytest.raises(
        UnsupportedError, match=r"operator 0 \(TRANSPOSE_CONV\): input 'x' has zero point 4"
    ):
        import_tflite_int8(b.build())


def test_resize_nearest_neighbor_int16() -> None:
    """Up and down, each mode, in one model: the int16 copy picks the int8 form's pixels."""
    b = TFLiteModelBuilder()
    sizes = [((3, 4), (6, 8)), ((5, 7), (3, 4)), ((2, 3), (7, 5)), ((1, 3), (1, 9))]
    modes = [{}, {"align_corners": True}, {"half_pixel_centers": True}]
    shapes = []
    for i, ((h, w), (oh, ow)) in enumerate(sizes):
        for j, mode in enumerate(modes):
            x = b.add_input(f"x{i}{j}", (1, h, w, 2), "int16", scale=1e-3, zero_point=0)
            y = b.add_tensor(f"y{i}{j}", (1, oh, ow, 2), "int16", scale=1e-3, zero_point=0)
            size = b.add_constant(f"size{i}{j}", np.array([oh, ow], np.int32))
            b.add_operator("RESIZE_NEAREST_NEIGHBOR", [x, size], [y], dict(mode))
            b.mark_output(y)
            shapes.append((1, h, w, 2))
    rng = np.random.default_rng(16)
    assert_bit_exact(b.build(), [[random_input(rng, s, "int16") for s in shapes]])


@pytest.mark.toolchain
@pytest.mark.parametrize("bias", ["int64", "int32"])
def test_transpose_conv_16x8_in_c_on_the_host(tmp_path: Path, bias: str) -> None:
    """The generated C of both accumulator widths, bit-exact on the host."""
    model, in_shape = transpose_conv_16x8_model(2, (2, 2), True, bias)
    path = tmp_path / "tconv16.tflite"
    path.write_bytes(model)
    folder = build(path, tmp_path / "out", "host")
    rng = np.random.default_rng(17)
    batches = [[random_input(rng, in_shape, "int16")] for _ in range(4)]
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        np.testing.assert_array_equal(outputs[0], run_tflite_reference(path, inputs)[0])
