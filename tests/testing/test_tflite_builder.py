"""The TFLite builder writes models LiteRT's reference kernels load and compute correctly.

Every operator in the builder's required set is built alone, run by
``run_tflite_reference`` and compared with numpy: exactly where the operator moves data,
within float rounding for float32 kernels and within a small number of quantization steps
(LSB) for int8 kernels, whose fixed-point requantization differs from float math by design.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from aot.errors import ConfigError, ModelError
from aot.testing import OPERATORS, TFLiteModelBuilder, run_onnx_reference, run_tflite_reference

pytestmark = pytest.mark.unit

REQUIRED_OPERATORS = [
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "FULLY_CONNECTED",
    "ADD",
    "SUB",
    "MUL",
    "AVERAGE_POOL_2D",
    "MAX_POOL_2D",
    "RESHAPE",
    "SOFTMAX",
    "PAD",
    "CONCATENATION",
    "MEAN",
    "QUANTIZE",
    "DEQUANTIZE",
    "LOGISTIC",
    "TANH",
    "HARD_SWISH",
    "RELU",
    "RELU6",
    "STRIDED_SLICE",
    "TRANSPOSE",
]


# -- helpers ---------------------------------------------------------------------------


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def qparams(real: np.ndarray) -> tuple[float, int]:
    """Asymmetric int8 parameters covering ``real`` (and 0, as TFLite requires)."""
    lo = min(float(real.min()), 0.0)
    hi = max(float(real.max()), 0.0)
    scale = (hi - lo) / 255.0 or 1.0
    zero_point = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return scale, zero_point


def quantize(real: np.ndarray, scale: float | np.ndarray, zero_point: int) -> np.ndarray:
    # TFLite rounds half away from zero; np.round would round half to even.
    scaled = np.asarray(real, dtype=np.float64) / scale
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    return np.clip(rounded + zero_point, -128, 127).astype(np.int8)


def dequantize(q: np.ndarray, scale: float | np.ndarray, zero_point: int) -> np.ndarray:
    return (q.astype(np.float64) - zero_point) * scale


def assert_within_lsb(
    actual: np.ndarray, expected_real: np.ndarray, scale: float, zero_point: int, lsb: int = 1
) -> None:
    assert actual.dtype == np.int8
    expected = quantize(expected_real, scale, zero_point)
    assert actual.shape == expected.shape
    diff = np.abs(actual.astype(np.int32) - expected.astype(np.int32))
    assert diff.max() <= lsb, f"max difference {diff.max()} LSB"


def random_int8(shape: Sequence[int], seed: int = 1) -> np.ndarray:
    return rng(seed).integers(-128, 128, size=tuple(shape), dtype=np.int8)


def random_float(shape: Sequence[int], seed: int = 1) -> np.ndarray:
    return rng(seed).standard_normal(tuple(shape)).astype(np.float32)


def pad_amounts(
    size: int, kernel: int, stride: int, dilation: int, padding: str
) -> tuple[int, int, int]:
    """TFLite's output size and (before, after) padding for one spatial axis."""
    effective = (kernel - 1) * dilation + 1
    if padding == "VALID":
        return (size - effective) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return out, total // 2, total - total // 2


def windows(
    x: np.ndarray, kh: int, kw: int, stride: int, dilation: int, padding: str, fill: float = 0.0
) -> np.ndarray:
    """NHWC -> (N, OH, OW, KH, KW, C) patches, padded with ``fill``."""
    n, h, w, c = x.shape
    oh, top, bottom = pad_amounts(h, kh, stride, dilation, padding)
    ow, left, right = pad_amounts(w, kw, stride, dilation, padding)
    xp = np.pad(
        x.astype(np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=fill
    )
    out = np.empty((n, oh, ow, kh, kw, c))
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dilation, i * dilation + (oh - 1) * stride + 1, stride)
            cols = slice(j * dilation, j * dilation + (ow - 1) * stride + 1, stride)
            out[:, :, :, i, j, :] = xp[:, rows, cols, :]
    return out


def conv2d(
    x: np.ndarray,
    w_ohwi: np.ndarray,
    bias: np.ndarray,
    stride: int,
    padding: str,
    dilation: int = 1,
) -> np.ndarray:
    p = windows(x, w_ohwi.shape[1], w_ohwi.shape[2], stride, dilation, padding)
    return np.einsum("nyxijc,oijc->nyxo", p, w_ohwi.astype(np.float64)) + bias


