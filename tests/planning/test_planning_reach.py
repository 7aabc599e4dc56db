"""Reachability: every planner puts a buffer only in pools all of its targets can access."""

from __future__ import annotations

import random

import pytest

from aot.errors import InternalError, PlanningError
from aot.planning import (
    Buffer,
    Placement,
    Pool,
    activation_lower_bound,
    plan_memory,
    planners,
    pool_lower_bounds,
    validate_plan,
)
from aot.planning.model import MemoryPlan, PoolSpec

from .planning_helpers import assert_sound, brute_force_total

pytestmark = pytest.mark.unit

ALGORITHMS = planners.names()
KiB = 1024
CPU, NPU, BOTH = ("cpu",), ("npu",), ("cpu", "npu")


def _assert_reached(plan: MemoryPlan, buffers, pools) -> None:
    targets = {p.name: p.targets for p in pools}
    for b in buffers:
        pool_targets = targets[plan.placement(b.name).pool]
        assert pool_targets is None or set(b.targets) <= set(pool_targets), b.name


def _plan(buffers, pools, algorithm, step_names=None):
    plan = plan_memory(buffers, pools, algorithm, step_names)
    assert_sound(plan, buffers, pools)
    _assert_reached(plan, buffers, pools)
    validate_plan(plan, buffers, pools)
    return plan


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_buffers_go_where_their_targets_reach(algorithm: str) -> None:
    # The fast CPU-only pool has room for everything, yet what the NPU touches avoids it.
    pools = [
        Pool("dtcm", 64 * KiB, CPU),
        Pool("npu_sram", 64 * KiB, BOTH),
        Pool("npu_only", None, NPU),
    ]
    buffers = [
        Buffer("cpu_to_npu", 1 * KiB, 0, 1, targets=BOTH, users=((0, "cpu"), (1, "npu"))),
        Buffer("npu_to_npu", 2 * KiB, 1, 2, targets=NPU),
        Buffer("npu_to_cpu", 1 * KiB, 2, 3, targets=BOTH),
        Buffer("cpu_only", 4 * KiB, 0, 3),
    ]
    plan = _plan(buffers, pools, algorithm)
    assert plan.placement("cpu_to_npu").pool == "npu_sram"
    assert plan.placement("npu_to_cpu").pool == "npu_sram"
    # npu_sram reaches the NPU too and comes first, so an NPU-only buffer prefers it.
    assert plan.placement("npu_to_npu").pool == "npu_sram"
    assert plan.placement("cpu_only").pool == "dtcm"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_cpu_only_pools_plan_as_before(algorithm: str) -> None:
    # PoolSpec's default targets are the CPU's and so are Buffer's: plans are unchanged.
    rng = random.Random(7)
    buffers = [
        Buffer(f"t{i}", rng.randrange(16, 900), s, s + rng.randrange(3), 16)
        for i, s in enumerate(rng.randrange(6) for _ in range(7))
    ]
    specs = [PoolSpec("fast", 1500), PoolSpec("big", None)]
    with_targets = plan_memory(buffers, [s.pool() for s in specs], algorithm)
    anywhere = plan_memory(buffers, [Pool(s.name, s.size) for s in specs], algorithm)
    assert with_targets.placements == anywhere.placements
    assert dict(with_targets.pool_sizes) == dict(anywhere.pool_sizes)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_unreachable_buffer_is_one_line_naming_buffer_operators_targets_pools(
    algorithm: str,
) -> None:
    pools = [Pool("dtcm", 16 * KiB, CPU), Pool("npu_sram", 16 * KiB, NPU)]
    buffers = [
        Buffer("a", 100, 0, 0),
        Buffer("conv_out", 100, 0, 1, targets=BOTH, users=((0, "cpu"), (1, "npu"))),
    ]
    steps = ["step 0 (CONV_2D #0)", "step 1 (CONV_2D #1)"]
    with pytest.raises(PlanningError) as info:
        plan_memory(buffers, pools, algorithm, step_names=steps)
    message = str(info.value)
    assert "\n" not in message
    assert "buffer 'conv_out'" in message
    assert "'step 0 (CONV_2D #0)' on cpu, 'step 1 (CONV_2D #1)' on npu" in message
    assert "reachable by cpu and npu" in message
    assert "'dtcm' (cpu), 'npu_sram' (npu)" in message
    assert "--pool NAME:SIZE:cpu,npu" in message and "--allow-copies" in message


