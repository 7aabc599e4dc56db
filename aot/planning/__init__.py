"""Static memory planning for the AOT executor: a pool and an offset for every buffer.

Pure Python (no TVM). ``plan_memory`` runs a planner from the ``planners`` registry,
turns a failure to fit into one clear ``PlanningError`` and validates the result.
See docs/memory_planning.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from aot.errors import AotError, ConfigError, InternalError, PlanningError
from aot.planning import heuristics as _heuristics  # noqa: F401  (registers planners)
from aot.planning import optimal as _optimal  # noqa: F401  (registers planners)
from aot.planning.core import (
    Planner,
    activation_lower_bound,
    allowed_pools,
    live_bytes_per_step,
    peak_step,
    planners,
    pool_lower_bounds,
    pool_usage,
    validate_plan,
)
from aot.planning.model import Buffer, MemoryPlan, Placement, Pool

DEFAULT_ALGORITHM = "greedy_by_size"

# Advice in errors that copies could fix; aot.planning.copies drops it once they are on.
COPIES_ADVICE = ", or let aot stage it through other pools with --allow-copies"
UNREACHABLE_ADVICE = " or let aot copy between pools with --allow-copies"

__all__ = [
    "DEFAULT_ALGORITHM",
    "Buffer",
    "MemoryPlan",
    "Placement",
    "Planner",
    "Pool",
    "activation_lower_bound",
    "allowed_pools",
    "live_bytes_per_step",
    "peak_step",
    "plan_memory",
    "planners",
    "pool_lower_bounds",
    "unreachable_message",
    "validate_plan",
]


def plan_memory(
    buffers: Iterable[Buffer],
    pools: Iterable[Pool],
    algorithm: str = DEFAULT_ALGORITHM,
    step_names: Sequence[str] | None = None,
) -> MemoryPlan:
    """Place every buffer in one of ``pools`` (fastest first) with the named planner.

    A buffer goes only into pools that every target touching it reaches
    (``Buffer.targets`` within ``Pool.targets``). Raises PlanningError when the buffers do
    not fit or one has no such pool, ConfigError for an unknown planner or pool name,
    InternalError when the planner returns an invalid plan.
    """
    buffers = tuple(buffers)
    pools = tuple(pools)
    _check_inputs(buffers, pools, step_names)
    planner = planners.get(algorithm)
    placements = tuple(planner(buffers, pools))
    placed = {p.buffer for p in placements}
    if any(b.name not in placed for b in buffers):
        raise PlanningError(_does_not_fit(buffers, pools, placements, algorithm, step_names))
    plan = _make_plan(algorithm, buffers, pools, placements)
    try:
        validate_plan(plan, buffers, pools)
    except InternalError as err:
        raise InternalError(f"planner '{algorithm}' returned an invalid plan: {err}") from err
    return plan


def _make_plan(
    algorithm: str,
    buffers: Sequence[Buffer],
    pools: Sequence[Pool],
    placements: Sequence[Placement],
) -> MemoryPlan:
    by_name = {b.name: b for b in buffers}
    # Placements in the buffers' order, so plans compare and serialize the same way.
    order = {b.name: i for i, b in enumerate(buffers)}
    placements = sorted(placements, key=lambda p: order.get(p.buffer, len(order)))
    sizes = {}
    for pool in pools:
        sizes[pool.name] = pool_usage(
            (
                (p.offset + by_name[p.buffer].size, by_name[p.buffer].alignment)
                for p in placements
                if p.pool == pool.name and p.buffer in by_name
            ),
            pool,
        )
    return MemoryPlan(
        algorithm,
        tuple(placements),
        sizes,
        activation_lower_bound(buffers),
        pool_lower_bounds(buffers, pools),
    )


def _check_inputs(
    buffers: Sequence[Buffer], pools: Sequence[Pool], step_names: Sequence[str] | None
) -> None:
    names = [b.name for b in buffers]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InternalError(f"buffer names must be unique; repeated: {', '.join(dup)}")
    pool_names = [p.name for p in pools]
    if len(set(pool_names)) != len(pool_names):
        raise ConfigError(f"pool names must be unique; got {', '.join(pool_names)}")
    if buffers and not pools:
        raise ConfigError("no memory pool to plan into; give one with --pool NAME:SIZE")
    for b in buffers:
        if b.pools is None:
            continue
        unknown = [p for p in b.pools if p not in pool_names]
        if unknown or not b.pools:
            raise ConfigError(
                f"buffer '{b.name}' may only use pool(s) {', '.join(b.pools) or '(none)'} "
                f"but the pools are {', '.join(pool_names)}"
            )
    steps = max((b.end for b in buffers), default=-1) + 1
    if step_names is not None and len(step_names) < steps:
        raise InternalError(
            f"{len(step_names)} step names given for buffers live over {steps} steps"
        )
    unreachable = [b for b in buffers if not allowed_pools(b, pools)]
    if unreachable:
        raise PlanningError(unreachable_message(unreachable, pools, step_names))


def _targets_phrase(targets: Sequence[str]) -> str:
    if len(targets) == 1:
        return targets[0]
    return f"{', '.join(targets[:-1])} and {targets[-1]}"


def unreachable_message(
    buffers: Sequence[Buffer], pools: Sequence[Pool], step_names: Sequence[str] | None = None
) -> str:
    """One line for buffers no pool can hold because no pool is reached by every target
    that touches them: the first buffer, its operators and targets, the pools, the fix."""
    b = buffers[0]
    if b.users:
        touched = ", ".join(
            f"{_step_label(step, step_names)} on {target}" for step, target in b.users
        )
    else:
        touched = _targets_phrase(b.targets)
    candidates = [p for p in pools if b.pools is None or p.name in b.pools]
    listed = ", ".join(
        f"'{p.name}' ({'any target' if p.targets is None else ','.join(p.targets)})"
        for p in candidates
    )
    more = f" (and {len(buffers) - 1} more buffers)" if len(buffers) > 1 else ""
    lonely = [
        t for t in b.targets if not any(p.targets is None or t in p.targets for p in candidates)
    ]
    if lonely:
        # No copy helps a target that reaches no pool at all.
        return (
            f"buffer '{b.name}'{more} is touched by {touched}, but no pool is reachable by "
            f"{_targets_phrase(lonely)} at all: pools {listed}; add a pool "
            f"{_targets_phrase(lonely)} can access (--pool NAME:SIZE:{','.join(lonely)})"
        )
    return (
        f"buffer '{b.name}'{more} is touched by {touched}, but no pool is reachable by "
        f"{_targets_phrase(b.targets)}: pools {listed}; add a pool they all reach "
        f"(--pool NAME:SIZE:{','.join(b.targets)}){UNREACHABLE_ADVICE}"
    )


def _step_label(step: int, step_names: Sequence[str] | None) -> str:
    return f"'{step_names[step]}'" if step_names is not None else f"step {step}"


def _does_not_fit(
    buffers: Sequence[Buffer],
    pools: Sequence[Pool],
    placements: Sequence[Placement],
    algorithm: str,
    step_names: Sequence[str] | None,
) -> str:
    """One line: which pools, how many bytes over, what is live at the peak, what to do."""
    advice = "give a larger pool with --pool NAME:SIZE or choose a board with more RAM"
    placed = {p.buffer for p in placements}
    missing = [b for b in buffers if b.name not in placed]
    allowed = {b.name: {pools[i].name for i in allowed_pools(b, pools)} for b in buffers}
    # The pools the failed buffers could have used; buffers confined to them compete there.
    relevant = {name for b in missing for name in allowed[b.name]}
    if any(not p.reaches(b) for b in missing for p in pools):
        # Reachability narrowed the choice: copies can move the buffer elsewhere between uses.
        advice += COPIES_ADVICE
    region = [p for p in pools if p.name in relevant]
    if any(p.size is None for p in region):
        names = ", ".join(b.name for b in missing)
        raise InternalError(f"planner '{algorithm}' left out {names} with an unbounded pool")
    capacity = sum(p.size or 0 for p in region)
    where = " + ".join(f"'{p.name}' ({p.size} bytes)" for p in region)
    where = f"pool {where}" if len(region) == 1 else f"pools {where} = {capacity} bytes"

    biggest = max(missing, key=lambda b: b.size)
    largest_pool = max((p.size or 0) for p in region)
    if biggest.size > largest_pool:
        listed = ", ".join(f"'{p.name}' ({p.size} bytes)" for p in region)
        return (
            f"buffer '{biggest.name}' ({biggest.size} bytes, live at "
            f"{_step_label(biggest.start, step_names)}) is larger than "
            f"{'pool' if len(region) == 1 else 'any of the pools'} {listed}: "
            f"{biggest.size - largest_pool} bytes over; {advice}"
        )

    confined = [b for b in buffers if allowed[b.name] <= relevant]
    need = activation_lower_bound(confined)
    peak = peak_step(confined)
    live = sorted(
        (b for b in confined if b.start <= peak <= b.end), key=lambda b: (-b.size, b.name)
    )
    shown = ", ".join(f"{b.name} ({b.size} bytes)" for b in live[:3])
    more = f" and {len(live) - 3} more" if len(live) > 3 else ""
    at_peak = f"peak at {_step_label(peak, step_names)}: {shown}{more}"
    if need > capacity:
        return (
            f"the buffers do not fit in {where}: {need} bytes are live at once, {need - capacity} "
            f"bytes over ({at_peak}); {advice}"
        )
    # The live bytes fit, the packing did not (fragmentation or alignment): say how much
    # this planner would need and suggest a stronger one.
    unbounded = [Pool(p.name, None, p.targets) if p.name in relevant else p for p in pools]
    try:
        placements = tuple(planners.get(algorithm)(buffers, unbounded))
        used = sum(
            _make_plan(algorithm, buffers, unbounded, placements).pool_sizes[p.name] for p in region
        )
    except AotError:  # e.g. the search limit of optimal: report without the number
        return (
            f"the buffers do not fit in {where}, though only {need} bytes are live at once "
            f"({at_peak}); try --planner optimal or hill_climb, or {advice}"
        )
    return (
        f"the buffers do not fit in {where}: planner '{algorithm}' needs {used} bytes, "
        f"{max(used - capacity, 1)} bytes over, though only {need} bytes are live at once "
        f"({at_peak}); try --planner optimal or hill_climb, or {advice}"
    )