def depthwise_conv2d(
    x: np.ndarray, w_1hwc: np.ndarray, bias: np.ndarray, stride: int, padding: str
) -> np.ndarray:
    # Depth multiplier 1: output channel c reads input channel c.
    p = windows(x, w_1hwc.shape[1], w_1hwc.shape[2], stride, 1, padding)
    return np.einsum("nyxijc,ijc->nyxc", p, w_1hwc[0].astype(np.float64)) + bias


def softmax(x: np.ndarray, beta: float = 1.0) -> np.ndarray:
    e = np.exp(beta * (x - x.max(axis=-1, keepdims=True)))
    return e / e.sum(axis=-1, keepdims=True)


# -- model builders shared by int8 and float variants ------------------------------------


def conv_model(
    dtype: str,
    op: str,
    x: np.ndarray,
    weights: np.ndarray,
    bias: np.ndarray,
    options: dict,
    x_q: tuple[float, int] | None = None,
    w_scales: np.ndarray | None = None,
    out_q: tuple[float, int] | None = None,
    out_shape: Sequence[int] = (),
    quantized_dimension: int = 0,
) -> bytes:
    b = TFLiteModelBuilder()
    if dtype == "int8":
        assert x_q is not None and w_scales is not None and out_q is not None
        n = len(w_scales)
        xi = b.add_input("x", x.shape, "int8", scale=x_q[0], zero_point=x_q[1])
        wi = b.add_constant(
            "w",
            weights,
            scale=w_scales.tolist(),
            zero_point=[0] * n,
            quantized_dimension=quantized_dimension,
        )
        bi = b.add_constant("b", bias, scale=(x_q[0] * w_scales).tolist(), zero_point=[0] * n)
        yi = b.add_tensor("y", out_shape, "int8", scale=out_q[0], zero_point=out_q[1])
    else:
        xi = b.add_input("x", x.shape, "float32")
        wi = b.add_constant("w", weights)
        bi = b.add_constant("b", bias)
        yi = b.add_tensor("y", out_shape, "float32")
    b.add_operator(op, inputs=[xi, wi, bi], outputs=[yi], options=options)
    b.mark_output(yi)
    return b.build()


def unary_model(
    op: str,
    shape: Sequence[int],
    dtype: str,
    in_q: tuple[float, int] | None,
    out_q: tuple[float, int] | None,
    options: dict | None = None,
    out_dtype: str | None = None,
    extra: Sequence[np.ndarray] = (),
    out_shape: Sequence[int] | None = None,
) -> bytes:
    """One input, optional constant inputs after it, one output."""
    b = TFLiteModelBuilder()
    xi = b.add_input("x", shape, dtype, *(in_q or (None, None)))
    consts = [b.add_constant(f"c{i}", c) for i, c in enumerate(extra)]
    yi = b.add_tensor(
        "y",
        out_shape if out_shape is not None else shape,
        out_dtype or dtype,
        *(out_q or (None, None)),
    )
    b.add_operator(op, inputs=[xi, *consts], outputs=[yi], options=options)
    b.mark_output(yi)
    return b.build()


def binary_model(
    op: str,
    shape: Sequence[int],
    dtype: str,
    qs: Sequence[tuple[float, int]] | None = None,
    options: dict | None = None,
) -> bytes:
    b = TFLiteModelBuilder()
    q = list(qs) if qs else [(None, None)] * 3
    a = b.add_input("a", shape, dtype, *q[0])
    c = b.add_input("b", shape, dtype, *q[1])
    y = b.add_tensor("y", shape, dtype, *q[2])
    b.add_operator(op, inputs=[a, c], outputs=[y], options=options)
    b.mark_output(y)
    return b.build()


# -- convolutions and fully connected ----------------------------------------------------


@pytest.mark.parametrize(
    ("stride", "padding", "activation"),
    [(1, "SAME", "RELU"), (2, "VALID", "NONE"), (2, "SAME", "RELU6")],
)
def test_conv2d_int8_per_channel(stride: int, padding: str, activation: str) -> None:
    x_q = (0.05, -3)
    xq = random_int8((1, 9, 9, 3))
    w_scales = np.array([0.004, 0.006, 0.005, 0.008], dtype=np.float32)
    wq = rng(2).integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    bq = rng(3).integers(-2000, 2000, 4).astype(np.int32)
    x_real = dequantize(xq, *x_q)
    real = conv2d(
        x_real,
        wq * w_scales[:, None, None, None].astype(np.float64),
        bq * (x_q[0] * w_scales.astype(np.float64)),
        stride,
        padding,
    )
    if activation == "RELU":
        real = np.maximum(real, 0)
    elif activation == "RELU6":
        real = np.clip(real, 0, 6)
    out_q = qparams(real)
    model = conv_model(
        "int8",
        "CONV_2D",
        xq,
        wq,
        bq,
        {
            "padding": padding,
            "stride_w": stride,
            "stride_h": stride,
            "fused_activation_function": activation,
        },
        x_q=x_q,
        w_scales=w_scales,
        out_q=out_q,
        out_shape=real.shape,
    )
    (y,) = run_tflite_reference(model, [xq])
    assert_within_lsb(y, real, *out_q)
    assert len(np.unique(y)) > 10  # not saturated


