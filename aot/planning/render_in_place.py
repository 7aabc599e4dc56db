"""A picture of a convolution run in place (aot/planning/in_place_rows.py): its one buffer
drawn as a bar, addresses downwards, once before the first band and after each band, so
the output rows can be seen filling the bytes whose input rows no band reads any more.
Pure SVG text, no dependencies."""

from __future__ import annotations

from html import escape

from aot.planning.patches import Window, split

BAR_HEIGHT = 280  # pixels for the whole buffer
BAR_WIDTH = 46
GAP = 22
TOP = 58
BOTTOM = 58
MOST_MOMENTS = 9  # bars drawn: the first bands, a gap, the last ones
NEEDED = "#1f77b4"  # input rows a band still reads
FREE = "#d9d9d9"  # input rows no band reads any more
OUTPUT = "#ff7f0e"  # output rows written


def _moments(bands: int) -> list[int | None]:
    """After how many bands each bar is drawn (None: the gap that stands for the rest)."""
    everything = list(range(bands + 1))
    if len(everything) <= MOST_MOMENTS:
        return list(everything)
    head, tail = everything[: MOST_MOMENTS - 3], everything[-2:]
    return [*head, None, *tail]


def render_in_place(
    window: Window, bands: int, shift: int, reverse: bool = False, title: str = ""
) -> str:
    """The SVG of ``window`` run in ``bands`` bands over one buffer, its output ``shift``
    bytes before its input (after it with ``reverse``, the bands from the last)."""
    row_in = window.in_hw[1] * window.in_channels * window.element_bytes
    row_out = window.out_hw[1] * window.out_channels * window.element_bytes
    at_in, at_out = (0, shift) if reverse else (shift, 0)
    size = max(at_in + window.in_hw[0] * row_in, at_out + window.out_hw[0] * row_out)
    scale = BAR_HEIGHT / size
    parts = split(window.out_hw[0], bands)
    order = parts[::-1] if reverse else parts
    moments = _moments(bands)
    width = GAP + len(moments) * (BAR_WIDTH + GAP) + 150
    height = TOP + BAR_HEIGHT + BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<text x="{GAP}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<text x="{GAP}" y="34" fill="#555">one buffer of {size} B, addresses downwards; '
        f"output {shift} B {'after' if reverse else 'before'} the input; {bands} bands"
        f"{' from the last' if reverse else ''}</text>",
    ]

    def block(x: float, start: int, stop: int, colour: str) -> str:
        y = TOP + start * scale
        return (
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{BAR_WIDTH}" '
            f'height="{max((stop - start) * scale, 0.6):.1f}" fill="{colour}"/>'
        )

    for k, done in enumerate(moments):
        x = GAP + k * (BAR_WIDTH + GAP)
        if done is None:
            out.append(
                f'<text x="{x + BAR_WIDTH / 2:.1f}" y="{TOP + BAR_HEIGHT / 2:.1f}" '
                'text-anchor="middle" font-size="16">…</text>'
            )
            continue
        out.append(
            f'<rect x="{x}" y="{TOP}" width="{BAR_WIDTH}" height="{BAR_HEIGHT}" '
            'fill="white" stroke="#444" stroke-width="1"/>'
        )
        # Input rows the bands still to run read, and those no band reads any more.
        later = order[done:]
        needed = set()
        for rows in later:
            read = window._reads(rows, 0, window.pad_top)
            needed.update(range(read.start, read.stop))
        for row in range(window.in_hw[0]):
            colour = NEEDED if row in needed else FREE
            out.append(block(x, at_in + row * row_in, at_in + (row + 1) * row_in, colour))
        for rows in order[:done]:
            out.append(
                block(x, at_out + rows.start * row_out, at_out + rows.stop * row_out, OUTPUT)
            )
        label = "before" if done == 0 else f"band {done}"
        out.append(
            f'<text x="{x + BAR_WIDTH / 2:.1f}" y="{TOP + BAR_HEIGHT + 16}" '
            f'text-anchor="middle">{label}</text>'
        )
    legend_x = GAP + len(moments) * (BAR_WIDTH + GAP)
    for k, (colour, text) in enumerate(
        [(NEEDED, "input still read"), (FREE, "input read for good"), (OUTPUT, "output written")]
    ):
        y = TOP + 10 + 20 * k
        out.append(
            f'<rect x="{legend_x}" y="{y - 9}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{legend_x + 18}" y="{y + 1}">{text}</text>'
        )
    shape = (
        f"{window.in_hw[0]}x{window.in_hw[1]}x{window.in_channels} -> "
        f"{window.out_hw[0]}x{window.out_hw[1]}x{window.out_channels}"
    )
    out.append(
        f'<text x="{GAP}" y="{height - 14}" fill="#555">{escape(window.label or window.kind)} '
        f"{shape}: {size} B in place instead of "
        f"{window.whole_input_bytes + window.whole_output_bytes} B</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"
