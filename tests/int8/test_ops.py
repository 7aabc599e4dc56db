"""Every supported operator, bit-exact with LiteRT's reference kernels on random models.

Each test builds seeded random one-operator models (shapes, per-tensor and per-channel
quantization, zero points at -128/127, strides, padding, fused activations), compiles our
Relax module for LLVM, and compares outputs on random inputs with ``BUILTIN_REF``.
"""

from __future__ import annotations

import numpy as np
import pytest

from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.harness import assert_bit_exact, random_input

pytestmark = pytest.mark.unit

SEEDS = range(8)
INPUTS_PER_MODEL = 3
ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def _zp(rng: np.random.Generator) -> int:
    """Zero points favouring the extremes, where saturation bugs hide."""
    return int(rng.choice([-128, 127, 0, int(rng.integers(-128, 128))]))


def _scale(rng: np.random.Generator, lo: float = 1e-3, hi: float = 0.5) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def _check(builder: TFLiteModelBuilder, rng: np.random.Generator, shapes, dtypes=None) -> None:
    model = builder.build()
    dtypes = dtypes or ["int8"] * len(shapes)
    inputs = [
        [random_input(rng, s, d) for s, d in zip(shapes, dtypes)] for _ in range(INPUTS_PER_MODEL)
    ]
    assert_bit_exact(model, inputs)


def _weights(rng: np.random.Generator, shape, per_channel: bool, axis: int):
    data = rng.integers(-127, 128, size=shape, dtype=np.int8)
    count = shape[axis] if per_channel else 1
    scales = [_scale(rng, 1e-3, 0.05) for _ in range(count)]
    return data, scales


def _bias(builder: TFLiteModelBuilder, rng, in_scale: float, w_scales, channels: int):
    scales = [float(np.float32(in_scale) * np.float32(s)) for s in w_scales]
    values = rng.integers(-20000, 20000, size=channels, dtype=np.int32)
    return builder.add_constant("bias", values, scale=scales, zero_point=[0] * len(scales))


