"""Test models for TRANSPOSE_CONV, LOG_SOFTMAX and L2_NORMALIZATION (issue 13, group E),
written with aot.testing.tflite_builder; shared by the host tests and the emulator test."""

from __future__ import annotations

import numpy as np

from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.math_models import f32, zero_point


def add_transpose_conv(
    b: TFLiteModelBuilder,
    rng: np.random.Generator,
    x: int,
    in_shape: tuple[int, ...],
    in_scale: float,
    out_channels: int,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    same: bool,
    *,
    extra: tuple[int, int] = (0, 0),
    per_channel: bool = True,
    with_bias: bool = True,
    activation: str = "NONE",
) -> tuple[int, tuple[int, ...], float]:
    """Append a TRANSPOSE_CONV; returns its output tensor, shape and scale. ``extra`` (each
    below its stride) removes output rows/columns for SAME and adds them for VALID: every
    size a converter may write for one input size."""
    n, ih, iw, ic = in_shape
    (kh, kw), (sh, sw) = kernel, strides
    if same:
        oh, ow = ih * sh - extra[0], iw * sw - extra[1]
    else:
        oh, ow = (ih - 1) * sh + kh + extra[0], (iw - 1) * sw + kw + extra[1]
    shape = (n, oh, ow, out_channels)
    w_scale: float | list[float] = f32(0.02)
    if per_channel:
        w_scale = [f32(v) for v in rng.uniform(0.005, 0.05, out_channels)]
    weights = rng.integers(-127, 128, (out_channels, kh, kw, ic), dtype=np.int8)
    w = b.add_constant("w", weights, scale=w_scale, zero_point=0, quantized_dimension=0)
    ins = [b.add_constant("shape", np.array(shape, np.int32)), w, x]
    if with_bias:
        ins.append(b.add_constant("b", rng.integers(-3000, 3000, out_channels, dtype=np.int32)))
    # Taps per output pixel: about kh kw ic / (sh sw); scaled so the tails saturate.
    taps = kh * kw * ic / (sh * sw)
    scale = f32(in_scale * 0.02 * 128 * 40 * np.sqrt(taps) / 127 * rng.uniform(0.2, 1))
    y = b.add_tensor("y", shape, "int8", scale=scale, zero_point=int(rng.integers(-30, 30)))
    options = {
        "padding": "SAME" if same else "VALID",
        "stride_h": sh,
        "stride_w": sw,
        "fused_activation_function": activation,
    }
    b.add_operator("TRANSPOSE_CONV", ins, [y], options)
    return y, shape, scale


def random_transpose_conv_model(seed: int) -> tuple[bytes, tuple[int, ...]]:
    """One TRANSPOSE_CONV with random geometry, quantization, bias and activation."""
    rng = np.random.default_rng(900 + seed)
    h, w, c = (int(v) for v in rng.integers(1, 6, 3))
    in_shape = (1 + seed % 2, h, w, min(c, 4))
    kh, kw, sh, sw = (int(v) for v in rng.integers(1, 4, 4))
    extra = (int(rng.integers(0, sh)), int(rng.integers(0, sw)))
    b = TFLiteModelBuilder()
    x_scale = f32(rng.uniform(0.01, 0.1))
    x = b.add_input("x", in_shape, "int8", scale=x_scale, zero_point=zero_point(rng))
    y, _, _ = add_transpose_conv(
        b, rng, x, in_shape, x_scale, int(rng.integers(1, 5)), (kh, kw), (sh, sw),
        bool(seed & 1), extra=extra, per_channel=seed % 3 != 0, with_bias=seed % 4 != 1,
        activation=("NONE", "RELU", "RELU6", "RELU_N1_TO_1")[seed % 4],
    )  # fmt: skip
    b.mark_output(y)
    return b.build(), in_shape


def log_softmax_model(shape: tuple[int, ...], scale: float, zero_point: int) -> bytes:
    """One LOG_SOFTMAX over the last axis (output zero point 127, scale 16/256, as TFLite
    requires)."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", scale=scale, zero_point=zero_point)
    y = b.add_tensor("y", shape, "int8", scale=16 / 256, zero_point=127)
    b.add_operator("LOG_SOFTMAX", [x], [y])
    b.mark_output(y)
    return b.build()


def l2_normalization_model(shape: tuple[int, ...], scale: float, zero_point: int) -> bytes:
    """One L2_NORMALIZATION over the last axis (output zero point 0, scale 1/128, as
    TFLite requires)."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", scale=scale, zero_point=zero_point)
    y = b.add_tensor("y", shape, "int8", scale=1 / 128, zero_point=0)
    b.add_operator("L2_NORMALIZATION", [x], [y])
    b.mark_output(y)
    return b.build()


def ops_e_model(seed: int = 5) -> bytes:
    """x [1, 3, 4, 3] -> TRANSPOSE_CONV (stride 2, SAME, per-channel, bias, RELU)
    [1, 6, 8, 4] -> LOG_SOFTMAX (output 0) and L2_NORMALIZATION (output 1): the group's
    operators in one model for the C pipeline and the emulator."""
    rng = np.random.default_rng(seed)
    b = TFLiteModelBuilder()
    x_scale = f32(0.05)
    x = b.add_input("x", (1, 3, 4, 3), "int8", scale=x_scale, zero_point=-5)
    y, shape, _ = add_transpose_conv(
        b, rng, x, (1, 3, 4, 3), x_scale, 4, (3, 3), (2, 2), True, activation="RELU"
    )
    z = b.add_tensor("z", shape, "int8", scale=16 / 256, zero_point=127)
    b.add_operator("LOG_SOFTMAX", [y], [z])
    b.mark_output(z)
    n = b.add_tensor("n", shape, "int8", scale=1 / 128, zero_point=0)
    b.add_operator("L2_NORMALIZATION", [y], [n])
    b.mark_output(n)
    return b.build()


