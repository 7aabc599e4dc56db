"""A picture of a patch stage: the stage's input and each operator's output side by side,
every tile's region drawn on each, one tile filled, so the halo the tiles share (what they
recompute) shows where the outlines overlap. Pure SVG text, no dependencies."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from aot.planning.patches import PatchPlan, Region

PANEL = 150  # pixels a side: every plane is drawn at the same size, whatever its resolution
GAP = 34
TOP = 46
BOTTOM = 52
TILE_COLOUR = "#1f77b4"
FILL_COLOUR = "#ff7f0e"


def _rect(region: Region, shape: tuple[int, int], x0: float, **style: str) -> str:
    sy, sx = PANEL / shape[0], PANEL / shape[1]
    attrs = " ".join(f'{k.replace("_", "-")}="{v}"' for k, v in style.items())
    return (
        f'<rect x="{x0 + region.cols.start * sx:.1f}" y="{TOP + region.rows.start * sy:.1f}" '
        f'width="{region.cols.size * sx:.1f}" height="{region.rows.size * sy:.1f}" {attrs}/>'
    )


def render_tiles(plan: PatchPlan, title: str, highlight: int | None = None) -> str:
    """The SVG of ``plan``: panel 0 the stage input with each tile's input window, then
    each operator's output with the region each tile computes; ``highlight`` is the tile
    filled (default: one inside the image, where the halo shows on every side)."""
    if highlight is None:
        highlight = _inner_tile(plan)
    chain = plan.chain
    planes: list[tuple[str, tuple[int, int], int, list[Region]]] = [
        (
            "stage input",
            chain[0].in_hw,
            chain[0].in_channels,
            [t.calls[0].reads for t in plan.tiles],
        )
    ]
    for k, window in enumerate(chain):
        label = window.label or window.kind
        planes.append(
            (label, window.out_hw, window.out_channels, [t.calls[k].computes for t in plan.tiles])
        )
    width = len(planes) * (PANEL + GAP) + GAP
    height = TOP + PANEL + BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<text x="{GAP}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    for p, (label, shape, channels, regions) in enumerate(planes):
        x0 = GAP + p * (PANEL + GAP)
        whole = Region(*(type(regions[0].rows)(0, s) for s in shape))
        out.append(_rect(whole, shape, x0, fill="#f4f4f4", stroke="#444", stroke_width="1"))
        for t, region in enumerate(regions):
            if t == highlight:
                continue
            out.append(
                _rect(
                    region,
                    shape,
                    x0,
                    fill="none",
                    stroke=TILE_COLOUR,
                    stroke_width="0.8",
                    stroke_opacity="0.7",
                )
            )
        chosen = regions[highlight]
        out.append(
            _rect(
                chosen,
                shape,
                x0,
                fill=FILL_COLOUR,
                fill_opacity="0.45",
                stroke=FILL_COLOUR,
                stroke_width="1.5",
            )
        )
        out.append(
            f'<text x="{x0}" y="{TOP - 8}">{escape(_short(label))}</text>'
            f'<text x="{x0}" y="{TOP + PANEL + 16}">{shape[0]}x{shape[1]}x{channels}</text>'
            f'<text x="{x0}" y="{TOP + PANEL + 30}" fill="{FILL_COLOUR}">'
            f"tile {chosen.rows.size}x{chosen.cols.size}</text>"
        )
    tiles = plan.grid[0] * plan.grid[1]
    out.append(
        f'<text x="{GAP}" y="{height - 6}" fill="#555">{plan.grid[0]}x{plan.grid[1]} = {tiles} '
        f"tiles; outlines: the region each tile reads or computes (overlaps are recomputed); "
        f"filled: one tile; {plan.macs / plan.untiled_macs:.2f}x the untiled "
        f"multiply-accumulates</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _short(label: str, most: int = 24) -> str:
    return label if len(label) <= most else label[: most - 1] + "…"


def _inner_tile(plan: PatchPlan) -> int:
    rows, cols = plan.grid
    row, col = min(1, rows - 1), min(1, cols - 1)
    return row * cols + col


def render_stages(plans: Sequence[tuple[PatchPlan, str]]) -> str:
    """Several stages' pictures one above the other."""
    return stack([render_tiles(plan, title) for plan, title in plans])


def stack(parts: Sequence[str]) -> str:
    """SVG pictures one above the other, as one."""
    if len(parts) == 1:
        return parts[0]
    bodies, width, height = [], 0, 0
    for part in parts:
        head, _, rest = part.partition(">")
        w = int(head.split('width="')[1].split('"')[0])
        h = int(head.split('height="')[1].split('"')[0])
        body = rest.rsplit("</svg>", 1)[0]
        bodies.append(f'<g transform="translate(0,{height})">{body}</g>')
        width, height = max(width, w), height + h
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">\n'
        + "\n".join(bodies)
        + "\n</svg>\n"
    )
