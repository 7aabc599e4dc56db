"""The bench stage: run a built model N times and report time per inference, the
per-operator profile (from a ``--profile`` build), stack, workspace and code size.

``bench_folder`` is the seam other commands call (``aot bench``, the board farm); its
``connect`` argument opens the device, so a remote board is just another ``connect``.
A :class:`BenchReport` round-trips through JSON (``to_json`` / ``from_json``).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from aot.artifacts import LibraryManifest
from aot.device.client import DeviceClient, check_repeats, check_timeout
from aot.errors import ConfigError, DeviceError

BENCH_FORMAT = 1  # BenchReport JSON layout version; bump on an incompatible change
# How far the per-operator sum may differ from the whole inference (issue 12: 2 %).
PROFILE_TOLERANCE = 0.02

# connect(folder, manifest, board, timeout) -> a context manager yielding a client whose
# session has not started (bench calls hello()). The default starts the host build or
# QEMU, or flashes a board (aot.runner.connect).
Connect = Callable[
    [Path, dict[str, Any], Any, float], contextlib.AbstractContextManager[DeviceClient]
]


@dataclass(frozen=True)
class OperatorProfile:
    """One executor step: what it computes in the source model's words and its time."""

    step: int
    kernel: str
    label: str  # e.g. "CONV_2D #3" (the source operators), else the fused function
    source_operators: list[dict[str, Any]]  # [{"index": 3, "type": "CONV_2D", ...}]
    time: int  # in the report's time_unit, from the last repeat
    share: float  # of the per-operator sum, 0..1
    macs: int  # multiply-accumulates, from metadata.json (0: none or unknown)
    # One tick is at most 1% of the time (aot.timing.resolved); else the figure is noise.
    resolved: bool = True

    @property
    def time_per_mac(self) -> float | None:
        return self.time / self.macs if self.macs else None


@dataclass(frozen=True)
class BenchReport:
    model: str
    board: str
    time_unit: str  # "instructions" (QEMU -icount), "cycles" (hardware) or "ns" (host)
    units_per_tick: int
    ticks_per_second: int
    repeats: int
    times: list[int]  # one inference per repeat, in time_unit
    profile: bool  # the firmware recorded per-step ticks (aot build --profile)
    operators: list[OperatorProfile] = field(default_factory=list)
    profiles_identical: bool | None = None  # every repeat gave the same per-step figures
    outputs_identical: bool = True  # every repeat gave the same output bytes
    outputs_sha256: str = ""  # of all output bytes of the last repeat, in order
    peak_stack_bytes: int | None = None
    model_stack_bytes: int | None = None
    workspace_bytes: int = 0
    pools: dict[str, int] = field(default_factory=dict)  # pool name -> bytes used
    constants_bytes: int = 0
    sections: dict[str, int] = field(default_factory=dict)  # text, rodata, data, bss
    outputs: list[np.ndarray] = field(default_factory=list, compare=False, repr=False)
    server: str | None = None  # the board server that ran it (a farm result)
    clock: str = ""  # what the port timed with (aot.timing.describe_clock)
    clock_resolution: str = ""  # one tick: "40 instructions", "1 cycle", "30.5 us"

    @property
    def time_min(self) -> int:
        return min(self.times)

    @property
    def time_max(self) -> int:
        return max(self.times)

    @property
    def time_median(self) -> float:
        return float(statistics.median(self.times))

    @property
    def operators_total(self) -> int:
        return sum(op.time for op in self.operators)

    @property
    def profile_error(self) -> float | None:
        """|per-operator sum - whole| / whole, for the last repeat (None: no profile)."""
        if not self.operators or not self.times[-1]:
            return None
        return abs(self.operators_total - self.times[-1]) / self.times[-1]

    @property
    def total_macs(self) -> int:
        return sum(op.macs for op in self.operators)

    def to_json(self) -> dict[str, Any]:
        from aot.reports import report_identity

        data = asdict(self)
        data.pop("outputs")
        server = data.pop("server")
        data = {**report_identity(self.model, self.board, server), **data}
        data["format"] = BENCH_FORMAT
        data["time_min"] = self.time_min
        data["time_median"] = self.time_median
        data["time_max"] = self.time_max
        data["operators_total"] = self.operators_total
        data["profile_error"] = self.profile_error
        for op, entry in zip(self.operators, data["operators"], strict=True):
            entry["time_per_mac"] = op.time_per_mac
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BenchReport:
        if data.get("format") != BENCH_FORMAT:
            raise ConfigError(
                f"bench report format {data.get('format')!r} is not {BENCH_FORMAT}; "
                "rerun 'aot bench' with this aot"
            )
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["operators"] = [
            OperatorProfile(
                **{k: v for k, v in op.items() if k in OperatorProfile.__dataclass_fields__}
            )
            for op in data.get("operators", [])
        ]
        return cls(**fields)