def _conv_out(size: int, k: int, stride: int, dilation: int, padding: str) -> int:
    effective = (k - 1) * dilation + 1
    return (
        (size + stride - 1) // stride
        if padding == "SAME"
        else (size - effective + stride) // stride
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_conv2d(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    h, w = (int(v) for v in rng.integers(4, 10, 2))
    in_c, out_c = int(rng.integers(1, 6)), int(rng.integers(1, 7))
    k_h, k_w = (int(v) for v in rng.integers(1, 4, 2))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dilation = (1, 1) if seed % 2 else (int(rng.integers(1, 3)), 1)
    padding = ["SAME", "VALID"][seed % 2]
    out_h = _conv_out(h, k_h, stride[0], dilation[0], padding)
    out_w = _conv_out(w, k_w, stride[1], dilation[1], padding)
    b = TFLiteModelBuilder()
    in_scale = _scale(rng, 0.01, 0.2)
    x = b.add_input("x", (1, h, w, in_c), "int8", scale=in_scale, zero_point=_zp(rng))
    data, scales = _weights(rng, (out_c, k_h, k_w, in_c), per_channel=seed % 2 == 0, axis=0)
    wt = b.add_constant("w", data, scale=scales, zero_point=[0] * len(scales))
    bias = _bias(b, rng, in_scale, scales if len(scales) > 1 else scales * out_c, out_c)
    y = b.add_tensor(
        "y", (1, out_h, out_w, out_c), "int8", scale=_scale(rng, 0.01, 0.5), zero_point=_zp(rng)
    )
    b.add_operator(
        "CONV_2D",
        inputs=[x, wt, bias],  # LiteRT requires the conv bias
        outputs=[y],
        options={
            "padding": padding,
            "stride_h": stride[0],
            "stride_w": stride[1],
            "dilation_h_factor": dilation[0],
            "dilation_w_factor": dilation[1],
            "fused_activation_function": ACTIVATIONS[seed % 4],
        },
    )
    b.mark_output(y)
    _check(b, rng, [(1, h, w, in_c)])


@pytest.mark.parametrize("seed", range(3))
def test_conv2d_grouped(seed: int) -> None:
    rng = np.random.default_rng(150 + seed)
    groups, group_c = int(rng.integers(2, 4)), int(rng.integers(1, 4))
    in_c, out_c = groups * group_c, groups * int(rng.integers(1, 3))
    b = TFLiteModelBuilder()
    in_scale = _scale(rng, 0.01, 0.2)
    x = b.add_input("x", (1, 6, 5, in_c), "int8", scale=in_scale, zero_point=_zp(rng))
    data, scales = _weights(rng, (out_c, 3, 3, group_c), per_channel=True, axis=0)
    wt = b.add_constant("w", data, scale=scales, zero_point=[0] * out_c)
    bias = _bias(b, rng, in_scale, scales, out_c)
    y = b.add_tensor(
        "y", (1, 6, 5, out_c), "int8", scale=_scale(rng, 0.01, 0.5), zero_point=_zp(rng)
    )
    b.add_operator("CONV_2D", inputs=[x, wt, bias], outputs=[y], options={"padding": "SAME"})
    b.mark_output(y)
    _check(b, rng, [(1, 6, 5, in_c)])


@pytest.mark.parametrize("seed", SEEDS)
def test_depthwise_conv2d(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    h, w = (int(v) for v in rng.integers(4, 10, 2))
    in_c, mult = int(rng.integers(1, 6)), [1, 2][seed % 2]
    out_c = in_c * mult
    k_h, k_w = (int(v) for v in rng.integers(1, 4, 2))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dilation = (1, int(rng.integers(1, 3))) if seed >= 2 else (1, 1)
    padding = ["SAME", "VALID", "VALID", "SAME"][seed % 4]
    out_h = _conv_out(h, k_h, stride[0], dilation[0], padding)
    out_w = _conv_out(w, k_w, stride[1], dilation[1], padding)
    b = TFLiteModelBuilder()
    in_scale = _scale(rng, 0.01, 0.2)
    x = b.add_input("x", (1, h, w, in_c), "int8", scale=in_scale, zero_point=_zp(rng))
    data, scales = _weights(rng, (1, k_h, k_w, out_c), per_channel=seed != 1, axis=3)
    wt = b.add_constant(
        "w", data, scale=scales, zero_point=[0] * len(scales), quantized_dimension=3
    )
    bias = _bias(b, rng, in_scale, scales if len(scales) > 1 else scales * out_c, out_c)
    y = b.add_tensor(
        "y", (1, out_h, out_w, out_c), "int8", scale=_scale(rng, 0.01, 0.5), zero_point=_zp(rng)
    )
    b.add_operator(
        "DEPTHWISE_CONV_2D",
        inputs=[x, wt, bias],
        outputs=[y],
        options={
            "padding": padding,
            "stride_h": stride[0],
            "stride_w": stride[1],
            "dilation_h_factor": dilation[0],
            "dilation_w_factor": dilation[1],
            "depth_multiplier": mult,
            "fused_activation_function": ACTIVATIONS[(seed + 1) % 4],
        },
    )
    b.mark_output(y)
    _check(b, rng, [(1, h, w, in_c)])


@pytest.mark.parametrize("seed", SEEDS)
def test_fully_connected(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    depth, out_c = int(rng.integers(1, 40)), int(rng.integers(1, 20))
    batch = [1, 3, 1, 2][seed % 4]
    in_shape = (batch, depth) if seed % 4 != 2 else (1, 1, 1, depth)
    b = TFLiteModelBuilder()
    in_scale = _scale(rng, 0.01, 0.2)
    x = b.add_input("x", in_shape, "int8", scale=in_scale, zero_point=_zp(rng))
    data, scales = _weights(rng, (out_c, depth), per_channel=seed % 4 == 3, axis=0)
    wt = b.add_constant("w", data, scale=scales, zero_point=[0] * len(scales))
    bias = _bias(b, rng, in_scale, scales if len(scales) > 1 else scales * out_c, out_c)
    if len(scales) == 1:  # a per-tensor bias: one scale
        bias = b.add_constant(
            "bias1", rng.integers(-9000, 9000, out_c, dtype=np.int32),
            scale=float(np.float32(in_scale) * np.float32(scales[0])), zero_point=0,
        )  # fmt: skip
    y = b.add_tensor("y", (batch, out_c), "int8", scale=_scale(rng, 0.01, 0.5), zero_point=_zp(rng))
    b.add_operator(
        "FULLY_CONNECTED",
        inputs=[x, wt, bias if seed % 4 != 1 else -1],
        outputs=[y],
        options={"fused_activation_function": ACTIVATIONS[seed % 4]},
    )
    b.mark_output(y)
    _check(b, rng, [in_shape])


BROADCASTS = [
    ((1, 5, 4, 3), (1, 5, 4, 3)),
    ((1, 5, 4, 3), (1, 1, 1, 3)),
    ((2, 1, 6), (1, 4, 1)),
    ((7,), (1,)),
]


@pytest.mark.parametrize("op", ["ADD", "MUL"])
@pytest.mark.parametrize("seed", SEEDS)
def test_add_mul(op: str, seed: int) -> None:
    rng = np.random.default_rng(400 + seed + (10 if op == "MUL" else 0))
    a_shape, b_shape = BROADCASTS[seed % 4]
    out_shape = tuple(np.broadcast_shapes(a_shape, b_shape))
    b = TFLiteModelBuilder()
    a = b.add_input("a", a_shape, "int8", scale=_scale(rng, 0.005, 1.0), zero_point=_zp(rng))
    c = b.add_input("b", b_shape, "int8", scale=_scale(rng, 0.005, 1.0), zero_point=_zp(rng))
    y = b.add_tensor("y", out_shape, "int8", scale=_scale(rng, 0.005, 1.0), zero_point=_zp(rng))
    b.add_operator(
        op, inputs=[a, c], outputs=[y], options={"fused_activation_function": ACTIVATIONS[seed % 4]}
    )
    b.mark_output(y)
    _check(b, rng, [a_shape, b_shape])


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("seed", SEEDS)
def test_pool(op: str, seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    h, w, c = int(rng.integers(3, 12)), int(rng.integers(3, 12)), int(rng.integers(1, 5))
    f_h, f_w = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = ["SAME", "VALID"][seed % 2]
    out_h = _conv_out(h, f_h, stride[0], 1, padding)
    out_w = _conv_out(w, f_w, stride[1], 1, padding)
    scale, zp = _scale(rng), _zp(rng)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, h, w, c), "int8", scale=scale, zero_point=zp)
    y = b.add_tensor("y", (1, out_h, out_w, c), "int8", scale=scale, zero_point=zp)
    b.add_operator(
        op,
        inputs=[x],
        outputs=[y],
        options={
            "padding": padding,
            "stride_h": stride[0],
            "stride_w": stride[1],
            "filter_height": f_h,
            "filter_width": f_w,
            "fused_activation_function": ACTIVATIONS[seed % 4],
        },
    )
    b.mark_output(y)
    _check(b, rng, [(1, h, w, c)])


@pytest.mark.parametrize("seed", SEEDS)
def test_softmax(seed: int) -> None:
    rng = np.random.default_rng(600 + seed)
    shape = [(1, 12), (1, 2), (2, 3, 40), (1, 1, 1, 200)][seed % 4]
    beta = [1.0, 1.0, 0.5, 2.0][seed % 4]
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", scale=_scale(rng, 0.01, 1.0), zero_point=_zp(rng))
    y = b.add_tensor("y", shape, "int8", scale=1 / 256, zero_point=-128)
    b.add_operator("SOFTMAX", inputs=[x], outputs=[y], options={"beta": beta})
    b.mark_output(y)
    _check(b, rng, [shape])


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("seed", range(4))
def test_logistic_tanh(op: str, seed: int) -> None:
    rng = np.random.default_rng(700 + seed)
    shape = (1, 16, 16)  # 256 values: every int8 input once or more
    out_scale, out_zp = (1 / 256, -128) if op == "LOGISTIC" else (1 / 128, 0)
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", scale=_scale(rng, 0.01, 0.2), zero_point=_zp(rng))
    y = b.add_tensor("y", shape, "int8", scale=out_scale, zero_point=out_zp)
    b.add_operator(op, inputs=[x], outputs=[y])
    b.mark_output(y)
    model = b.build()
    every = np.arange(-128, 128, dtype=np.int8).reshape(shape)
    assert_bit_exact(model, [[every], [random_input(rng, shape)]])


@pytest.mark.parametrize("seed", range(6))
def test_hard_swish(seed: int) -> None:
    rng = np.random.default_rng(800 + seed)
    shape = (1, 16, 16)
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", scale=_scale(rng, 0.01, 0.1), zero_point=_zp(rng))
    y = b.add_tensor("y", shape, "int8", scale=_scale(rng, 0.01, 0.1), zero_point=_zp(rng))
    b.add_operator("HARD_SWISH", inputs=[x], outputs=[y])
    b.mark_output(y)
    every = np.arange(-128, 128, dtype=np.int8).reshape(shape)
    assert_bit_exact(b.build(), [[every]])


@pytest.mark.parametrize("op", ["RELU", "RELU6"])  # the builder has no RELU_N1_TO_1
@pytest.mark.parametrize("seed", range(3))
def test_relu(op: str, seed: int) -> None:
    rng = np.random.default_rng(900 + seed)
    shape = (1, 16, 16)
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", scale=_scale(rng, 0.01, 0.1), zero_point=_zp(rng))
    y = b.add_tensor("y", shape, "int8", scale=_scale(rng, 0.01, 0.1), zero_point=_zp(rng))
    b.add_operator(op, inputs=[x], outputs=[y])
    b.mark_output(y)
    every = np.arange(-128, 128, dtype=np.int8).reshape(shape)
    assert_bit_exact(b.build(), [[every]])


@pytest.mark.parametrize("seed", range(4))
def test_mean(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    shape = (1, 5, 7, 3)
    axes, keep = [([1, 2], True), ([2], False), ([1, 2], False), ([3], True)][seed]
    out_shape = (
        tuple(1 if i in axes else d for i, d in enumerate(shape))
        if keep
        else tuple(d for i, d in enumerate(shape) if i not in axes)
    )
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", scale=_scale(rng), zero_point=_zp(rng))
    ax = b.add_constant("axes", np.array(axes, dtype=np.int32))
    y = b.add_tensor("y", out_shape, "int8", scale=_scale(rng), zero_point=_zp(rng))
    b.add_operator("MEAN", inputs=[x, ax], outputs=[y], options={"keep_dims": keep})
    b.mark_output(y)
    _check(b, rng, [shape])


def test_mean_same_quantization() -> None:
    rng = np.random.default_rng(1010)
    shape = (1, 4, 4, 8)
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", scale=0.05, zero_point=-7)
    ax = b.add_constant("axes", np.array([1, 2], dtype=np.int32))
    y = b.add_tensor("y", (1, 1, 1, 8), "int8", scale=0.05, zero_point=-7)
    b.add_operator("MEAN", inputs=[x, ax], outputs=[y], options={"keep_dims": True})
    b.mark_output(y)
    _check(b, rng, [shape])


def test_data_movement_chain() -> None:
    """RESHAPE, PAD, PADV2, TRANSPOSE, STRIDED_SLICE and CONCATENATION in one model."""
    rng = np.random.default_rng(1100)
    q = {"scale": 0.1, "zero_point": 5}
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4, 6, 3), "int8", **q)
    r = b.add_tensor("r", (1, 24, 3), "int8", **q)
    b.add_operator("RESHAPE", inputs=[x], outputs=[r], options={"new_shape": [1, 24, 3]})
    pads = b.add_constant("pads", np.array([[0, 0], [2, 1], [0, 3]], dtype=np.int32))
    p = b.add_tensor("p", (1, 27, 6), "int8", **q)
    b.add_operator("PAD", inputs=[r, pads], outputs=[p])
    perm = b.add_constant("perm", np.array([0, 2, 1], dtype=np.int32))
    t = b.add_tensor("t", (1, 6, 27), "int8", **q)
    b.add_operator("TRANSPOSE", inputs=[p, perm], outputs=[t])
    begin = b.add_constant("begin", np.array([0, 1, -20], dtype=np.int32))
    end = b.add_constant("end", np.array([1, 6, 26], dtype=np.int32))
    strides = b.add_constant("strides", np.array([1, 2, 3], dtype=np.int32))
    s = b.add_tensor("s", (1, 3, 7), "int8", **q)
    b.add_operator(
        "STRIDED_SLICE",
        inputs=[t, begin, end, strides],
        outputs=[s],
        options={"begin_mask": 0, "end_mask": 0},
    )
    value = b.add_constant("value", np.array([-100], dtype=np.int8), **q)
    pads2 = b.add_constant("pads2", np.array([[0, 0], [1, 0], [0, 0]], dtype=np.int32))
    p2 = b.add_tensor("p2", (1, 4, 7), "int8", **q)
    b.add_operator("PADV2", inputs=[s, pads2, value], outputs=[p2])
    c = b.add_tensor("c", (1, 7, 7), "int8", **q)
    b.add_operator("CONCATENATION", inputs=[s, p2], outputs=[c], options={"axis": 1})
    b.mark_output(c)
    _check(b, rng, [(1, 4, 6, 3)])


def test_strided_slice_masks() -> None:
    rng = np.random.default_rng(1200)
    q = {"scale": 0.1, "zero_point": -3}
    b = TFLiteModelBuilder()
    x = b.add_input("x", (2, 5, 6), "int8", **q)
    begin = b.add_constant("begin", np.array([1, 4, 0], dtype=np.int32))
    end = b.add_constant("end", np.array([0, 0, 6], dtype=np.int32))
    strides = b.add_constant("strides", np.array([1, -1, 2], dtype=np.int32))
    y = b.add_tensor("y", (4, 3), "int8", **q)
    b.add_operator(
        "STRIDED_SLICE",
        inputs=[x, begin, end, strides],
        outputs=[y],
        options={"begin_mask": 0, "end_mask": 0, "shrink_axis_mask": 1},
    )
    b.mark_output(y)
    _check(b, rng, [(2, 5, 6)])


def test_quantize_dequantize_boundaries() -> None:
    """float32 in -> QUANTIZE -> int8 requantize -> DEQUANTIZE -> float32 out."""
    rng = np.random.default_rng(1300)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 64), "float32")
    q = b.add_tensor("q", (1, 64), "int8", scale=0.037, zero_point=-11)
    b.add_operator("QUANTIZE", inputs=[x], outputs=[q])
    r = b.add_tensor("r", (1, 64), "int8", scale=0.091, zero_point=127)
    b.add_operator("QUANTIZE", inputs=[q], outputs=[r])
    d = b.add_tensor("d", (1, 64), "float32")
    b.add_operator("DEQUANTIZE", inputs=[r], outputs=[d])
    b.mark_output(d)
    b.mark_output(q)
    model = b.build()
    halves = (np.arange(64, dtype=np.float32) - 32) * np.float32(0.037) / 2  # ties
    inputs = [[halves.reshape(1, 64)]] + [[random_input(rng, (1, 64), "float32")] for _ in range(3)]
    assert_bit_exact(model, inputs)