def conv_16x8_model(seed: int, depthwise: bool, bias_dtype: str = "int64") -> tuple[bytes, tuple]:
    """One 16x8 CONV_2D or DEPTHWISE_CONV_2D: int16 activations (zero point 0), per-channel
    int8 weights, a bias (none for a DEPTHWISE_CONV_2D of a seed divisible by 4: LiteRT's
    16x8 CONV_2D requires one)."""
    rng = np.random.default_rng(1200 + seed)
    ih, iw = (int(v) for v in rng.integers(2, 7, 2))
    ic = int(rng.integers(1, 5))
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    stride, dilation = int(rng.integers(1, 3)), 1 + seed % 3 // 2
    oc = ic * int(rng.integers(1, 3)) if depthwise else int(rng.integers(1, 5))
    same = bool(seed & 1)
    span_h, span_w = (kh - 1) * dilation + 1, (kw - 1) * dilation + 1
    ih, iw = max(ih, span_h), max(iw, span_w)
    oh = (ih + stride - 1) // stride if same else (ih - span_h + stride) // stride
    ow = (iw + stride - 1) // stride if same else (iw - span_w + stride) // stride
    b = TFLiteModelBuilder()
    xs = f32(rng.uniform(1e-4, 1e-3))
    in_shape = (1 + seed % 2, ih, iw, ic)
    x = b.add_input("x", in_shape, "int16", scale=xs, zero_point=0)
    w_shape = (1, kh, kw, oc) if depthwise else (oc, kh, kw, ic)
    ws = [f32(v) for v in rng.uniform(0.005, 0.05, oc)] if seed % 3 else [f32(0.02)] * oc
    weights = rng.integers(-127, 128, w_shape, dtype=np.int8)
    w = b.add_constant(
        "w", weights, scale=ws, zero_point=0, quantized_dimension=3 if depthwise else 0
    )
    ins = [x, w]
    if seed % 4 or not depthwise:
        values = rng.integers(-300000, 300000, oc).astype(bias_dtype)
        ins.append(b.add_constant("b", values, scale=[f32(xs * v) for v in ws], zero_point=0))
    taps = kh * kw * (1 if depthwise else ic)
    ys = f32(xs * 0.02 * 32768 * np.sqrt(taps) / 32767 * rng.uniform(0.2, 1))
    y = b.add_tensor("y", (in_shape[0], oh, ow, oc), "int16", scale=ys, zero_point=0)
    options: dict = {
        "padding": "SAME" if same else "VALID",
        "stride_h": stride,
        "stride_w": stride,
        "dilation_h_factor": dilation,
        "dilation_w_factor": dilation,
        "fused_activation_function": ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")[seed % 4],
    }
    if depthwise:
        options["depth_multiplier"] = oc // ic
    b.add_operator("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", ins, [y], options)
    b.mark_output(y)
    return b.build(), in_shape


def conv_16x8_chain_model(seed: int = 6) -> bytes:
    """x int16 [1, 5, 5, 2] -> CONV_2D 16x8 (3x3, SAME, 4 channels, RELU) ->
    DEPTHWISE_CONV_2D 16x8 (3x3, stride 2, VALID, multiplier 2) [1, 2, 2, 8] -> MUL 16x8
    (squared): the group's int16 operators in one model for the C pipeline and the
    emulator."""
    rng = np.random.default_rng(seed)
    b = TFLiteModelBuilder()
    xs = f32(5e-4)
    x = b.add_input("x", (1, 5, 5, 2), "int16", scale=xs, zero_point=0)
    ws1 = [f32(v) for v in rng.uniform(0.005, 0.05, 4)]
    w1 = b.add_constant(
        "w1", rng.integers(-127, 128, (4, 3, 3, 2), dtype=np.int8), scale=ws1, zero_point=0
    )
    b1 = b.add_constant("b1", rng.integers(-30000, 30000, 4).astype(np.int64))
    s1 = f32(xs * 0.02 * 32768 * np.sqrt(18) / 32767 * 0.5)
    y1 = b.add_tensor("y1", (1, 5, 5, 4), "int16", scale=s1, zero_point=0)
    b.add_operator("CONV_2D", [x, w1, b1], [y1], {"fused_activation_function": "RELU"})
    ws2 = [f32(v) for v in rng.uniform(0.005, 0.05, 8)]
    w2 = b.add_constant(
        "w2", rng.integers(-127, 128, (1, 3, 3, 8), dtype=np.int8), scale=ws2, zero_point=0,
        quantized_dimension=3,
    )  # fmt: skip
    b2 = b.add_constant("b2", rng.integers(-30000, 30000, 8).astype(np.int64))
    s2 = f32(s1 * 0.02 * 32768 * 3 / 32767 * 0.5)
    y2 = b.add_tensor("y2", (1, 2, 2, 8), "int16", scale=s2, zero_point=0)
    options = {"padding": "VALID", "stride_h": 2, "stride_w": 2, "depth_multiplier": 2}
    b.add_operator("DEPTHWISE_CONV_2D", [y1, w2, b2], [y2], options)
    y3 = b.add_tensor("y3", (1, 2, 2, 8), "int16", scale=f32(s2 * s2 * 32768 * 0.7), zero_point=0)
    b.add_operator("MUL", [y2, y2], [y3])
    b.mark_output(y3)
    return b.build()
