"""Descriptors of the example NPU's command stream, and their C text.

The Python mirror of ``aot/runtime_c/npu/example_npu.h``: one frozen dataclass
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


REQUANT_MODES = {
    "per_tensor": "AOT_NPU_REQUANT_PER_TENSOR",
    "per_channel": "AOT_NPU_REQUANT_PER_CHANNEL",
    "packed": "AOT_NPU_REQUANT_PACKED",
}


@dataclass(frozen=True)
class Requant:
    """Requantization to int8. ``mode`` is one of ``REQUANT_MODES``: per tensor (the
    values here), per channel (int32 multipliers and int8 shifts as operands) or packed
    (one int32 per channel as operand, ``shift0`` the base shift), the importer's forms."""

    mode: str
    output_offset: int
    act_min: int
    act_max: int
    rounding: str  # "double" or "single"
    multiplier0: int = 0
    shift0: int = 0


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
    pad_value: int  # what a tap outside the image reads (the input zero point)
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
    """C expressions for a descriptor's operand pointers; ``NULL`` for those it lacks."""

    input: str
    weights: str
    output: str
    bias: str = "NULL"
    multiplier: str = "NULL"
    shift: str = "NULL"


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
            f".input_offset = {desc.input_offset}, .pad_value = {desc.pad_value}",
        ]
    else:
        fields += [
            f".batches = {desc.batches}u, .depth = {desc.depth}u, .out_c = {desc.out_c}u",
            f".input_offset = {desc.input_offset}, .weight_offset = {desc.weight_offset}",
        ]
    fields.append(
        f".requant = {{.mode = {REQUANT_MODES[rq.mode]}, .multiplier = {operands.multiplier}, "
        f".shift = {operands.shift}, .multiplier0 = {rq.multiplier0}, .shift0 = {rq.shift0}, "
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
    """What the device model would refuse as AOT_ERR_NPU_BAD_DESCRIPTOR, in words (its
    scalar fields; per-channel values are the importer's, in range by construction).

    The backend's pattern predicate runs this, so an operator the device cannot run stays
    on the CPU instead of failing at run time."""
    problems: list[str] = []
    rq = desc.requant
    if rq.mode not in REQUANT_MODES or rq.rounding not in ROUNDING:
        problems.append(f"requantization {rq.mode}/{rq.rounding} is not known")
    if not -128 <= rq.act_min <= rq.act_max <= 127:
        problems.append(f"activation range [{rq.act_min}, {rq.act_max}] is not int8")
    if not -128 <= rq.output_offset <= 127:
        problems.append(f"output zero point {rq.output_offset} is not int8")
    max_shift = 30 if rq.rounding == "single" else 31
    if rq.mode != "per_channel" and not -31 <= rq.shift0 <= max_shift:
        problems.append(f"shift {rq.shift0} lies outside [-31, {max_shift}]")
    if rq.mode == "per_tensor" and not 0 <= rq.multiplier0 < 2**31:
        problems.append(f"multiplier {rq.multiplier0} lies outside [0, 2^31)")
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
        if not -128 <= desc.pad_value <= 127:
            problems.append(f"pad value {desc.pad_value} is not int8")
    if any(not 1 <= d <= 0xFFFF for d in dims):
        problems.append("a dimension is 0 or above 65535")
    if any(not -255 <= o <= 255 for o in offsets):
        problems.append("a zero point is not 8-bit")
    return problems