def test_uint8_input_requantize() -> None:
    rng = np.random.default_rng(1400)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 32), "uint8", scale=0.02, zero_point=128)
    q = b.add_tensor("q", (1, 32), "int8", scale=0.02, zero_point=0)
    b.add_operator("QUANTIZE", inputs=[x], outputs=[q])
    b.mark_output(q)
    _check(b, rng, [(1, 32)], ["uint8"])


def _random_shape(rng: np.random.Generator, rank: int) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(1, 6, size=rank))


@pytest.mark.parametrize("seed", range(4))
def test_pad_random(seed: int) -> None:
    rng = np.random.default_rng(1500 + seed)
    shape = _random_shape(rng, 4)
    pads = rng.integers(0, 3, size=(4, 2)).astype(np.int32)
    out_shape = tuple(int(d + p.sum()) for d, p in zip(shape, pads))
    q = {"scale": _scale(rng), "zero_point": _zp(rng)}
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", **q)
    p = b.add_constant("pads", pads)
    y = b.add_tensor("y", out_shape, "int8", **q)
    if seed % 2:
        value = b.add_constant("v", np.array([_zp(rng)], dtype=np.int8), **q)
        b.add_operator("PADV2", inputs=[x, p, value], outputs=[y])
    else:
        b.add_operator("PAD", inputs=[x, p], outputs=[y])
    b.mark_output(y)
    _check(b, rng, [shape])