def test_conv2d_float_dilated() -> None:
    x = random_float((1, 10, 10, 2))
    w = random_float((3, 3, 3, 2), seed=2)
    bias = random_float((3,), seed=3)
    options = {
        "padding": "SAME",
        "stride_w": 1,
        "stride_h": 1,
        "dilation_w_factor": 2,
        "dilation_h_factor": 2,
    }
    expected = conv2d(x, w, bias, 1, "SAME", dilation=2)
    model = conv_model("float32", "CONV_2D", x, w, bias, options, out_shape=expected.shape)
    (y,) = run_tflite_reference(model, [x])
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("stride", "padding"), [(1, "SAME"), (2, "VALID")])
def test_depthwise_conv2d_int8_per_channel(stride: int, padding: str) -> None:
    x_q = (0.04, 10)
    xq = random_int8((1, 8, 8, 4))
    w_scales = np.array([0.01, 0.02, 0.015, 0.012], dtype=np.float32)
    wq = rng(4).integers(-127, 128, (1, 3, 3, 4)).astype(np.int8)
    bq = rng(5).integers(-500, 500, 4).astype(np.int32)
    real = depthwise_conv2d(
        dequantize(xq, *x_q),
        wq * w_scales.astype(np.float64),
        bq * (x_q[0] * w_scales.astype(np.float64)),
        stride,
        padding,
    )
    out_q = qparams(real)
    model = conv_model(
        "int8",
        "DEPTHWISE_CONV_2D",
        xq,
        wq,
        bq,
        {"padding": padding, "stride_w": stride, "stride_h": stride, "depth_multiplier": 1},
        x_q=x_q,
        w_scales=w_scales,
        out_q=out_q,
        out_shape=real.shape,
        quantized_dimension=3,
    )
    (y,) = run_tflite_reference(model, [xq])
    assert_within_lsb(y, real, *out_q)


def test_depthwise_conv2d_float() -> None:
    x = random_float((1, 7, 7, 3))
    w = random_float((1, 3, 3, 3), seed=2)
    bias = random_float((3,), seed=3)
    expected = depthwise_conv2d(x, w, bias, 2, "SAME")
    model = conv_model(
        "float32",
        "DEPTHWISE_CONV_2D",
        x,
        w,
        bias,
        {"padding": "SAME", "stride_w": 2, "stride_h": 2, "depth_multiplier": 1},
        out_shape=expected.shape,
    )
    (y,) = run_tflite_reference(model, [x])
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


def test_fully_connected_int8() -> None:
    x_q = (0.1, -5)
    xq = random_int8((2, 16))
    w_scale = 0.01  # TFLite FULLY_CONNECTED int8 takes per-tensor weights
    wq = rng(6).integers(-127, 128, (5, 16)).astype(np.int8)
    bq = rng(7).integers(-300, 300, 5).astype(np.int32)
    real = dequantize(xq, *x_q) @ (wq * w_scale).T + bq * x_q[0] * w_scale
    out_q = qparams(real)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (2, 16), "int8", scale=x_q[0], zero_point=x_q[1])
    w = b.add_constant("w", wq, scale=w_scale, zero_point=0)
    bias = b.add_constant("b", bq, scale=x_q[0] * w_scale, zero_point=0)
    y = b.add_tensor("y", (2, 5), "int8", scale=out_q[0], zero_point=out_q[1])
    b.add_operator("FULLY_CONNECTED", [x, w, bias], [y])
    b.mark_output(y)
    (out,) = run_tflite_reference(b.build(), [xq])
    assert_within_lsb(out, real, *out_q)


