"""Random operator cases for the kernel tests, many in one TFLite model.

Each case is one operator with its own input and output, so one model holds dozens of
cases and one firmware run (one QEMU session) checks them all against LiteRT's
``BUILTIN_REF`` kernels. The cases cover what the variants branch on: 1x1 / 3x3 / other
kernels, strides, SAME / VALID padding, dilations, channel counts that are and are not
multiples of 4, depth multipliers, batches, zero points at the extremes, per-tensor and
per-channel weights and every fused activation; LiteRT rounds convolutions in double and
fully connected layers in single rounding, so both modes run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aot.testing.tflite_builder import TFLiteModelBuilder

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


@dataclass(frozen=True)
class Shape:
    kind: str  # CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED
    batches: int
    h: int
    w: int
    in_c: int
    out_c: int
    k: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    same: bool = True
    multiplier: int = 1
    # weight scales near this one instead of 1e-3..0.05: far below (right shifts over 23,
    # where the kernels cannot fold the output zero point) or above (left shifts)
    weight_scale: float | None = None
    # ADD: which operand has the output's shape and how the other repeats over it
    # ("equal", "channel": [in_c], "scalar": [1], "lhs_channel": the lhs is the [in_c] one)
    broadcast: str = "equal"
    # every weight +-127 (random signs): a channel's sum of |w| at its largest, 127 * K
    extreme_weights: bool = False


def _out(size: int, k: int, stride: int, dilation: int, same: bool) -> int:
    effective = (k - 1) * dilation + 1
    return -(-size // stride) if same else (size - effective) // stride + 1


def _zp(rng: np.random.Generator) -> int:
    return int(rng.choice([-128, 127, 0, int(rng.integers(-128, 128))]))


def _scale(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


ADD_BROADCASTS = ("equal", "equal", "channel", "scalar", "lhs_channel")


def random_shape(rng: np.random.Generator, kind: str) -> Shape:
    batches = int(rng.choice([1, 1, 1, 2]))
    if kind == "ADD":
        # Sizes with and without a tail of the four-element blocks.
        h, w, c = int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 19))
        broadcast = ADD_BROADCASTS[int(rng.integers(0, len(ADD_BROADCASTS)))]
        return Shape(kind, batches, h, w, c, c, broadcast=broadcast)
    if kind == "FULLY_CONNECTED":
        depth = int(rng.choice([int(rng.integers(1, 20)), 4 * int(rng.integers(1, 24))]))
        return Shape(kind, batches, 1, 1, depth, int(rng.integers(1, 24)))
    if kind == "TRANSPOSE_CONV":
        # inside the kernels' limits: in_c % 4 == 0, a kernel at least its stride
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        k = (stride[0] + int(rng.integers(0, 3)), stride[1] + int(rng.integers(0, 3)))
        h, w = (int(v) for v in rng.integers(1, 7, 2))
        in_c, out_c = 4 * int(rng.integers(1, 4)), int(rng.integers(1, 12))
        return Shape(kind, batches, h, w, in_c, out_c, k, stride, same=bool(rng.integers(0, 2)))
    h, w = (int(v) for v in rng.integers(3, 12, 2))
    quad = bool(rng.integers(0, 2))
    in_c = 4 * int(rng.integers(1, 5)) if quad else int(rng.integers(1, 7))
    k = [(1, 1), (3, 3), (3, 3), (int(rng.integers(1, 5)), int(rng.integers(1, 5)))][
        int(rng.integers(0, 4))
    ]
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dilation = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) if rng.random() < 0.25 else (1, 1)
    same = bool(rng.integers(0, 2))
    if kind == "DEPTHWISE_CONV_2D":
        multiplier = 1 if rng.random() < 0.7 else int(rng.integers(2, 4))
        out_c = in_c * multiplier
    else:
        multiplier, out_c = (
            1,
            int(rng.choice([int(rng.integers(1, 9)), 2 * int(rng.integers(1, 9))])),
        )
    if kind == "CONV_2D" and k == (1, 1):
        in_c = 4 * int(rng.integers(4, 9)) if quad else int(rng.integers(16, 24))
    elif kind == "CONV_2D" and in_c % 4:
        out_c = int(rng.integers(16, 20))  # smaller ones stay on TVM (aot/kernels/dsp.py)
    shape = Shape(kind, batches, h, w, in_c, out_c, k, stride, dilation, same, multiplier)
    if (
        _out(h, k[0], stride[0], dilation[0], same) < 1
        or _out(w, k[1], stride[1], dilation[1], same) < 1
    ):
        return Shape(kind, batches, h, w, in_c, out_c, k, stride, (1, 1), True, multiplier)
    return shape


def _weights(rng: np.random.Generator, shape: tuple[int, ...], extreme: bool) -> np.ndarray:
    if extreme:
        return (127 * rng.choice([-1, 1], size=shape)).astype(np.int8)
    return rng.integers(-127, 128, size=shape, dtype=np.int8)


def add_case(
    b: TFLiteModelBuilder,
    rng: np.random.Generator,
    shape: Shape,
    name: str,
    per_channel: bool | None = None,
) -> None:
    """One operator on its own input, writing its own output (per-channel weights or
    not at random unless ``per_channel`` says)."""
    act = ACTIVATIONS[int(rng.integers(0, 4))]
    in_scale, in_zp = _scale(rng, 0.01, 0.2), _zp(rng)
    out_scale, out_zp = _scale(rng, 0.01, 0.5), _zp(rng)
    if shape.kind == "ADD":
        _add_operator(b, rng, shape, name, act)
        return
    out_c = shape.out_c
    drawn = bool(rng.integers(0, 3))
    per_channel = drawn if per_channel is None else per_channel
    lo, hi = (1e-3, 0.05) if shape.weight_scale is None else (0.8, 1.25)
    scale = 1.0 if shape.weight_scale is None else shape.weight_scale
    w_scales = [scale * _scale(rng, lo, hi) for _ in range(out_c if per_channel else 1)]
    bias_scales = [float(np.float32(in_scale) * np.float32(s)) for s in w_scales]
    if shape.kind == "FULLY_CONNECTED":
        x = b.add_input(f"{name}_x", (shape.batches, shape.in_c), "int8", in_scale, in_zp)
        weights = _weights(rng, (out_c, shape.in_c), shape.extreme_weights)
        wt = b.add_constant(f"{name}_w", weights, scale=w_scales, zero_point=[0] * len(w_scales))
        inputs = [x, wt, -1]
        if rng.random() < 0.8:
            bias = rng.integers(-9000, 9000, size=out_c, dtype=np.int32)
            inputs[2] = b.add_constant(
                f"{name}_b", bias, scale=bias_scales, zero_point=[0] * len(bias_scales)
            )
        y = b.add_tensor(f"{name}_y", (shape.batches, out_c), "int8", out_scale, out_zp)
        b.add_operator(
            "FULLY_CONNECTED", inputs=inputs, outputs=[y],
            options={"fused_activation_function": act},
        )  # fmt: skip
        b.mark_output(y)
        return
    if shape.kind == "TRANSPOSE_CONV":
        _transpose_conv(b, rng, shape, name, act, (in_scale, in_zp), (out_scale, out_zp), w_scales)
        return
    depthwise = shape.kind == "DEPTHWISE_CONV_2D"
    k_h, k_w = shape.k
    x = b.add_input(
        f"{name}_x", (shape.batches, shape.h, shape.w, shape.in_c), "int8", in_scale, in_zp
    )
    w_shape = (1, k_h, k_w, out_c) if depthwise else (out_c, k_h, k_w, shape.in_c)
    weights = _weights(rng, w_shape, shape.extreme_weights)
    wt = b.add_constant(
        f"{name}_w", weights, scale=w_scales, zero_point=[0] * len(w_scales),
        quantized_dimension=3 if depthwise else 0,
    )  # fmt: skip
    channel_scales = bias_scales if per_channel else bias_scales * out_c
    bias = rng.integers(-20000, 20000, size=out_c, dtype=np.int32)
    bt = b.add_constant(f"{name}_b", bias, scale=channel_scales, zero_point=[0] * out_c)
    out_h = _out(shape.h, k_h, shape.stride[0], shape.dilation[0], shape.same)
    out_w = _out(shape.w, k_w, shape.stride[1], shape.dilation[1], shape.same)
    y = b.add_tensor(f"{name}_y", (shape.batches, out_h, out_w, out_c), "int8", out_scale, out_zp)
    options = {
        "padding": "SAME" if shape.same else "VALID",
        "stride_h": shape.stride[0], "stride_w": shape.stride[1],
        "dilation_h_factor": shape.dilation[0], "dilation_w_factor": shape.dilation[1],
        "fused_activation_function": act,
    }  # fmt: skip
    if depthwise:
        options["depth_multiplier"] = shape.multiplier
    b.add_operator(shape.kind, inputs=[x, wt, bt], outputs=[y], options=options)
    b.mark_output(y)


def _transpose_conv(
    b: TFLiteModelBuilder,
    rng: np.random.Generator,
    shape: Shape,
    name: str,
    act: str,
    x_q: tuple[float, int],
    y_q: tuple[float, int],
    w_scales: list[float],
) -> None:
    """TRANSPOSE_CONV of ``shape`` (h, w the input's; SAME: stride times it, VALID: the
    kernel past it), with a bias."""
    (k_h, k_w), (sh, sw), out_c = shape.k, shape.stride, shape.out_c
    if shape.same:
        out_h, out_w = shape.h * sh, shape.w * sw
    else:
        out_h, out_w = (shape.h - 1) * sh + k_h, (shape.w - 1) * sw + k_w
    x = b.add_input(f"{name}_x", (shape.batches, shape.h, shape.w, shape.in_c), "int8", *x_q)
    weights = _weights(rng, (out_c, k_h, k_w, shape.in_c), shape.extreme_weights)
    wt = b.add_constant(
        f"{name}_w", weights, scale=w_scales, zero_point=[0] * len(w_scales),
        quantized_dimension=0,
    )  # fmt: skip
    out_shape = (shape.batches, out_h, out_w, out_c)
    bias_scales = [
        float(np.float32(x_q[0]) * np.float32(w_scales[i % len(w_scales)])) for i in range(out_c)
    ]
    bias = rng.integers(-20000, 20000, size=out_c, dtype=np.int32)
    bt = b.add_constant(f"{name}_b", bias, scale=bias_scales, zero_point=[0] * out_c)
    y = b.add_tensor(f"{name}_y", out_shape, "int8", *y_q)
    ins = [b.add_constant(f"{name}_shape", np.array(out_shape, np.int32)), wt, x, bt]
    options = {
        "padding": "SAME" if shape.same else "VALID", "stride_h": sh, "stride_w": sw,
        "fused_activation_function": act,
    }  # fmt: skip
    b.add_operator("TRANSPOSE_CONV", inputs=ins, outputs=[y], options=options)
    b.mark_output(y)


def _add_operator(
    b: TFLiteModelBuilder, rng: np.random.Generator, shape: Shape, name: str, act: str
) -> None:
    """ADD of two inputs with their own scales and zero points (scales up to 50x apart,
    so either input's multiplier is the smaller one)."""
    full = (shape.batches, shape.h, shape.w, shape.in_c)
    other = {"equal": full, "scalar": (1,)}.get(shape.broadcast, (shape.in_c,))
    lhs_shape, rhs_shape = (other, full) if shape.broadcast == "lhs_channel" else (full, other)
    x = b.add_input(f"{name}_x", lhs_shape, "int8", _scale(rng, 0.005, 0.25), _zp(rng))
    y = b.add_input(f"{name}_y", rhs_shape, "int8", _scale(rng, 0.005, 0.25), _zp(rng))
    z = b.add_tensor(f"{name}_z", full, "int8", _scale(rng, 0.005, 0.5), _zp(rng))
    b.add_operator("ADD", inputs=[x, y], outputs=[z], options={"fused_activation_function": act})
    b.mark_output(z)


def model(seed: int, kinds: tuple[str, ...], count: int) -> bytes:
    """``count`` random cases of each kind in one model."""
    rng = np.random.default_rng(seed)
    b = TFLiteModelBuilder()
    for kind in kinds:
        for i in range(count):
            add_case(b, rng, random_shape(rng, kind), f"{kind.lower()}_{i}")
    return b.build()


def model_of(seed: int, shapes: tuple[Shape, ...]) -> bytes:
    """The given shapes as cases of one model (their quantization drawn from ``seed``)."""
    rng = np.random.default_rng(seed)
    b = TFLiteModelBuilder()
    for i, shape in enumerate(shapes):
        add_case(b, rng, shape, f"{shape.kind.lower()}_{i}")
    return b.build()
