"""Turn the execution graph into buffers with lifetimes for the memory planner."""

from __future__ import annotations

from aot.lowering import CONSTANT, INPUT, INTERMEDIATE, OUTPUT, STATE, LoweredModel
from aot.naming import scratch_buffer_name, tensor_buffer_name
from aot.planning import Buffer, live_bytes_per_step
from aot.planning.copies import CallerUse, ConstantUse, ModelBuffers


def model_buffers(
    lowered: LoweredModel, alignment: int = 16, io_in_pool: bool = False
) -> ModelBuffers:
    """Everything the planning stage places or checks for ``lowered``: workspace buffers,
    constants, the caller's inputs and outputs (none with ``io_in_pool``: they are in the
    pools) and the operator state."""
    return ModelBuffers(
        tuple(workspace_buffers(lowered, alignment, io_in_pool)),
        tuple(f"step {s.index} ({s.label})" for s in lowered.steps),
        frozenset(pinned_buffers(lowered)),
        tuple(constant_uses(lowered, alignment)),
        () if io_in_pool else tuple(caller_uses(lowered, alignment)),
        # Backends that want their steps' caller tensors staged without --allow-copies.
        tuple(b.target for b in lowered.backends.values() if b.io_copies),
        tuple(persistent_buffers(lowered, alignment)),
    )


def workspace_buffers(
    lowered: LoweredModel, alignment: int = 16, io_in_pool: bool = False
) -> list[Buffer]:
    """Every block of RAM the executor needs besides user-provided inputs and outputs.

    An intermediate tensor lives from the step that writes it to the last step that reads
    it; a kernel's scratch lives only during its own step. Each buffer carries the steps
    that touch it and their targets, so the planner puts it where all of them reach.
    """
    # Tensors computed in place share their root's buffer, live over all their uses.
    # With io_in_pool, inputs are live from the start and outputs until the end.
    end = max(len(lowered.steps) - 1, 0)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    users: dict[int, list[tuple[int, str]]] = {}
    if io_in_pool:
        for tensor in lowered.inputs:
            first[tensor.id] = 0
        for tensor in lowered.outputs:
            last[tensor.id] = end
    roots = lowered.memory_roots
    # A next state is copied into the persistent pool after the last step.
    for next_id, _ in lowered.state_updates:
        last[roots[next_id]] = end
    # An accelerator may need more alignment than the CPU for what its steps touch.
    align: dict[int, int] = {}
    for step in lowered.steps:
        backend = lowered.backends.get(step.backend)
        need = backend.alignment if backend is not None and step.backend != "cpu" else 1
        targets_of = step.arg_targets_by_id
        for tensor_id in step.args:
            root = roots[tensor_id]
            first.setdefault(root, step.index)
            last[root] = max(last.get(root, step.index), step.index)
            align[root] = max(align.get(root, alignment), need)
            touched = users.setdefault(root, [])
            for target in targets_of[tensor_id]:
                if (step.index, target) not in touched:
                    touched.append((step.index, target))
        if step.scratch_bytes:
            align[-1 - step.index] = max(alignment, need)  # its scratch
    spans = lowered.buffer_sizes  # a root's buffer holds every tensor that shares it
    buffers: list[Buffer] = []
    for tensor in lowered.tensors:
        in_pool = tensor.kind == INTERMEDIATE or (io_in_pool and tensor.kind in (INPUT, OUTPUT))
        if not in_pool or tensor.id not in first:
            continue
        touched = tuple(users[tensor.id])
        buffers.append(
            Buffer(
                tensor_buffer_name(tensor),
                max(spans.get(tensor.id, tensor.size_bytes), 1),
                first[tensor.id],
                last[tensor.id],
                align.get(tensor.id, alignment),
                targets=tuple({t for _, t in touched}),
                users=touched,
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
                    targets=step.scratch_targets or (step.target,),
                    users=tuple((step.index, t) for t in step.scratch_targets or (step.target,)),
                )
            )
    return buffers


