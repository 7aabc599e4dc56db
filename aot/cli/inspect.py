"""``aot inspect``: show the memory plan of a build folder, as text, JSON and an SVG picture.

Reads only DIR/metadata.json (never the generated C), rebuilds the planner's objects
(Buffer, Pool, Placement, MemoryPlan) from its manifest's memory and draws them with
aot.planning.render.render_svg.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aot.artifacts import LibraryManifest
from aot.cli.common import add_json_option
from aot.cli.schedules import (
    IN_PLACE_SVG,
    TILES_SVG,
    format_schedule,
    in_place_picture,
    tiles_picture,
)
from aot.errors import ConfigError
from aot.planning.loaded import LoadedPlan, load_plan, picture, short_tensor_name

HELP = "show the memory plan of a build folder: pools, buffers, peak, SVG picture"

DESCRIPTION = """\
Show how the workspace of a model built by 'aot build' is laid out: every pool, every
buffer in it and when it is live, the operator where memory peaks, and a picture.

examples:
  aot inspect out/                     print the plan, write out/memory.svg
  aot inspect out/ --svg plan.svg      write the picture elsewhere
  aot inspect out/ --json --no-svg     machine-readable report, no picture

How to read it:
  step        the position of an operator in execution order (0, 1, ...); a buffer's
              lifetime 'steps 3-5' means it is written at step 3 and last read at step 5,
              listed with the operators of those steps.
  used        bytes of the pool the plan needs (its static array in the executor).
  lower bound the most bytes live at one step. No plan for this operator order can use
              less, so used / lower bound shows what packing (fragmentation, alignment)
              costs; 1.00 is perfect.
  utilisation used / the pool's size limit (unbounded pools have none).
  peak        the first step where the live bytes reach the lower bound and the
              buffers live there: the place to look to make the model smaller.

The picture has one panel per pool: steps go across, offsets go up, each buffer is a
box (hover for its name, size, offset and steps), the grey line is the bytes live per
step and the dashed red line the lower bound. It reads only DIR/metadata.json.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("folder", metavar="DIR", help="a folder made by 'aot build'")
    picture = parser.add_mutually_exclusive_group()
    picture.add_argument(
        "--svg", metavar="PATH", help="where to write the picture (default: DIR/memory.svg)"
    )
    picture.add_argument("--no-svg", action="store_true", help="do not write a picture")
    add_json_option(parser)
    parser.set_defaults(func=run)


