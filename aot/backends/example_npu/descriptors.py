"""Descriptors of the example NPU's command stream, and their C text.

The Python mirror of ``aot/runtime_c/include/aot/example_npu.h``: one frozen dataclass
per descriptor kind with the shapes and requantization the backend computes at build
time. ``c_initializer`` prints a descriptor as a C99 designated initializer whose operand
fields are C expressions the caller chooses (constant symbols, pool offsets, or run-time
pointers), so the same text serves the generated model and the C tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STREAM_VERSION = 1  # AOT_NPU_STREAM_VERSION
ROUNDING = {"double": "AOT_NPU_ROUNDING_DOUBLE", "single": "AOT_NPU_ROUNDING_SINGLE"}


@dataclass(frozen=True)
class Requant:
    """Per output channel Q31 multipliers and left-shift exponents, then offset and clamp."""

    multipliers: tuple[int, ...]
    shifts: tuple[int, ...]
    output_offset: int
    act_min: int
    act_max: int
    rounding: str  # "double" or "single"

    def multiplier_array(self) -> np.ndarray:
        return np.asarray(self.multipliers, dtype=np.int32)

    def shift_array(self) -> np.ndarray:
        return np.asarray(self.shifts, dtype=np.int8)


@dataclass(frozen=True)
class Conv2D:
    """CONV_2D (``depthwise=False``, groups of one) or DEPTHWISE_CONV_2D, NHWC."""

    depthwise: bool
    batches: int
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    k_h: int
    k_w: int
    stride: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int]  # top, left
    depth_multiplier: int
    input_offset: int
    requant: Requant

    @property
    def input_bytes(self) -> int:
        return self.batches * self.in_h * self.in_w * self.in_c

    @property
    def output_bytes(self) -> int:
        return self.batches * self.out_h * self.out_w * self.out_c


@dataclass(frozen=True)
class FullyConnected:
    """FULLY_CONNECTED: input read as [batches, depth], weights [out_c, depth]."""

    batches: int
    depth: int
    out_c: int
    input_offset: int
    weight_offset: int
    requant: Requant

    @property
    def input_bytes(self) -> int:
        return self.batches * self.depth

    @property
    def output_bytes(self) -> int:
        return self.batches * self.out_c


Descriptor = Conv2D | FullyConnected


@dataclass(frozen=True)
class Operands:
    """C expressions for a descriptor's operand pointers; ``bias`` may be ``"NULL"``."""

    input: str
    weights: str
    bias: str
    output: str
    multiplier: str
    shift: str


def c_type(desc: Descriptor) -> str:
    return "aot_npu_conv2d" if isinstance(desc, Conv2D) else "aot_npu_fully_connected"


def op_name(desc: Descriptor) -> str:
    if isinstance(desc, FullyConnected):
        return "AOT_NPU_OP_FULLY_CONNECTED"
    return "AOT_NPU_OP_DEPTHWISE_CONV2D" if desc.depthwise else "AOT_NPU_OP_CONV2D"


def c_initializer(desc: Descriptor, operands: Operands) -> str:
    """``{.header = ..., .input = ..., ...}`` for ``struct <c_type(desc)>``."""
    rq = desc.requant
    fields = [
        f".header = {{{op_name(desc)}, (uint16_t)sizeof(struct {c_type(desc)})}}",
        f".input = {operands.input}",
        f".weights = {operands.weights}",
        f".bias = {operands.bias}",
        f".output = {operands.output}",
    ]
    if isinstance(desc, Conv2D):
        fields += [
            f".batches = {desc.batches}u, .in_h = {desc.in_h}u, .in_w = {desc.in_w}u, "
            f".in_c = {desc.in_c}u",
            f".out_h = {desc.out_h}u, .out_w = {desc.out_w}u, .out_c = {desc.out_c}u",
            f".k_h = {desc.k_h}u, .k_w = {desc.k_w}u",
            f".stride_h = {desc.stride[0]}u, .stride_w = {desc.stride[1]}u",
            f".dilation_h = {desc.dilation[0]}u, .dilation_w = {desc.dilation[1]}u",
            f".pad_top = {desc.padding[0]}u, .pad_left = {desc.padding[1]}u",
            f".depth_multiplier = {desc.depth_multiplier}u",
            f".input_offset = {desc.input_offset}",
        ]
    else:
        fields += [
            f".batches = {desc.batches}u, .depth = {desc.depth}u, .out_c = {desc.out_c}u",
            f".input_offset = {desc.input_offset}, .weight_offset = {desc.weight_offset}",
        ]
    fields.append(
        f".requant = {{.multiplier = {operands.multiplier}, .shift = {operands.shift}, "
        f".output_offset = {rq.output_offset}, .act_min = {rq.act_min}, "
        f".act_max = {rq.act_max}, .rounding = {ROUNDING[rq.rounding]}}}"
    )
    return "{\n  " + ",\n  ".join(fields) + "\n}"


