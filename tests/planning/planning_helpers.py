"""Shared checks for the planning tests, written independently of aot.planning.core."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence

from aot.planning import Buffer, MemoryPlan, Pool


def assert_sound(plan: MemoryPlan, buffers: Sequence[Buffer], pools: Sequence[Pool]) -> None:
    """Every buffer placed once, aligned, allowed, inside its pool, no live overlap."""
    limits = {p.name: p.size for p in pools}
    where = {}
    for pl in plan.placements:
        assert pl.buffer not in where, f"{pl.buffer} placed twice"
        where[pl.buffer] = pl
    assert set(where) == {b.name for b in buffers}
    for b in buffers:
        pl = where[b.name]
        assert pl.pool in limits
        assert b.pools is None or pl.pool in b.pools, f"{b.name} in disallowed {pl.pool}"
        assert pl.offset >= 0 and pl.offset % b.alignment == 0, f"{b.name} misaligned"
        assert pl.offset + b.size <= plan.pool_sizes[pl.pool]
        if limits[pl.pool] is not None:
            assert plan.pool_sizes[pl.pool] <= limits[pl.pool]
    for i, a in enumerate(buffers):
        for b in buffers[i + 1 :]:
            pa, pb = where[a.name], where[b.name]
            if pa.pool != pb.pool or a.end < b.start or b.end < a.start:
                continue
            apart = pa.offset + a.size <= pb.offset or pb.offset + b.size <= pa.offset
            assert apart, f"{a.name} and {b.name} overlap in {pa.pool}"


def random_buffers(
    rng: random.Random, n: int, steps: int, pool_names: Sequence[str] = ()
) -> list[Buffer]:
    buffers = []
    for i in range(n):
        start = rng.randrange(steps)
        end = min(steps - 1, start + rng.randrange(4))
        size = rng.choice([rng.randrange(1, 64), rng.randrange(64, 400), 16 * rng.randrange(1, 20)])
        pools = None
        if pool_names and rng.random() < 0.15:
            pools = (rng.choice(pool_names),)
        buffers.append(Buffer(f"t{i}", size, start, end, rng.choice([1, 4, 8, 16, 16, 32]), pools))
    return buffers


def brute_force_height(buffers: list[Buffer]) -> int:
    """Smallest raw height over every aligned offset assignment (tiny cases only)."""
    best = sum(b.size + b.alignment for b in buffers)
    offsets = [0] * len(buffers)

    def place(k: int, height: int) -> None:
        nonlocal best
        if height >= best:
            return
        if k == len(buffers):
            best = height
            return
        b = buffers[k]
        for offset in range(0, best - b.size + 1, b.alignment):
            clear = all(
                not b.overlaps(buffers[j])
                or offset + b.size <= offsets[j]
                or offsets[j] + buffers[j].size <= offset
                for j in range(k)
            )
            if clear:
                offsets[k] = offset
                place(k + 1, max(height, offset + b.size))

    place(0, 0)
    return best


def brute_force_total(
    buffers: Sequence[Buffer], pools: Sequence[Pool], fits: Callable[[Buffer, Pool], bool]
) -> int | None:
    """Least total height over every assignment of buffers to pools where ``fits`` holds,
    each pool packed as tightly as possible; None when no assignment fits (tiny cases)."""
    best = None
    for assignment in itertools.product(range(len(pools)), repeat=len(buffers)):
        total: int | None = 0
        for k, pool in enumerate(pools):
            inside = [b for b, a in zip(buffers, assignment) if a == k]
            if not all(fits(b, pool) for b in inside):
                total = None
                break
            height = brute_force_height(inside) if inside else 0
            if pool.size is not None and height > pool.size:
                total = None
                break
            total += height
        if total is not None and (best is None or total < best):
            best = total
    return best
