"""One suite run against every registered planner (built-in or from an entry point)."""

from __future__ import annotations

import itertools
import random

import pytest

from aot.errors import ConfigError, InternalError, PlanningError
from aot.planning import (
    Buffer,
    Placement,
    Pool,
    activation_lower_bound,
    plan_memory,
    planners,
    validate_plan,
)

from .planning_helpers import assert_sound, brute_force_height, brute_force_total, random_buffers

pytestmark = pytest.mark.unit

ALGORITHMS = planners.names()
KiB = 1024


def test_builtin_planners_are_registered() -> None:
    assert {"greedy_by_size", "greedy_by_conflicts", "hill_climb", "optimal"} <= set(ALGORITHMS)


def _plan(buffers, pools, algorithm, step_names=None):
    plan = plan_memory(buffers, pools, algorithm, step_names)
    assert plan.algorithm == algorithm
    assert plan.lower_bound == activation_lower_bound(buffers)
    assert_sound(plan, buffers, pools)
    validate_plan(plan, buffers, pools)
    return plan


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_chain_reuses_memory(algorithm: str) -> None:
    # a -> b -> c -> d: only two neighbours are ever live together.
    buffers = [Buffer(n, 1024, i, i + 1) for i, n in enumerate("abcd")]
    plan = _plan(buffers, [Pool("sram", None)], algorithm)
    assert plan.lower_bound == 2048
    assert plan.total_size == 2048


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_alignment_is_respected(algorithm: str) -> None:
    buffers = [
        Buffer("odd", 13, 0, 3, alignment=1),
        Buffer("a8", 7, 0, 3, alignment=8),
        Buffer("a32", 33, 1, 2, alignment=32),
        Buffer("a64", 5, 2, 3, alignment=64),
        Buffer("a16", 17, 0, 1),
    ]
    plan = _plan(buffers, [Pool("sram", None)], algorithm)
    for b in buffers:
        assert plan.placement(b.name).offset % b.alignment == 0
    assert plan.pool_sizes["sram"] % 64 == 0  # rounded to the largest alignment


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_pool_limit_is_never_exceeded(algorithm: str) -> None:
    buffers = [Buffer(f"b{i}", 512, i, i + 1) for i in range(6)]
    plan = _plan(buffers, [Pool("sram", 1024)], algorithm)  # exactly the lower bound
    assert plan.pool_sizes == {"sram": 1024}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_disallowed_pool_is_not_used(algorithm: str) -> None:
    pools = [Pool("fast", 16 * KiB), Pool("slow", None)]
    buffers = [
        Buffer("pinned", 100, 0, 2, pools=("slow",)),
        Buffer("free", 100, 0, 2),
        Buffer("fast_only", 100, 1, 3, pools=("fast",)),
    ]
    plan = _plan(buffers, pools, algorithm)
    assert plan.placement("pinned").pool == "slow"
    assert plan.placement("fast_only").pool == "fast"
    assert plan.placement("free").pool == "fast"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_two_pools_fill_the_fast_one_first(algorithm: str) -> None:
    pools = [Pool("fast", 16 * KiB), Pool("large", 256 * KiB)]
    # Everything fits in the fast pool: the large one stays empty.
    small = [Buffer(f"s{i}", 8 * KiB, i, i + 1) for i in range(5)]
    plan = _plan(small, pools, algorithm)
    assert plan.pool_sizes == {"fast": 16 * KiB, "large": 0}
    # Three 10 KiB buffers live together: one fits in the fast pool, the rest spill over.
    big = [Buffer(f"b{i}", 10 * KiB, 0, 2) for i in range(3)] + [Buffer("late", 6 * KiB, 3, 4)]
    plan = _plan(big, pools, algorithm)
    assert 10 * KiB <= plan.pool_sizes["fast"] <= 16 * KiB
    assert plan.pool_sizes["large"] <= 256 * KiB
    assert plan.placement("late").pool == "fast"
    assert sum(plan.placement(f"b{i}").pool == "fast" for i in range(3)) == 1


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_error_when_the_buffers_do_not_fit(algorithm: str) -> None:
    buffers = [
        Buffer("x", 8 * KiB, 0, 1),
        Buffer("y", 12 * KiB, 1, 2),
        Buffer("z", 4 * KiB, 2, 3),
        Buffer("w", 1 * KiB, 1, 1),
    ]
    steps = ["conv", "relu", "pool", "fc"]
    with pytest.raises(PlanningError) as info:
        plan_memory(buffers, [Pool("sram", 16 * KiB)], algorithm, step_names=steps)
    message = str(info.value)
    assert "\n" not in message
    assert "'sram'" in message
    assert f"{21 * KiB - 16 * KiB} bytes over" in message  # peak 21 KiB at 'relu'
    assert "y (12288 bytes), x (8192 bytes)" in message
    assert "'relu'" in message
    assert "--pool NAME:SIZE" in message
    # Without step names the peak is named by its index.
    with pytest.raises(PlanningError, match="peak at step 1"):
        plan_memory(buffers, [Pool("sram", 16 * KiB)], algorithm)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_error_names_a_buffer_larger_than_every_pool(algorithm: str) -> None:
    buffers = [Buffer("weights_copy", 40 * KiB, 0, 0), Buffer("small", 1 * KiB, 0, 1)]
    pools = [Pool("dtcm", 16 * KiB), Pool("sram", 32 * KiB)]
    with pytest.raises(PlanningError) as info:
        plan_memory(buffers, pools, algorithm)
    message = str(info.value)
    assert "'weights_copy' (40960 bytes" in message
    assert "'dtcm' (16384 bytes), 'sram' (32768 bytes)" in message
    assert f"{8 * KiB} bytes over" in message


