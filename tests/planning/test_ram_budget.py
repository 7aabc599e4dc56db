"""aot build --ram-budget and --frontier (issue 21) without a compiler or QEMU (--no-build):
the schedule chosen fits the budget, a larger budget never picks a slower schedule, a
budget nothing reaches is one line that names the smallest RAM reachable and leaves no
folder behind, and models whose first operators gain nothing from tiles keep whole
operators (their frontier says so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aot.artifacts import read_manifest
from aot.errors import ConfigError
from aot.testing.harness import build
from aot.testing.shared import mlperf_tiny

VWW = mlperf_tiny("vww_96_int8")
M4 = "mps2_an386"


def _build(model: Path, folder: Path, *extra: str) -> Path:
    return build(model, folder, M4, "--io-in-pool", "--no-build", *extra)


def test_larger_budgets_pick_schedules_no_slower(tmp_path: Path) -> None:
    chosen = []
    for budget in ("40K", "48K", "64K"):
        schedule = read_manifest(_build(VWW, tmp_path / budget, "--ram-budget", budget)).schedule
        assert schedule is not None and schedule.ram_budget == int(budget[:-1]) * 1024
        assert schedule.ram_bytes <= schedule.ram_budget
        assert read_manifest(tmp_path / budget).memory.workspace_bytes == schedule.ram_bytes
        chosen.append(schedule)
    extra = [s.extra_instructions for s in chosen]
    assert extra[0] > extra[1] > extra[2] == 0, [s.label for s in chosen]
    assert chosen[2].stages == () and chosen[2].ram_bytes == chosen[2].whole_ram_bytes
    frontier = chosen[0].frontier
    assert [p.ram_bytes for p in frontier] == sorted((p.ram_bytes for p in frontier), reverse=True)
    assert any(p.label == chosen[0].label for p in frontier)


def test_a_budget_nothing_reaches_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        _build(VWW, tmp_path / "small", "--ram-budget", "8K")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("no schedule fits --ram-budget 8192 B: the smallest RAM")
    assert "give --ram-budget" in message
    assert not (tmp_path / "small").exists()


@pytest.mark.parametrize("model", ["kws_ref_model", "pretrainedResnet_quant"])
def test_models_without_a_gain_keep_whole_operators(model: str, tmp_path: Path) -> None:
    plain = read_manifest(_build(mlperf_tiny(model), tmp_path / "plain"))
    listed = read_manifest(_build(mlperf_tiny(model), tmp_path / "frontier", "--frontier"))
    assert plain.schedule is None
    schedule = listed.schedule
    assert schedule is not None and schedule.stages == () and schedule.label == "whole operators"
    assert listed.memory.workspace_bytes == plain.memory.workspace_bytes
    assert schedule.frontier[0].ram_bytes == plain.memory.workspace_bytes
