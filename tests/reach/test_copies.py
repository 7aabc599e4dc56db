"""Copy steps (aot.planning.copies): staging buffers where the users of a tensor share no
pool, or where the pool they share is too small; planned like any other buffer."""

from __future__ import annotations

import random

import pytest

from aot.errors import PlanningError
from aot.planning import Buffer, Pool, planners
from aot.planning.copies import CallerUse, ConstantUse, Copy, plan_with_copies
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


# The caller's tensors: "in" read by step 0 (npu) and step 2 (cpu); "out" written by
# step 3 (npu) and read by nobody else.
def _caller():
    return [
        CallerUse("in", 300, ((0, "npu"), (2, "cpu"))),
        CallerUse("out", 40, ((3, "npu"),), output=True),
    ]


def test_caller_tensors_out_of_reach_are_an_error_naming_them() -> None:
    pools = [Pool("dtcm", None, CPU), Pool("npu_sram", 8192, BOTH)]
    with pytest.raises(PlanningError) as info:
        plan_with_copies(_chain(), pools, "greedy_by_size", step_names=NAMES, caller=_caller())
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("model input 'in' (300 bytes) (and 1 more) is in the caller's")
    assert "only cpu reaches, but read directly by 'CONV_2D #0' on npu" in message
    assert "--io-in-pool" in message and "--allow-copies" in message
    # A caller's memory every target reaches (None) needs no copy.
    plain = plan_with_copies(_chain(), pools, "greedy_by_size", caller=_caller(),
                             caller_targets=None)  # fmt: skip
    assert plain.copies == ()


@pytest.mark.parametrize("allow", [True, False])
def test_caller_tensors_are_staged_in_and_out(allow: bool) -> None:
    """With --allow-copies, or without it for a target whose backend asks (io_copies):
    the input is copied in before the NPU's read, the output copied out after its write."""
    pools = [Pool("dtcm", None, CPU), Pool("npu_sram", 8192, NPU)]
    result = plan_with_copies(
        [b for b in _chain() if b.name == "z"], pools, "greedy_by_size", step_names=NAMES,
        allow_copies=allow, caller=_caller(), caller_copies=() if allow else ("npu",),
    )  # fmt: skip
    _check(result, pools)
    assert [(c.src, c.dst, c.before) for c in result.copies] == [
        ("in", "in__copy0", 0),
        ("out__copy0", "out", 4),
    ]
    copy_in, copy_out = result.copies
    assert result.schedule == (copy_in, 0, 1, 2, 3, copy_out)
    # The NPU reads the staged input; the CPU reads the caller's own; the NPU writes
    # the staged output.
    assert result.buffer_for(0, "in") == "in__copy0" and result.buffer_for(2, "in") == "in"
    assert result.buffer_for(3, "out") == "out__copy0"
    staged = {b.name: b for b in result.buffers}
    assert (staged["in__copy0"].start, staged["in__copy0"].end) == (0, 1)
    assert (staged["out__copy0"].start, staged["out__copy0"].end) == (4, 5)
    assert {result.plan.placement(n).pool for n in ("in__copy0", "out__copy0")} == {"npu_sram"}


def test_automatic_staging_is_only_for_the_targets_that_ask() -> None:
    pools = [Pool("dtcm", None, CPU), Pool("npu_sram", 8192, NPU)]
    with pytest.raises(PlanningError, match="model input 'in'"):
        plan_with_copies([], pools, "greedy_by_size", step_names=NAMES, caller=_caller(),
                         caller_copies=("other",))  # fmt: skip