def c_array(ctype: str, symbol: str, values: np.ndarray, attributes: str = "") -> str:
    """A const C array definition, 12 values a line."""
    flat = [int(v) for v in np.asarray(values).reshape(-1)]
    if ctype == "int32_t":
        # INT32_MIN has no literal; every other value prints as itself.
        text = [f"{v}" if v != -(2**31) else "INT32_MIN" for v in flat]
    else:
        text = [str(v) for v in flat]
    rows = [", ".join(text[i : i + 12]) for i in range(0, len(text), 12)]
    attr = f" {attributes}" if attributes else ""
    body = ",\n  ".join(rows)
    return f"const {ctype} {symbol}[{len(flat)}]{attr} = {{\n  {body}\n}};"


def validate(desc: Descriptor) -> list[str]:
    """What the device model would refuse as AOT_ERR_NPU_BAD_DESCRIPTOR, in words.

    The backend runs this at build time, so a stream the device cannot run is a build
    error instead of a run-time code."""
    problems: list[str] = []
    rq = desc.requant
    channels = desc.out_c
    if len(rq.multipliers) != channels or len(rq.shifts) != channels:
        problems.append(f"{len(rq.multipliers)} multipliers for {channels} output channels")
    if not -128 <= rq.act_min <= rq.act_max <= 127:
        problems.append(f"activation range [{rq.act_min}, {rq.act_max}] is not int8")
    if not -128 <= rq.output_offset <= 127:
        problems.append(f"output zero point {rq.output_offset} is not int8")
    max_shift = 30 if rq.rounding == "single" else 31
    if any(not -31 <= s <= max_shift for s in rq.shifts):
        problems.append(f"a shift lies outside [-31, {max_shift}]")
    if any(not 0 <= m < 2**31 for m in rq.multipliers):
        problems.append("a multiplier lies outside [0, 2^31)")
    offsets: Sequence[int] = (desc.input_offset,)
    if isinstance(desc, FullyConnected):
        offsets = (desc.input_offset, desc.weight_offset)
        dims: Sequence[int] = (desc.batches, desc.depth, desc.out_c)
    else:
        dims = (
            desc.batches, desc.in_h, desc.in_w, desc.in_c, desc.out_h, desc.out_w,
            desc.out_c, desc.k_h, desc.k_w, *desc.stride, *desc.dilation,
            desc.depth_multiplier,
        )  # fmt: skip
        if desc.depthwise and desc.out_c != desc.in_c * desc.depth_multiplier:
            problems.append("depthwise output channels are not input channels x multiplier")
        if not desc.depthwise and desc.depth_multiplier != 1:
            problems.append("a convolution must have depth multiplier 1")
        if any(not 0 <= p <= 0xFFFF for p in desc.padding):
            problems.append(f"padding {desc.padding} is out of range")
    if any(not 1 <= d <= 0xFFFF for d in dims):
        problems.append("a dimension is 0 or above 65535")
    if any(not -255 <= o <= 255 for o in offsets):
        problems.append("a zero point is not 8-bit")
    return problems
