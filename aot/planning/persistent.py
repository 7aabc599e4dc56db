"""The persistent pool: state kept between inferences (SVDF's and the LSTM's variable
tensors, TFLite resource variables that the model assigns).

State is live over every step of every inference, so it can share memory with nothing:
its buffers are laid out one after the other in a pool of their own, which the executor
never reuses for activations and which ``aot_<name>_reset()`` sets to the initial values.
Its size adds to the RAM a model needs but not to the activation lower bound (which
counts what one inference needs at its peak). See docs/memory_planning.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from aot.errors import ConfigError
from aot.planning.core import validate_plan
from aot.planning.model import Buffer, MemoryPlan, Placement, Pool, align_up

PERSISTENT_POOL = "state"


def add_persistent(
    plan: MemoryPlan,
    buffers: Sequence[Buffer],
    workspace: Sequence[Buffer],
    pools: Sequence[Pool],
    name: str = PERSISTENT_POOL,
) -> MemoryPlan:
    """``plan`` with ``buffers`` placed back to back in the persistent pool ``name``."""
    if not buffers:
        return plan
    if any(p.name == name for p in pools):
        raise ConfigError(
            f"pool name '{name}' is reserved for the model's persistent state; "
            "name the workspace pool differently"
        )
    placements: list[Placement] = []
    offset = 0
    for buffer in buffers:
        offset = align_up(offset, buffer.alignment)
        placements.append(Placement(buffer.name, name, offset))
        offset += buffer.size
    size = align_up(offset, max(b.alignment for b in buffers))
    merged = replace(
        plan,
        placements=(*plan.placements, *placements),
        pool_sizes={**plan.pool_sizes, name: size},
        persistent=(*plan.persistent, name),
    )
    validate_plan(merged, (*workspace, *buffers), (*pools, Pool(name, None)))
    return merged