def test_unreachable_without_users_names_the_targets() -> None:
    pools = [Pool("sram", None, CPU)]
    with pytest.raises(PlanningError, match=r"'w' \(and 1 more buffers\) is touched by npu,"):
        plan_memory([Buffer("w", 8, 0, 0, targets=NPU), Buffer("v", 8, 0, 0, targets=NPU)], pools)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_reachable_pool_too_small_names_it_and_suggests_copies(algorithm: str) -> None:
    # Plenty of CPU memory, but the two NPU buffers live together need 3 KiB of npu_sram.
    pools = [Pool("dtcm", None, CPU), Pool("npu_sram", 2 * KiB, BOTH)]
    buffers = [
        Buffer("x", 1536, 0, 2, targets=BOTH),
        Buffer("y", 1536, 1, 2, targets=BOTH),
        Buffer("z", 8 * KiB, 0, 2),
    ]
    with pytest.raises(PlanningError) as info:
        plan_memory(buffers, pools, algorithm)
    message = str(info.value)
    assert "\n" not in message
    assert "pool 'npu_sram' (2048 bytes)" in message
    assert "1024 bytes over" in message and "x (1536 bytes)" in message
    assert "'dtcm'" not in message  # the CPU pool is not where the problem is
    assert "--allow-copies" in message


def test_pool_lower_bounds_count_buffers_with_one_choice() -> None:
    pools = [Pool("dtcm", None, CPU), Pool("npu_sram", None, BOTH)]
    buffers = [
        Buffer("x", 100, 0, 1, targets=BOTH),
        Buffer("y", 50, 1, 2, targets=BOTH),
        Buffer("z", 1000, 0, 2),  # either pool
    ]
    assert pool_lower_bounds(buffers, pools) == {"dtcm": 0, "npu_sram": 150}
    plan = plan_memory(buffers, pools, "optimal")
    assert dict(plan.pool_lower_bounds) == {"dtcm": 0, "npu_sram": 150}
    assert plan.to_json()["pool_lower_bounds"] == {"dtcm": 0, "npu_sram": 150}
    assert plan.pool_sizes["npu_sram"] >= 150


def test_validate_plan_rejects_an_unreached_pool() -> None:
    pools = [Pool("dtcm", None, CPU), Pool("npu_sram", None, BOTH)]
    buffers = [Buffer("x", 16, 0, 0, targets=BOTH)]
    plan = MemoryPlan("hand", (Placement("x", "dtcm", 0),), {"dtcm": 16, "npu_sram": 0}, 16)
    with pytest.raises(InternalError, match=r"'x' \(used by cpu, npu\) in pool 'dtcm'"):
        validate_plan(plan, buffers, pools)


def test_buffer_users_must_be_within_its_targets() -> None:
    with pytest.raises(InternalError, match="used by npu outside its targets"):
        Buffer("x", 16, 0, 1, targets=CPU, users=((1, "npu"),))


TARGET_SETS = [CPU, CPU, NPU, BOTH]
POOL_TARGETS = [CPU, BOTH, NPU, None]


def _random_reach_case(seed: int):
    rng = random.Random(5000 + seed)
    n_pools = rng.randrange(1, 4)
    targets = rng.sample(POOL_TARGETS, n_pools)
    if not any(t is None or t == BOTH for t in targets):
        targets[-1] = BOTH  # keep most cases plannable; some still overflow
    buffers = []
    for i in range(rng.randrange(1, 9)):
        start = rng.randrange(6)
        buffers.append(
            Buffer(
                f"t{i}",
                rng.choice([rng.randrange(1, 64), 16 * rng.randrange(1, 20)]),
                start,
                min(5, start + rng.randrange(4)),
                rng.choice([1, 4, 16]),
                targets=rng.choice(TARGET_SETS),
            )
        )
    lower = activation_lower_bound(buffers)
    pools = [
        Pool(f"p{k}", rng.choice([None, rng.randrange(lower + 1)]), t)
        for k, t in enumerate(targets)
    ]
    return buffers, pools


@pytest.mark.parametrize("seed", range(150))
def test_random_graphs_with_targets(seed: int) -> None:
    buffers, pools = _random_reach_case(seed)
    sizes: dict[str, int | None] = {}
    for algorithm in ALGORITHMS:
        try:
            plan = _plan(buffers, pools, algorithm)
        except PlanningError as err:
            assert "\n" not in str(err)
            sizes[algorithm] = None
        else:
            assert plan.total_size >= plan.lower_bound
            for name, bound in plan.pool_lower_bounds.items():
                assert plan.pool_sizes[name] >= bound
            sizes[algorithm] = plan.total_size
    best = sizes["optimal"]
    for algorithm, size in sizes.items():
        if size is not None:
            assert best is not None and best <= size, (algorithm, sizes)


@pytest.mark.parametrize("seed", range(30))
def test_optimal_matches_brute_force_with_targets(seed: int) -> None:
    rng = random.Random(6000 + seed)
    pools = [Pool("fast", rng.randrange(12), CPU), Pool("shared", rng.choice([None, 10]), BOTH)]
    buffers = []
    for i in range(rng.randrange(2, 5)):
        start = rng.randrange(5)
        buffers.append(
            Buffer(
                f"t{i}",
                rng.randrange(1, 7),
                start,
                min(5, start + rng.randrange(3)),
                1,
                targets=rng.choice([CPU, CPU, NPU, BOTH]),
            )
        )
    best = brute_force_total(buffers, pools, lambda b, pool: pool.reaches(b))
    try:
        found = plan_memory(buffers, pools, "optimal").total_size
    except PlanningError:
        found = None
    assert found == best
