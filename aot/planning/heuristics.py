"""The heuristic planners: first-fit packing in a chosen order of buffers.

``greedy_by_size`` is the reference planner (TFLM's and USMP's default idea: big buffers
first). ``greedy_by_conflicts`` places the most contended buffers first. ``hill_climb``
searches over orders starting from the better greedy order and keeps the best plan it
sees, so it is never worse than either.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from aot.planning.core import Packer, activation_lower_bound, pack_in_order, planners
from aot.planning.model import Buffer, Placement, Pool


def size_order(buffers: Sequence[Buffer]) -> list[int]:
    """Largest first; among equal sizes the longest-lived first, then by start and name."""
    return sorted(
        range(len(buffers)),
        key=lambda i: (
            -buffers[i].size,
            -(buffers[i].end - buffers[i].start),
            buffers[i].start,
            buffers[i].name,
        ),
    )


def conflict_order(buffers: Sequence[Buffer], conflicts: Sequence[Sequence[int]]) -> list[int]:
    """Most conflicting bytes first: a buffer that meets many others is hardest to fit."""
    pressure = [sum(buffers[j].size for j in conflicts[i]) for i in range(len(buffers))]
    return sorted(
        range(len(buffers)),
        key=lambda i: (-(pressure[i] + buffers[i].size), -buffers[i].size, buffers[i].name),
    )


@planners.register("greedy_by_size")
def greedy_by_size(buffers: Sequence[Buffer], pools: Sequence[Pool]) -> list[Placement]:
    return pack_in_order(buffers, pools, size_order(buffers))


@planners.register("greedy_by_conflicts")
def greedy_by_conflicts(buffers: Sequence[Buffer], pools: Sequence[Pool]) -> list[Placement]:
    packer = Packer(buffers, pools)
    packer.place(conflict_order(buffers, packer.conflicts))
    return packer.placements()


def default_iterations(n: int) -> int:
    # Each try re-packs a suffix of the order; about 5 s for a thousand buffers.
    return min(2000, 100 + 25 * n)


@planners.register("hill_climb")
def hill_climb(
    buffers: Sequence[Buffer],
    pools: Sequence[Pool],
    *,
    seed: int = 0,
    iterations: int | None = None,
) -> list[Placement]:
    """Local search over placement orders; deterministic for a given seed.

    Starts from the better of the greedy_by_size and greedy_by_conflicts orders.
    A move either lifts a buffer that sits at the top of a pool (or did not fit) to an
    earlier position, or swaps two random positions. Moves that are not worse are kept,
    to walk across plateaus; the best placement seen is returned.
    """
    n = len(buffers)
    packer = Packer(buffers, pools)
    # Start from the better greedy order, so the result is never worse than either.
    seeds = []
    for order in (size_order(buffers), conflict_order(buffers, packer.conflicts)):
        packer.reset()
        packer.place(order)
        seeds.append((packer.cost(), order, packer.pool_of[:], packer.offsets[:]))
    current, order, packer.pool_of, packer.offsets = min(seeds, key=lambda s: s[0])
    best, best_state = current, (packer.pool_of[:], packer.offsets[:])
    # With one pool nothing beats the activation lower bound: stop there.
    floor = activation_lower_bound(buffers) if len(pools) == 1 else -1
    rng = random.Random(seed)
    for _ in range(default_iterations(n) if iterations is None else iterations):
        if n < 2 or best[:2] <= (0, floor):
            break
        if rng.random() < 0.5:
            j = order.index(rng.choice(_top_buffers(packer)))
            if j == 0:
                continue
            i = rng.randrange(j)
            candidate = [*order[:i], order[j], *order[i:j], *order[j + 1 :]]
        else:
            i, j = sorted(rng.sample(range(n), 2))
            candidate = order[:]
            candidate[i], candidate[j] = candidate[j], candidate[i]
        # Only the suffix from i can move: the placement of a prefix never depends on later
        # buffers.
        saved = [(k, packer.pool_of[k], packer.offsets[k]) for k in order[i:]]
        for k in candidate[i:]:
            packer.pool_of[k] = packer.offsets[k] = None
        packer.place(candidate[i:])
        cost = packer.cost()
        if cost <= current:
            order, current = candidate, cost
            if cost < best:
                best, best_state = cost, (packer.pool_of[:], packer.offsets[:])
        else:
            for k, pool, offset in saved:
                packer.pool_of[k], packer.offsets[k] = pool, offset
    packer.pool_of, packer.offsets = best_state
    return packer.placements()


def _top_buffers(packer: Packer) -> list[int]:
    """Buffers that did not fit, else those reaching the top of some pool."""
    unplaced = [i for i, p in enumerate(packer.pool_of) if p is None]
    if unplaced:
        return unplaced
    top: dict[int, int] = {}
    for i, b in enumerate(packer.buffers):
        p, off = packer.pool_of[i], packer.offsets[i]
        assert p is not None and off is not None
        top[p] = max(top.get(p, 0), off + b.size)
    return [
        i
        for i, b in enumerate(packer.buffers)
        if packer.offsets[i] + b.size == top[packer.pool_of[i]]  # type: ignore[index,operator]
    ]
