"""Where a failing run stopped, in words: the RUN reply's fault record (feature FAULT,
docs/protocol.md) with the step's label from metadata.json and the region's name from
the board data, e.g. ``at step 3 (CONV_2D #4) on example_npu:
AOT_ERR_NPU_ADDRESS_OUT_OF_REGION: descriptor 2, operand 'weights' address 0x20001000 is
outside region 'psram' [0x60000000, 0x61000000)``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aot.artifacts import LibraryManifest
from aot.device.error_codes import describe_error, error_name
from aot.device.protocol import FAULT_NONE, RunFault

# aot_fault_operand_t of aot/model.h; the names are the descriptor fields'.
OPERANDS = {1: "input", 2: "weights", 3: "bias", 4: "output", 5: "multiplier", 6: "shift"}


@dataclass(frozen=True)
class FaultContext:
    """What the host knows about the build: each step's label and backend (metadata.json's
    operators, in order) and the board's memories (name, base, size)."""

    steps: tuple[tuple[str, str], ...] = ()
    memories: tuple[tuple[str, int, int], ...] = ()

    @classmethod
    def of_build(cls, manifest: LibraryManifest, board: Any) -> FaultContext:
        steps = tuple((op.label, op.backend) for op in manifest.operators)
        memories = tuple((m.name, m.base, m.size) for m in board.memories)
        return cls(steps, memories)


def describe_fault(status: int, fault: RunFault, context: FaultContext | None = None) -> str:
    """``at step N (label) on backend: CODE: descriptor D, operand 'x' address A is outside
    region 'r' [base, end)``; the parts the record or the context lack are left out."""
    context = context or FaultContext()
    where = ""
    if fault.step != FAULT_NONE:
        where = f"at step {fault.step}"
        if fault.step < len(context.steps):
            label, backend = context.steps[fault.step]
            where += f" ({label}) on {backend}"
        where += ": "
    operand = OPERANDS.get(fault.operand)
    if fault.descriptor == FAULT_NONE:
        return where + describe_error(status)
    detail = f"descriptor {fault.descriptor}"
    if operand is None:
        return f"{where}{describe_error(status)}: {detail}"
    end = fault.region_base + fault.region_size
    region = f"[0x{fault.region_base:08x}, 0x{end:08x})"
    name = _memory_name(fault, context.memories)
    region = f"region '{name}' {region}" if name else f"the region {region}"
    if fault.region_base <= fault.address < end:
        # The start is inside: the operand runs past the end or is misaligned.
        problem = f"does not fit {region} (it runs past its end or is misaligned)"
    else:
        problem = f"is outside {region}"
    address = f"0x{fault.address:08x}"
    return f"{where}{error_name(status)}: {detail}, operand '{operand}' address {address} {problem}"


def _memory_name(fault: RunFault, memories: Sequence[tuple[str, int, int]]) -> str | None:
    """The board memory that is the accelerator's region (its base and size agree)."""
    for name, base, size in memories:
        if base == fault.region_base and size == fault.region_size:
            return name
    return None
