"""A memory plan as an SVG picture: one panel per pool, steps across, offsets up.

Each panel is about its own pool only: a box per buffer from its first to its last step
and from its offset to its end, the bytes live at each step in that pool (grey), the
pool's own activation lower bound (dashed red) and its size limit (solid, or a note when
the limit is far above what is used). Every panel has its own vertical scale.

Layout is computed, not guessed: text extents are estimated from the font size (the
font is monospace), margins grow to hold the longest labels, and panels are stacked
with their full height, so nothing is clipped and no two panels overlap. Plain text, no
dependencies, stable output for a given plan.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from aot.planning.core import activation_lower_bound, live_bytes_per_step
from aot.planning.model import Buffer, MemoryPlan, Pool

FONT_SIZE = 11  # px, monospace
TITLE_SIZE = 13
FONT_FAMILY = "DejaVu Sans Mono, monospace"
# Advance of a glyph per px of font size: DejaVu Sans Mono's is 1233/2048 = 0.602 for every
# glyph (its hmtx table); 0.62 also covers the other common monospace fonts a viewer may
# substitute (Courier 0.60, Menlo 0.602, Consolas 0.55).
CHAR_WIDTH = 0.62
PLOT_WIDTH = 760  # at least; long graphs get STEP_WIDTH per step, up to MAX_PLOT_WIDTH
STEP_WIDTH = 36
MAX_PLOT_WIDTH = 1400
PLOT_HEIGHT = 230
STEP_LABEL_ANGLE = 40  # degrees, labels under the steps run up to the right
STEP_LABEL_CHARS = 30  # longer operator names are cut (hover shows nothing for axes)
PAD = 8
PANEL_GAP = 18
# A limit more than this many times the drawn height is written, not drawn to scale:
# a 1 MiB pool holding 20 KB would otherwise squash every box into a line.
LIMIT_ON_SCALE = 3.0


def text_width(text: str, size: float = FONT_SIZE) -> float:
    return len(text) * size * CHAR_WIDTH


def _colour(name: str) -> str:
    # A stable pastel per buffer name (crc32, not hash(), which changes between runs).
    hue = zlib.crc32(name.encode()) % 360
    return f"hsl({hue},60%,75%)"


def _fit(text: str, width: float, size: float = FONT_SIZE) -> str:
    """``text`` cut with '~' so it fits ``width`` px; '' when not even 3 characters fit."""
    chars = int(width // (size * CHAR_WIDTH))
    if len(text) <= chars:
        return text
    return text[: chars - 1] + "~" if chars >= 3 else ""


def _fit_name(name: str, width: float) -> str:
    """A tensor name for a box: leading path parts ('model/') go first, the last two
    stay; then it is cut. The box's tooltip has the whole name."""
    parts = name.split("/")
    while len(parts) > 2 and text_width("/".join(parts)) > width:
        parts = parts[1:]
    return _fit("/".join(parts), width)


@dataclass(frozen=True)
class _PanelData:
    pool: Pool
    placed: tuple[tuple[Buffer, int], ...]  # (buffer, offset)
    used: int
    bound: int
    live: tuple[int, ...]
    scale_max: int
    limit_drawn: bool


def _panel_data(
    plan: MemoryPlan, by_name: Mapping[str, Buffer], pool: Pool, steps: int
) -> _PanelData:
    placed = tuple(
        (by_name[p.buffer], p.offset)
        for p in plan.placements
        if p.pool == pool.name and p.buffer in by_name
    )
    inside = [b for b, _ in placed]
    live = list(live_bytes_per_step(inside)) + [0] * steps
    used = plan.pool_sizes.get(pool.name, 0)
    bound = activation_lower_bound(inside)
    top = max(used, bound, max(live, default=0), 1)
    limit_drawn = pool.size is not None and pool.size <= top * LIMIT_ON_SCALE
    scale_max = max(top, pool.size or 0) if limit_drawn else top
    return _PanelData(pool, placed, used, bound, tuple(live[:steps]), scale_max, limit_drawn)


