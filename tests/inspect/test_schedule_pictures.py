"""``aot inspect`` of builds below the fixed-order bound (issue 21): the schedule and its
frontier as text, DIR/tiles.svg for patch stages and DIR/in_place.svg for convolutions in
place, both valid SVG whose parts say what the schedule is; the JSON report names them.
Builds with --no-build (no compiler needed)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from aot.artifacts import read_manifest
from aot.cli import main
from aot.testing.harness import build
from aot.testing.shared import mlperf_tiny

SVG = "{http://www.w3.org/2000/svg}"
M4 = "mps2_an386"


def _inspect(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["inspect", *argv]) == 0
    return capsys.readouterr().out


def _texts(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]


def test_patch_stages_print_the_schedule_and_draw_the_tiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = build(mlperf_tiny("vww_96_int8"), tmp_path / "vww", M4, "--io-in-pool",
                   "--ram-budget", "40K", "--no-build")  # fmt: skip
    schedule = read_manifest(folder).schedule
    out = _inspect(capsys, str(folder))
    assert f"schedule for --ram-budget 40960 B: {schedule.label}" in out
    assert f"* {schedule.ram_bytes:>9}" in out  # the frontier marks the one it runs
    svg = (folder / "tiles.svg").read_text()
    stage = schedule.stages[0]
    root = ET.fromstring(svg)
    # Per plane (the input, then each operator): its frame and one outline per tile.
    planes = 1 + len(stage.windows)
    assert len(list(root.iter(f"{SVG}rect"))) == planes * (1 + stage.grid[0] * stage.grid[1])
    assert any(f"{stage.grid[0]}x{stage.grid[1]} = " in t for t in _texts(svg))
    assert not (folder / "in_place.svg").exists()


def test_in_place_prints_each_step_and_draws_the_buffer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = build(mlperf_tiny("kws_ref_model"), tmp_path / "kws", M4, "--io-in-pool",
                   "--in-place", "--no-build")  # fmt: skip
    schedule = read_manifest(folder).schedule
    out = _inspect(capsys, str(folder))
    lines = [line for line in out.splitlines() if line.startswith("  in place: ")]
    assert len(lines) == len(schedule.in_place) > 1
    assert any("from the last" in line and "after its input" in line for line in lines)
    assert any("before its input" in line for line in lines)
    svg = (folder / "in_place.svg").read_text()
    texts = _texts(svg)
    titles = [t for t in texts if t.startswith("kws_ref_model: ")]
    assert 1 <= len(titles) <= 3
    for step in schedule.in_place:
        if any(step.label in t for t in titles):
            where = "after" if step.reverse else "before"
            assert any(f"output {step.shift_bytes} B {where} the input" in t for t in texts)
    assert not (folder / "tiles.svg").exists()
    assert main(["inspect", str(folder), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["in_place_svg"] == str(folder / "in_place.svg")
    assert report["tiles_svg"] is None
    assert report["schedule"]["in_place"][0]["bands"] == schedule.in_place[0].bands
