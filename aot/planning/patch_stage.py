"""Patch stages on a lowered model: where one can start and end, what each schedule costs,
and the model with the chosen one in place of its operators.

A patch stage (aot/planning/patches.py for the arithmetic, aot/kernels/patches.py for its
C) replaces the first convolutions of the model, read one after the other through tensors
nobody else reads, by one step that runs them tile by tile. Only kernel-backend steps take
part: their params hold the geometry a tile changes. The first operator must have a window
wider than 1x1 (a 1x1 without padding reads its input rows in place, which a tile reading
the whole input cannot). ``Schedule`` is one choice (where the stage ends, the grid) with
its RAM (the fixed-order peak of the whole model as the planner counts it,
aot.planning.liveness.live_bytes: inputs and outputs counted when they sit in the pool)
and an estimate of the instructions it adds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from aot.errors import ConfigError, InternalError
from aot.planning.in_place_rows import apply_in_place, choose_in_place
from aot.planning.patches import (
    Window,
    grids,
    plan_patches,
    summary,
    two_ended_peak,
)
from aot.planning.tiled_step import step_window, with_stage

# The search's estimate of what a schedule adds to an inference, in instructions: each
# multiply-accumulate the tiles recompute, and each kernel call more (its loops' set-up
# and a small tile's border pixels and left-over passes). Calibrated on vww_96_int8 on
# mps2_an386, whose first convolutions take about 3 instructions per multiply-accumulate;
# what it decides is the order of the schedules, not their absolute counts
# (docs/memory_planning.md, "Below the fixed-order bound").
INSTRUCTIONS_PER_MAC = 3
INSTRUCTIONS_PER_CALL = 2400
# Kernel paths far slower per multiply-accumulate (the prepared kernel's notes["path"]):
# the depthwise kernel for any depth multiplier, about 42 on person_detect's first layer.
SLOW_PATHS = {"any": 42}
MOST_TILES_PER_AXIS = 8
MOST_OPERATORS_PER_STAGE = 8


@dataclass(frozen=True)
class Stage:
    """Operators ``start`` to ``start + length - 1`` of the chain, tile by tile on ``grid``
    (rows, columns) of the last one's output."""

    start: int
    length: int
    grid: tuple[int, int]

    @property
    def stop(self) -> int:
        return self.start + self.length

    @property
    def label(self) -> str:
        last = self.start + self.length - 1
        ops = (
            f"operator {self.start}" if not last - self.start else f"operators {self.start}-{last}"
        )
        return f"{ops} in {self.grid[0]}x{self.grid[1]} tiles"


@dataclass(frozen=True)
class Schedule:
    """Patch stages along the chain (none: whole operators): the RAM the model needs with
    them, its multiply-accumulates, and how many of them and how many kernel calls they
    add to whole operators."""

    stages: tuple[Stage, ...]
    ram_bytes: int
    macs: int
    extra_macs: int = 0
    extra_calls: int = 0
    extra_instructions: int = 0  # estimated, see INSTRUCTIONS_PER_MAC
    # Convolutions run in place, after the stages (aot.planning.in_place_rows).
    in_place: tuple[Any, ...] = ()

    @property
    def label(self) -> str:
        parts = [s.label for s in self.stages]
        if self.in_place:
            banded = sorted({c.bands for c in self.in_place if c.bands})
            how = f" ({'/'.join(str(b) for b in banded)} bands)" if banded else ""
            parts.append(f"{len(self.in_place)} in place{how}")
        return "; ".join(parts) or "whole operators"


def chain_at_start(lowered: Any) -> list[tuple[Any, Window]]:
    """The steps a patch stage can take, in order, each with its window: from the step
    that reads the model's one input, along outputs that only the next step reads."""
    from aot.lowering import INPUT, INTERMEDIATE

    inputs = [t.id for t in lowered.tensors if t.kind == INPUT]
    if len(inputs) != 1:
        return []
    readers: dict[int, list[Any]] = {}
    for step in lowered.steps:
        for t in set(step.reads):
            readers.setdefault(t, []).append(step)
    by_symbol = {a.symbol: a for a in lowered.artifacts}
    chain: list[tuple[Any, Window]] = []
    current = inputs[0]
    while True:
        steps = readers.get(current, [])
        activation = [s for s in steps if s.args and s.args[0] == current]
        if len(activation) != 1 or (chain and len(steps) != 1):
            break
        step = activation[0]
        window = step_window(step, by_symbol[step.kernel])
        if window is None or len(step.outputs) != 1:
            break
        chain.append((step, window))
        current = step.outputs[0]
        if lowered.tensors[current].kind != INTERMEDIATE:
            break
    return chain