def bench_folder(
    folder: str | Path,
    repeats: int = 10,
    timeout: float = 120.0,
    connect: Connect | None = None,
    inputs: Sequence[np.ndarray] | None = None,
) -> BenchReport:
    """Runs the model in ``folder`` (made by ``aot build``) ``repeats`` times.

    ``inputs``: one array per model input; default all zeros. Each repeat is its own RUN
    request so every inference is timed (min / median / max) and, in a ``--profile``
    build, its per-step ticks are read back and compared across repeats."""
    from aot.artifacts import read_manifest
    from aot.boards import load_build_board

    folder = Path(folder)
    check_repeats(repeats, what="bench repeats")
    check_timeout(timeout)
    manifest = read_manifest(folder)
    board = load_build_board(manifest)
    if connect is None:
        from aot.runner import connect as default_connect

        connect = default_connect
    arrays = list(inputs) if inputs is not None else _zero_inputs(manifest)
    per_tick = (board.ticks.instructions_per_tick if board.ticks else None) or 1

    times: list[int] = []
    profiles: list[list[int]] = []
    digests: list[str] = []
    from aot.device.process import sigterm_unwinds

    with sigterm_unwinds(), connect(folder, manifest, board, timeout) as client:
        info = client.hello()
        if not info.ticks_per_second:
            raise DeviceError(
                f"{client.transport.name} has no timer (ticks per second is 0); "
                "aot bench needs a port with aot_platform_ticks"
            )
        profiled = client.supports_profile
        result = None
        for _ in range(repeats):
            result = client.run(arrays, repeats=1, timeout=timeout)
            times.append(result.ticks * per_tick)
            digests.append(_digest(result.outputs))
            if profiled:
                profiles.append([t * per_tick for t in client.profile()])
        stats = client.stats()
        with contextlib.suppress(DeviceError):
            client.quit()
    assert result is not None

    from aot.timing import describe_clock, resolved, time_unit

    operators = [
        replace(op, resolved=resolved(op.time, per_tick))
        for op in (_operators(manifest, profiles[-1]) if profiles else [])
    ]
    clock = describe_clock(board, manifest.template, result.ticks_per_second, per_tick)
    return BenchReport(
        model=manifest.name,
        board=board.name,
        time_unit=time_unit(board, result.ticks_per_second),
        units_per_tick=per_tick,
        ticks_per_second=result.ticks_per_second,
        repeats=repeats,
        times=times,
        profile=profiled,
        operators=operators,
        profiles_identical=all(p == profiles[0] for p in profiles) if profiles else None,
        outputs_identical=all(d == digests[0] for d in digests),
        outputs_sha256=digests[-1],
        peak_stack_bytes=stats.stack_peak_bytes if stats.stack_painted_bytes else None,
        model_stack_bytes=stats.model_stack_bytes,
        workspace_bytes=manifest.memory.workspace_bytes,
        pools={p.name: p.used_bytes for p in manifest.memory.pools},
        constants_bytes=manifest.constants.bytes,
        sections=dict(manifest.sections),
        outputs=result.outputs,
        clock=clock.name,
        clock_resolution=clock.resolution,
    )


def _zero_inputs(manifest: LibraryManifest) -> list[np.ndarray]:
    return [np.zeros(s.shape, dtype=np.dtype(s.dtype)) for s in manifest.inputs]


