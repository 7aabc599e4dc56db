"""Patch stages on a lowered model: where one can start and end, what each schedule costs,
and the model with the chosen one in place of its operators.

A patch stage (aot/planning/patches.py for the arithmetic, aot/kernels/patches.py for its
C) replaces the first convolutions of the model, read one after the other through tensors
nobody else reads, by one step that runs them tile by tile. Only kernel-backend steps take
part: their params hold the geometry a tile changes. The first operator must have a window
wider than 1x1 (a 1x1 without padding reads its input rows in place, which a tile reading
the whole input cannot). ``Schedule`` is one choice (where the stage ends, the grid) with
its RAM (the fixed-order peak of the whole model, inputs and outputs counted when they sit
in the pool) and an estimate of the instructions it adds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from aot.errors import ConfigError
from aot.planning.patches import CONV, DEPTHWISE, PatchPlan, Window, grids, plan_patches

# The search's estimate of what a schedule adds to an inference, in instructions: each
# multiply-accumulate the tiles recompute, and each kernel call more (its loops' set-up
# and a small tile's border pixels and left-over passes). Calibrated on vww_96_int8 on
# mps2_an386, whose first convolutions take about 3 instructions per multiply-accumulate;
# what it decides is the order of the schedules, not their absolute counts
# (docs/memory_planning.md, "Below the fixed-order bound").
INSTRUCTIONS_PER_MAC = 3
INSTRUCTIONS_PER_CALL = 2400
MOST_TILES_PER_AXIS = 8
KERNELS_BACKEND = "kernels"


@dataclass(frozen=True)
class Schedule:
    """A patch stage over the first ``length`` operators of the chain, on ``grid``, or no
    stage (``length`` 0): the RAM it needs, the multiply-accumulates of the whole model and
    how many of them and how many kernel calls it adds to whole operators."""

    length: int
    grid: tuple[int, int]
    ram_bytes: int
    macs: int
    extra_macs: int = 0
    extra_calls: int = 0

    @property
    def extra_instructions(self) -> int:
        """Estimated instructions it adds to an inference run as whole operators."""
        return self.extra_macs * INSTRUCTIONS_PER_MAC + self.extra_calls * INSTRUCTIONS_PER_CALL

    @property
    def label(self) -> str:
        if not self.length:
            return "whole operators"
        return f"first {self.length} operators in {self.grid[0]}x{self.grid[1]} tiles"


def _window(step: Any, artifact: Any) -> Window | None:
    payload = artifact.payload
    prepared = getattr(payload, "prepared", None)
    params = getattr(prepared, "params", None)
    if step.backend != KERNELS_BACKEND or not params or "pad_top" not in params:
        return None
    if params.get("batches") != 1:
        return None
    kind = DEPTHWISE if "depthwise" in payload.variant.kind else CONV
    return Window(
        kind,
        (params["in_h"], params["in_w"]),
        (params["out_h"], params["out_w"]),
        params["in_c"],
        params["out_c"],
        (params["k_h"], params["k_w"]),
        (params["stride_h"], params["stride_w"]),
        (params["dil_h"], params["dil_w"]),
        params["pad_top"],
        params["pad_left"],
        step.label,
    )


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
    chain: list[tuple[Any, Window]] = []
    current = inputs[0]
    while True:
        steps = readers.get(current, [])
        activation = [s for s in steps if s.args and s.args[0] == current]
        if len(activation) != 1 or (chain and len(steps) != 1):
            break
        step = activation[0]
        window = _window(step, lowered.artifact(step.kernel))
        if window is None or len(step.outputs) != 1:
            break
        if not chain and window.kernel == (1, 1):
            break  # see the module docstring
        chain.append((step, window))
        current = step.outputs[0]
        if lowered.tensors[current].kind != INTERMEDIATE:
            break
    return chain


def _peak(lowered: Any, io_in_pool: bool) -> int:
    """The fixed-order peak (as aot.planning.liveness counts): intermediates from their
    first writer to their last reader, each step's scratch while it runs, and when in the
    pool inputs from the start to their last reader, outputs from their writer to the end."""
    from aot.lowering import INPUT, INTERMEDIATE, OUTPUT

    steps = lowered.steps
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for k, step in enumerate(steps):
        for t in step.writes:
            first.setdefault(t, k)
        for t in step.args:
            last[t] = k
    end = len(steps) - 1
    live = [step.scratch_bytes for step in steps]
    for tensor in lowered.tensors:
        if tensor.kind == INTERMEDIATE and tensor.id in first:
            span = range(first[tensor.id], last.get(tensor.id, first[tensor.id]) + 1)
        elif io_in_pool and tensor.kind == INPUT and tensor.id in last:
            span = range(0, last[tensor.id] + 1)
        elif io_in_pool and tensor.kind == OUTPUT and tensor.id in first:
            span = range(first[tensor.id], end + 1)
        else:
            continue
        for k in span:
            live[k] += tensor.size_bytes
    return max(live, default=0)


def with_stage(lowered: Any, chain: Sequence[tuple[Any, Window]], plan: PatchPlan) -> Any:
    """The lowered model with ``chain``'s steps replaced by one patch-stage step, at the
    position of the chain's last step."""
    from aot.backends.base import Artifact
    from aot.kernels.patches import (
        ACTIVATION,
        RESULT,
        PatchStage,
        TileCopy,
        TileKernelCall,
        align,
        runtime_of,
    )

    steps = [step for step, _ in chain]
    artifacts = [lowered.artifact(step.kernel) for step in steps]
    stage_input, stage_output = steps[0].args[0], steps[-1].outputs[0]
    args: list[int] = [stage_input, stage_output]
    arguments = []
    for position, step in enumerate(steps):
        activation = stage_input if position == 0 else steps[position - 1].outputs[0]
        slots = []
        for t in step.args:
            if t == activation:
                slots.append(ACTIVATION)
            elif t in step.outputs:
                slots.append(RESULT)
            else:
                slots.append(len(args))
                args.append(t)
        arguments.append(tuple(slots))
    last = plan.chain[-1]
    row_bytes_out = last.out_hw[1] * last.out_channels * last.element_bytes
    tiles = []
    for tile in plan.tiles:
        calls = []
        for position, call in enumerate(tile.calls):
            out_rows, out_cols = call.computes.rows.size, call.computes.cols.size
            if position == 0:
                pad_top, pad_left = call.pad_over_whole_input
                in_h, in_w = call.window.in_hw
            else:
                pad_top, pad_left = call.local_pad
                in_h, in_w = call.reads.rows.size, call.reads.cols.size
            geometry = {
                "in_h": in_h, "in_w": in_w, "out_h": out_rows, "out_w": out_cols,
                "pad_top": pad_top, "pad_left": pad_left,
            }  # fmt: skip
            calls.append(TileKernelCall(position, geometry, position == 0))
        out = tile.output
        element = last.out_channels * last.element_bytes
        copy = TileCopy(
            out.rows.size,
            out.cols.size * element,
            out.rows.start * row_bytes_out + out.cols.start * element,
            row_bytes_out,
        )
        tiles.append((tuple(calls), copy))
    stage = PatchStage(
        tuple(artifacts),
        tuple(arguments),
        tuple(align(b) for b in plan.tile_buffers),
        tuple(tiles),
        plan.grid,
    )
    symbol = f"{steps[0].kernel}_stage"
    artifact = Artifact(
        symbol,
        payload=stage,
        scratch_bytes=stage.scratch_bytes,
        runtime=runtime_of(artifacts),
    )
    stage_step = replace(
        steps[-1],
        kernel=symbol,
        operator=" + ".join(s.operator for s in steps),
        args=tuple(args),
        outputs=(stage_output,),
        scratch_bytes=stage.scratch_bytes,
        elementwise=False,
        source=tuple(op for s in steps for op in s.source),
        macs=plan.macs,
        arg_targets=(),
        scratch_targets=(),
    )
    chain_ids = {id(s) for s in steps}
    kept = [s for s in lowered.steps if id(s) not in chain_ids or s is steps[-1]]
    new_steps = tuple(
        replace(stage_step if s is steps[-1] else s, index=i) for i, s in enumerate(kept)
    )
    removed = {s.kernel for s in steps}
    return replace(
        lowered,
        steps=new_steps,
        artifacts=(*(a for a in lowered.artifacts if a.symbol not in removed), artifact),
    )


