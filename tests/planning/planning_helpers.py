"""Shared checks for the planning tests, written independently of aot.planning.core."""

from __future__ import annotations

import random
from collections.abc import Sequence

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