def _ratio(numerator: int, denominator: int | None) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def describe(loaded: LoadedPlan, manifest: LibraryManifest) -> dict[str, Any]:
    """The report as JSON-ready data: pools with their buffers, the peak, the totals."""
    from aot.planning import activation_lower_bound, live_bytes_per_step, peak_step

    plan, buffers = loaded.plan, loaded.buffers
    by_name = {b.name: b for b in buffers}
    pools = []
    for pool in loaded.pools:
        inside = [(by_name[p.buffer], p.offset) for p in plan.placements if p.pool == pool.name]
        # Time order, then address: how the executor meets them.
        inside.sort(key=lambda item: (item[0].start, item[1], item[0].name))
        used = plan.pool_sizes.get(pool.name, 0)
        bound = activation_lower_bound([b for b, _ in inside])
        pools.append(
            {
                "name": pool.name,
                # persistent: operator state kept between runs (docs/memory_planning.md).
                "kind": "persistent" if pool.name in plan.persistent else "workspace",
                "size_limit": pool.size,
                "targets": loaded.targets.get(pool.name, ["cpu"]),
                "used_bytes": used,
                "lower_bound_bytes": bound,
                # What must sit here whatever the plan (its only reachable pool).
                "forced_lower_bound_bytes": plan.pool_lower_bounds.get(pool.name),
                "utilisation": _ratio(used, pool.size),
                "ratio_to_lower_bound": _ratio(used, bound),
                "buffers": [
                    {
                        "name": b.name,
                        "tensor": loaded.holds.get(b.name, (None, None))[0],
                        "source_operator": loaded.holds.get(b.name, (None, None))[1],
                        "size": b.size,
                        "offset": offset,
                        "end_offset": offset + b.size,
                        "start": b.start,
                        "end": b.end,
                        "operators": list(loaded.step_names[b.start : b.end + 1]),
                        "targets": list(b.targets),
                        "touched_by": [
                            {"step": t, "target": target, "operator": loaded.step_names[t]}
                            for t, target in b.users
                        ],
                    }
                    for b, offset in inside
                ],
            }
        )
    peak: dict[str, Any] | None = None
    # State is live all the time in its own pool: the peak is the workspace's.
    state = {p.buffer for p in plan.placements if p.pool in plan.persistent}
    buffers = tuple(b for b in buffers if b.name not in state)
    if buffers:
        step = peak_step(buffers)
        live = sorted(
            (b for b in buffers if b.start <= step <= b.end), key=lambda b: (-b.size, b.name)
        )
        peak = {
            "step": step,
            "operator": loaded.step_names[step],
            "live_bytes": live_bytes_per_step(buffers)[step],
            "buffers": [
                {
                    "name": b.name,
                    "tensor": loaded.holds.get(b.name, (None, None))[0],
                    "size": b.size,
                }
                for b in live
            ],
        }
    runs_on: dict[str, int] = {}
    for target in loaded.step_targets:
        runs_on[target] = runs_on.get(target, 0) + 1
    return {
        "model": manifest.model.name,
        "source": manifest.model.source,
        "planner": plan.algorithm,
        "operators": len(manifest.operators),
        "buffers": len(loaded.buffers),
        "workspace_bytes": plan.workspace_size,
        "persistent_bytes": plan.total_size - plan.workspace_size,
        "lower_bound_bytes": plan.lower_bound,
        "ratio_to_lower_bound": _ratio(plan.workspace_size, plan.lower_bound),
        "peak": peak,
        "operators_by_target": runs_on,
        # Which kernel ran each operator (a hand-written one's C function, or "tvm").
        "operator_kernels": [
            {"index": op.index, "label": op.label, "implementation": op.implementation}
            for op in manifest.operators
        ],
        "copies": [copy.to_json() for copy in manifest.memory.copies],
        "pools": pools,
    }


def _steps(start: int, end: int) -> str:
    return str(start) if start == end else f"{start}-{end}"


def _operators(names: Sequence[str]) -> str:
    if len(names) <= 2:
        return " -> ".join(names)
    return f"{names[0]} -> ... -> {names[-1]} ({len(names)} steps)"


def _touched(users: Sequence[dict[str, Any]]) -> str:
    """``cpu 0,3 npu 1``: the steps that touch a buffer, grouped by target."""
    by_target: dict[str, list[str]] = {}
    for u in users:
        by_target.setdefault(u["target"], []).append(str(u["step"]))
    return " ".join(f"{t} {','.join(steps)}" for t, steps in by_target.items())