def schedules(lowered: Any, io_in_pool: bool = True) -> list[Schedule]:
    """Every schedule the model's first operators allow: none, then each stage end and
    grid, each with the model's fixed-order peak and what it adds."""
    chain = chain_at_start(lowered)
    whole_macs = sum(step.macs for step in lowered.steps)
    found = [Schedule(0, (1, 1), _peak(lowered, io_in_pool), whole_macs)]
    for length in range(1, len(chain) + 1):
        part = chain[:length]
        windows = [w for _, w in part]
        for grid in grids(windows[-1].out_hw, MOST_TILES_PER_AXIS):
            if grid == (1, 1):
                continue
            plan = plan_patches(windows, grid)
            staged = with_stage(lowered, part, plan)
            extra = plan.macs - plan.untiled_macs
            # Each tile calls every operator once and copies its output.
            calls = grid[0] * grid[1] * (length + 1) - length
            found.append(
                Schedule(length, grid, _peak(staged, io_in_pool), whole_macs + extra, extra, calls)
            )
    return found


def frontier(found: Sequence[Schedule]) -> list[Schedule]:
    """The schedules no other beats on both RAM and added instructions, by RAM, largest
    first."""
    best: list[Schedule] = []
    for schedule in sorted(found, key=lambda s: (s.extra_instructions, s.ram_bytes)):
        if not best or schedule.ram_bytes < best[-1].ram_bytes:
            best.append(schedule)
    return best


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


def apply(lowered: Any, schedule: Schedule) -> Any:
    """The lowered model with ``schedule``'s stage in place (unchanged for none)."""
    if not schedule.length:
        return lowered
    part = chain_at_start(lowered)[: schedule.length]
    return with_stage(lowered, part, plan_patches([w for _, w in part], schedule.grid))
