"""What every planner shares: the registry, the options, the lower bound, validation and
first-fit packing.

A planner is a callable ``(buffers, pools) -> iterable of Placement``. It returns a
placement for every buffer it could place; a buffer it leaves out did not fit, and
``plan_memory`` turns that into a PlanningError that explains why. Planners never build
the ``MemoryPlan`` themselves, so sizes, bounds and validation are computed in one place.
The planning stage (``aot.planning.stage.plan``) runs the one named in ``PlanOptions``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from aot.errors import InternalError
from aot.planning.model import Buffer, MemoryPlan, Placement, Pool, align_up
from aot.registry import Registry

Planner = Callable[[Sequence[Buffer], Sequence[Pool]], Iterable[Placement]]

planners: Registry[Planner] = Registry("memory planner", "aot.planners")


@dataclass(frozen=True)
class PlanOptions:
    """How the planning stage plans: the planner by its name in ``planners``, and
    whether it may insert copy steps (``--allow-copies``), done by ``copy_target`` when a
    unit other than the port's ``aot_platform_copy`` copies (None: no target is added)."""

    planner: str = "greedy_by_size"
    allow_copies: bool = False
    copy_target: str | None = None


def live_bytes_per_step(buffers: Sequence[Buffer]) -> list[int]:
    """Sum of the sizes of the buffers live at each step 0..last end."""
    if not buffers:
        return []
    # Difference array: +size at start, -size after end; linear in buffers + steps.
    steps = max(b.end for b in buffers) + 1
    delta = [0] * (steps + 1)
    for b in buffers:
        delta[b.start] += b.size
        delta[b.end + 1] -= b.size
    live, running = [], 0
    for step in range(steps):
        running += delta[step]
        live.append(running)
    return live


def activation_lower_bound(buffers: Sequence[Buffer]) -> int:
    """Peak over steps of the bytes live at that step.

    Buffers live at the same step need distinct bytes, so no placement that keeps this
    operator order and does not compute in place can use less memory, whatever the pools.
    """
    return max(live_bytes_per_step(buffers), default=0)


def peak_step(buffers: Sequence[Buffer]) -> int:
    """The first step where the live bytes reach the lower bound (0 when no buffers)."""
    live = live_bytes_per_step(buffers)
    return live.index(max(live)) if live else 0


def allowed_pools(buffer: Buffer, pools: Sequence[Pool]) -> tuple[int, ...]:
    """Indices (preference order) of the pools ``buffer`` may use: listed in its ``pools``
    when it has that list, and reached by every target that reads or writes it."""
    return tuple(
        i
        for i, p in enumerate(pools)
        if (buffer.pools is None or p.name in buffer.pools) and p.reaches(buffer)
    )


def pool_lower_bounds(buffers: Sequence[Buffer], pools: Sequence[Pool]) -> dict[str, int]:
    """Per pool, the live-bytes peak of the buffers that may use only that pool.

    Those buffers all land there, so no plan makes the pool smaller; a pool shared with
    other choices has bound 0 here (the model-wide bound covers the rest).
    """
    forced: dict[int, list[Buffer]] = {}
    for b in buffers:
        allowed = allowed_pools(b, pools)
        if len(allowed) == 1:
            forced.setdefault(allowed[0], []).append(b)
    return {p.name: activation_lower_bound(forced.get(i, [])) for i, p in enumerate(pools)}


def pool_usage(ends: Iterable[tuple[int, int]], pool: Pool) -> int:
    """Bytes a pool must provide for buffers given as (end offset, alignment) pairs.

    Rounded up to the largest alignment so pools can be laid out back to back, but never
    beyond the pool's limit (the buffers themselves were checked against it).
    """
    top, alignment = 0, 1
    for end, align in ends:
        top = max(top, end)
        alignment = max(alignment, align)
    used = align_up(top, alignment)
    return used if pool.size is None else min(used, pool.size)


def plan_cost(
    buffers: Sequence[Buffer],
    pools: Sequence[Pool],
    pool_of: Sequence[int | None],
    offsets: Sequence[int | None],
) -> tuple[int, ...]:
    """Lexicographic cost of a (partial) placement; smaller is better.

    (buffers left unplaced, total bytes over pools, bytes of the last pool, ..., of the
    second pool): fit first, then size, then prefer the earlier (faster) pools.
    """
    ends: list[list[tuple[int, int]]] = [[] for _ in pools]
    unplaced = 0
    for b, p, off in zip(buffers, pool_of, offsets):
        if p is None or off is None:
            unplaced += 1
        else:
            ends[p].append((off + b.size, b.alignment))
    usage = [pool_usage(e, pool) for e, pool in zip(ends, pools)]
    return (unplaced, sum(usage), *reversed(usage[1:]))


