"""What 'aot inspect' shows of a build's schedule (metadata.json ``schedule``, written by
aot build --ram-budget, --in-place or --frontier): the schedule it runs, the
frontier of RAM against instructions it was chosen from, and a picture of the tiles."""

from __future__ import annotations

from aot.artifacts.schedule import ScheduleInfo

TILES_SVG = "tiles.svg"
IN_PLACE_SVG = "in_place.svg"
# In-place steps drawn: those with the most bytes, where in place matters most.
MOST_IN_PLACE_PICTURES = 3


def format_schedule(info: ScheduleInfo) -> str:
    """The schedule and the frontier as text lines."""
    counted = "inputs and outputs in the pool" if info.io_in_pool else "inputs and outputs apart"
    budget = f" for --ram-budget {info.ram_budget} B" if info.ram_budget is not None else ""
    lines = [
        "",
        f"schedule{budget}: {info.label}",
        f"  RAM {info.ram_bytes} B ({counted}); whole operators {info.whole_ram_bytes} B; "
        f"about {info.extra_instructions:,} more instructions (estimated)",
    ]
    for stage in info.stages:
        first, last = stage.windows[0], stage.windows[-1]
        lines.append(
            f"  stage {stage.first}-{stage.first + len(stage.windows) - 1}: "
            f"{stage.grid[0]}x{stage.grid[1]} tiles of {last.out_hw[0]}x{last.out_hw[1]}, "
            f"from {first.label} to {last.label}; scratch {stage.scratch_bytes} B; "
            f"{stage.macs / stage.untiled_macs:.2f}x its multiply-accumulates"
        )
    for step in info.in_place:
        window = step.window
        if step.bands:
            rows = -(-window.out_hw[0] // step.bands)
            how = f"{step.bands} bands of up to {rows} row{'s' if rows > 1 else ''}"
        else:
            how = "its generated kernel, one call"
        if step.reverse:
            how += " from the last"
        where = "after" if step.reverse else "before"
        lines.append(
            f"  in place: {step.label} ({window.out_hw[0]}x{window.out_hw[1]}x"
            f"{window.out_channels}), {how}; its output starts {step.shift_bytes} B {where} "
            "its input in one buffer"
        )
    if info.frontier:
        lines += [
            "",
            "RAM against instructions (schedules no other beats on both; estimated):",
            f"  {'RAM':>9}  {'vs whole':>8}  {'+instructions':>13}  {'+MACs':>9}  schedule",
        ]
        for point in info.frontier:
            share = point.ram_bytes / info.whole_ram_bytes if info.whole_ram_bytes else 1.0
            mark = "*" if point.label == info.label else " "
            lines.append(
                f"{mark} {point.ram_bytes:>9}  {share:>8.2f}  {point.extra_instructions:>13,}  "
                f"{point.extra_macs:>9,}  {point.label}"
            )
        lines.append("  (* the one this build runs; choose with aot build --ram-budget SIZE)")
    return "\n".join(lines) + "\n"


def tiles_picture(info: ScheduleInfo, model: str) -> str | None:
    """The SVG of the build's stages, or None when it runs whole operators."""
    if not info.stages:
        return None
    from aot.planning.patch_stage import window_of
    from aot.planning.patches import plan_patches
    from aot.planning.render_tiles import render_stages

    plans = []
    for stage in info.stages:
        windows = [window_of(w) for w in stage.windows]
        plan = plan_patches(windows, (stage.grid[0], stage.grid[1]))
        last = stage.first + len(windows) - 1
        plans.append((plan, f"{model}: operators {stage.first}-{last} in "
                            f"{stage.grid[0]}x{stage.grid[1]} tiles"))  # fmt: skip
    return render_stages(plans)


def in_place_picture(info: ScheduleInfo, model: str) -> str | None:
    """The SVG of the build's in-place convolutions (the largest few), or None."""
    if not info.in_place:
        return None
    from aot.planning.patch_stage import window_of
    from aot.planning.render_in_place import render_in_place
    from aot.planning.render_tiles import stack

    def size(step: object) -> int:
        window = window_of(step.window)  # type: ignore[attr-defined]
        return window.whole_input_bytes + window.whole_output_bytes

    largest = sorted(info.in_place, key=size, reverse=True)[:MOST_IN_PLACE_PICTURES]
    pictures = []
    for step in sorted(largest, key=lambda s: info.in_place.index(s)):
        window = window_of(step.window)
        bands = step.bands or window.out_hw[0]  # a generated kernel goes row by row
        how = f"{step.bands} bands" if step.bands else "its generated kernel, row by row"
        title = f"{model}: {step.label} in place ({how})"
        pictures.append(render_in_place(window, bands, step.shift_bytes, step.reverse, title))
    return stack(pictures)