def _rate(step: Any, artifact: Any) -> int:
    """Estimated instructions per multiply-accumulate of a kernel step."""
    notes = getattr(getattr(artifact.payload, "prepared", None), "notes", {}) or {}
    return SLOW_PATHS.get(notes.get("path", ""), INSTRUCTIONS_PER_MAC)


@dataclass(frozen=True)
class _Candidate:
    stage: Stage
    peak: int  # the bytes live while it runs: its input, its output, its scratch
    extra_macs: int
    extra_calls: int
    extra_instructions: int


def _candidates(lowered: Any, chain: Sequence[tuple[Any, Window]]) -> list[_Candidate]:
    """Every stage along the chain of at most MOST_OPERATORS_PER_STAGE, each with an
    estimate of its own peak and cost; per start and length only the grids no other
    beats on both."""
    from aot.kernels.patches import align

    by_symbol = {a.symbol: a for a in lowered.artifacts}
    found = []
    for start in range(len(chain)):
        if chain[start][1].kernel == (1, 1):
            continue  # it would read its input in place with another path (module docstring)
        for stop in range(start + 1, min(start + MOST_OPERATORS_PER_STAGE, len(chain)) + 1):
            part = chain[start:stop]
            windows = [w for _, w in part]
            last = windows[-1]
            whole = windows[0].whole_input_bytes + last.whole_output_bytes
            kernel_scratch = max(align(step.scratch_bytes) for step, _ in part)
            rates = [_rate(step, by_symbol[step.kernel]) for step, _ in part]
            untiled = [w.macs(w.whole_output) for w in windows]
            best: list[_Candidate] = []
            for grid in grids(last.out_hw, MOST_TILES_PER_AXIS):
                if grid == (1, 1):
                    continue
                buffers, macs = summary(windows, grid)
                scratch = two_ended_peak([align(b) for b in buffers])
                extra = [m - u for m, u in zip(macs, untiled, strict=True)]
                calls = grid[0] * grid[1] * (len(part) + 1) - len(part)
                instructions = sum(m * r for m, r in zip(extra, rates, strict=True))
                instructions += calls * INSTRUCTIONS_PER_CALL
                stage = Stage(start, len(part), grid)
                peak = whole + scratch + kernel_scratch
                best.append(_Candidate(stage, peak, sum(extra), calls, instructions))
            found.extend(_pareto(best, lambda c: (c.peak, c.extra_instructions)))
    return found


def _pareto(items: Sequence[Any], key: Any) -> list[Any]:
    """The items no other beats on both of ``key``'s two values (smaller is better)."""
    kept: list[Any] = []
    for item in sorted(items, key=lambda i: (key(i)[1], key(i)[0])):
        if not kept or key(item)[0] < key(kept[-1])[0]:
            kept.append(item)
    return kept


