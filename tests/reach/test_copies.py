"""Copy steps (aot.planning.copies): staging buffers where the users of a tensor share no
pool, or where the pool they share is too small; planned like any other buffer."""

from __future__ import annotations

import random

import pytest

from aot.errors import PlanningError
from aot.planning import Buffer, Pool, planners
from aot.planning.copies import ConstantUse, Copy, plan_with_copies
from tests.planning.planning_helpers import assert_sound

pytestmark = pytest.mark.unit

ALGORITHMS = planners.names()
CPU, NPU, BOTH = ("cpu",), ("npu",), ("cpu", "npu")
NAMES = ["CONV_2D #0", "CONV_2D #1", "ADD #2", "FULLY_CONNECTED #3"]


def _check(result, pools) -> None:
    assert_sound(result.plan, result.buffers, pools)
    targets = {p.name: p.targets for p in pools}
    for b in result.buffers:
        reach = targets[result.plan.placement(b.name).pool]
        assert reach is None or set(b.targets) <= set(reach), b.name


def _chain():
    # step 0 (cpu) writes x; step 1 (npu) reads x, writes y; step 2 (cpu) reads y; ...
    return [
        Buffer("x", 1000, 0, 1, targets=BOTH, users=((0, "cpu"), (1, "npu"))),
        Buffer("y", 1000, 1, 2, targets=BOTH, users=((1, "npu"), (2, "cpu"))),
        Buffer("z", 500, 2, 3, users=((2, "cpu"), (3, "cpu"))),
    ]


def test_without_copies_the_plan_is_plan_memorys() -> None:
    from aot.planning import plan_memory

    pools = [Pool("sram", None, BOTH)]
    result = plan_with_copies(_chain(), pools, "greedy_by_size", step_names=NAMES)
    assert result.plan == plan_memory(_chain(), pools, "greedy_by_size", NAMES)
    assert result.schedule == (0, 1, 2, 3) and result.copies == () and not result.reads


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_no_shared_pool_is_an_error_or_copies(algorithm: str) -> None:
    pools = [Pool("dtcm", None, CPU), Pool("npu_sram", 4096, NPU)]
    with pytest.raises(PlanningError) as info:
        plan_with_copies(_chain(), pools, algorithm, step_names=NAMES)
    message = str(info.value)
    assert "\n" not in message and "buffer 'x'" in message and "--allow-copies" in message
    assert "'CONV_2D #0' on cpu, 'CONV_2D #1' on npu" in message

    result = plan_with_copies(_chain(), pools, algorithm, allow_copies=True, step_names=NAMES)
    _check(result, pools)
    copies = result.copies
    assert [(c.src, c.dst, c.size, c.before) for c in copies] == [
        ("x", "x__copy0", 1000, 1),
        ("y", "y__copy0", 1000, 2),
    ]
    # The schedule puts each copy right before the step that needs it.
    assert [c.name if isinstance(c, Copy) else c for c in result.schedule] == [
        0,
        "copy_x_0",
        1,
        "copy_y_0",
        2,
        3,
    ]
    assert result.buffer_for(1, "x") == "x__copy0" and result.buffer_for(2, "y") == "y__copy0"
    assert result.buffer_for(1, "y") == "y"  # the writer keeps the home buffer
    where = {p.buffer: p.pool for p in result.plan.placements}
    assert where == {
        "x": "dtcm",
        "x__copy0": "npu_sram",
        "y": "npu_sram",
        "y__copy0": "dtcm",
        "z": "dtcm",
    }
    # Lifetimes count schedule positions: x lives until its copy, the copy until its user.
    by_name = {b.name: b for b in result.buffers}
    assert (by_name["x"].start, by_name["x"].end) == (0, 1)
    assert (by_name["x__copy0"].start, by_name["x__copy0"].end) == (1, 2)
    assert result.step_names[1] == "copy_x_0 (x -> x__copy0)"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_small_shared_pool_is_relieved_by_copies(algorithm: str) -> None:
    # x is written by the CPU at step 0 and read by the NPU only at step 5; the NPU's
    # pool (2.1 KB) cannot hold x all that time next to what the NPU does meanwhile.
    buffers = [
        Buffer("x", 1000, 0, 5, targets=BOTH, users=((0, "cpu"), (5, "npu"))),
        Buffer("a", 1000, 1, 2, targets=NPU, users=((1, "npu"), (2, "npu"))),
        Buffer("b", 1000, 2, 3, targets=NPU, users=((2, "npu"), (3, "npu"))),
        Buffer("out", 100, 5, 5, targets=NPU, users=((5, "npu"),)),
    ]
    pools = [Pool("dtcm", None, CPU), Pool("npu_sram", 2100, BOTH)]
    with pytest.raises(PlanningError) as info:
        plan_with_copies(buffers, pools, algorithm)
    assert "'npu_sram' (2100 bytes)" in str(info.value)
    assert "--allow-copies" in str(info.value)
    result = plan_with_copies(buffers, pools, algorithm, allow_copies=True)
    _check(result, pools)
    assert [(c.src, c.before) for c in result.copies] == [("x", 5)]
    assert result.plan.placement("x").pool == "dtcm"
    assert result.plan.placement("x__copy0").pool == "npu_sram"


