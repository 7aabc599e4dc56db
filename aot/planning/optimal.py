"""An exact planner for small graphs: branch and bound over canonical placement orders.

Why searching orders is enough: take any best plan and sort its buffers by (offset, index).
Placing them first-fit in that order puts every buffer at or below its offset in that
plan (each earlier conflicting buffer ends at or below it), so the result is no larger.
Repeating this reaches a plan that first-fit reproduces exactly, in which offsets never
decrease along the order. So the search only extends an order with a buffer whose
first-fit offset is not below the last one, which also gives the bounds used for pruning:
every buffer still to place in the current pool lands at or above the last offset.

Pools are filled one after another in preference order: the search places buffers in the
current pool, or closes it and moves on. The cost is the one of ``plan_cost`` (total bytes,
then less in later pools); the search starts from the better greedy plan and only accepts
strictly smaller totals, and tries the faster pool first, so ties keep the faster pools.
"""

from __future__ import annotations

from collections.abc import Sequence

from aot.errors import ConfigError
from aot.planning.core import Packer, planners, pool_usage
from aot.planning.heuristics import conflict_order, size_order
from aot.planning.model import Buffer, Placement, Pool, align_up

# The search is exponential: past this many buffers live together, or this many search
# nodes (a count, not a time, so results do not depend on the machine), it gives up.
MAX_BUFFERS = 16
MAX_NODES = 2_000_000


@planners.register("optimal")
def optimal(buffers: Sequence[Buffer], pools: Sequence[Pool]) -> list[Placement]:
    # With one pool, groups of buffers whose lifetimes never meet a buffer of another
    # group are independent: the pool's size is the largest group's, so solve each alone.
    groups = _time_groups(buffers) if len(pools) == 1 else [list(range(len(buffers)))]
    largest = max((len(g) for g in groups), default=0)
    if largest > MAX_BUFFERS:
        raise ConfigError(
            f"the optimal planner handles at most {MAX_BUFFERS} buffers live together, "
            f"this graph has {largest}; use --planner hill_climb or greedy_by_size"
        )
    placements: list[Placement] = []
    for group in groups:
        placements += _Search([buffers[i] for i in group], pools).run()
    return placements


def _time_groups(buffers: Sequence[Buffer]) -> list[list[int]]:
    """Split buffers where no lifetime spans from one group into the next."""
    groups: list[list[int]] = []
    reach = -1
    for i in sorted(range(len(buffers)), key=lambda i: buffers[i].start):
        if buffers[i].start > reach:
            groups.append([])
        groups[-1].append(i)
        reach = max(reach, buffers[i].end)
    return groups