def schedules(lowered: Any, io_in_pool: bool = True, most_stages: int = 2) -> list[Schedule]:
    """The schedules worth having: whole operators, then up to ``most_stages`` patch
    stages along the chain at the model's start, each choice with the model's fixed-order
    peak (exact: the stages applied) and its estimated added instructions; only those no
    other beats on both RAM and instructions."""
    from aot.planning.liveness import live_bytes, peak_bytes

    chain = chain_at_start(lowered)
    whole_macs = sum(step.macs for step in lowered.steps)
    live = live_bytes(lowered, io_in_pool)
    whole = Schedule((), max(live, default=0), whole_macs)
    if not chain:
        return _with_in_place(lowered, [whole], io_in_pool)
    position = {id(step): k for k, step in enumerate(lowered.steps)}
    on_chain = [position[id(step)] for step, _ in chain]
    others = max((v for k, v in enumerate(live) if k not in set(on_chain)), default=0)
    # most[i][j]: the most bytes live at chain positions i..j-1 run as whole operators
    chain_live = [live[k] for k in on_chain]
    most = [[0] * (len(chain) + 1) for _ in range(len(chain) + 1)]
    for i in range(len(chain)):
        for j in range(i + 1, len(chain) + 1):
            most[i][j] = max(most[i][j - 1], chain_live[j - 1])
    candidates = _candidates(lowered, chain)
    options: list[tuple[int, int, tuple[_Candidate, ...]]] = []
    for a in candidates:
        a_start, a_stop = a.stage.start, a.stage.stop
        rest = max(others, most[0][a_start], most[a_stop][len(chain)])
        options.append((max(rest, a.peak), a.extra_instructions, (a,)))
        if most_stages < 2:
            continue
        for b in candidates:
            if a_stop > b.stage.start:
                continue
            rest = max(others, most[0][a_start], most[a_stop][b.stage.start],
                       most[b.stage.stop][len(chain)])  # fmt: skip
            cost = a.extra_instructions + b.extra_instructions
            options.append((max(rest, a.peak, b.peak), cost, (a, b)))
    found = [whole]
    for estimate, _, combo in _pareto(options, lambda o: (o[0], o[1])):
        if estimate >= whole.ram_bytes:
            continue
        staged = apply_stages(lowered, tuple(c.stage for c in combo))
        found.append(
            Schedule(
                tuple(c.stage for c in combo),
                peak_bytes(staged, io_in_pool),
                whole_macs + sum(c.extra_macs for c in combo),
                sum(c.extra_macs for c in combo),
                sum(c.extra_calls for c in combo),
                sum(c.extra_instructions for c in combo),
            )
        )
    return _with_in_place(lowered, found, io_in_pool)


def _with_in_place(lowered: Any, found: list[Schedule], io_in_pool: bool) -> list[Schedule]:
    """``found`` and, after each, the same stages with convolutions run in place where
    that lowers the peak (aot.planning.in_place_rows.choose_in_place)."""
    more = []
    for schedule in found:
        staged = apply_stages(lowered, schedule.stages)
        for choice in choose_in_place(staged, io_in_pool):
            more.append(
                replace(
                    schedule,
                    ram_bytes=choice.ram_bytes,
                    extra_calls=schedule.extra_calls + choice.extra_calls,
                    extra_instructions=schedule.extra_instructions + choice.extra_instructions,
                    in_place=choice.steps,
                )
            )
    return [*found, *more]


def frontier(found: Sequence[Schedule]) -> list[Schedule]:
    """The schedules no other beats on both RAM and added instructions, by RAM, largest
    first."""
    return _pareto(found, lambda s: (s.ram_bytes, s.extra_instructions))


def _with_chosen(points: list[Schedule], chosen: Schedule) -> list[Schedule]:
    """The frontier and the chosen schedule (--in-place alone may choose one that
    patch stages beat), by RAM, largest first."""
    if chosen in points:
        return points
    return sorted([*points, chosen], key=lambda s: (-s.ram_bytes, s.extra_instructions))


def choose(found: Sequence[Schedule], ram_budget: int) -> Schedule:
    """The fastest schedule within ``ram_budget`` bytes; a one-line error naming the
    smallest RAM reachable when none fits."""
    fitting = [s for s in found if s.ram_bytes <= ram_budget]
    if not fitting:
        smallest = min(found, key=lambda s: (s.ram_bytes, s.extra_instructions))
        raise ConfigError(
            f"no schedule fits --ram-budget {ram_budget} B: the smallest RAM this model "
            f"reaches is {smallest.ram_bytes} B ({smallest.label}); give --ram-budget "
            f"{smallest.ram_bytes} or more"
        )
    return min(fitting, key=lambda s: (s.extra_instructions, s.ram_bytes))


def apply_stages(lowered: Any, stages: Sequence[Stage]) -> Any:
    """The lowered model with ``stages`` in place, the last first so the chain's earlier
    steps keep their identity."""
    for stage in sorted(stages, key=lambda s: -s.start):
        part = chain_at_start(lowered)[stage.start : stage.stop]
        if len(part) != stage.length:
            raise InternalError(f"the chain has no operators {stage.start}-{stage.stop - 1}")
        plan = plan_patches([w for _, w in part], stage.grid)
        lowered = with_stage(lowered, part, plan)
    return lowered


def apply(lowered: Any, schedule: Schedule, io_in_pool: bool) -> Any:
    """The lowered model with ``schedule``'s stages and in-place convolutions
    (unchanged for none), as searched with ``io_in_pool`` or not."""
    staged = apply_stages(lowered, schedule.stages)
    return apply_in_place(staged, schedule.in_place, io_in_pool)