@pytest.mark.parametrize("seed", range(4))
def test_transpose_reshape_random(seed: int) -> None:
    rng = np.random.default_rng(1600 + seed)
    shape = _random_shape(rng, 4)
    perm = rng.permutation(4).astype(np.int32)
    t_shape = tuple(shape[i] for i in perm)
    q = {"scale": _scale(rng), "zero_point": _zp(rng)}
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", **q)
    t = b.add_tensor("t", t_shape, "int8", **q)
    b.add_operator("TRANSPOSE", inputs=[x, b.add_constant("perm", perm)], outputs=[t])
    flat = (int(np.prod(t_shape[:2])), int(np.prod(t_shape[2:])))
    r = b.add_tensor("r", flat, "int8", **q)
    b.add_operator("RESHAPE", inputs=[t], outputs=[r], options={"new_shape": list(flat)})
    b.mark_output(r)
    _check(b, rng, [shape])


@pytest.mark.parametrize("seed", range(4))
def test_concatenation_random(seed: int) -> None:
    rng = np.random.default_rng(1700 + seed)
    base = _random_shape(rng, 3)
    axis = int(rng.integers(0, 3))
    count = int(rng.integers(2, 4))
    q = {"scale": _scale(rng), "zero_point": _zp(rng)}
    shapes = []
    for _ in range(count):
        shape = list(base)
        shape[axis] = int(rng.integers(1, 4))
        shapes.append(tuple(shape))
    out_shape = list(base)
    out_shape[axis] = sum(s[axis] for s in shapes)
    b = TFLiteModelBuilder()
    xs = [b.add_input(f"x{i}", s, "int8", **q) for i, s in enumerate(shapes)]
    y = b.add_tensor("y", out_shape, "int8", **q)
    b.add_operator("CONCATENATION", inputs=xs, outputs=[y], options={"axis": axis - 3 * (seed % 2)})
    b.mark_output(y)
    _check(b, rng, shapes)