class _Search:
    def __init__(self, buffers: Sequence[Buffer], pools: Sequence[Pool]) -> None:
        self.buffers = list(buffers)
        self.pools = list(pools)
        self.packer = Packer(buffers, pools)
        self.n = len(self.buffers)
        self.steps = max((b.end for b in self.buffers), default=-1) + 1
        self.allowed = [frozenset(a) for a in self.packer.allowed]
        self.last_pool = [max(a, default=-1) for a in self.packer.allowed]
        # Identical buffers are interchangeable: only place one after its earlier twin.
        self.twin_before: list[int | None] = []
        seen: dict[tuple[object, ...], int] = {}
        for i, b in enumerate(self.buffers):
            key = (b.size, b.start, b.end, b.alignment, self.packer.allowed[i])
            self.twin_before.append(seen.get(key))
            seen[key] = i
        self.nodes = 0
        self.in_pool: list[int] = []  # buffers placed in the current pool
        self.open_bound = 0  # live-bytes bound of the buffers not in closed pools

    def run(self) -> list[Placement]:
        # Start from the better greedy plan so the bound prunes from the first node.
        best = None
        for order in (
            size_order(self.buffers),
            conflict_order(self.buffers, self.packer.conflicts),
        ):
            self.packer.reset()
            self.packer.place(order)
            cost = self.packer.cost()
            if best is None or cost < best[0]:
                best = (cost, self.packer.pool_of[:], self.packer.offsets[:])
        assert best is not None
        self.best_cost, best_pools, best_offsets = best
        self.best_state = (best_pools, best_offsets)
        if self.pools and all(self.last_pool[i] >= 0 for i in range(self.n)):
            self.packer.reset()
            self.open_bound = self._open_bound(0)
            self._dfs(0, -1, -1, 0, 0, 0)
        self.packer.pool_of, self.packer.offsets = self.best_state
        return self.packer.placements()

    def _dfs(
        self, cur: int, last_off: int, last_idx: int, height: int, closed: int, placed: int
    ) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ConfigError(
                f"the optimal planner gave up after {MAX_NODES} search steps on "
                f"{self.n} buffers live together; use --planner hill_climb"
            )
        packer, buffers = self.packer, self.buffers
        if placed == self.n:
            cost = packer.cost()
            if cost < self.best_cost:
                self.best_cost = cost
                self.best_state = (packer.pool_of[:], packer.offsets[:])
            return
        remaining = [i for i in range(self.n) if packer.pool_of[i] is None]
        if any(self.last_pool[i] < cur for i in remaining):
            return  # a buffer whose pools are all closed
        limit = self.pools[cur].size
        candidates: list[tuple[int, int, int]] = []
        forced_low: dict[int, int] = {}  # lowest possible offset of buffers that must go here
        lb_cur = height
        gap_ends: list[tuple[int, int]] = []  # (end of its first-fit gap, buffer), forced ones
        for i in remaining:
            if cur not in self.allowed[i]:
                continue
            b = buffers[i]
            forced = self.last_pool[i] == cur
            ff = packer.first_fit(i, cur)
            if ff is None:
                if forced:
                    return  # it only gets harder to fit as more buffers are placed
                continue
            if (ff, i) > (last_off, last_idx):
                twin = self.twin_before[i]
                if twin is None or packer.pool_of[twin] is not None:
                    candidates.append((ff, -b.size, i))
                low = ff
            else:
                if ff + b.size <= last_off:
                    # It fits entirely below the last offset, where nothing more will be
                    # placed, so first-fit can never put it at or above: a dead end here.
                    if forced:
                        return
                    continue
                low = align_up(last_off, b.alignment)
                if limit is not None and low + b.size > limit:
                    if forced:
                        return
                    continue
            if forced:
                forced_low[i] = low
                lb_cur = max(lb_cur, low + b.size)
                gap_ends.append((ff + b.size, i))
        if self.best_cost[0] == 0:
            lb_cur = max(lb_cur, self._stack_bound(forced_low))
            # The pool's size is rounded up to the largest alignment in it (see pool_usage).
            alignment = max((buffers[i].alignment for i in (*self.in_pool, *forced_low)), default=1)
            lb_cur = align_up(lb_cur, alignment)
            if limit is not None:
                lb_cur = min(lb_cur, limit)
            lb = closed + max(lb_cur, self.open_bound)
            if lb >= self.best_cost[1]:
                return
        # Placing a buffer at or above the end of a forced buffer's first-fit gap would leave
        # that gap below every later offset, so the forced buffer could never be placed.
        gap_ends.sort()
        for ff, _, i in sorted(candidates):
            blocking = next((end for end, m in gap_ends[:2] if m != i), None)
            if blocking is not None and ff >= blocking:
                break  # candidates are sorted by offset: the rest are dead ends too
            packer.pool_of[i], packer.offsets[i] = cur, ff
            self.in_pool.append(i)
            self._dfs(cur, ff, i, max(height, ff + buffers[i].size), closed, placed + 1)
            self.in_pool.pop()
            packer.pool_of[i] = packer.offsets[i] = None
        if cur + 1 < len(self.pools) and not forced_low:
            used = pool_usage(
                (
                    (packer.offsets[i] + buffers[i].size, buffers[i].alignment)  # type: ignore[operator]
                    for i in range(self.n)
                    if packer.pool_of[i] == cur
                ),
                self.pools[cur],
            )
            saved = self.in_pool, self.open_bound
            # Entering a pool fixes which buffers are left for it and the ones after it.
            self.in_pool, self.open_bound = [], self._open_bound(cur + 1)
            self._dfs(cur + 1, -1, -1, 0, closed + used, placed)
            self.in_pool, self.open_bound = saved

    def _stack_bound(self, forced_low: dict[int, int]) -> int:
        """A bound on this pool's height from each step where buffers that must go here live.

        At step t those buffers lie above the lowest offset any of them can take, apart
        from each other and from the placed buffers live at t, so the height is at least
        that offset plus their sizes plus the placed bytes above it.
        """
        if not forced_low:
            return 0
        total = [0] * self.steps
        lowest = [1 << 62] * self.steps
        for i, low in forced_low.items():
            b = self.buffers[i]
            for t in range(b.start, b.end + 1):
                total[t] += b.size
                lowest[t] = min(lowest[t], low)
        bound = 0
        placed = self.in_pool
        for t in range(self.steps):
            if not total[t]:
                continue
            base = lowest[t]
            need = base + total[t]
            for i in placed:
                b = self.buffers[i]
                if b.start <= t <= b.end:
                    top = self.packer.offsets[i] + b.size  # type: ignore[operator]
                    if top > base:
                        need += top - max(base, self.packer.offsets[i])  # type: ignore[type-var]
            bound = max(bound, need)
        return bound

    def _open_bound(self, cur: int) -> int:
        """Bytes live at one step among buffers not in closed pools need that much in total."""
        total = [0] * self.steps
        for i, b in enumerate(self.buffers):
            p = self.packer.pool_of[i]
            if p is None or p == cur:
                for t in range(b.start, b.end + 1):
                    total[t] += b.size
        return max(total, default=0)
