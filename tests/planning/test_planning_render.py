"""The SVG picture of a plan."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from aot.planning import Buffer, Pool, activation_lower_bound, plan_memory
from aot.planning.render import render_svg

pytestmark = pytest.mark.unit

SVG = "{http://www.w3.org/2000/svg}"


def test_svg_has_a_box_per_buffer_a_panel_per_pool_and_the_lower_bound() -> None:
    buffers = [
        Buffer("conv<1>", 4096, 0, 1),
        Buffer("relu&out", 4096, 1, 2),
        Buffer("fc", 2048, 2, 3),
        Buffer("big", 20000, 0, 3),
    ]
    pools = [Pool("fast", 16 * 1024), Pool("sram", None)]
    plan = plan_memory(buffers, pools, "greedy_by_size")
    svg = render_svg(plan, buffers, pools, step_names=["conv", "relu", "fc", "softmax"])
    root = ET.fromstring(svg)  # well-formed, names escaped
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    for b in buffers:
        assert any(t.startswith(f"{b.name}: {b.size} bytes") for t in titles)
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "pool fast" in texts and "pool sram" in texts
    # Each panel its own bound (not the model's), and a limit line for the bounded pool.
    for pool in pools:
        inside = [b for b in buffers if plan.placement(b.name).pool == pool.name]
        assert f"lower bound {activation_lower_bound(inside)}" in texts
    assert "softmax" in texts
    kinds = sorted(line.get("class", "") for line in root.iter(f"{SVG}line"))
    assert kinds == ["limit", "lower-bound", "lower-bound"]
    assert render_svg(plan, buffers, pools) == render_svg(plan, buffers, pools)  # stable


def test_empty_plan_renders() -> None:
    plan = plan_memory([], [Pool("sram", None)])
    ET.fromstring(render_svg(plan, [], [Pool("sram", None)]))