def test_fully_connected_float_keep_num_dims_without_bias() -> None:
    x = random_float((1, 3, 8))
    w = random_float((4, 8), seed=2)
    b = TFLiteModelBuilder()
    xi = b.add_input("x", (1, 3, 8), "float32")
    wi = b.add_constant("w", w)
    y = b.add_tensor("y", (1, 3, 4), "float32")
    # -1: the optional bias is omitted.
    b.add_operator("FULLY_CONNECTED", [xi, wi, -1], [y], {"keep_num_dims": True})
    b.mark_output(y)
    (out,) = run_tflite_reference(b.build(), [x])
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-5, atol=1e-5)


def test_fully_connected_float_with_bias_and_relu() -> None:
    x = random_float((3, 6))
    w = random_float((2, 6), seed=2)
    bias = random_float((2,), seed=3)
    b = TFLiteModelBuilder()
    xi = b.add_input("x", x.shape, "float32")
    y = b.add_tensor("y", (3, 2), "float32")
    b.add_operator(
        "FULLY_CONNECTED",
        [xi, b.add_constant("w", w), b.add_constant("b", bias)],
        [y],
        {"fused_activation_function": "RELU"},
    )
    b.mark_output(y)
    (out,) = run_tflite_reference(b.build(), [x])
    np.testing.assert_allclose(out, np.maximum(x @ w.T + bias, 0), rtol=1e-5, atol=1e-5)


# -- elementwise binary --------------------------------------------------------------------

_BINARY = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
def test_binary_int8(op: str) -> None:
    qa, qb = (0.05, 3), (0.08, -10)
    a, c = random_int8((1, 4, 4, 3), seed=1), random_int8((1, 4, 4, 3), seed=2)
    real = _BINARY[op](dequantize(a, *qa), dequantize(c, *qb))
    out_q = qparams(real)
    model = binary_model(op, a.shape, "int8", [qa, qb, out_q])
    (y,) = run_tflite_reference(model, [a, c])
    assert_within_lsb(y, real, *out_q)


@pytest.mark.parametrize("op", ["ADD", "MUL", "SUB"])
def test_binary_float(op: str) -> None:
    a, c = random_float((2, 3, 5), seed=1), random_float((2, 3, 5), seed=2)
    (y,) = run_tflite_reference(binary_model(op, a.shape, "float32"), [a, c])
    np.testing.assert_allclose(y, _BINARY[op](a, c), rtol=1e-6)


def test_add_float_fused_relu6() -> None:
    a, c = random_float((8,), seed=1) * 5, random_float((8,), seed=2) * 5
    model = binary_model("ADD", a.shape, "float32", options={"fused_activation_function": "RELU6"})
    (y,) = run_tflite_reference(model, [a, c])
    np.testing.assert_allclose(y, np.clip(a + c, 0, 6), rtol=1e-6)


# -- pooling -------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pool_int8(op: str) -> None:
    q = (0.1, -4)  # TFLite int8 pooling keeps the input quantization
    xq = random_int8((1, 6, 6, 3))
    options = {
        "padding": "VALID",
        "filter_width": 2,
        "filter_height": 2,
        "stride_w": 2,
        "stride_h": 2,
    }
    p = windows(dequantize(xq, *q), 2, 2, 2, 1, "VALID")
    real = p.max(axis=(3, 4)) if op == "MAX_POOL_2D" else p.mean(axis=(3, 4))
    model = unary_model(op, xq.shape, "int8", q, q, options, out_shape=real.shape)
    (y,) = run_tflite_reference(model, [xq])
    assert_within_lsb(y, real, *q, lsb=0 if op == "MAX_POOL_2D" else 1)


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_max_pool_float(padding: str) -> None:
    x = random_float((1, 7, 7, 2))
    p = windows(x, 3, 3, 2, 1, padding, fill=-np.inf)
    expected = p.max(axis=(3, 4))
    options = {
        "padding": padding,
        "filter_width": 3,
        "filter_height": 3,
        "stride_w": 2,
        "stride_h": 2,
    }
    model = unary_model(
        "MAX_POOL_2D", x.shape, "float32", None, None, options, out_shape=expected.shape
    )
    (y,) = run_tflite_reference(model, [x])
    np.testing.assert_array_equal(y, expected.astype(np.float32))


def test_average_pool_float() -> None:
    x = random_float((1, 8, 8, 2))
    expected = windows(x, 4, 4, 4, 1, "VALID").mean(axis=(3, 4))
    options = {"filter_width": 4, "filter_height": 4, "stride_w": 4, "stride_h": 4}
    model = unary_model(
        "AVERAGE_POOL_2D", x.shape, "float32", None, None, options, out_shape=expected.shape
    )
    (y,) = run_tflite_reference(model, [x])
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


