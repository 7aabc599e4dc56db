"""The Helium (MVE) kernels against LiteRT's reference kernels, on QEMU mps3-an547.

Seeded random one-operator models (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD) over
shapes (channel counts that are not a multiple of 16 or 4, so the tail-predicated loads
and stores are exercised), strides, paddings, dilations, depth multipliers, zero points
at the extremes, per-tensor and per-channel quantization and fused activations. LiteRT's
BUILTIN_REF gives the expected output for the rounding it uses (double for the
convolutions, single for FULLY_CONNECTED); the other rounding mode is checked against
aot's own TVM kernels imported with that mode (which tests/int8 checks against TFLite's
formulas). All cases run in one firmware.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from aot.kernels import select
from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.kernels.mve_firmware import KernelCase, operator_of, run_cases

pytestmark = [pytest.mark.toolchain, pytest.mark.emulator]

ISA = "mve"
ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
ACTIVATION_CYCLE = [0, 1, 0, 1, 2, 0, 3, 1, 0]  # mostly unclamped: clamps hide the rest


def _zp(rng: np.random.Generator) -> int:
    return int(rng.choice([-128, 127, 0, int(rng.integers(-128, 128))]))


def _out_zp(rng: np.random.Generator) -> int:
    """Mostly central (an extreme output zero point saturates half the outputs)."""
    return _zp(rng) if rng.random() < 0.2 else int(rng.integers(-60, 61))


def _scale(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def _out(size: int, k: int, stride: int, dilation: int, padding: str) -> int:
    span = (k - 1) * dilation + 1
    return -(-size // stride) if padding == "SAME" else (size - span + stride) // stride


def _weights_and_bias(b, rng, shape, channels, axis, per_channel, in_scale, small=False):
    # small: weights in -1..1, so that accumulators stay near int8 at multipliers near one
    data = rng.integers(-1 if small else -127, 2 if small else 128, size=shape, dtype=np.int8)
    base = _scale(rng, 1e-3, 0.05)
    scales = [base * _scale(rng, 0.5, 2.0) for _ in range(channels if per_channel else 1)]
    w = b.add_constant(
        "w", data, scale=scales, zero_point=[0] * len(scales), quantized_dimension=axis
    )
    bias_scales = [float(np.float32(in_scale) * np.float32(s)) for s in scales]
    reach = 200 if small else 20000
    values = rng.integers(-reach, reach, size=channels, dtype=np.int32)
    if len(bias_scales) == 1:  # a per-tensor bias: one scale
        bias = b.add_constant("bias", values, scale=bias_scales[0], zero_point=0)
    else:
        bias = b.add_constant("bias", values, scale=bias_scales, zero_point=[0] * channels)
    return w, bias, base


def _out_scale(
    rng: np.random.Generator, in_scale: float, w_scale: float, terms: int, in_zp: int
) -> float:
    """An output scale that spreads the outputs over most of int8, so few saturate: random
    int8 data and weights give sums of about 5400 * sqrt(terms), a far input zero point
    adds about 73 * |zp| * sqrt(terms)."""
    spread = in_scale * w_scale * (5400 + 73 * abs(in_zp)) * np.sqrt(terms) / 40
    return float(np.float32(spread * _scale(rng, 0.5, 2.0)))


def conv_model(rng: np.random.Generator, depthwise: bool, shape: dict) -> tuple[bytes, tuple]:
    h, w, in_c = shape["h"], shape["w"], shape["in_c"]
    k_h, k_w, padding = shape["k_h"], shape["k_w"], shape["pad"]
    stride, dil = shape["s"], shape["d"]
    dm = shape.get("dm", 1)
    out_c = in_c * dm if depthwise else shape["out_c"]
    batches = shape.get("n", 1)
    out_h = _out(h, k_h, stride[0], dil[0], padding)
    out_w = _out(w, k_w, stride[1], dil[1], padding)
    b = TFLiteModelBuilder()
    in_scale = _scale(rng, 0.01, 0.2)
    in_zp = _zp(rng)
    x = b.add_input("x", (batches, h, w, in_c), "int8", scale=in_scale, zero_point=in_zp)
    w_shape = (1, k_h, k_w, out_c) if depthwise else (out_c, k_h, k_w, in_c)
    small = shape.get("small", False)
    wt, bias, w_scale = _weights_and_bias(
        b, rng, w_shape, out_c, 3 if depthwise else 0, shape["per_channel"], in_scale, small
    )
    terms = k_h * k_w * (1 if depthwise else in_c)
    # small weights: multipliers from about 1/6 to 2 over the channels (shifts -3 to 1)
    out_scale = (
        float(np.float32(in_scale * w_scale * _scale(rng, 0.6, 6.0)))
        if small
        else _out_scale(rng, in_scale, w_scale, terms, in_zp) * shape.get("gain", 1.0)
    )
    y = b.add_tensor(
        "y", (batches, out_h, out_w, out_c), "int8",
        scale=out_scale, zero_point=_out_zp(rng),
    )  # fmt: skip
    options = {
        "padding": padding, "stride_h": stride[0], "stride_w": stride[1],
        "dilation_h_factor": dil[0], "dilation_w_factor": dil[1],
        "fused_activation_function": ACTIVATIONS[shape["act"]],
    }  # fmt: skip
    if depthwise:
        options["depth_multiplier"] = dm
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    b.add_operator(op, inputs=[x, wt, bias], outputs=[y], options=options)
    b.mark_output(y)
    return b.build(), (batches, h, w, in_c)


def fc_model(rng: np.random.Generator, shape: dict) -> tuple[bytes, tuple]:
    depth, out_c, batches = shape["depth"], shape["out_c"], shape["n"]
    b = TFLiteModelBuilder()
    in_scale = _scale(rng, 0.01, 0.2)
    in_zp = _zp(rng)
    x = b.add_input("x", (batches, depth), "int8", scale=in_scale, zero_point=in_zp)
    small = shape.get("small", False)
    wt, bias, w_scale = _weights_and_bias(
        b, rng, (out_c, depth), out_c, 0, shape["per_channel"], in_scale, small
    )
    out_scale = (  # small weights: multipliers about 1/6 to 2 (left shifts, zero exponents)
        float(np.float32(in_scale * w_scale * _scale(rng, 0.6, 6.0)))
        if small
        else _out_scale(rng, in_scale, w_scale, depth, in_zp)
    )
    y = b.add_tensor("y", (batches, out_c), "int8", scale=out_scale, zero_point=_out_zp(rng))
    b.add_operator(
        "FULLY_CONNECTED", inputs=[x, wt, bias if shape["bias"] else -1], outputs=[y],
        options={"fused_activation_function": ACTIVATIONS[shape["act"]]},
    )  # fmt: skip
    b.mark_output(y)
    return b.build(), (batches, depth)


def add_model(rng: np.random.Generator, i: int) -> tuple[bytes, tuple]:
    """Same-shape ADD; sizes that are and are not multiples of 4 (the predicated tail)."""
    shape = [(1, 5, 4, 3), (1, 8, 8, 16), (2, 7), (1, 3, 3, 33), (37,), (1, 1, 1, 4)][i % 6]
    b = TFLiteModelBuilder()
    lhs = b.add_input("a", shape, "int8", scale=_scale(rng, 0.005, 1.0), zero_point=_zp(rng))
    rhs = b.add_input("b", shape, "int8", scale=_scale(rng, 0.005, 1.0), zero_point=_zp(rng))
    y = b.add_tensor("y", shape, "int8", scale=_scale(rng, 0.01, 1.0), zero_point=_out_zp(rng))
    options = {"fused_activation_function": ACTIVATIONS[ACTIVATION_CYCLE[i % 9]]}
    b.add_operator("ADD", inputs=[lhs, rhs], outputs=[y], options=options)
    b.mark_output(y)
    return b.build(), shape


def add_sized_model(rng: np.random.Generator, i: int) -> tuple[bytes, tuple]:
    """ADD over every tail length of add_s8_mve.c's 16-element steps (size % 16 from 0 to
    15, with 0, 1 and 3 whole steps), extreme zero points, and now and then an output
    scale so small that the output multiplier is near one (output shift 0: the general
    form, the outputs mostly saturated)."""
    size = 16 * [1, 0, 3][(i // 16) % 3] + i % 16 or 32
    shape = (1, size) if i % 2 else (size,)
    b = TFLiteModelBuilder()
    lhs_scale, rhs_scale = _scale(rng, 0.005, 1.0), _scale(rng, 0.005, 1.0)
    lhs = b.add_input("a", shape, "int8", scale=lhs_scale, zero_point=_zp(rng))
    rhs = b.add_input("b", shape, "int8", scale=rhs_scale, zero_point=_zp(rng))
    # TFLite's output multiplier: 2 * max(input scales) / (2^20 * output scale)
    tiny = 2 * max(lhs_scale, rhs_scale) / 2**20 * float(rng.uniform(1.05, 1.9))
    out_scale = tiny if i % 8 == 7 else _scale(rng, 0.01, 1.0)
    y = b.add_tensor("y", shape, "int8", scale=out_scale, zero_point=_out_zp(rng))
    options = {"fused_activation_function": ACTIVATIONS[ACTIVATION_CYCLE[i % 9]]}
    b.add_operator("ADD", inputs=[lhs, rhs], outputs=[y], options=options)
    b.mark_output(y)
    return b.build(), shape


def pool_model(rng: np.random.Generator, i: int) -> tuple[bytes, tuple]:
    """AVERAGE_POOL_2D: global pools (kws, vww, resnet: up to 256 taps), small windows with
    strides, SAME windows clipped on every side (the counts differ per pixel), channel
    counts with and without a 16-channel tail, batches, extreme zero points, the clamps."""
    f = [(25, 5), (2, 2), (3, 3), (1, 1), (3, 2), (16, 16), (5, 1), (2, 3)][i % 8]
    extra = [(0, 0), (1, 3), (2, 2), (0, 1), (4, 0), (0, 0), (2, 1), (3, 3)][i % 8]
    h, w = f[0] + extra[0], f[1] + extra[1]
    channels = [64, 16, 5, 33, 1, 17, 8, 48, 15, 256][i % 10]
    batches = 2 if i % 7 == 3 else 1
    zp = _zp(rng)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (batches, h, w, channels), "int8", scale=0.05, zero_point=zp)
    pad = "SAME" if i % 3 == 1 else "VALID"
    stride = [(1, 1), (2, 2), (1, 2), (2, 1)][i % 4]
    out_h = _out(h, f[0], stride[0], 1, pad)
    out_w = _out(w, f[1], stride[1], 1, pad)
    y = b.add_tensor("y", (batches, out_h, out_w, channels), "int8", scale=0.05, zero_point=zp)
    options = {
        "padding": pad, "stride_h": stride[0], "stride_w": stride[1],
        "filter_height": f[0], "filter_width": f[1],
        "fused_activation_function": ACTIVATIONS[ACTIVATION_CYCLE[i % 9]],
    }  # fmt: skip
    b.add_operator("AVERAGE_POOL_2D", inputs=[x], outputs=[y], options=options)
    b.mark_output(y)
    return b.build(), (batches, h, w, channels)


def _conv_shape(rng: np.random.Generator, i: int, depthwise: bool) -> dict:
    k = [(1, 1), (3, 3), (3, 3), (1, 1), (2, 3), (5, 1), (3, 3), (1, 4)][i % 8]
    channels = [1, 3, 5, 16, 17, 31, 33, 8, 20, 64][i % 10]
    d = [(1, 1), (1, 1), (2, 1), (1, 2), (2, 2)][i % 5]
    span = ((k[0] - 1) * d[0] + 1, (k[1] - 1) * d[1] + 1)  # VALID needs the window inside
    return {
        "h": span[0] + int(rng.integers(0, 7)), "w": span[1] + int(rng.integers(0, 7)),
        "in_c": channels,
        "out_c": [1, 4, 5, 7, 16, 19, 33][i % 7], "k_h": k[0], "k_w": k[1],
        "s": [(1, 1), (2, 2), (1, 2), (2, 1)][i % 4 if i % 3 else 0],
        "d": d,
        "pad": ["SAME", "VALID"][(i // 2) % 2], "dm": [1, 1, 2, 3][i % 4] if depthwise else 1,
        "per_channel": i % 3 != 1, "act": ACTIVATION_CYCLE[i % 9], "n": 2 if i % 11 == 5 else 1,
    }  # fmt: skip


def _dwconv_shape(rng: np.random.Generator, i: int) -> dict:
    """The Helium depthwise kernel's paths: 3x3 runs of whole windows (8-channel blocks,
    channel counts with and without a partial block), border pixels on every side (SAME
    pads bottom/right only for even sizes at stride 2), other kernel sizes, dilation,
    depth multipliers, narrow activations, and output scales near the accumulator's (some
    channels' multipliers above one: left shifts and zero exponents beside right shifts,
    unsaturated with small weights)."""
    k = [(3, 3), (3, 3), (3, 3), (5, 5), (3, 3), (2, 2), (3, 1), (1, 3)][i % 8]
    channels = [8, 16, 9, 24, 7, 64, 15, 40, 1, 23, 32, 17][i % 12]
    d = [(1, 1), (1, 1), (1, 1), (2, 2), (1, 2)][i % 5]
    span = ((k[0] - 1) * d[0] + 1, (k[1] - 1) * d[1] + 1)
    return {
        "h": span[0] + int(rng.integers(0, 8)), "w": span[1] + int(rng.integers(0, 8)),
        "in_c": channels, "k_h": k[0], "k_w": k[1],
        "s": [(1, 1), (2, 2), (1, 1), (2, 1), (1, 2), (1, 1)][i % 6], "d": d,
        "pad": ["SAME", "SAME", "VALID"][i % 3], "dm": [1, 1, 1, 2, 1, 3][i % 6],
        "per_channel": i % 4 != 3, "act": [0, 0, 1, 3, 2, 0, 0][i % 7],
        "n": 2 if i % 9 == 4 else 1,
        "gain": [1.0, 1.0, 1.0, 1e-3, 1.0, 0.05][i % 6], "small": i % 6 == 5,
    }  # fmt: skip


def _dwconv_runs_shape(rng: np.random.Generator, i: int) -> dict:
    """3x3 depthwise over whole blocks of eight (the row runs): images smaller than the
    kernel (kernel rows above and below, columns left and right of the image, both at
    once), SAME padding on every side (strides 1 and 2 on odd and even sizes), VALID,
    dilated rows, channel tails, both requantization forms (small weights: left shifts)."""
    h = [1, 2, 3, 4, 5, 6, 7, 2][i % 8]
    w = [2, 1, 5, 3, 4, 6, 2, 7, 3][i % 9]
    pad = "VALID" if i % 7 == 3 else "SAME"
    d = (2, 1) if i % 5 == 4 else (1, 1)
    if pad == "VALID":
        h, w = h + 2 * d[0] + 1, w + 2
    return {
        "h": h, "w": w, "in_c": [8, 16, 9, 64, 15, 32, 33, 128, 40][i % 9],
        "k_h": 3, "k_w": 3, "s": [(1, 1), (2, 2), (1, 2), (2, 1), (1, 1)][i % 5], "d": d,
        "pad": pad, "dm": 1, "per_channel": i % 4 != 3, "act": [0, 1, 0, 3, 0, 2][i % 6],
        "n": 2 if i % 11 == 6 else 1,
        "gain": [1.0, 1.0, 1e-3, 1.0, 1.0, 1.0][i % 6], "small": i % 6 == 4,
    }  # fmt: skip


def _short_conv_shape(rng: np.random.Generator, i: int) -> dict:
    """Convolutions whose rows stay in registers (depth k_h * k_w * in_c up to 16, 32, 48)
    and just past them, 1x1 in place and im2col, output channels with and without a partial
    block of four, output scales near the accumulator's (left shifts and zero exponents,
    unsaturated with small weights)."""
    k = [(1, 1), (1, 1), (3, 3), (1, 1), (2, 2), (1, 1), (3, 1), (1, 1)][i % 8]
    channels = [8, 16, 3, 32, 12, 48, 5, 49, 1, 17, 33, 31][i % 12]
    return {
        "h": k[0] + int(rng.integers(0, 6)), "w": k[1] + int(rng.integers(0, 6)),
        "in_c": channels, "out_c": [16, 8, 7, 5, 32, 3, 12, 1][i % 8],
        "k_h": k[0], "k_w": k[1], "s": [(1, 1), (2, 2), (1, 1), (1, 2)][i % 4], "d": (1, 1),
        "pad": ["VALID", "SAME"][(i // 3) % 2], "per_channel": i % 4 != 2,
        "act": [0, 1, 0, 3, 2, 0][i % 6], "n": 2 if i % 7 == 3 else 1,
        "gain": [1.0, 1.0, 1e-3, 1.0, 1.0, 1.0][i % 6], "small": i % 6 == 4,
    }  # fmt: skip


def _im2col_shape(rng: np.random.Generator, i: int) -> dict:
    """The im2col path: kernel rows (k_w * in_c) that are whole 16-byte chunks (windows
    read in place) and that are not (copied), depths up to 48 (rows in registers, as
    kws_ref_model's 10x4 over one channel) and past them, windows inside the image and
    border pixels on every side (SAME with odd and even totals), row and column dilation,
    strides, images smaller than the kernel, partial blocks of output channels, left shifts
    and zero exponents (small weights) beside right shifts."""
    k = [(3, 3), (3, 3), (10, 4), (3, 1), (2, 2), (3, 3), (5, 5), (1, 3), (4, 10), (3, 3)]
    channels = [16, 5, 1, 32, 8, 17, 16, 32, 1, 48]
    d = [(1, 1), (1, 1), (2, 1), (1, 1), (1, 2), (1, 1), (2, 2)][i % 7]
    k_h, k_w = k[i % 10]
    span = ((k_h - 1) * d[0] + 1, (k_w - 1) * d[1] + 1)
    pad = ["SAME", "SAME", "VALID"][i % 3]
    low = (1, 1) if pad == "SAME" else span  # SAME: images smaller than the kernel too
    return {
        "h": int(rng.integers(low[0], span[0] + 7)), "w": int(rng.integers(low[1], span[1] + 7)),
        "in_c": channels[i % 10], "out_c": [16, 4, 7, 20, 5, 33, 1][i % 7],
        "k_h": k_h, "k_w": k_w, "s": [(1, 1), (2, 2), (1, 1), (2, 1), (1, 2)][i % 5], "d": d,
        "pad": pad, "per_channel": i % 4 != 2, "act": [0, 1, 0, 3, 2, 0][i % 6],
        "n": 2 if i % 9 == 4 else 1,
        "gain": [1.0, 1.0, 1.0, 1e-3, 1.0, 1.0][i % 6], "small": i % 6 == 5,
    }  # fmt: skip


def _rows_conv_shape(rng: np.random.Generator, i: int) -> dict:
    """The kernel-rows path (k_h <= 3, k_w * in_c <= 16, no column dilation: a first
    layer): border pixels on every side, strides, row dilation, images smaller than the
    kernel, one to three kernel rows."""
    k = [(3, 3), (3, 3), (2, 3), (3, 1), (1, 4), (3, 2), (2, 2), (3, 5)][i % 8]
    channels = [3, 3, 5, 16, 4, 8, 1, 3][i % 8]
    d = (2, 1) if i % 5 == 3 else (1, 1)
    span = ((k[0] - 1) * d[0] + 1, k[1])
    pad = ["SAME", "SAME", "VALID"][i % 3]
    low = (1, 1) if pad == "SAME" else span
    return {
        "h": int(rng.integers(low[0], span[0] + 9)), "w": int(rng.integers(low[1], span[1] + 9)),
        "in_c": channels, "out_c": [16, 8, 7, 5, 32, 3][i % 6], "k_h": k[0], "k_w": k[1],
        "s": [(1, 1), (2, 2), (1, 2), (2, 1)][i % 4], "d": d, "pad": pad,
        "per_channel": i % 4 != 2, "act": [0, 1, 0, 3, 2, 0][i % 6],
        "n": 2 if i % 7 == 3 else 1,
        "gain": [1.0, 1.0, 1e-3, 1.0, 1.0, 1.0][i % 6], "small": i % 6 == 4,
    }  # fmt: skip


def _block_conv_shape(rng: np.random.Generator, i: int) -> dict:
    """1x1 convolutions in place over depths around the asm blocks' limits (rows of one to
    four chunks held in registers, two pixels per pass at 16/32/48/64 channels, odd pixel
    counts and strides, the chunk loop with and without a partial last chunk; double
    rounding with a left shift takes the loop past 48), output channels below 4 and not a
    multiple of 4, left shifts and zero exponents (small weights)."""
    channels = [15, 16, 17, 31, 33, 47, 48, 49, 63, 64, 65, 80, 100, 128, 129, 32][i % 16]
    return {
        "h": 1 + int(rng.integers(0, 4)), "w": 1 + int(rng.integers(0, 5)),
        "in_c": channels, "out_c": [1, 2, 3, 4, 5, 7, 8, 13, 16, 6, 9][i % 11],
        "k_h": 1, "k_w": 1, "s": [(1, 1), (2, 2), (1, 1), (1, 2)][i % 4], "d": (1, 1),
        "pad": "VALID", "per_channel": i % 5 != 2, "act": [0, 1, 0, 3, 2, 0, 0][i % 7],
        "n": 2 if i % 9 == 4 else 1, "small": i % 3 == 1,
    }  # fmt: skip


def _block_fc_shape(rng: np.random.Generator, i: int) -> dict:
    """FULLY_CONNECTED over depths around the same limits, left shifts (small weights)."""
    return {
        "depth": [15, 16, 17, 32, 48, 49, 63, 64, 65, 127, 128, 200][i % 12],
        "out_c": [1, 2, 3, 4, 5, 7, 8, 9, 12][i % 9], "n": [1, 2, 1][i % 3],
        "per_channel": i % 2 == 0, "bias": i % 7 != 3, "act": [0, 0, 1, 3, 2][i % 5],
        "small": i % 3 == 1,
    }  # fmt: skip


def _fc_shape(rng: np.random.Generator, i: int) -> dict:
    return {
        "depth": [1, 7, 16, 17, 40, 63, 100, 250][i % 8], "out_c": int(rng.integers(1, 24)),
        "n": [1, 1, 3, 2][i % 4], "per_channel": i % 3 == 2, "bias": i % 5 != 4,
        "act": ACTIVATION_CYCLE[i % 9],
    }  # fmt: skip


def _litert_case(name: str, model: bytes, *data: np.ndarray) -> KernelCase:
    from aot.testing.reference import run_tflite_reference

    (expected,) = run_tflite_reference(model, list(data))
    return KernelCase(name, operator_of(model), data[0], expected, data[1:])


def _other_rounding_case(name: str, model: bytes, mode: str, *data: np.ndarray) -> KernelCase:
    from tests.int8.harness import compile_vm, run_vm

    _, vm = compile_vm(model, rounding=mode)
    (expected,) = run_vm(vm, list(data))
    return KernelCase(name, operator_of(model, rounding=mode), data[0], expected, data[1:])


CASES_PER_KIND = 24
DWCONV_EXTRA = 36
CONV_EXTRA = 24
ADD_EXTRA = 48
DWCONV_RUNS = 40
IM2COL_EXTRA = 30
ROWS_EXTRA = 16
BLOCK_EXTRA = 32


def _conv_family(
    rng: np.random.Generator,
    shape: Callable[[np.random.Generator, int], dict],
    count: int,
    first: int,
    single: Callable[[int], bool],
) -> list[KernelCase]:
    """`count` convolutions of one family, conv<first + i>, each against LiteRT, and in
    single rounding too where single(i)."""
    cases = []
    for i in range(count):
        model, in_shape = conv_model(rng, False, shape(rng, i))
        data = rng.integers(-128, 128, in_shape, dtype=np.int8)
        cases.append(_litert_case(f"conv{first + i}", model, data))
        if single(i):
            cases.append(_other_rounding_case(f"conv{first + i}-single", model, "single", data))
    return cases


def _cases() -> list[KernelCase]:
    rng = np.random.default_rng(2026)
    cases = []
    for i in range(CASES_PER_KIND):
        for kind, depthwise in (("conv", False), ("dwconv", True)):
            model, in_shape = conv_model(rng, depthwise, _conv_shape(rng, i, depthwise))
            data = rng.integers(-128, 128, in_shape, dtype=np.int8)
            cases.append(_litert_case(f"{kind}{i}", model, data))
            if i % 6 == 0:  # single rounding, which LiteRT's conv does not use
                cases.append(_other_rounding_case(f"{kind}{i}-single", model, "single", data))
        model, in_shape = fc_model(rng, _fc_shape(rng, i))
        data = rng.integers(-128, 128, in_shape, dtype=np.int8)
        cases.append(_litert_case(f"fc{i}", model, data))
        if i % 6 == 0:
            cases.append(_other_rounding_case(f"fc{i}-double", model, "double", data))
        model, shape = add_model(rng, i)
        pair = [rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(2)]
        cases.append(_litert_case(f"add{i}", model, *pair))
        if i % 6 == 0:
            cases.append(_other_rounding_case(f"add{i}-single", model, "single", *pair))
    # convolutions over few input channels; the im2col path (in place, copied, border
    # pixels); the kernel-rows path
    cases += _conv_family(rng, _short_conv_shape, CONV_EXTRA, 100, lambda i: i % 4 == 1)
    cases += _conv_family(rng, _im2col_shape, IM2COL_EXTRA, 200, lambda i: i % 5 == 2)
    cases += _conv_family(rng, _rows_conv_shape, ROWS_EXTRA, 300, lambda i: i % 5 == 1)
    for i in range(BLOCK_EXTRA):  # the asm blocks' rows, both rounding modes
        model, in_shape = conv_model(rng, False, _block_conv_shape(rng, i))
        data = rng.integers(-128, 128, in_shape, dtype=np.int8)
        cases.append(_litert_case(f"conv{400 + i}", model, data))
        if i % 2 == 1:
            cases.append(_other_rounding_case(f"conv{400 + i}-single", model, "single", data))
        model, in_shape = fc_model(rng, _block_fc_shape(rng, i))
        data = rng.integers(-128, 128, in_shape, dtype=np.int8)
        cases.append(_litert_case(f"fc{200 + i}", model, data))
        if i % 2 == 0:
            cases.append(_other_rounding_case(f"fc{200 + i}-double", model, "double", data))
    for i in range(DWCONV_EXTRA):  # the depthwise kernel's paths, both rounding modes
        model, in_shape = conv_model(rng, True, _dwconv_shape(rng, i))
        data = rng.integers(-128, 128, in_shape, dtype=np.int8)
        cases.append(_litert_case(f"dwconv{100 + i}", model, data))
        if i % 4 == 1:
            cases.append(_other_rounding_case(f"dwconv{100 + i}-single", model, "single", data))
    for i in range(DWCONV_RUNS):  # the 3x3 row runs' borders
        model, in_shape = conv_model(rng, True, _dwconv_runs_shape(rng, i))
        data = rng.integers(-128, 128, in_shape, dtype=np.int8)
        cases.append(_litert_case(f"dwconv{200 + i}", model, data))
        if i % 4 == 2:
            cases.append(_other_rounding_case(f"dwconv{200 + i}-single", model, "single", data))
    for i in range(CASES_PER_KIND):
        model, in_shape = pool_model(rng, i)
        data = rng.integers(-128, 128, in_shape, dtype=np.int8)
        cases.append(_litert_case(f"pool{i}", model, data))
    for i in range(ADD_EXTRA):  # every tail length and requantization form, both roundings
        model, shape = add_sized_model(rng, i)
        pair = [rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(2)]
        cases.append(_litert_case(f"add{100 + i}", model, *pair))
        if i % 2:
            cases.append(_other_rounding_case(f"add{100 + i}-single", model, "single", *pair))
    return cases


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[KernelCase, np.ndarray]]:
    cases = _cases()
    outputs = run_cases(cases, ISA, Path(tmp_path_factory.mktemp("mve")))
    return {c.name: (c, o) for c, o in zip(cases, outputs)}


def _assert_exact(results: dict, prefix: str) -> None:
    checked = 0
    failures = []
    for name, (case, output) in results.items():
        if not name.startswith(prefix) or name[len(prefix)].isalpha():
            continue
        checked += 1
        if not np.array_equal(output, case.expected):
            diff = int((output != case.expected).sum())
            failures.append(f"{name}: {diff} of {output.size} values differ")
    assert checked >= CASES_PER_KIND
    assert not failures, "; ".join(failures)


@pytest.mark.parametrize("kind", ["conv", "dwconv", "fc", "add", "pool"])
def test_kernel_bit_exact(results: dict, kind: str) -> None:
    _assert_exact(results, kind)


def test_every_case_ran_on_its_mve_variant(results: dict) -> None:
    for case, _ in results.values():
        variant = select(case.info, (ISA,))
        assert variant is not None and variant.isa == ISA, case.name
