"""Who reaches which pool on a board: the board's accelerators, used by aot build."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aot.boards import BOARDS_DIR
from aot.planning.model import PoolSpec
from aot.planning.pools_file import targets_reaching, with_reach

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tiny_kws_int8.tflite"


@pytest.mark.unit
def test_pools_gain_the_targets_that_reach_their_memory() -> None:
    pools = (PoolSpec("blockram", 16384), PoolSpec("psram", None, ("cpu", "dma")))
    reaches = {"npu": ("psram", "ssram1")}
    assert with_reach(pools, reaches) == (
        PoolSpec("blockram", 16384, ("cpu",)),
        PoolSpec("psram", None, ("cpu", "dma", "npu")),
    )
    assert targets_reaching("ssram1", reaches) == ("cpu", "npu")
    assert targets_reaching("ssram23", reaches) == ("cpu",)


def _board(tmp_path: Path, memories: list[str]) -> Path:
    """mps2_an386 with tinynpu declared, reaching ``memories`` (a copy; the shipped file
    is not touched)."""
    data = yaml.safe_load((BOARDS_DIR / "mps2_an386.yaml").read_text())
    data["accelerators"] = [{"name": "tinynpu", "memories": memories}]
    path = tmp_path / "mps2_an386.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _build(plugin_env, tmp_path: Path, board: Path, *extra: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "aot", "build", str(EXAMPLE), "-o", str(tmp_path / "out")]
    argv += ["--board", str(board), "--accelerator", "tinynpu", "--no-build", "-q", *extra]
    return subprocess.run(argv, capture_output=True, text=True, env=plugin_env, cwd=ROOT)


@pytest.mark.unit
def test_build_places_what_tinynpu_touches_where_it_reaches(plugin_env, tmp_path: Path) -> None:
    board = _board(tmp_path, ["psram", "ssram1"])
    pools = ["--pool", "blockram:16K", "--pool", "psram:1M"]
    done = _build(plugin_env, tmp_path, board, *pools)
    assert done.returncode == 0, done.stderr
    metadata = json.loads((tmp_path / "out" / "metadata.json").read_text())
    targets = {p["name"]: p["targets"] for p in metadata["memory"]["pools"]}
    assert targets == {"blockram": ["cpu"], "psram": ["cpu", "tinynpu"]}
    assert metadata["memory"]["constants_targets"] == ["cpu", "tinynpu"]  # ssram1
    on_npu = {op["index"] for op in metadata["operators"] if op["target"] == "tinynpu"}
    assert on_npu
    for buffer in metadata["memory"]["buffers"]:
        if any(u["step"] in on_npu for u in buffer["touched_by"]):
            assert buffer["pool"] == "psram" and "tinynpu" in buffer["targets"]


@pytest.mark.unit
def test_constants_out_of_the_accelerators_reach(plugin_env, tmp_path: Path) -> None:
    board = _board(tmp_path, ["psram"])  # not ssram1, where the constants go
    done = _build(plugin_env, tmp_path, board, "--pool", "psram:1M")
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: constant 'tensor_")
    assert "which cannot reach the constants memory 'ssram1' (cpu)" in line
    assert "--allow-copies" in line
    done = _build(plugin_env, tmp_path, board, "--pool", "psram:1M", "--allow-copies", "--force")
    assert done.returncode == 0, done.stderr
    memory = json.loads((tmp_path / "out" / "metadata.json").read_text())["memory"]
    assert memory["copies"] and all(c["dst"].endswith("__copy0") for c in memory["copies"])
    source = (tmp_path / "out" / "model" / "src").glob("*.c")
    assert any("aot_platform_copy(" in f.read_text() for f in source)


@pytest.mark.emulator
def test_copies_run_bit_exact_in_firmware_under_qemu(plugin_env, tmp_path: Path) -> None:
    """tinynpu's buffers in a pool the CPU may not use, its constants staged out of flash:
    the firmware's copy steps (the runtime's weak memcpy) keep the outputs exact."""
    import numpy as np

    board = _board(tmp_path, ["psram"])
    pools = ["--pool", "ssram23:256K", "--pool", "psram:1M:tinynpu", "--allow-copies"]
    argv = [sys.executable, "-m", "aot", "build", str(EXAMPLE), "-o", str(tmp_path / "out")]
    argv += ["--board", str(board), "--accelerator", "tinynpu", "-q", *pools]
    built = subprocess.run(argv, capture_output=True, text=True, env=plugin_env, cwd=ROOT)
    assert built.returncode == 0, built.stderr
    memory = json.loads((tmp_path / "out" / "metadata.json").read_text())["memory"]
    targets = {p["name"]: p["targets"] for p in memory["pools"]}
    assert targets == {"ssram23": ["cpu"], "psram": ["tinynpu"]}
    assert any(c["src"].startswith("tensor_") and "const" not in c["src"] for c in memory["copies"])
    assert any("const" in c["src"] for c in memory["copies"])  # staged out of ssram1
    argv = [sys.executable, "-m", "aot", "run", str(tmp_path / "out"), "-q"]
    argv += ["-i", str(EXAMPLE.with_suffix(".input.npy")), "--save", str(tmp_path / "res")]
    ran = subprocess.run(argv, capture_output=True, text=True, env=plugin_env, cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    got = np.load(tmp_path / "res" / "output_0.npy")
    expected = np.load(EXAMPLE.with_suffix(".output.npy"))
    np.testing.assert_array_equal(got, expected.reshape(got.shape))
