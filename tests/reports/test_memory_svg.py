"""memory.svg, checked by its geometry: one panel per pool that does not overlap the next,
every text inside the canvas by its computed extent, each panel with its own live bytes,
lower bound and limit; and 'aot build' writes it too."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from aot.cli import main
from aot.planning import Buffer, MemoryPlan, Pool, activation_lower_bound, plan_memory
from aot.planning.render import CHAR_WIDTH, FONT_SIZE, render_svg

pytestmark = pytest.mark.unit

SVG = "{http://www.w3.org/2000/svg}"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_kws_int8.tflite"
# Long operator names on the first steps: their rotated labels reach left of the plot.
STEPS = [f"DEPTHWISE_CONV_2D #{i}" for i in range(6)]
BUFFERS = [
    Buffer("a", 6000, 0, 1),
    Buffer("b", 6000, 1, 2),
    Buffer("skip", 3000, 0, 5),
    Buffer("c", 2000, 2, 4),
    Buffer("d", 900, 4, 5),
]


def _plan(pools: list[Pool]) -> tuple[MemoryPlan, str]:
    plan = plan_memory(BUFFERS, pools, "greedy_by_size", step_names=STEPS)
    labels = {b.name: f"model/layer_{b.name}/Relu6" for b in BUFFERS}
    return plan, render_svg(plan, BUFFERS, pools, STEPS, labels, {b.name: "#1" for b in BUFFERS})


def _corners(text: ET.Element) -> list[tuple[float, float]]:
    """The box a text takes, from its font size, anchor and rotation."""
    size = float(text.get("font-size", FONT_SIZE))
    width = len(text.text or "") * size * CHAR_WIDTH
    x, y = float(text.get("x", 0)), float(text.get("y", 0))
    x0 = {"start": x, "middle": x - width / 2, "end": x - width}[text.get("text-anchor", "start")]
    box = [
        (x0, y - size),
        (x0 + width, y - size),
        (x0, y + size * 0.25),
        (x0 + width, y + size * 0.25),
    ]
    match = re.fullmatch(r"rotate\((-?[\d.]+) ([\d.]+) ([\d.]+)\)", text.get("transform", ""))
    if not match:
        return box
    angle, cx, cy = (float(g) for g in match.groups())
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    return [
        (cx + (px - cx) * c - (py - cy) * s, cy + (px - cx) * s + (py - cy) * c) for px, py in box
    ]


def _panels(root: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-pool", ""): g for g in root.iter(f"{SVG}g") if g.get("class") == "pool"}


def _rect(element: ET.Element) -> tuple[float, float, float, float]:
    x, y = float(element.get("x", 0)), float(element.get("y", 0))
    return x, y, x + float(element.get("width", 0)), y + float(element.get("height", 0))


@pytest.mark.parametrize("pools", [[Pool("fast", 8192), Pool("big", 65536)], [Pool("ram", None)]])
def test_every_text_inside_the_canvas_and_its_panel(pools: list[Pool]) -> None:
    _, svg = _plan(pools)
    root = ET.fromstring(svg)
    width, height = float(root.get("width", 0)), float(root.get("height", 0))
    texts = list(root.iter(f"{SVG}text"))
    assert any(t.get("class") == "step" for t in texts)
    for text in texts:
        for x, y in _corners(text):
            assert -0.5 <= x <= width + 0.5 and -0.5 <= y <= height + 0.5, text.text
    for group in _panels(root).values():
        frame = _rect(next(r for r in group.iter(f"{SVG}rect") if r.get("class") == "panel"))
        for text in group.iter(f"{SVG}text"):
            for x, y in _corners(text):
                assert frame[0] <= x <= frame[2] and frame[1] <= y <= frame[3], text.text


def test_pools_do_not_overlap_and_each_has_its_own_lines() -> None:
    pools = [Pool("fast", 8192), Pool("big", 65536)]
    plan, svg = _plan(pools)
    assert plan.pool_sizes["big"] > 0  # the picture really has two used pools
    panels = _panels(ET.fromstring(svg))
    assert list(panels) == ["fast", "big"]
    frames = []
    for name, group in panels.items():
        frames.append(_rect(next(r for r in group.iter(f"{SVG}rect") if r.get("class") == "panel")))
        inside = [b for b in BUFFERS if plan.placement(b.name).pool == name]
        lines = {line.get("class"): line for line in group.iter(f"{SVG}line")}
        bound = lines["lower-bound"]
        # The pool's own bound, not the whole model's, drawn at the top of its live bytes.
        assert int(bound.get("data-bytes", -1)) == activation_lower_bound(inside)
        assert activation_lower_bound(inside) < plan.lower_bound
        live = next(p for p in group.iter(f"{SVG}polyline") if p.get("class") == "live")
        ys = [float(point.split(",")[1]) for point in (live.get("points") or "").split()]
        assert min(ys) == pytest.approx(float(bound.get("y1", 0)), abs=0.11)
        texts = " ".join(t.text or "" for t in group.iter(f"{SVG}text"))
        assert f"pool {name}: {plan.pool_sizes[name]} B used" in texts
        assert f"lower bound {activation_lower_bound(inside)}" in texts
        if name == "fast":  # a limit near the used bytes is drawn to scale
            assert int(lines["limit"].get("data-bytes", -1)) == 8192
            assert float(lines["limit"].get("y1", 0)) < float(bound.get("y1", 0))
        else:  # 65536 is far above what is used: said in the title, not squashing boxes
            assert "limit" not in lines and "limit 65536 B (above the scale)" in texts
    (_, top0, _, bottom0), (_, top1, _, _) = frames
    assert bottom0 < top1 and top0 >= 0


def test_boxes_show_the_source_name_or_a_short_tag() -> None:
    _, svg = _plan([Pool("fast", 8192), Pool("big", 65536)])
    root = ET.fromstring(svg)
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any(t.startswith("model/layer_skip/Relu6: 3000 bytes") for t in titles)
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert "model/layer_skip/Relu6" in texts  # wide enough for the whole name
    pools = [Pool("ram", None)]
    plan = plan_memory(BUFFERS, pools)
    long_names = {b.name: "layer_" * 60 + b.name for b in BUFFERS}
    svg = render_svg(plan, BUFFERS, pools, STEPS, long_names, {"a": "#0"})
    texts = {t.text for t in ET.fromstring(svg).iter(f"{SVG}text")}
    assert "#0" in texts  # too narrow for the name: the producing operator's number


def test_build_writes_the_same_picture_as_inspect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["build", str(EXAMPLE), "--board", "host", "-o", str(out), "--no-build", "-q"]
    assert main([*argv, "--pool", "fast:1K", "--pool", "big:1M"]) == 0
    built = (out / "memory.svg").read_text()
    assert main(["inspect", str(out), "--svg", str(tmp_path / "again.svg")]) == 0
    capsys.readouterr()
    assert built == (tmp_path / "again.svg").read_text()
    assert set(_panels(ET.fromstring(built))) == {"fast", "big"}