def _digest(outputs: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for array in outputs:
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def _operators(manifest: LibraryManifest, times: list[int]) -> list[OperatorProfile]:
    steps = manifest.operators
    if len(steps) != len(times):
        raise DeviceError(
            f"the device profiled {len(times)} steps but metadata.json lists {len(steps)} "
            "operators; the firmware is not the one this folder was built for (rebuild it)"
        )
    total = sum(times) or 1
    return [
        OperatorProfile(
            step=step.index,
            kernel=step.kernel,
            label=step.shown,
            source_operators=[op.to_json() for op in step.source_operators],
            time=ticks,
            share=ticks / total,
            macs=step.macs,
        )
        for step, ticks in zip(steps, times, strict=True)
    ]


# ---- text and picture ----------------------------------------------------------------


def _count(value: float) -> str:
    return f"{value:,.0f}"


def format_report(report: BenchReport) -> list[str]:
    """The human-readable report: inference time, the per-operator table, memory."""
    unit = report.time_unit
    lines = [
        f"model '{report.model}' on {report.board}: {report.repeats} inference(s), {unit}"
        + (f"; clock: {report.clock}, one tick {report.clock_resolution}" if report.clock else ""),
        f"  per inference  min {_count(report.time_min)}  median "
        f"{_count(report.time_median)}  max {_count(report.time_max)}",
    ]
    if not report.profile:
        lines.append(
            "  (no per-operator figures: build with 'aot build --profile' to time each operator)"
        )
    else:
        rows = [("step", "operator", unit, "share", "MACs", f"{unit}/MAC", "kernel")]
        for op in report.operators:
            per_mac = op.time_per_mac
            rows.append(
                (
                    str(op.step),
                    op.label,
                    _count(op.time),
                    f"{100 * op.share:.1f}%" if op.resolved else "coarse",
                    _count(op.macs) if op.macs else "-",
                    f"{per_mac:.2f}" if per_mac is not None else "-",
                    op.kernel,
                )
            )
        macs = report.total_macs
        whole_per_mac = f"{report.operators_total / macs:.2f}" if macs else "-"
        rows.append(
            ("", "sum", _count(report.operators_total), "100.0%", _count(macs), whole_per_mac, "")
        )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        right = {0, 2, 3, 4, 5}
        for row in rows:
            cells = [
                cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
                for i, cell in enumerate(row)
            ]
            lines.append("  " + "  ".join(cells).rstrip())
        if report.profile_error is not None:
            ratio = 100 * report.operators_total / report.times[-1]
            lines.append(f"  operators add up to {ratio:.2f}% of the whole inference (last repeat)")
        coarse = [op for op in report.operators if not op.resolved]
        if coarse:
            lines.append(
                f"  {len(coarse)} operator(s) marked 'coarse' last fewer than 100 ticks of "
                f"the clock ({report.clock_resolution} each): their figures are not "
                "measurements"
            )
        if report.profiles_identical is False:
            lines.append("  per-operator figures differed between repeats (the last is shown)")
    if not report.outputs_identical:
        lines.append("  warning: the outputs differed between repeats")
    if report.peak_stack_bytes is not None:
        model_stack = report.model_stack_bytes
        lines.append(
            f"  peak stack     {report.peak_stack_bytes} B"
            + (f" (model {model_stack} B)" if model_stack is not None else "")
        )
    pools = ", ".join(f"{name} {size} B" for name, size in report.pools.items())
    lines.append(f"  workspace      {report.workspace_bytes} B ({pools})")
    lines.append(f"  constants      {report.constants_bytes} B")
    if report.sections:
        code = ", ".join(f"{k} {v} B" for k, v in report.sections.items())
        lines.append(f"  code size      {code}")
    else:  # host executables: their size says nothing about a microcontroller's
        lines.append("  code size      not measured for this board's build")
    return lines


def render_svg(report: BenchReport) -> str:
    """A horizontal bar chart of the per-operator times, one bar per executor step."""
    from xml.sax.saxutils import escape

    if not report.operators:
        raise ConfigError(
            "no per-operator figures to plot: build the folder with 'aot build --profile'"
        )
    from aot.planning.render import FONT_FAMILY, text_width

    # The font is monospace (as memory.svg's), so a label's width is its length times the
    # glyph advance: measured from the text, with room for the longest label and value.
    size = 12
    labels = [f"{op.step}: {op.label}" for op in report.operators]
    values = [f"{_count(op.time)} ({100 * op.share:.1f}%)" for op in report.operators]
    title = (
        f"{report.model} on {report.board}: {report.time_unit} per operator (sum "
        f"{_count(report.operators_total)})"
    )
    bar_h, gap, bar_w = 18, 6, 420
    label_w = math.ceil(max(140, max(text_width(t, size) for t in labels) + 16))
    value_w = math.ceil(max(text_width(t, size) for t in values) + 16)
    top = 40
    height = top + len(report.operators) * (bar_h + gap) + 30
    width = max(label_w + bar_w + value_w, math.ceil(text_width(title, 14) + 20))
    longest = max(op.time for op in report.operators) or 1
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="{FONT_FAMILY}" font-size="{size}">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="22" font-size="14">{escape(title)}</text>',
    ]
    for row, (op, label, value) in enumerate(zip(report.operators, labels, values, strict=True)):
        y = top + row * (bar_h + gap)
        length = max(1.0, bar_w * op.time / longest)
        out += [
            f'<text x="{label_w - 8}" y="{y + bar_h - 5}" text-anchor="end">{escape(label)}</text>',
            f'<rect x="{label_w}" y="{y}" width="{length:.1f}" height="{bar_h}" '
            f'fill="#4878a8"><title>{escape(op.kernel)}</title></rect>',
            f'<text x="{label_w + length + 6:.1f}" y="{y + bar_h - 5}">{escape(value)}</text>',
        ]
    out.append("</svg>")
    return "\n".join(out) + "\n"