def live_bytes(lowered: LoweredModel, io_in_pool: bool = False) -> list[int]:
    """The bytes live at each step in the fixed order: the sizes of the workspace buffers
    live there (``workspace_buffers``, tensors that share memory as one buffer). Their
    peak is the bound the planner starts from, and the RAM by which the patch stages and
    the in-place search (aot/planning/patch_stage.py, in_place_rows.py) weigh a model."""
    live = live_bytes_per_step(workspace_buffers(lowered, io_in_pool=io_in_pool))
    return live + [0] * (len(lowered.steps) - len(live))  # a step with no buffer live


def peak_bytes(lowered: LoweredModel, io_in_pool: bool = False) -> int:
    """The most bytes live at one step (``live_bytes``)."""
    return max(live_bytes(lowered, io_in_pool), default=0)


def persistent_buffers(lowered: LoweredModel, alignment: int = 16) -> list[Buffer]:
    """The operator state: live over every step of every inference, so its buffers never
    share memory with anything (aot.planning.persistent places them)."""
    end = max(len(lowered.steps) - 1, 0)
    buffers = []
    for tensor in lowered.tensors:
        if tensor.kind != STATE:
            continue
        touched = tuple(
            (step.index, step.target) for step in lowered.steps if tensor.id in step.args
        )
        buffers.append(
            Buffer(
                tensor_buffer_name(tensor),
                max(tensor.size_bytes, 1),
                0,
                end,
                alignment,
                targets=tuple({t for _, t in touched}) or ("cpu",),
                users=touched,
            )
        )
    return buffers


def pinned_buffers(lowered: LoweredModel) -> set[str]:
    """Buffers a copy step may not split: model inputs and outputs (the caller's memory
    or fixed by --io-in-pool), buffers written by more than one step (in place) and next
    states (copied into the persistent pool after the last step)."""
    roots = lowered.memory_roots
    writers: dict[int, int] = {}
    for step in lowered.steps:
        for tensor_id in step.outputs:
            writers[roots[tensor_id]] = writers.get(roots[tensor_id], 0) + 1
    next_states = {roots[n] for n, _ in lowered.state_updates}
    return {
        tensor_buffer_name(t)
        for t in lowered.tensors
        if t.kind in (INPUT, OUTPUT) or writers.get(t.id, 0) > 1 or t.id in next_states
    }


def constant_uses(lowered: LoweredModel, alignment: int = 16) -> list[ConstantUse]:
    """Every constant with the steps that read it, for the constants-reach check."""
    users: dict[int, list[tuple[int, str]]] = {}
    for step in lowered.steps:
        targets_of = step.arg_targets_by_id
        for tensor_id in step.args:
            seen = users.setdefault(tensor_id, [])
            if lowered.tensors[tensor_id].kind != CONSTANT:
                continue
            for target in targets_of[tensor_id]:
                if (step.index, target) not in seen:
                    seen.append((step.index, target))
    return [
        ConstantUse(
            tensor_buffer_name(lowered.tensors[t]),
            max(lowered.tensors[t].size_bytes, 1),
            tuple(u),
            alignment,
        )
        for t, u in users.items()
        if u
    ]


def caller_uses(lowered: LoweredModel, alignment: int = 16) -> list[CallerUse]:
    """The model inputs and outputs the caller provides (built without --io-in-pool),
    each with the steps and targets that touch it, for the caller-memory reach check."""
    found = []
    for tensor in [*lowered.inputs, *lowered.outputs]:
        users: list[tuple[int, str]] = []
        need = alignment  # a staging copy is aligned for every backend that touches it
        for step in lowered.steps:
            if tensor.id in step.args:
                users += [(step.index, t) for t in step.arg_targets_by_id[tensor.id]]
                if step.backend != "cpu" and step.backend in lowered.backends:
                    need = max(need, lowered.backends[step.backend].alignment)
        if users:
            found.append(
                CallerUse(
                    tensor_buffer_name(tensor),
                    max(tensor.size_bytes, 1),
                    tuple(dict.fromkeys(users)),
                    output=tensor.kind == OUTPUT,
                    alignment=need,
                )
            )
    return found