def _random_case(seed: int):
    rng = random.Random(seed)
    mode = seed % 4
    names = ("fast", "slow") if mode >= 2 else ("sram",)
    buffers = random_buffers(rng, rng.randrange(1, 9), rng.randrange(1, 9), names)
    lower = activation_lower_bound(buffers)
    if mode == 0:
        pools = [Pool("sram", None)]
    elif mode == 1:
        pools = [Pool("sram", int(lower * rng.uniform(0.9, 1.4)))]
    elif mode == 2:
        pools = [Pool("fast", rng.randrange(0, lower + 1)), Pool("slow", None)]
    else:
        pools = [Pool("fast", rng.randrange(0, lower + 1)), Pool("slow", rng.randrange(lower))]
    return buffers, pools


@pytest.mark.parametrize("seed", range(200))
def test_random_graphs(seed: int) -> None:
    buffers, pools = _random_case(seed)
    lower = activation_lower_bound(buffers)
    sizes: dict[str, int | None] = {}
    for algorithm in ALGORITHMS:
        try:
            plan = _plan(buffers, pools, algorithm)
        except PlanningError as err:
            assert "\n" not in str(err) and "bytes over" in str(err)
            sizes[algorithm] = None
        else:
            assert plan.total_size >= lower
            sizes[algorithm] = plan.total_size
    best = sizes["optimal"]
    for algorithm, size in sizes.items():
        if size is not None:
            assert best is not None and best <= size, (algorithm, sizes)
    if sizes["greedy_by_size"] is not None:
        assert sizes["hill_climb"] is not None
        assert sizes["hill_climb"] <= sizes["greedy_by_size"]


@pytest.mark.parametrize("seed", range(40))
def test_optimal_matches_brute_force(seed: int) -> None:
    rng = random.Random(1000 + seed)
    buffers = [
        Buffer(f"t{i}", rng.randrange(1, 7), s, min(5, s + rng.randrange(3)), rng.choice([1, 2, 4]))
        for i, s in enumerate(rng.randrange(5) for _ in range(rng.randrange(2, 6)))
    ]
    plan = plan_memory(buffers, [Pool("sram", None)], "optimal")
    alignment = max(b.alignment for b in buffers)
    expected = -(-brute_force_height(buffers) // alignment) * alignment
    assert plan.total_size == expected


@pytest.mark.parametrize("seed", range(30))
def test_optimal_matches_brute_force_with_two_pools(seed: int) -> None:
    rng = random.Random(2000 + seed)
    pools = [
        Pool("fast", rng.randrange(12)),
        Pool("slow", rng.choice([None, rng.randrange(4, 15)])),
    ]
    buffers = []
    for i in range(rng.randrange(2, 5)):
        start = rng.randrange(5)
        allowed = rng.choice([None, None, ("fast",), ("slow",)])
        buffers.append(
            Buffer(
                f"t{i}", rng.randrange(1, 7), start, min(5, start + rng.randrange(3)), 1, allowed
            )
        )
    best = brute_force_total(
        buffers, pools, lambda b, pool: b.pools is None or pool.name in b.pools
    )
    try:
        found = plan_memory(buffers, pools, "optimal").total_size
    except PlanningError:
        found = None
    assert found == best


def test_optimal_beats_greedy_on_a_known_case() -> None:
    # Largest first puts c and d at 0, a on top of d, and then b must go above both a and
    # c. Putting b at 0 and c on top of it leaves the peak at the lower bound.
    buffers = [
        Buffer("a", 16, 1, 2),
        Buffer("b", 16, 2, 3),
        Buffer("c", 64, 3, 3),
        Buffer("d", 64, 0, 1),
    ]
    pools = [Pool("sram", None)]
    assert plan_memory(buffers, pools, "greedy_by_size").total_size == 96
    plan = plan_memory(buffers, pools, "optimal")
    assert plan.total_size == plan.lower_bound == 80
    assert plan_memory(buffers, pools, "hill_climb").total_size == 80


def test_error_when_only_the_packing_does_not_fit() -> None:
    buffers = [
        Buffer("a", 16, 1, 2),
        Buffer("b", 16, 2, 3),
        Buffer("c", 64, 3, 3),
        Buffer("d", 64, 0, 1),
    ]
    pools = [Pool("sram", 80)]
    with pytest.raises(PlanningError) as info:
        plan_memory(buffers, pools, "greedy_by_size")
    message = str(info.value)
    assert "planner 'greedy_by_size' needs 96 bytes, 16 bytes over" in message
    assert "only 80 bytes are live at once" in message
    assert "--planner optimal" in message
    assert plan_memory(buffers, pools, "optimal").pool_sizes == {"sram": 80}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_plans_are_deterministic(algorithm: str) -> None:
    buffers, pools = _random_case(12)
    assert plan_memory(buffers, pools, algorithm) == plan_memory(buffers, pools, algorithm)


def test_empty_graph() -> None:
    plan = plan_memory([], [Pool("sram", 100)])
    assert plan.placements == () and plan.pool_sizes == {"sram": 0} and plan.lower_bound == 0


def test_unknown_planner_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="greedy_by_size"):
        plan_memory([Buffer("a", 1, 0, 0)], [Pool("sram", None)], "first_fit_by_magic")