def render_svg(
    plan: MemoryPlan,
    buffers: Sequence[Buffer],
    pools: Sequence[Pool],
    step_names: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
    tags: Mapping[str, str] | None = None,
) -> str:
    """The picture of ``plan``. ``step_names`` label the steps (operators), ``labels``
    give buffers a display name (the source model's tensor name) instead of theirs, and
    ``tags`` a short one for boxes too narrow for it (e.g. "#3", the producing operator)."""
    labels = labels or {}
    tags = tags or {}
    by_name = {b.name: b for b in buffers}
    steps = max((b.end for b in buffers), default=0) + 1
    panels = [_panel_data(plan, by_name, pool, steps) for pool in pools]
    names = [
        (step_names[t] if step_names is not None and t < len(step_names) else str(t))
        for t in range(steps)
    ]
    every = max(1, math.ceil(steps / 40))  # at most 40 step labels per axis
    shown = [
        (t, _fit(names[t], text_width("x" * STEP_LABEL_CHARS))) for t in range(0, steps, every)
    ]
    cos, sin = math.cos(math.radians(STEP_LABEL_ANGLE)), math.sin(math.radians(STEP_LABEL_ANGLE))

    # Left margin: the offset labels, and the first step labels that reach left of the plot.
    left = PAD + max(text_width(str(p.scale_max)) for p in panels) + 8 if panels else 60
    plot_width = min(max(PLOT_WIDTH, steps * STEP_WIDTH), MAX_PLOT_WIDTH)
    step_w = plot_width / steps
    for t, name in shown:
        reach = text_width(name) * cos - (t + 0.5) * step_w
        left = max(left, PAD + reach + 4)
    bottom = max((text_width(name) * sin for _, name in shown), default=0) + FONT_SIZE + 14
    titles = [_title(p) for p in panels]
    # Right margin: the line labels ("lower bound N", "limit N") sit beside their lines.
    right_margin = max((text_width(t) for p in panels for t, _ in _line_labels(p)), default=0)
    width = left + plot_width + 6 + right_margin + PAD
    width = max(width, *(PAD * 2 + text_width(t, TITLE_SIZE) for t in titles), 200)
    legend = (
        "boxes: buffers (hover: name, bytes, offset, steps); grey: bytes live in the pool; "
        "dashed red: the pool's lower bound; dark line: its size limit"
    )
    legend_lines = _wrap(legend, width - 2 * PAD)
    header = PAD + len(legend_lines) * (FONT_SIZE + 3) + 4
    title_h = TITLE_SIZE + 10
    panel_h = title_h + PLOT_HEIGHT + bottom
    height = header + len(panels) * (panel_h + PANEL_GAP) + PAD

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT_FAMILY}" '
        f'font-size="{FONT_SIZE}">',
        f"<title>{escape(plan.algorithm)}: {plan.total_size} bytes, "
        f"lower bound {plan.lower_bound} bytes</title>",
        f'<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="white"/>',
    ]
    for i, line in enumerate(legend_lines):
        out.append(
            f'<text x="{PAD}" y="{PAD + (i + 1) * (FONT_SIZE + 3) - 3}" fill="#555">'
            f"{escape(line)}</text>"
        )
    for k, (panel, title) in enumerate(zip(panels, titles, strict=True)):
        top = header + k * (panel_h + PANEL_GAP)
        out += _panel(panel, title, top, panel_h, width, left, step_w, shown, labels, tags, names)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _line_labels(panel: _PanelData) -> list[tuple[str, int]]:
    """(text, bytes) of the labelled horizontal lines of a panel."""
    labels = [(f"lower bound {panel.bound}", panel.bound)]
    if panel.pool.size is not None and panel.limit_drawn:
        labels.append((f"limit {panel.pool.size}", panel.pool.size))
    return labels