# -- data movement ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_reshape(dtype: str) -> None:
    x = random_int8((1, 2, 3, 4)) if dtype == "int8" else random_float((1, 2, 3, 4))
    q = (0.5, 1) if dtype == "int8" else None
    model = unary_model(
        "RESHAPE",
        x.shape,
        dtype,
        q,
        q,
        {"new_shape": [1, 24]},
        extra=[np.array([1, 24], np.int32)],
        out_shape=(1, 24),
    )
    (y,) = run_tflite_reference(model, [x])
    np.testing.assert_array_equal(y, x.reshape(1, 24))


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_concatenation(dtype: str) -> None:
    make = random_int8 if dtype == "int8" else random_float
    a, c = make((1, 2, 2, 3), seed=1), make((1, 2, 2, 5), seed=2)
    q = (0.1, 0) if dtype == "int8" else (None, None)
    b = TFLiteModelBuilder()
    ai = b.add_input("a", a.shape, dtype, *q)
    ci = b.add_input("b", c.shape, dtype, *q)
    y = b.add_tensor("y", (1, 2, 2, 8), dtype, *q)
    b.add_operator("CONCATENATION", [ai, ci], [y], {"axis": 3})
    b.mark_output(y)
    (out,) = run_tflite_reference(b.build(), [a, c])
    np.testing.assert_array_equal(out, np.concatenate([a, c], axis=3))


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_pad(dtype: str) -> None:
    x = random_int8((1, 3, 3, 2)) if dtype == "int8" else random_float((1, 3, 3, 2))
    q = (0.2, -7) if dtype == "int8" else None
    paddings = np.array([[0, 0], [1, 2], [2, 1], [0, 0]], np.int32)
    model = unary_model("PAD", x.shape, dtype, q, q, extra=[paddings], out_shape=(1, 6, 6, 2))
    (y,) = run_tflite_reference(model, [x])
    # Quantized PAD fills with the zero point (real 0).
    fill = q[1] if q else 0
    np.testing.assert_array_equal(y, np.pad(x, paddings, constant_values=fill))


def test_transpose_int8() -> None:
    x = random_int8((1, 2, 3, 4))
    perm = np.array([0, 3, 1, 2], np.int32)
    q = (0.3, 2)
    model = unary_model("TRANSPOSE", x.shape, "int8", q, q, extra=[perm], out_shape=(1, 4, 2, 3))
    (y,) = run_tflite_reference(model, [x])
    np.testing.assert_array_equal(y, np.transpose(x, perm))


def test_strided_slice_int8_with_masks() -> None:
    x = random_int8((1, 6, 8, 4))
    q = (0.1, 0)
    begin = np.array([0, 1, 5, 1], np.int32)
    end = np.array([1, 5, 8, 3], np.int32)
    strides = np.array([1, 2, 3, 1], np.int32)
    # begin_mask bit 2 ignores begin[2]; shrink bit 0 drops the batch axis.
    options = {"begin_mask": 0b0100, "end_mask": 0, "shrink_axis_mask": 0b0001}
    expected = x[0, 1:5:2, 0:8:3, 1:3]
    model = unary_model(
        "STRIDED_SLICE",
        x.shape,
        "int8",
        q,
        q,
        options,
        extra=[begin, end, strides],
        out_shape=expected.shape,
    )
    (y,) = run_tflite_reference(model, [x])
    np.testing.assert_array_equal(y, expected)


def test_strided_slice_ellipsis_and_new_axis_masks() -> None:
    x = random_float((2, 3, 4))
    begin = np.array([0, 0, 1], np.int32)
    end = np.array([0, 0, 3], np.int32)
    strides = np.array([1, 1, 1], np.int32)
    # spec "...", newaxis, 1:3 -> x[..., None, 1:3]
    options = {"ellipsis_mask": 0b001, "new_axis_mask": 0b010}
    expected = x[..., None, 1:3]
    model = unary_model(
        "STRIDED_SLICE",
        x.shape,
        "float32",
        None,
        None,
        options,
        extra=[begin, end, strides],
        out_shape=expected.shape,
    )
    (y,) = run_tflite_reference(model, [x])
    np.testing.assert_array_equal(y, expected)


def test_mean_int8_keep_dims() -> None:
    q = (0.05, -2)
    xq = random_int8((1, 4, 4, 3))
    axes = np.array([1, 2], np.int32)
    real = dequantize(xq, *q).mean(axis=(1, 2), keepdims=True)
    model = unary_model(
        "MEAN", xq.shape, "int8", q, q, {"keep_dims": True}, extra=[axes], out_shape=(1, 1, 1, 3)
    )
    (y,) = run_tflite_reference(model, [xq])
    assert_within_lsb(y, real, *q)


