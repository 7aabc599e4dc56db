"""The planning stage: a model's buffers, the build's ``MemoryMap`` and the ``PlanOptions``
-> the memory plan with its copy steps (``aot.planning.copies.CopyPlan``).

Every buffer goes into a pool that all the targets touching it reach, with the planner
the options name (``aot.planning.core.planners``); the constants and the caller's inputs
and outputs are checked against what reaches their memories, with copy steps where
allowed; the operator state gets a pool of its own (``aot.planning.persistent``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from aot.planning.copies import CopyPlan, ModelBuffers, plan_with_copies
from aot.planning.core import PlanOptions
from aot.planning.liveness import model_buffers
from aot.planning.memory_map import MemoryMap
from aot.planning.persistent import add_persistent


def plan_model(
    lowered: Any,
    memory: MemoryMap,
    options: PlanOptions,
    alignment: int = 16,
    io_in_pool: bool = False,
) -> CopyPlan:
    """The plan stage on a scheduled lowered model: its buffers (each with the targets
    that touch it, ``aot.planning.liveness``) into the pools of ``memory`` that their
    targets reach, with copy steps when ``options.allow_copies``."""
    return plan(model_buffers(lowered, alignment, io_in_pool), memory, options)


def plan(buffers: ModelBuffers, memory: MemoryMap, options: PlanOptions) -> CopyPlan:
    """Place ``buffers`` in ``memory``'s pools (see the module's docstring)."""
    pools = memory.planner_pools()
    planned = plan_with_copies(
        buffers.buffers,
        pools,
        options.planner,
        allow_copies=options.allow_copies,
        step_names=buffers.step_names,
        pinned=buffers.pinned,
        constants=buffers.constants,
        constants_targets=memory.constants_targets,
        constants_memory=memory.constants_memory,
        copy_target=options.copy_target,
        caller=buffers.caller,
        caller_targets=memory.io_targets,
        caller_copies=buffers.caller_copies,
    )
    if not buffers.state:
        return planned
    with_state = add_persistent(planned.plan, buffers.state, planned.buffers, pools)
    return replace(planned, plan=with_state, buffers=(*planned.buffers, *buffers.state))