def validate_plan(plan: MemoryPlan, buffers: Sequence[Buffer], pools: Sequence[Pool]) -> None:
    """Raise InternalError unless the plan is safe to generate code from.

    Checks: every buffer placed once in a known pool it may use, aligned, inside the pool
    limit and the planned pool size, and no two buffers live at the same step share bytes.
    """
    by_name = {b.name: b for b in buffers}
    pool_by_name = {p.name: p for p in pools}
    seen: dict[str, Placement] = {}
    for pl in plan.placements:
        b = by_name.get(pl.buffer)
        if b is None:
            raise InternalError(f"plan places unknown buffer '{pl.buffer}'")
        if pl.buffer in seen:
            raise InternalError(f"plan places buffer '{pl.buffer}' twice")
        seen[pl.buffer] = pl
        pool = pool_by_name.get(pl.pool)
        if pool is None:
            raise InternalError(f"plan puts buffer '{b.name}' in unknown pool '{pl.pool}'")
        if b.pools is not None and pl.pool not in b.pools:
            raise InternalError(
                f"plan puts buffer '{b.name}' in pool '{pl.pool}'; it may only use "
                f"{', '.join(b.pools)}"
            )
        if not pool.reaches(b):
            raise InternalError(
                f"plan puts buffer '{b.name}' (used by {', '.join(b.targets)}) in pool "
                f"'{pool.name}' which only {', '.join(pool.targets or ())} can access"
            )
        if pl.offset < 0 or pl.offset % b.alignment:
            raise InternalError(
                f"buffer '{b.name}' at offset {pl.offset} in pool '{pl.pool}' is not "
                f"aligned to {b.alignment} bytes"
            )
        end = pl.offset + b.size
        if pool.size is not None and end > pool.size:
            raise InternalError(
                f"buffer '{b.name}' ends at byte {end} of pool '{pool.name}' "
                f"which holds {pool.size} bytes"
            )
        if end > plan.pool_sizes.get(pl.pool, 0):
            raise InternalError(
                f"buffer '{b.name}' ends at byte {end} of pool '{pl.pool}' but the plan "
                f"sizes that pool at {plan.pool_sizes.get(pl.pool, 0)} bytes"
            )
    missing = [b.name for b in buffers if b.name not in seen]
    if missing:
        raise InternalError(f"plan leaves out buffers: {', '.join(missing)}")
    # Sweep in start order so only buffers whose lifetimes can meet are compared.
    ordered = sorted(buffers, key=lambda b: b.start)
    for i, a in enumerate(ordered):
        pa = seen[a.name]
        for b in ordered[i + 1 :]:
            if b.start > a.end:
                break
            pb = seen[b.name]
            if pa.pool != pb.pool:
                continue
            if pa.offset < pb.offset + b.size and pb.offset < pa.offset + a.size:
                raise InternalError(
                    f"buffers '{a.name}' [{pa.offset}, {pa.offset + a.size}) and "
                    f"'{b.name}' [{pb.offset}, {pb.offset + b.size}) overlap in pool "
                    f"'{pa.pool}' while both are live (steps {max(a.start, b.start)}-"
                    f"{min(a.end, b.end)})"
                )


class Packer:
    """First-fit packing of buffers, one at a time, into the pools in preference order.

    The heuristics differ only in the order they hand buffers to ``place``; the exact
    solver uses ``first_fit`` on its own. State is two arrays indexed like ``buffers``.
    """

    def __init__(self, buffers: Sequence[Buffer], pools: Sequence[Pool]) -> None:
        self.buffers = list(buffers)
        self.pools = list(pools)
        n = len(self.buffers)
        # Allowed pools as indices, in the pools' preference order: every planner goes
        # through this, so none can put a buffer where one of its targets cannot reach.
        self.allowed: list[tuple[int, ...]] = [allowed_pools(b, self.pools) for b in self.buffers]
        # Conflicts: buffers whose lifetimes overlap; found by sweeping in start order.
        self.conflicts: list[list[int]] = [[] for _ in range(n)]
        by_start = sorted(range(n), key=lambda i: self.buffers[i].start)
        for k, i in enumerate(by_start):
            end = self.buffers[i].end
            for j in by_start[k + 1 :]:
                if self.buffers[j].start > end:
                    break
                self.conflicts[i].append(j)
                self.conflicts[j].append(i)
        self.pool_of: list[int | None] = [None] * n
        self.offsets: list[int | None] = [None] * n

    def reset(self) -> None:
        n = len(self.buffers)
        self.pool_of = [None] * n
        self.offsets = [None] * n

    def first_fit(self, i: int, pool: int) -> int | None:
        """Lowest aligned offset for buffer ``i`` in ``pool`` clear of placed conflicts."""
        b = self.buffers[i]
        busy = sorted(
            (self.offsets[j], self.offsets[j] + self.buffers[j].size)  # type: ignore[operator]
            for j in self.conflicts[i]
            if self.pool_of[j] == pool
        )
        offset = 0
        for lo, hi in busy:
            if hi <= offset:
                continue
            if offset + b.size <= lo:
                break
            offset = align_up(hi, b.alignment)
        limit = self.pools[pool].size
        if limit is not None and offset + b.size > limit:
            return None
        return offset

    def place(self, order: Iterable[int]) -> None:
        """Place buffers in ``order``, each in the first allowed pool where it fits."""
        for i in order:
            for pool in self.allowed[i]:
                offset = self.first_fit(i, pool)
                if offset is not None:
                    self.pool_of[i] = pool
                    self.offsets[i] = offset
                    break

    def cost(self) -> tuple[int, ...]:
        return plan_cost(self.buffers, self.pools, self.pool_of, self.offsets)

    def placements(self) -> list[Placement]:
        return [
            Placement(b.name, self.pools[p].name, off)
            for b, p, off in zip(self.buffers, self.pool_of, self.offsets)
            if p is not None and off is not None
        ]


def pack_in_order(
    buffers: Sequence[Buffer], pools: Sequence[Pool], order: Iterable[int]
) -> list[Placement]:
    packer = Packer(buffers, pools)
    packer.place(order)
    return packer.placements()