# -- quantization and activations -----------------------------------------------------------


def test_quantize_float_to_int8() -> None:
    x = random_float((1, 10)) * 2
    q = (0.02, 4)
    model = unary_model("QUANTIZE", x.shape, "float32", None, q, out_dtype="int8")
    (y,) = run_tflite_reference(model, [x])
    assert_within_lsb(y, x, *q, lsb=0)


def test_dequantize_int8_to_float() -> None:
    xq = random_int8((3, 7))
    q = (0.125, -9)
    model = unary_model("DEQUANTIZE", xq.shape, "int8", q, None, out_dtype="float32")
    (y,) = run_tflite_reference(model, [xq])
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, dequantize(xq, *q).astype(np.float32))


# (op, numpy function, output quantization TFLite requires or None for free, LSB tolerance)
_ACTIVATIONS = {
    "LOGISTIC": (lambda v: 1 / (1 + np.exp(-v)), (1 / 256, -128), 1),
    "TANH": (np.tanh, (1 / 128, 0), 1),
    "HARD_SWISH": (lambda v: v * np.clip(v + 3, 0, 6) / 6, None, 1),
    "RELU": (lambda v: np.maximum(v, 0), None, 1),
    "RELU6": (lambda v: np.clip(v, 0, 6), None, 1),
}


@pytest.mark.parametrize("op", sorted(_ACTIVATIONS))
def test_activation_int8(op: str) -> None:
    fn, fixed_out_q, lsb = _ACTIVATIONS[op]
    in_q = (0.04, 3)  # covers about [-5.2, 5.0]: both tails of every activation
    xq = np.arange(-128, 128, dtype=np.int8).reshape(1, 16, 16)
    real = fn(dequantize(xq, *in_q))
    out_q = fixed_out_q or qparams(real)
    model = unary_model(op, xq.shape, "int8", in_q, out_q)
    (y,) = run_tflite_reference(model, [xq])
    assert_within_lsb(y, real, *out_q, lsb=lsb)


@pytest.mark.parametrize("op", ["RELU", "RELU6"])
def test_activation_float(op: str) -> None:
    x = random_float((2, 50)) * 5
    (y,) = run_tflite_reference(unary_model(op, x.shape, "float32", None, None), [x])
    np.testing.assert_array_equal(y, _ACTIVATIONS[op][0](x).astype(np.float32))


def test_softmax_int8() -> None:
    in_q = (0.1, 10)
    xq = random_int8((3, 10))
    real = softmax(dequantize(xq, *in_q))
    out_q = (1 / 256, -128)  # TFLite's required int8 softmax output quantization
    model = unary_model("SOFTMAX", xq.shape, "int8", in_q, out_q, {"beta": 1.0})
    (y,) = run_tflite_reference(model, [xq])
    assert_within_lsb(y, real, *out_q, lsb=1)


def test_softmax_float_beta() -> None:
    x = random_float((2, 7))
    model = unary_model("SOFTMAX", x.shape, "float32", None, None, {"beta": 0.5})
    (y,) = run_tflite_reference(model, [x])
    np.testing.assert_allclose(y, softmax(x, 0.5), rtol=1e-5)


def test_every_required_operator_is_in_the_table() -> None:
    assert set(REQUIRED_OPERATORS) <= set(OPERATORS)


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_every_table_row_names_a_real_operator_and_options_table(op: str) -> None:
    import tflite

    assert hasattr(tflite.BuiltinOperator, op)
    table = OPERATORS[op].options
    if table is not None:
        assert hasattr(tflite.BuiltinOptions, table)
    # The row's defaults are valid fields, and the operator serialises with them.
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 2, 2, 1), "float32")
    b.add_operator(op, [x], [x])
    b.mark_output(x)
    written = tflite.Model.GetRootAs(b.build(), 0)
    assert written.OperatorCodes(0).BuiltinCode() == getattr(tflite.BuiltinOperator, op)
    if table is not None:
        assert written.Subgraphs(0).Operators(0).BuiltinOptionsType() == getattr(
            tflite.BuiltinOptions, table
        )


# -- the flatbuffer itself ------------------------------------------------------------------


def _first_operator_options(model: bytes, table: str) -> tuple[Any, Any]:
    """The first operator and its options table, read back with the tflite package."""
    import tflite

    op = tflite.Model.GetRootAs(model, 0).Subgraphs(0).Operators(0)
    options = getattr(tflite, table)()
    raw = op.BuiltinOptions()
    options.Init(raw.Bytes, raw.Pos)
    return op, options