@pytest.mark.parametrize("seed", range(4))
def test_strided_slice_random(seed: int) -> None:
    rng = np.random.default_rng(1800 + seed)
    while True:  # draw until the slice is not empty
        shape = tuple(int(d) for d in rng.integers(2, 8, size=3))
        begin, end, strides = [], [], []
        for d in shape:
            step = int(rng.choice([-2, -1, 1, 2, 3]))
            lo, hi = sorted(int(v) for v in rng.integers(-d, d, size=2))
            begin.append(lo if step > 0 else hi)
            end.append(hi if step > 0 else lo)
            strides.append(step)
        begin_mask, end_mask = int(rng.integers(0, 8)), int(rng.integers(0, 8))
        slices = tuple(
            slice(
                None if begin_mask >> i & 1 else begin[i], None if end_mask >> i & 1 else end[i], s
            )
            for i, s in enumerate(strides)
        )
        out_shape = np.empty(shape)[slices].shape
        if 0 not in out_shape:
            break
    q = {"scale": _scale(rng), "zero_point": _zp(rng)}
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", **q)
    consts = [b.add_constant(n, np.array(v, dtype=np.int32)) for n, v in
              (("begin", begin), ("end", end), ("strides", strides))]  # fmt: skip
    y = b.add_tensor("y", out_shape, "int8", **q)
    b.add_operator(
        "STRIDED_SLICE",
        inputs=[x, *consts],
        outputs=[y],
        options={"begin_mask": begin_mask, "end_mask": end_mask},
    )
    b.mark_output(y)
    _check(b, rng, [shape])
