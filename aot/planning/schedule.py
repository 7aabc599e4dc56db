"""The planning stage's first act on a lowered model: its step graph, the step order with
the lowest peak workspace (``aot.planning.order``), then the in-place pairs
(``aot.planning.inplace``). ``order`` and ``inplace`` work on abstract graphs; this module
is where they meet the lowered model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from aot.naming import scratch_buffer_name, tensor_buffer_name
from aot.planning.inplace import inplace_candidates
from aot.planning.order import Step, StepGraph, best_order, peak_for_order


def lowered_step_graph(lowered: Any, steps: Sequence[Any], with_scratch: bool) -> StepGraph:
    """The abstract graph of a lowered model's steps: workspace tensors by their buffer
    names (``aot.naming``) and sizes, steps by their names (:func:`step_name`).

    Inputs and constants are not written by any step, so they take no workspace; outputs
    live in user buffers (size 0); a kernel's scratch is a tensor only its step touches.
    """
    from aot.lowering import INTERMEDIATE, OUTPUT

    names = {t.id: tensor_buffer_name(t) for t in lowered.tensors}
    sizes: dict[str, int] = {}
    order_steps = []
    for step in steps:
        reads = tuple(names[t] for t in step.reads)
        writes = tuple(names[t] for t in step.writes)
        if with_scratch and step.scratch_bytes:
            scratch = scratch_buffer_name(step.index)
            writes += (scratch,)
            reads += (scratch,)
            sizes[scratch] = step.scratch_bytes
        order_steps.append(Step(step_name(step), reads, writes, step.elementwise))
    for tensor in lowered.tensors:
        sizes[names[tensor.id]] = tensor.size_bytes if tensor.kind == INTERMEDIATE else 0
    outputs = tuple(names[t.id] for t in lowered.tensors if t.kind == OUTPUT)
    # A next state is copied into the persistent pool after the last step: like an
    # output, it lives to the end and no step may overwrite it.
    outputs += tuple(names[n] for n, _ in getattr(lowered, "state_updates", ()))
    return StepGraph(tuple(order_steps), sizes, (), outputs)


def step_name(step: Any) -> str:
    """A lowered step's name in the step graph: its place in the frontend's order."""
    return f"step_{step.index}"


def schedule(lowered: Any) -> Any:
    """The planning stage's graph decisions on a lowered model: the activation lower bound
    in the frontend's order, the step order with the lowest peak workspace (scratch
    included), then which elementwise outputs overwrite an input nobody reads afterwards.
    Returns the model with its steps reordered and ``shared`` set."""
    steps = list(lowered.steps)
    bound = peak_for_order(lowered_step_graph(lowered, steps, with_scratch=False)) if steps else 0
    if len(steps) >= 3:
        order = best_order(lowered_step_graph(lowered, steps, with_scratch=True))
        by_name = {step_name(step): step for step in steps}
        steps = [replace(s, index=i) for i, s in enumerate(by_name[name] for name in order)]
    pairs = inplace_candidates(lowered_step_graph(lowered, steps, with_scratch=False))
    ids = {tensor_buffer_name(t): t.id for t in lowered.tensors}
    shared = {ids[out]: ids[src] for out, src in pairs}
    # In place joins two tensors into one buffer; only within one target, so a copy step
    # (aot.planning.copies) can still split what two targets touch.
    targets: dict[int, set[str]] = {}
    for step in steps:
        for tensor_id in step.args:
            targets.setdefault(tensor_id, set()).update(step.targets_of(tensor_id))
    shared = {
        out: src
        for out, src in shared.items()
        if len(targets.get(out, set()) | targets.get(src, set())) <= 1
    }
    # What an earlier choice shares (in-place depthwise steps, aot.planning.patch_stage).
    shared = {**lowered.shared, **shared}
    return replace(lowered, steps=tuple(steps), activation_lower_bound=bound, shared=shared)