def test_options_are_written_as_given() -> None:
    import tflite

    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4, 4, 2), "float32")
    y = b.add_tensor("y", (1, 2, 2, 2), "float32")
    b.add_operator(
        "STRIDED_SLICE",
        [
            x,
            b.add_constant("b", np.zeros(4, np.int32)),
            b.add_constant("e", np.zeros(4, np.int32)),
            b.add_constant("s", np.ones(4, np.int32)),
        ],
        [y],
        {
            "begin_mask": 1,
            "end_mask": 2,
            "ellipsis_mask": 4,
            "new_axis_mask": 8,
            "shrink_axis_mask": 16,
        },
    )
    b.mark_output(y)
    op, opts = _first_operator_options(b.build(), "StridedSliceOptions")
    assert op.BuiltinOptionsType() == tflite.BuiltinOptions.StridedSliceOptions
    assert (
        opts.BeginMask(),
        opts.EndMask(),
        opts.EllipsisMask(),
        opts.NewAxisMask(),
        opts.ShrinkAxisMask(),
    ) == (1, 2, 4, 8, 16)


def test_defaults_and_enums_in_conv_options() -> None:
    import tflite

    x = random_float((1, 4, 4, 1))
    model = conv_model(
        "float32",
        "CONV_2D",
        x,
        random_float((2, 1, 1, 1)),
        np.zeros(2, np.float32),
        {"padding": "valid", "fused_activation_function": "RELU6"},
        out_shape=(1, 4, 4, 2),
    )
    _, opts = _first_operator_options(model, "Conv2DOptions")
    assert opts.Padding() == tflite.Padding.VALID
    assert opts.FusedActivationFunction() == tflite.ActivationFunctionType.RELU6
    assert (opts.StrideW(), opts.StrideH(), opts.DilationWFactor()) == (1, 1, 1)


def test_tensors_buffers_and_quantization_in_the_flatbuffer() -> None:
    import tflite

    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 3), "int8", scale=0.5, zero_point=-1)
    w = b.add_constant(
        "w",
        np.array([[1, -2, 3], [4, 5, -6]], np.int8),
        scale=[0.1, 0.2],
        zero_point=0,
        quantized_dimension=0,
    )
    y = b.add_tensor("y", (1, 2), "int8", scale=0.25, zero_point=2)
    b.add_operator("FULLY_CONNECTED", [x, w, -1], [y])
    b.mark_output(y)
    model = tflite.Model.GetRootAs(b.build(), 0)
    assert model.Version() == 3
    sg = model.Subgraphs(0)
    assert sg.InputsAsNumpy().tolist() == [x]
    assert sg.OutputsAsNumpy().tolist() == [y]
    assert sg.Operators(0).InputsAsNumpy().tolist() == [x, w, -1]
    weights = sg.Tensors(w)
    assert weights.Name() == b"w"
    assert weights.Type() == tflite.TensorType.INT8
    assert weights.Quantization().ScaleAsNumpy().tolist() == pytest.approx([0.1, 0.2])
    assert weights.Quantization().ZeroPointAsNumpy().tolist() == [0, 0]
    data = model.Buffers(weights.Buffer()).DataAsNumpy()
    assert data.tobytes() == bytes([1, 0xFE, 3, 4, 5, 0xFA])
    assert model.Buffers(0).DataLength() == 0  # the schema's empty sentinel
    assert model.Buffers(sg.Tensors(x).Buffer()).DataLength() == 0


def test_shape_signature_marks_a_dynamic_batch() -> None:
    import tflite

    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 3), "float32", shape_signature=(-1, 3))
    y = b.add_tensor("y", (1, 3), "float32", shape_signature=(-1, 3))
    b.add_operator("RELU", [x], [y])
    b.mark_output(y)
    model = b.build()
    tensor = tflite.Model.GetRootAs(model, 0).Subgraphs(0).Tensors(x)
    assert tensor.ShapeSignatureAsNumpy().tolist() == [-1, 3]
    assert tensor.ShapeAsNumpy().tolist() == [1, 3]
    (out,) = run_tflite_reference(model, [np.array([[-1, 0, 2]], np.float32)])
    np.testing.assert_array_equal(out, [[0, 0, 2]])
    batch = random_float((4, 3))
    (out,) = run_tflite_reference(model, [batch])  # the dynamic batch takes size 4
    np.testing.assert_array_equal(out, np.maximum(batch, 0))
    with pytest.raises(ConfigError, match=r"float32\[-1, 3\], got float32\[4, 2\]"):
        run_tflite_reference(model, [random_float((4, 2))])
    with pytest.raises(ValueError, match="differ in rank"):
        b.add_tensor("z", (1, 3), "float32", shape_signature=(-1,))


