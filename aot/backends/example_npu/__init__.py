"""The example NPU backend: int8 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED on a
device model that runs under QEMU (``aot/runtime_c/npu/example_npu.c``).

The walk-through of this file is in docs/accelerators.md. In short: ``patterns`` claims
the importer's three operator kinds when the device can run them; ``lower`` turns a region
(a run of neighbouring claimed operators) into one descriptor per operator, wiring each
operand to a region parameter, a region output or a slice of the step's scratch (for
tensors that live only inside the region); ``emit`` prints a function that writes the
descriptors and submits the stream, called from ``run()``; ``runtime`` adds the device
model to the firmware with the memory region the board declares for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aot.backends.base import (
    Artifact,
    Backend,
    EmitContext,
    EmittedCode,
    OperatorInfo,
    OperatorPattern,
    Region,
    RuntimeFiles,
    fault_symbol,
)
from aot.backends.example_npu.descriptors import (
    Conv2D,
    Descriptor,
    FullyConnected,
    Operands,
    Requant,
    c_initializer,
    c_type,
    validate,
)
from aot.backends.regions import OperandRef, layout, operand_pointer, step_function
from aot.errors import InternalError
from aot.operators import ConvParams, FullyConnectedParams, RequantizedParams, operator_params

RUNTIME_C = Path(__file__).resolve().parents[2] / "runtime_c"
CONV, DEPTHWISE, DENSE = "conv2d_int8", "depthwise_conv2d_int8", "fully_connected_int8"


def descriptor(op: OperatorInfo) -> Descriptor:
    """The descriptor of one claimed operator, from its typed parameters."""
    p = operator_params(op, RequantizedParams)
    if p is None:
        raise InternalError(f"example_npu describes a {op.kind} without its parameters")
    if "multiplier" not in p.operands:
        rq_mode, m0, s0 = "per_tensor", p.multiplier, p.shift
    elif p.packed_shift_base is not None:
        rq_mode, m0, s0 = "packed", 0, p.packed_shift_base
    else:
        rq_mode, m0, s0 = "per_channel", 0, 0
    requant = Requant(rq_mode, p.output_zp, p.act_min, p.act_max, p.rounding, m0, s0)
    # A zero point folded into the bias by the importer is not subtracted per tap again.
    input_offset = 0 if p.zero_point_in_bias else -p.input_zp
    data, weights = op.inputs[0].shape, op.inputs[1].shape
    if isinstance(p, FullyConnectedParams):
        depth = weights[1]
        return FullyConnected(
            batches=int(np.prod(data)) // depth, depth=depth, out_c=weights[0],
            input_offset=input_offset, weight_offset=-p.weight_zp, requant=requant,
        )  # fmt: skip
    if not isinstance(p, ConvParams):
        raise InternalError(f"example_npu has no descriptor for {op.kind}")
    out = op.output.shape
    return Conv2D(
        depthwise=op.kind == DEPTHWISE, batches=data[0], in_h=data[1], in_w=data[2],
        in_c=data[3], out_h=out[1], out_w=out[2], out_c=out[3], k_h=weights[1], k_w=weights[2],
        stride=p.strides, dilation=p.dilation, padding=p.padding,
        depth_multiplier=p.depth_multiplier, input_offset=input_offset, pad_value=p.input_zp,
        requant=requant,
    )  # fmt: skip


def takes(op: OperatorInfo) -> bool:
    """Whether the device runs this operator: int8 NHWC, no grouped convolution, the
    importer's parameters present, and every field in the descriptor's range."""
    if operator_params(op, RequantizedParams) is None or op.inputs[0].is_constant:
        return False
    if op.kind in (CONV, DEPTHWISE) and (len(op.inputs[0].shape) != 4 or op.output.dtype != "int8"):
        return False
    if op.kind == CONV and op.inputs[1].shape[3] != op.inputs[0].shape[3]:
        return False  # grouped: the descriptor has no groups
    return not validate(descriptor(op))


@dataclass(frozen=True)
class Stream:
    """An artifact's payload: the descriptors and, per descriptor, where each of its
    operands lives (``aot.backends.regions.layout``)."""

    descriptors: tuple[Descriptor, ...]
    operands: tuple[Mapping[str, OperandRef], ...]
    param_count: int
    output_count: int


class ExampleNpu(Backend):
    name = "example_npu"
    description = "the example NPU: a device model under QEMU running int8 command streams"
    alignment = 16
    io_copies = True  # the caller's input and output are staged through the NPU's memory

    def patterns(self, ctx: Any = None) -> Sequence[OperatorPattern]:
        return (
            OperatorPattern("conv2d", (CONV,), takes),
            OperatorPattern("depthwise_conv2d", (DEPTHWISE,), takes),
            OperatorPattern("fully_connected", (DENSE,), takes),
        )

    def lower(self, region: Region, ctx: Any = None) -> Artifact:
        # Region parameters, region outputs, or slices of the scratch for the tensors
        # made and used inside the region: the Backend API's helper decides.
        placed = layout(region, self.alignment)
        descriptors = tuple(descriptor(op) for op in region.operators)
        stream = Stream(descriptors, placed.operands, len(region.params), len(region.outputs))
        return Artifact(region.symbol, payload=stream, scratch_bytes=placed.scratch_bytes)

    def emit(self, step: Any, artifact: Artifact, ctx: EmitContext) -> EmittedCode:
        stream: Stream = artifact.payload
        symbol, count = artifact.symbol, len(stream.descriptors)
        statics, body = [], []
        for index, (desc, refs) in enumerate(zip(stream.descriptors, stream.operands)):
            exprs = {_FIELDS[name]: operand_pointer(ref) for name, ref in refs.items()}
            # Static storage: the run's stack does not grow with the region.
            statics.append(f"static struct {c_type(desc)} {symbol}_d{index};")
            initializer = c_initializer(desc, Operands(**exprs)).replace("\n", "\n  ")
            body.append(f"{symbol}_d{index} = (struct {c_type(desc)}){initializer};")
        headers = ", ".join(f"&{symbol}_d{i}.header" for i in range(count))
        body += [
            f"static const struct aot_npu_desc_header* const list[{count}] = {{{headers}}};",
            "static const struct aot_npu_stream stream = {AOT_NPU_STREAM_MAGIC, "
            f"AOT_NPU_STREAM_VERSION, {count}u, list}};",
            "int32_t err = (int32_t)aot_npu_submit(&stream);",
            # Where it stopped, for the RUN reply (the executor sets the step).
            f"if (err != 0) aot_npu_fault(&{fault_symbol(ctx.model)});",
            "return err;",
        ]
        return step_function(symbol, ctx, stream.param_count, stream.output_count, body,
                             statics, includes=('"example_npu.h"',))  # fmt: skip

    def runtime(self, ctx: Any = None) -> RuntimeFiles:
        # The device's region is board data: Board.c_defines() gives the project
        # AOT_ACCEL_EXAMPLE_NPU_MEMORY0_BASE/_SIZE from the board's accelerator entry.
        return RuntimeFiles(
            sources=(RUNTIME_C / "npu" / "example_npu.c",),
            headers=(RUNTIME_C / "npu" / "example_npu.h",),
        )


# Operand names in the importer's call order -> descriptor fields (only int8 activations
# live in the scratch).
_FIELDS = {"data": "input", "weight": "weights", "bias": "bias", "multiplier": "multiplier",
           "shift": "shift", "output": "output"}  # fmt: skip