def test_unknown_pool_in_buffer_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'a' may only use pool"):
        plan_memory([Buffer("a", 1, 0, 0, pools=("itcm",))], [Pool("sram", None)])


def test_invalid_plan_from_a_planner_is_an_internal_error(monkeypatch) -> None:
    def overlapping(buffers, pools):
        return [Placement(b.name, pools[0].name, 0) for b in buffers]

    monkeypatch.setitem(planners._items, "overlapping", overlapping)
    buffers = [Buffer("a", 16, 0, 1), Buffer("b", 16, 1, 2)]
    with pytest.raises(InternalError, match=r"'a'.*'b'.*overlap"):
        plan_memory(buffers, [Pool("sram", None)], "overlapping")


def test_optimal_refuses_large_groups() -> None:
    buffers = [Buffer(f"b{i}", 16, 0, 0) for i in range(40)]
    with pytest.raises(ConfigError, match="hill_climb"):
        plan_memory(buffers, [Pool("sram", None)], "optimal")


def test_optimal_splits_independent_groups() -> None:
    # 40 buffers in 20 pairs whose lifetimes never meet: solved pair by pair.
    buffers = [Buffer(f"b{i}", 16 * (1 + i % 3), i // 2 * 2, i // 2 * 2 + 1) for i in range(40)]
    plan = plan_memory(buffers, [Pool("sram", None)], "optimal")
    assert plan.total_size == plan.lower_bound


def test_lower_bound() -> None:
    assert activation_lower_bound([]) == 0
    buffers = [Buffer("a", 10, 0, 2), Buffer("b", 5, 2, 3), Buffer("c", 7, 3, 3)]
    assert activation_lower_bound(buffers) == 15


def test_plan_json_and_lookup() -> None:
    buffers = [Buffer("a", 10, 0, 1), Buffer("b", 20, 1, 2)]
    plan = plan_memory(buffers, [Pool("sram", None)])
    data = plan.to_json()
    assert data["algorithm"] == "greedy_by_size"
    assert data["pool_sizes"] == {"sram": 48}
    assert [p["buffer"] for p in data["placements"]] == ["a", "b"]
    assert plan.placement("b").offset == 0
    with pytest.raises(KeyError):
        plan.placement("zz")
    hash(plan)  # frozen and hashable, so it can key caches


@pytest.mark.parametrize(
    ("field", "value"), [("size", 0), ("start", -1), ("end", -2), ("alignment", 3)]
)
def test_bad_buffers_are_rejected(field: str, value: int) -> None:
    args = {"name": "a", "size": 4, "start": 0, "end": 0} | {field: value}
    with pytest.raises(InternalError):
        Buffer(**args)


def test_validate_plan_catches_each_fault() -> None:
    buffers = [Buffer("a", 16, 0, 1), Buffer("b", 16, 1, 2, pools=("sram",))]
    pools = [Pool("sram", 64), Pool("ext", None)]
    good = plan_memory(buffers, pools)
    validate_plan(good, buffers, pools)
    faults = {
        "overlap": [Placement("a", "sram", 0), Placement("b", "sram", 0)],
        "aligned": [Placement("a", "sram", 40), Placement("b", "sram", 4)],
        "holds": [Placement("a", "sram", 0), Placement("b", "sram", 64)],
        "may only use": [Placement("a", "sram", 0), Placement("b", "ext", 0)],
        "leaves out": [Placement("a", "sram", 0)],
    }
    for words, placements in faults.items():
        bad = type(good)("x", tuple(placements), {"sram": 128, "ext": 64}, 32)
        with pytest.raises(InternalError, match=words):
            validate_plan(bad, buffers, pools)


def test_permutations_of_buffers_give_valid_plans() -> None:
    base = [Buffer("a", 48, 0, 2), Buffer("b", 32, 1, 3), Buffer("c", 16, 2, 4)]
    for perm in itertools.permutations(base):
        for algorithm in ALGORITHMS:
            assert_sound(
                plan_memory(perm, [Pool("sram", None)], algorithm), perm, [Pool("sram", None)]
            )
