"""A memory plan as an SVG picture: one panel per pool, steps across, offsets up.

Each buffer is a box from its first to its last step and from its offset to its end;
the dashed line is the activation lower bound and the grey steps are the bytes live at
each step (over all pools), so wasted space shows as room between boxes and that line.
Plain text, no dependencies, stable output for a given plan.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from xml.sax.saxutils import escape

from aot.planning.core import live_bytes_per_step
from aot.planning.model import Buffer, MemoryPlan, Pool

PANEL_WIDTH = 720
PANEL_HEIGHT = 260
MARGIN_LEFT = 70
MARGIN_TOP = 30
MARGIN_BOTTOM = 50


def _colour(name: str) -> str:
    # A stable pastel per buffer name (crc32, not hash(), which changes between runs).
    hue = zlib.crc32(name.encode()) % 360
    return f"hsl({hue},60%,75%)"


def render_svg(
    plan: MemoryPlan,
    buffers: Sequence[Buffer],
    pools: Sequence[Pool],
    step_names: Sequence[str] | None = None,
) -> str:
    by_name = {b.name: b for b in buffers}
    steps = max((b.end for b in buffers), default=0) + 1
    live = live_bytes_per_step(buffers)
    panel_total = MARGIN_TOP + PANEL_HEIGHT + MARGIN_BOTTOM
    width = MARGIN_LEFT + PANEL_WIDTH + 20
    height = panel_total * max(len(pools), 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">',
        f"<title>{escape(plan.algorithm)}: {plan.total_size} bytes, "
        f"lower bound {plan.lower_bound} bytes</title>",
    ]
    step_w = PANEL_WIDTH / steps
    for k, pool in enumerate(pools):
        top = k * panel_total + MARGIN_TOP
        used = plan.pool_sizes.get(pool.name, 0)
        scale_max = max(used, plan.lower_bound, 1)
        y_scale = PANEL_HEIGHT / scale_max

        def y(offset: float, top: float = top, y_scale: float = y_scale) -> float:
            return top + PANEL_HEIGHT - offset * y_scale

        limit = "unbounded" if pool.size is None else f"{pool.size} bytes"
        out.append(
            f'<text x="{MARGIN_LEFT}" y="{top - 10}" font-weight="bold">pool '
            f"{escape(pool.name)}: {used} bytes used ({limit})</text>"
        )
        out.append(
            f'<rect x="{MARGIN_LEFT}" y="{top}" width="{PANEL_WIDTH}" height="{PANEL_HEIGHT}" '
            'fill="none" stroke="#888"/>'
        )
        # Live bytes per step, as a stepped outline.
        points = []
        for t, value in enumerate(live):
            x0, x1 = MARGIN_LEFT + t * step_w, MARGIN_LEFT + (t + 1) * step_w
            points.append(f"{x0:.1f},{y(value):.1f} {x1:.1f},{y(value):.1f}")
        if points:
            out.append(
                f'<polyline points="{" ".join(points)}" fill="none" stroke="#bbb" '
                'stroke-width="2"><title>bytes live per step</title></polyline>'
            )
        for p in plan.placements:
            if p.pool != pool.name or p.buffer not in by_name:
                continue
            b = by_name[p.buffer]
            x = MARGIN_LEFT + b.start * step_w
            w = (b.end - b.start + 1) * step_w
            y0, y1 = y(p.offset + b.size), y(p.offset)
            label = escape(b.name)
            out.append(
                f'<rect x="{x:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{y1 - y0:.1f}" '
                f'fill="{_colour(b.name)}" stroke="#333" stroke-width="0.5">'
                f"<title>{label}: {b.size} bytes at offset {p.offset}, steps "
                f"{b.start}-{b.end}</title></rect>"
            )
            if y1 - y0 >= 12 and w >= 7 * len(b.name):
                out.append(f'<text x="{x + 3:.1f}" y="{(y0 + y1) / 2 + 4:.1f}">{label}</text>')
        ly = y(plan.lower_bound)
        out.append(
            f'<line x1="{MARGIN_LEFT}" y1="{ly:.1f}" x2="{MARGIN_LEFT + PANEL_WIDTH}" '
            f'y2="{ly:.1f}" stroke="#c00" stroke-dasharray="6,4"/>'
        )
        out.append(
            f'<text x="{MARGIN_LEFT + PANEL_WIDTH - 4}" y="{ly - 4:.1f}" fill="#c00" '
            f'text-anchor="end">lower bound {plan.lower_bound}</text>'
        )
        # Axes: offsets on the left, steps below.
        out.append(f'<text x="{MARGIN_LEFT - 6}" y="{y(0):.1f}" text-anchor="end">0</text>')
        out.append(
            f'<text x="{MARGIN_LEFT - 6}" y="{y(scale_max) + 10:.1f}" '
            f'text-anchor="end">{scale_max}</text>'
        )
        every = max(1, steps // 24)  # keep step labels readable on long graphs
        for t in range(0, steps, every):
            name = step_names[t] if step_names is not None and t < len(step_names) else str(t)
            x = MARGIN_LEFT + (t + 0.5) * step_w
            yy = top + PANEL_HEIGHT + 14
            out.append(
                f'<text x="{x:.1f}" y="{yy}" text-anchor="end" '
                f'transform="rotate(-30 {x:.1f} {yy})">{escape(name)}</text>'
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"
