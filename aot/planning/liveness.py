"""Turn the execution graph into buffers with lifetimes for the memory planner."""

from __future__ import annotations

from aot.lowering import INPUT, INTERMEDIATE, OUTPUT, LoweredModel
from aot.naming import scratch_buffer_name, tensor_buffer_name
from aot.planning import Buffer


def workspace_buffers(
    lowered: LoweredModel, alignment: int = 16, io_in_pool: bool = False
) -> list[Buffer]:
    """Every block of RAM the executor needs besides user-provided inputs and outputs.

    An intermediate tensor lives from the step that writes it to the last step that reads
    it; a kernel's scratch lives only during its own step.
    """
    # Tensors computed in place share their root's buffer, live over all their uses.
    # With io_in_pool, inputs are live from the start and outputs until the end.
    end = max(len(lowered.steps) - 1, 0)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    if io_in_pool:
        for tensor in lowered.inputs:
            first[tensor.id] = 0
        for tensor in lowered.outputs:
            last[tensor.id] = end
    # An accelerator may need more alignment than the CPU for what its steps touch.
    align: dict[int, int] = {}
    for step in lowered.steps:
        backend = lowered.backends.get(step.backend)
        need = backend.alignment if backend is not None and step.backend != "cpu" else 1
        for tensor_id in step.args:
            root = lowered.memory_root(tensor_id)
            first.setdefault(root, step.index)
            last[root] = max(last.get(root, step.index), step.index)
            align[root] = max(align.get(root, alignment), need)
        if step.scratch_bytes:
            align[-1 - step.index] = max(alignment, need)  # its scratch
    buffers: list[Buffer] = []
    for tensor in lowered.tensors:
        in_pool = tensor.kind == INTERMEDIATE or (io_in_pool and tensor.kind in (INPUT, OUTPUT))
        if not in_pool or tensor.id not in first:
            continue
        buffers.append(
            Buffer(
                tensor_buffer_name(tensor),
                max(tensor.size_bytes, 1),
                first[tensor.id],
                last[tensor.id],
                align.get(tensor.id, alignment),
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
                    align.get(-1 - step.index, alignment),
                )
            )
    return buffers