def format_text(report: dict[str, Any]) -> str:
    """The report for people: a summary, then a table of buffers per pool."""
    ratio = report["ratio_to_lower_bound"]
    lines = [
        f"model {report['model']}: {report['operators']} operators, {report['buffers']} "
        f"buffers, planner {report['planner']}",
        f"workspace {report['workspace_bytes']} B in "
        f"{sum(p['kind'] == 'workspace' for p in report['pools'])} pool(s), lower "
        f"bound {report['lower_bound_bytes']} B"
        + (f" (used / bound {ratio:.3f})" if ratio is not None else ""),
    ]
    if report["persistent_bytes"]:
        lines.append(
            f"state {report['persistent_bytes']} B kept between runs in the persistent pool "
            "(aot_<name>_reset() restores it)"
        )
    if report["operators_by_target"]:
        lines.append(
            "runs on: " + ", ".join(f"{n} on {t}" for t, n in report["operators_by_target"].items())
        )
    kernels = [k for k in report.get("operator_kernels", []) if k["implementation"]]
    if any(k["implementation"] != "tvm" for k in kernels):
        lines.append("kernels (docs/kernels.md):")
        lines += [f"  step {k['index']} {k['label']}: {k['implementation']}" for k in kernels]
    peak = report["peak"]
    if peak is not None:
        shown = ", ".join(
            f"{short_tensor_name(b.get('tensor')) or b['name']} ({b['size']} B)"
            for b in peak["buffers"][:4]
        )
        more = f" and {len(peak['buffers']) - 4} more" if len(peak["buffers"]) > 4 else ""
        lines.append(
            f"peak at step {peak['step']} ({peak['operator']}): {peak['live_bytes']} B live in "
            f"{shown}{more}"
        )
    for pool in report["pools"]:
        limit = "unbounded" if pool["size_limit"] is None else f"limit {pool['size_limit']} B"
        if pool["kind"] == "persistent":
            limit = "persistent, kept between runs"
        fill = pool["utilisation"]
        bound_ratio = pool["ratio_to_lower_bound"]
        lines += [
            "",
            f"pool {pool['name']} ({limit}, targets {','.join(pool['targets'])}): "
            f"used {pool['used_bytes']} B"
            + (f" ({fill:.1%} of limit)" if fill is not None else "")
            + f", lower bound {pool['lower_bound_bytes']} B"
            + (f" (used / bound {bound_ratio:.3f})" if bound_ratio is not None else ""),
        ]
        if not pool["buffers"]:
            lines.append("  (no buffers)")
            continue
        rows = [("buffer", "size", "offset", "end", "steps", "touched by", "operators")]
        rows += [
            (
                short_tensor_name(b["tensor"]) or b["name"],
                str(b["size"]),
                str(b["offset"]),
                str(b["end_offset"]),
                _steps(b["start"], b["end"]),
                _touched(b["touched_by"]) or ",".join(b["targets"]),
                _operators(b["operators"]),
            )
            for b in pool["buffers"]
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(6)]
        for row in rows:
            cells = [row[0].ljust(widths[0])]
            cells += [row[i].rjust(widths[i]) for i in (1, 2, 3)]
            cells += [row[4].ljust(widths[4]), row[5].ljust(widths[5]), row[6]]
            lines.append("  " + "  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from aot.artifacts import METADATA_FILE, read_manifest

    folder = Path(args.folder)
    manifest = read_manifest(folder)  # ConfigError when DIR is not a build folder
    loaded = load_plan(manifest, str(folder / METADATA_FILE))
    report = describe(loaded, manifest)
    svg_path = None
    if not args.no_svg:
        svg_path = Path(args.svg) if args.svg else folder / "memory.svg"
        svg = picture(loaded)
        try:
            svg_path.write_text(svg)
        except OSError as err:
            raise ConfigError(
                f"cannot write the picture to {svg_path}: {err.strerror}; "
                "choose another path with --svg PATH or skip it with --no-svg"
            ) from None
    report["svg"] = None if svg_path is None else str(svg_path)
    tiles_path = _write_schedule_picture(manifest, folder, args.no_svg, TILES_SVG)
    in_place_path = _write_schedule_picture(manifest, folder, args.no_svg, IN_PLACE_SVG)
    if manifest.schedule is not None:
        report["schedule"] = manifest.schedule.to_json()
        report["tiles_svg"] = None if tiles_path is None else str(tiles_path)
        report["in_place_svg"] = None if in_place_path is None else str(in_place_path)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        sys.stdout.write(format_text(report))
        if manifest.schedule is not None:
            sys.stdout.write(format_schedule(manifest.schedule))
        if svg_path is not None:
            print(f"\npicture: {svg_path}")
        if tiles_path is not None:
            print(f"tiles: {tiles_path}")
        if in_place_path is not None:
            print(f"in place: {in_place_path}")
    return 0


def _write_schedule_picture(
    manifest: LibraryManifest, folder: Path, no_svg: bool, name: str
) -> Path | None:
    """DIR/tiles.svg for a build with patch stages, DIR/in_place.svg for one with
    convolutions in place (``name`` says which)."""
    if no_svg or manifest.schedule is None:
        return None
    draw = tiles_picture if name == TILES_SVG else in_place_picture
    svg = draw(manifest.schedule, manifest.name)
    if svg is None:
        return None
    path = folder / name
    try:
        path.write_text(svg)
    except OSError as err:
        raise ConfigError(
            f"cannot write the picture {path}: {err.strerror}; skip it with --no-svg"
        ) from None
    return path
