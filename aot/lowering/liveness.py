"""Turn the execution graph into buffers with lifetimes for the memory planner."""

from __future__ import annotations

from aot.codegen.executor import scratch_buffer_name, tensor_buffer_name
from aot.lowering import INTERMEDIATE, LoweredModel
from aot.planning import Buffer


def workspace_buffers(lowered: LoweredModel, alignment: int = 16) -> list[Buffer]:
    """Every block of RAM the executor needs besides user-provided inputs and outputs.

    An intermediate tensor lives from the step that writes it to the last step that reads
    it; a kernel's scratch lives only during its own step.
    """
    # Tensors computed in place share their root's buffer, live over all their uses.
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for step in lowered.steps:
        for tensor_id in step.args:
            root = lowered.memory_root(tensor_id)
            first.setdefault(root, step.index)
            last[root] = step.index
    buffers: list[Buffer] = []
    for tensor in lowered.tensors:
        if tensor.kind != INTERMEDIATE or tensor.id not in first:
            continue
        buffers.append(
            Buffer(
                tensor_buffer_name(tensor),
                max(tensor.size_bytes, 1),
                first[tensor.id],
                last[tensor.id],
                alignment,
            )
        )
    for step in lowered.steps:
        if step.scratch_bytes:
            buffers.append(
                Buffer(
                    scratch_buffer_name(step.index),
                    step.scratch_bytes,
                    step.index,
                    step.index,
                    alignment,
                )
            )
    return buffers