def test_pinned_buffers_are_never_split() -> None:
    pools = [Pool("dtcm", None, CPU), Pool("npu_sram", None, NPU)]
    with pytest.raises(PlanningError, match=r"'x'.*cannot be copied"):
        plan_with_copies(_chain(), pools, "greedy_by_size", allow_copies=True, pinned={"x"})


def test_constants_out_of_reach_are_an_error_or_staged() -> None:
    pools = [Pool("sram", None, BOTH)]
    weights = ConstantUse("w", 300, ((1, "npu"), (2, "cpu"), (3, "npu")))
    with pytest.raises(PlanningError) as info:
        plan_with_copies(
            _chain(),
            pools,
            "greedy_by_size",
            step_names=NAMES,
            constants=[weights],
            constants_targets=CPU,
            constants_memory="flash",
        )
    message = str(info.value)
    assert "\n" not in message
    assert "constant 'w' (300 bytes) is read by 'CONV_2D #1' on npu, " in message
    assert "'FULLY_CONNECTED #3' on npu" in message and "'ADD #2'" not in message
    assert "'flash' (cpu)" in message and "--allow-copies" in message
    # Readers the constants memory reaches keep reading flash; the NPU's get a copy each
    # time the CPU read in between ends the run.
    result = plan_with_copies(
        _chain(),
        pools,
        "greedy_by_size",
        allow_copies=True,
        constants=[weights],
        constants_targets=CPU,
    )
    _check(result, pools)
    assert [(c.src, c.dst, c.before) for c in result.copies] == [
        ("w", "w__copy0", 1),
        ("w", "w__copy1", 3),
    ]
    assert result.buffer_for(2, "w") == "w"
    assert result.buffer_for(3, "w") == "w__copy1"
    # With the NPU reaching the constants memory nothing changes.
    same = plan_with_copies(
        _chain(), pools, "greedy_by_size", constants=[weights], constants_targets=BOTH
    )
    assert same.copies == ()


@pytest.mark.parametrize("seed", range(60))
def test_random_graphs_with_copies_are_sound(seed: int) -> None:
    """Whatever the copies, every buffer sits where its users reach and nothing overlaps;
    every user of a split tensor reads a buffer its target reaches."""
    rng = random.Random(9000 + seed)
    steps = rng.randrange(3, 9)
    targets = [rng.choice(["cpu", "cpu", "npu"]) for _ in range(steps)]
    buffers = []
    for i in range(rng.randrange(1, 8)):
        start = rng.randrange(steps)
        readers = sorted(
            rng.sample(range(start, steps), rng.randrange(1, min(3, steps - start) + 1))
        )
        users = tuple(dict.fromkeys([start, *readers]))
        buffers.append(
            Buffer(
                f"t{i}",
                rng.randrange(16, 600),
                start,
                max(users),
                16,
                targets=tuple({targets[s] for s in users}),
                users=tuple((s, targets[s]) for s in users),
            )
        )
    pools = [
        Pool("dtcm", None, CPU),
        Pool("npu_sram", rng.choice([None, rng.randrange(600, 2000)]), rng.choice([NPU, BOTH])),
    ]
    try:
        result = plan_with_copies(buffers, pools, "greedy_by_size", allow_copies=True)
    except PlanningError as err:
        assert "\n" not in str(err)
        assert "stage it through" not in str(err)  # copies are on already
        assert str(err).endswith("(with --allow-copies)")
        return
    _check(result, pools)
    staged = {b.name: b for b in result.buffers}
    for b in buffers:
        for step, target in b.users:
            used = staged[result.buffer_for(step, b.name)]
            assert target in used.targets
