"""`aot build` with pools that leave buffers out of reach: one error line saying what to
do, and a folder whose metadata.json says where each operator runs and who touches what."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tiny_kws_int8.tflite"

pytestmark = pytest.mark.unit


def _aot(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "aot", *args], capture_output=True, text=True, env=env, cwd=ROOT
    )


def test_no_pool_the_cpu_reaches_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    pools = ["--pool", "npu_sram:64K:npu"]
    done = _aot(
        "build", str(EXAMPLE), "-o", str(out), "--board", "host", "--no-build", "-q", *pools
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    line = lines[0]
    assert line.startswith("error: buffer 'tensor_")
    assert "on cpu" in line and "(CONV_2D #0)" in line
    assert "no pool is reachable by cpu at all: pools 'npu_sram' (npu)" in line
    assert "--pool NAME:SIZE:cpu" in line and "Traceback" not in done.stderr
    assert not out.exists()


def test_metadata_says_where_operators_run_and_who_touches_buffers(tmp_path: Path) -> None:
    out = tmp_path / "out"
    pools = ["--pool", "fast:64K:cpu,npu", "--allow-copies"]
    done = _aot(
        "build", str(EXAMPLE), "-o", str(out), "--board", "host", "--no-build", "-q", *pools
    )
    assert done.returncode == 0, done.stderr
    metadata = json.loads((out / "metadata.json").read_text())
    assert all(op["target"] == "cpu" and op["backend"] == "cpu" for op in metadata["operators"])
    memory = metadata["memory"]
    assert memory["allow_copies"] is True and memory["copies"] == []
    assert memory["pools"][0]["targets"] == ["cpu", "npu"]
    for buffer in memory["buffers"]:
        assert buffer["targets"] == ["cpu"]
        steps = [u["step"] for u in buffer["touched_by"]]
        assert steps and steps[0] == buffer["start"] and steps[-1] <= buffer["end"]
        assert all(u["label"].startswith(f"step {u['step']} (") for u in buffer["touched_by"])


def test_inspect_reads_targets_and_users_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    pools = ["--pool", "fast:64K:cpu,npu"]
    done = _aot(
        "build", str(EXAMPLE), "-o", str(out), "--board", "host", "--no-build", "-q", *pools
    )
    assert done.returncode == 0, done.stderr
    shown = _aot("inspect", str(out), "--no-svg")
    assert shown.returncode == 0, shown.stderr
    metadata = json.loads((out / "metadata.json").read_text())
    assert f"runs on: {len(metadata['operators'])} on cpu" in shown.stdout
    assert "touched by" in shown.stdout and "cpu 0,1 " in shown.stdout
    report = json.loads(_aot("inspect", str(out), "--no-svg", "--json").stdout)
    touched = [b["touched_by"] for p in report["pools"] for b in p["buffers"]]
    assert touched and all(t and all(u["target"] == "cpu" for u in t) for t in touched)
    assert report["pools"][0]["forced_lower_bound_bytes"] == report["pools"][0]["used_bytes"]
