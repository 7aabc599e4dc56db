"""Capacity at plan time (issue 19 point 6): constants and the NPU's pool in one memory.

A test-local copy of mps2_an386 gives the example NPU a PSRAM that may hold workspace and
constants. ``--accelerator example_npu`` alone puts both there (the NPU reads its weights
where it reaches); when they do not fit together, ``--no-build`` fails before anything is
compiled, naming the memory, what went there with sizes and the options that fix it, and
the first of those options then plans.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aot.boards import BOARDS_DIR
from aot.errors import PlanningError
from aot.library import read_metadata
from aot.testing.harness import build
from aot.testing.shared import mlperf_tiny

pytestmark = pytest.mark.unit


def _board(folder: Path, size: int) -> str:
    data = yaml.safe_load((BOARDS_DIR / "mps2_an386.yaml").read_text())
    (psram,) = [m for m in data["memories"] if m["name"] == "psram"]
    psram.update(size=size, holds=["workspace", "constants"])
    path = folder / "mps2_an386.yaml"  # a board file is named after its board
    folder.mkdir()
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _build(board: str, out: Path, *extra: str) -> Path:
    model = mlperf_tiny("kws_ref_model")
    return build(model, out, board, "--accelerator", "example_npu", "--name", "kws", *extra)


def test_constants_and_pool_over_a_32k_psram_fail_before_compiling(tmp_path: Path) -> None:
    board = _board(tmp_path / "board", 32 * 1024)
    with pytest.raises(PlanningError) as info:
        _build(board, tmp_path / "out", "--no-build")
    assert str(info.value) == (
        "memory 'psram' of board 'mps2_an386' (32768 bytes) cannot hold what the plan puts "
        "in it: constants 26672 B + pool 'psram' 24496 B = 51168 B, 18400 bytes over; move "
        "the constants with --constants-memory ssram1 --allow-copies (example_npu cannot "
        "reach it); or give pool 'psram' at most 5K (--pool psram:5K with the other pools, "
        "and --allow-copies)"
    )
    assert not (tmp_path / "out").exists()


def test_the_option_the_error_names_plans(tmp_path: Path) -> None:
    """At 49.5 KiB the weights and the first NPU step's tensors do not fit together, but
    the step's tensors and its weights copied in just before it do."""
    board = _board(tmp_path / "board", 50688)
    with pytest.raises(PlanningError) as info:
        _build(board, tmp_path / "out", "--no-build")
    message = str(info.value)
    assert "\n" not in message and "constants 26672 B + pool 'psram' 24496 B" in message
    fix = "--constants-memory ssram1 --allow-copies"
    assert f"move the constants with {fix} (example_npu cannot reach it)" in message

    folder = _build(board, tmp_path / "fixed", "--no-build", *fix.split())
    metadata = read_metadata(folder)
    assert metadata["constants"]["memory"] == "ssram1"
    (psram,) = [p for p in metadata["memory"]["pools"] if p["name"] == "psram"]
    assert 0 < psram["used_bytes"] <= 50688
    assert any(c["src"].startswith("tensor_1_const") for c in metadata["memory"]["copies"])