def _window_info(window: Window) -> Any:
    from aot.artifacts.schedule import WindowInfo

    return WindowInfo(
        label=window.label, kind=window.kind, in_hw=window.in_hw, out_hw=window.out_hw,
        in_channels=window.in_channels, out_channels=window.out_channels,
        kernel=window.kernel, stride=window.stride, dilation=window.dilation,
        pad_top=window.pad_top, pad_left=window.pad_left,
    )  # fmt: skip


def window_of(info: Any) -> Window:
    """The window a manifest's WindowInfo records."""
    return Window(
        info.kind, tuple(info.in_hw), tuple(info.out_hw), info.in_channels,
        info.out_channels, tuple(info.kernel), tuple(info.stride), tuple(info.dilation),
        info.pad_top, info.pad_left, info.label,
    )  # fmt: skip


def plan_schedule(
    lowered: Any,
    ram_budget: int | None,
    io_in_pool: bool,
    with_frontier: bool,
    report: Any = None,
    in_place: bool = False,
) -> tuple[Any, Any]:
    """The planning stage's choice of patch stages: with ``ram_budget``, the fastest
    schedule whose fixed-order peak fits it (a one-line error naming the smallest
    reachable when none does); with ``in_place`` alone, whole operators with the
    in-place convolutions that reach the lowest RAM; ``with_frontier`` alone records
    the frontier and keeps whole operators. Returns the lowered model with the chosen
    schedule in place and the manifest's ScheduleInfo (None when none was asked)."""
    from aot.artifacts.schedule import FrontierPoint, InPlaceInfo, ScheduleInfo, StageInfo

    if ram_budget is None and not with_frontier and not in_place:
        return lowered, None
    found = schedules(lowered, io_in_pool)
    whole = found[0]
    if ram_budget is not None:
        chosen = choose(found, ram_budget)
    elif in_place:
        unstaged = [s for s in found if not s.stages]
        chosen = min(unstaged, key=lambda s: (s.ram_bytes, s.extra_instructions))
    else:
        chosen = whole
    if report is not None:
        if ram_budget is None and chosen is whole:
            report(f"{len(frontier(found))} schedules on the RAM/instructions frontier")
        elif ram_budget is None:
            report(
                f"in place: {chosen.label}, RAM {chosen.ram_bytes} B (whole "
                f"operators {whole.ram_bytes} B)"
            )
        else:
            extra = chosen.extra_instructions
            report(
                f"schedule for --ram-budget {ram_budget} B: {chosen.label}, RAM "
                f"{chosen.ram_bytes} B (whole operators {whole.ram_bytes} B), about "
                f"{extra:,} more instructions"
            )
    staged = apply(lowered, chosen, io_in_pool)
    stage_infos = []
    chain = chain_at_start(lowered)
    for stage in chosen.stages:
        windows = [w for _, w in chain[stage.start : stage.stop]]
        plan = plan_patches(windows, stage.grid)
        symbol = f"{chain[stage.start][0].kernel}_stage"
        artifact = next(a for a in staged.artifacts if a.symbol == symbol)
        stage_infos.append(
            StageInfo(
                first=stage.start,
                grid=stage.grid,
                symbol=symbol,
                windows=tuple(_window_info(w) for w in windows),
                scratch_bytes=artifact.scratch_bytes,
                macs=plan.macs,
                untiled_macs=plan.untiled_macs,
            )
        )
    in_place_infos = [
        InPlaceInfo(
            label=choice.label,
            window=_window_info(choice.window),
            bands=choice.bands,
            shift_bytes=choice.shift,
            reverse=choice.reverse,
        )
        for choice in chosen.in_place
    ]
    info = ScheduleInfo(
        label=chosen.label,
        ram_budget=ram_budget,
        io_in_pool=io_in_pool,
        ram_bytes=chosen.ram_bytes,
        whole_ram_bytes=whole.ram_bytes,
        extra_instructions=chosen.extra_instructions,
        stages=tuple(stage_infos),
        in_place=tuple(in_place_infos),
        frontier=tuple(
            FrontierPoint(
                label=s.label,
                ram_bytes=s.ram_bytes,
                extra_instructions=s.extra_instructions,
                extra_macs=s.extra_macs,
            )
            for s in _with_chosen(frontier(found), chosen)
        ),
    )
    return staged, info