def test_high_operator_codes_use_the_placeholder() -> None:
    import tflite

    b = TFLiteModelBuilder()
    x = b.add_input("x", (2, 3), "float32")
    y = b.add_tensor("y", (2, 3), "float32")
    b.add_operator("GELU", [x], [y])  # builtin code 150, above the int8 deprecated field
    b.mark_output(y)
    code = tflite.Model.GetRootAs(b.build(), 0).OperatorCodes(0)
    assert code.BuiltinCode() == tflite.BuiltinOperator.GELU
    assert code.DeprecatedBuiltinCode() == 127
    (out,) = run_tflite_reference(b.build(), [np.ones((2, 3), np.float32)])
    assert out.shape == (2, 3)


def test_same_calls_give_the_same_bytes() -> None:
    def build() -> bytes:
        return conv_model(
            "float32",
            "CONV_2D",
            random_float((1, 4, 4, 1)),
            random_float((2, 1, 1, 1), seed=4),
            np.zeros(2, np.float32),
            {},
            out_shape=(1, 4, 4, 2),
        )

    assert build() == build()


# -- misuse is reported ----------------------------------------------------------------------


def test_unknown_operator_is_rejected() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1,), "float32")
    with pytest.raises(ValueError, match="NOT_AN_OP"):
        b.add_operator("NOT_AN_OP", [x], [x])


def test_unknown_option_field_is_rejected() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 2), "float32")
    with pytest.raises(ValueError, match="no field 'stride'"):
        b.add_operator("SOFTMAX", [x], [x], {"stride": 2})


def test_bad_enum_member_is_rejected() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4, 4, 1), "float32")
    with pytest.raises(ValueError, match="'FULL'; expected one of"):
        b.add_operator("MAX_POOL_2D", [x], [x], {"padding": "FULL"})
    with pytest.raises(ValueError, match="not an enum field"):
        b.add_operator("MAX_POOL_2D", [x], [x], {"filter_width": "3"})


def test_per_channel_length_must_match_the_dimension() -> None:
    b = TFLiteModelBuilder()
    with pytest.raises(ValueError, match="per-channel"):
        b.add_constant(
            "w",
            np.zeros((4, 3), np.int8),
            scale=[0.1, 0.2, 0.3],
            zero_point=0,
            quantized_dimension=0,
        )


def test_unsupported_dtype_and_missing_tensor_are_rejected() -> None:
    b = TFLiteModelBuilder()
    with pytest.raises(ValueError, match="complex64"):
        b.add_input("x", (1,), "complex64")
    x = b.add_input("x", (1,), "float32")
    with pytest.raises(ValueError, match="tensor index 7"):
        b.add_operator("RELU", [x], [7])
    with pytest.raises(ValueError, match="no outputs"):
        b.build()


# -- the reference runners ---------------------------------------------------------------------


def test_reference_reads_a_model_path(tmp_path) -> None:
    x = random_float((2, 5))
    path = tmp_path / "relu.tflite"
    path.write_bytes(unary_model("RELU", x.shape, "float32", None, None))
    (y,) = run_tflite_reference(path, [x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_reference_rejects_wrong_inputs() -> None:
    model = unary_model("RELU", (2, 5), "float32", None, None)
    with pytest.raises(ConfigError, match="takes 1 inputs, got 2"):
        run_tflite_reference(model, [np.zeros((2, 5), np.float32)] * 2)
    with pytest.raises(ConfigError, match=r"float32\[2, 5\], got int8\[2, 5\]"):
        run_tflite_reference(model, [np.zeros((2, 5), np.int8)])


def test_reference_rejects_a_non_model() -> None:
    with pytest.raises(ModelError):
        run_tflite_reference(b"this is not a flatbuffer", [])


def test_onnx_reference_runs_a_model() -> None:
    onnx = importlib.import_module("onnx")
    helper = onnx.helper
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        "add",
        [
            helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [2, 3]),
        ],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    a, c = random_float((2, 3), 1), random_float((2, 3), 2)
    (y,) = run_onnx_reference(model.SerializeToString(), [a, c])
    np.testing.assert_allclose(y, a + c)
    with pytest.raises(ModelError):
        run_onnx_reference(b"not onnx", [a])