def _spread(ys: list[float], gap: float, low: float, high: float) -> list[float]:
    """Label baselines near ``ys`` (any order) but at least ``gap`` apart, within
    [low, high]: two lines a few bytes apart get readable labels."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    placed: list[float] = [0.0] * len(ys)
    previous = low - gap
    for i in order:
        placed[i] = max(ys[i], previous + gap)
        previous = placed[i]
    overflow = previous - high
    if overflow > 0:  # pushed past the bottom: shift all up, still inside
        placed = [max(low, y - overflow) for y in placed]
    return placed


def _title(panel: _PanelData) -> str:
    pool = panel.pool
    limit = "unbounded" if pool.size is None else f"limit {pool.size} B"
    if pool.size is not None and not panel.limit_drawn:
        limit += " (above the scale)"
    fill = f" ({panel.used / pool.size:.0%} of limit)" if pool.size else ""
    reach = "" if pool.targets is None else f", reached by {','.join(pool.targets)}"
    return (
        f"pool {pool.name}: {panel.used} B used{fill}, {limit}, lower bound {panel.bound} B{reach}"
    )


def _wrap(text: str, width: float) -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        candidate = f"{line} {word}".strip()
        if line and text_width(candidate) > width:
            lines.append(line)
            candidate = word
        line = candidate
    return [*lines, line] if line else lines


def _panel(
    panel: _PanelData,
    title: str,
    top: float,
    height: float,
    width: float,
    left: float,
    step_w: float,
    shown: Sequence[tuple[int, str]],
    labels: Mapping[str, str],
    tags: Mapping[str, str],
    step_names: Sequence[str],
) -> list[str]:
    pool = panel.pool
    plot_top = top + TITLE_SIZE + 10
    y_scale = PLOT_HEIGHT / panel.scale_max

    def y(offset: float) -> float:
        return plot_top + PLOT_HEIGHT - offset * y_scale

    plot_width = step_w * len(panel.live)
    right = left + plot_width
    out = [
        f'<g class="pool" data-pool="{escape(pool.name)}">',
        f'<rect class="panel" x="1" y="{top:.1f}" width="{width - 2:.1f}" '
        f'height="{height:.1f}" fill="none" stroke="#ddd"/>',
        f'<text x="{PAD}" y="{top + TITLE_SIZE + 2:.1f}" font-size="{TITLE_SIZE}" '
        f'font-weight="bold">{escape(title)}</text>',
        f'<rect class="plot" x="{left:.1f}" y="{plot_top:.1f}" width="{plot_width:.1f}" '
        f'height="{PLOT_HEIGHT}" fill="none" stroke="#888"/>',
    ]
    for b, offset in panel.placed:
        x = left + b.start * step_w
        w = (b.end - b.start + 1) * step_w
        y0, y1 = y(offset + b.size), y(offset)
        shown_name = labels.get(b.name, b.name)
        tip = f"{shown_name}: {b.size} bytes at offset {offset}, steps {b.start}-{b.end}"
        if shown_name != b.name:
            tip += f" (buffer {b.name})"
        if b.users:
            # Who touches it, and on which target: why it sits in this pool.
            tip += "; touched by " + ", ".join(
                f"{step_names[t] if t < len(step_names) else f'step {t}'} on {target}"
                for t, target in b.users
            )
        out.append(
            f'<rect x="{x:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{y1 - y0:.1f}" '
            f'fill="{_colour(b.name)}" stroke="#333" stroke-width="0.5">'
            f"<title>{escape(tip)}</title></rect>"
        )
        text = _fit_name(shown_name, w - 6)
        if "~" in text or not text:
            text = _fit(tags.get(b.name, text), w - 6)
        if y1 - y0 >= FONT_SIZE + 2 and text:
            out.append(f'<text x="{x + 3:.1f}" y="{(y0 + y1) / 2 + 4:.1f}">{escape(text)}</text>')
    # Live bytes on top of the boxes: where it runs below them, packing wastes room.
    points = []
    for t, value in enumerate(panel.live):
        x0, x1 = left + t * step_w, left + (t + 1) * step_w
        points.append(f"{x0:.1f},{y(value):.1f} {x1:.1f},{y(value):.1f}")
    if points:
        out.append(
            f'<polyline class="live" points="{" ".join(points)}" fill="none" stroke="#777" '
            'stroke-width="2" stroke-opacity="0.6"/>'
        )
    # The pool's own lower bound (dashed) and limit (solid), labelled in the right margin.
    lines = _line_labels(panel)
    ys = [y(value) for _, value in lines]
    label_ys = _spread(
        [v + FONT_SIZE / 2 - 1 for v in ys], FONT_SIZE + 1, plot_top + FONT_SIZE, y(0) + 4
    )
    for (text, value), line_y, label_y in zip(lines, ys, label_ys, strict=True):
        kind, style = (
            ("lower-bound", 'stroke="#c00" stroke-dasharray="6,4"')
            if text.startswith("lower")
            else ("limit", 'stroke="#036" stroke-width="1.5"')
        )
        colour = "#c00" if kind == "lower-bound" else "#036"
        out.append(
            f'<line class="{kind}" x1="{left:.1f}" y1="{line_y:.1f}" x2="{right:.1f}" '
            f'y2="{line_y:.1f}" {style} data-bytes="{value}"/>'
        )
        out.append(f'<text x="{right + 6:.1f}" y="{label_y:.1f}" fill="{colour}">{text}</text>')
    if not panel.placed:
        out.append(
            f'<text x="{left + plot_width / 2:.1f}" y="{plot_top + PLOT_HEIGHT / 2:.1f}" '
            'text-anchor="middle" fill="#888">no buffers in this pool</text>'
        )
    # Offsets on the left, steps below.
    out.append(
        f'<text x="{left - 6:.1f}" y="{y(0):.1f}" text-anchor="end">0</text>'
        f'<text x="{left - 6:.1f}" y="{y(panel.scale_max) + FONT_SIZE - 2:.1f}" '
        f'text-anchor="end">{panel.scale_max}</text>'
    )
    for t, name in shown:
        x = left + (t + 0.5) * step_w
        yy = plot_top + PLOT_HEIGHT + FONT_SIZE + 2
        out.append(
            f'<text class="step" x="{x:.1f}" y="{yy:.1f}" text-anchor="end" '
            f'transform="rotate(-{STEP_LABEL_ANGLE} {x:.1f} {yy:.1f})">{escape(name)}</text>'
        )
    out.append("</g>")
    return out
