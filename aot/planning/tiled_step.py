"""The steps below the fixed-order bound are made of: a kernel step's window (the geometry
its prepared params hold) and the step that calls kernels over parts of their output,
each call the operator's own prepared kernel with another geometry. A patch stage
(aot/planning/patch_stage.py) calls a chain tile by tile; a convolution in place
(aot/planning/in_place_rows.py) calls one operator band by band, its rows written straight
into the output (``direct_output``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from aot.planning.patches import CONV, DEPTHWISE, PatchPlan, Window

KERNELS_BACKEND = "kernels"


def step_window(step: Any, artifact: Any) -> Window | None:
    """A kernel step's window, from the fields of its kernel's C params struct."""
    payload = artifact.payload
    prepared = getattr(payload, "prepared", None)
    fields = getattr(prepared, "params", None)
    if step.backend != KERNELS_BACKEND or not fields or "pad_top" not in fields:
        return None
    if fields.get("batches") != 1:
        return None
    kind = DEPTHWISE if "depthwise" in payload.variant.kind else CONV

    def pair(first: str, second: str) -> tuple[int, int]:
        return int(fields[first]), int(fields[second])

    return Window(
        kind,
        pair("in_h", "in_w"),
        pair("out_h", "out_w"),
        int(fields["in_c"]),
        int(fields["out_c"]),
        pair("k_h", "k_w"),
        pair("stride_h", "stride_w"),
        pair("dil_h", "dil_w"),
        int(fields["pad_top"]),
        int(fields["pad_left"]),
        step.label,
    )


def _runtime_of(artifacts: Sequence[Any]) -> Any:
    """Every source and header the chain's kernels need, each once."""
    from aot.backends.base import RuntimeFiles

    sources: dict[Any, None] = {}
    headers: dict[Any, None] = {}
    include_dirs: dict[Any, None] = {}
    defines: dict[str, str] = {}
    for files in (a.runtime for a in artifacts if a.runtime is not None):
        sources.update(dict.fromkeys(files.sources))
        headers.update(dict.fromkeys(files.headers))
        include_dirs.update(dict.fromkeys(files.include_dirs))
        defines.update(files.defines)
    return RuntimeFiles(tuple(sources), tuple(headers), tuple(include_dirs), defines)


def with_stage(
    lowered: Any,
    chain: Sequence[tuple[Any, Window]],
    plan: PatchPlan,
    symbol: str | None = None,
    direct_output: bool = False,
) -> Any:
    """The lowered model with ``chain``'s steps replaced by one patch-stage step, at the
    position of the chain's last step, its artifact named ``symbol`` (default: the first
    kernel's with ``_stage``); ``direct_output``: ``PatchStage.direct_output``."""
    from aot.backends.base import Artifact
    from aot.kernels.patches import (
        ACTIVATION,
        RESULT,
        PatchStage,
        TileCopy,
        TileKernelCall,
        align,
    )

    steps = [step for step, _ in chain]
    by_symbol = {a.symbol: a for a in lowered.artifacts}
    artifacts = [by_symbol[step.kernel] for step in steps]
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
            input_offset = 0
            if position == 0 and call.window.kernel == (1, 1) and plan.grid[1] == 1:
                # A 1x1 kernel may read its input as a matrix of pixels (conv_dsp.c's
                # direct path): give it the rows it reads, whole rows from their start.
                pad_top, pad_left = call.local_pad
                in_h, in_w = call.reads.rows.size, call.reads.cols.size
                input_offset = (
                    call.reads.rows.start
                    * call.window.in_hw[1]
                    * (call.window.in_channels * call.window.element_bytes)
                )
            elif position == 0:
                pad_top, pad_left = call.pad_over_whole_input
                in_h, in_w = call.window.in_hw
            else:
                pad_top, pad_left = call.local_pad
                in_h, in_w = call.reads.rows.size, call.reads.cols.size
            geometry = {
                "in_h": in_h, "in_w": in_w, "out_h": out_rows, "out_w": out_cols,
                "pad_top": pad_top, "pad_left": pad_left,
            }  # fmt: skip
            calls.append(TileKernelCall(position, geometry, input_offset))
        out = tile.output
        element = last.out_channels * last.element_bytes
        copy = TileCopy(
            out.rows.size,
            out.cols.size * element,
            out.rows.start * row_bytes_out + out.cols.start * element,
            row_bytes_out,
        )
        tiles.append((tuple(calls), copy))
    final = len(plan.tile_buffers) - 1  # with direct_output, written in the stage output
    buffers = tuple(
        0 if direct_output and k == final else align(b) for k, b in enumerate(plan.tile_buffers)
    )
    stage = PatchStage(
        tuple(artifacts), tuple(arguments), buffers, tuple(tiles), plan.grid, direct_output
    )
    symbol = symbol or f"{steps[0].kernel}_stage"
    artifact = Artifact(
        symbol,
        payload=stage,
        scratch_bytes=stage.scratch_bytes,
        runtime=_runtime_of(artifacts),
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
    # Kernels the chain's steps shared with other steps stay for those.
    removed = {s.kernel for s in steps} - {s.kernel for s in new_steps}
    return replace(
        lowered,
        steps=new_steps,
        artifacts=(*(a for a in lowered.artifacts if a.symbol not in removed), artifact),
    )
