"""Acceptance 2 with the example NPU: an NPU region smaller than what its operators need.

A test-local copy of mps2_an386 gives the example NPU a PSRAM of 49.5 KiB (50688 bytes)
that holds workspace only: less than kws's weights (26672 B) and the tensors of its
first NPU step (24490 B at once) together. So the weights stay in ``ssram1``, which the
NPU does not reach: without copies the build fails naming a constant, the NPU step and
the memory; a pool too small for the step's tensors fails naming the pool and the
tensors; with ``--allow-copies`` each NPU step's weights are copied into the PSRAM just
before it, and the model runs bit-exact under QEMU. The device model's region is that
49.5 KiB (board data), so an operand anywhere else would fail the run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from aot.boards import BOARDS_DIR
from aot.errors import PlanningError
from aot.library import read_metadata
from aot.testing.harness import build, run_many
from aot.testing.shared import mlperf_tiny

NPU = "example_npu"
REGION = 50688


@pytest.fixture
def small_board(tmp_path: Path) -> str:
    data = yaml.safe_load((BOARDS_DIR / "mps2_an386.yaml").read_text())
    (psram,) = [m for m in data["memories"] if m["name"] == "psram"]
    psram.update(size=REGION, holds=["workspace"])
    path = tmp_path / "board" / "mps2_an386.yaml"  # a board file is named after its board
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _build(board: str, out: Path, *extra: str) -> Path:
    model = mlperf_tiny("kws_ref_model")
    return build(model, out, board, "--accelerator", NPU, "--name", "kws", *extra)


@pytest.mark.unit
def test_weights_out_of_the_small_region_fail_naming_them(small_board, tmp_path: Path) -> None:
    with pytest.raises(PlanningError) as info:
        _build(small_board, tmp_path / "out", "--no-build")
    message = str(info.value)
    assert "\n" not in message and message.startswith("constant 'tensor_1_const_1'")
    assert "on example_npu, which cannot reach the constants memory 'ssram1' (cpu)" in message
    assert "--allow-copies" in message


@pytest.mark.unit
def test_a_pool_too_small_for_a_step_fails_naming_pool_and_tensors(
    small_board, tmp_path: Path
) -> None:
    """Step 0 needs 24490 bytes of NPU memory at once (its scratch, its output, the
    staged input), however the copies are placed."""
    with pytest.raises(PlanningError) as info:
        _build(small_board, tmp_path / "out", "--no-build", "--allow-copies",
               "--pool", "ssram23:1M", "--pool", "psram:20K")  # fmt: skip
    message = str(info.value)
    assert "\n" not in message and "pool 'psram' (20480 bytes)" in message
    assert "scratch_0 (16000 bytes)" in message and "(with --allow-copies)" in message


@pytest.mark.emulator
@pytest.mark.toolchain
def test_copies_into_the_small_region_run_bit_exact(small_board, tmp_path: Path) -> None:
    for tool in ("arm-none-eabi-gcc", "make", "qemu-system-arm"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (scripts/setup.sh installs it)")
    folder = _build(small_board, tmp_path / "out", "--allow-copies")
    x = np.load(mlperf_tiny("kws_ref_model", ".input.npy"))
    (outputs,) = run_many(folder, [[x]])
    np.testing.assert_array_equal(outputs[0], np.load(mlperf_tiny("kws_ref_model", ".output.npy")))

    metadata = read_metadata(folder)
    memory = metadata["memory"]
    (psram,) = [p for p in memory["pools"] if p["name"] == "psram"]
    assert psram["used_bytes"] <= REGION < metadata["constants"]["bytes"] + 24490
    # Every constant an NPU step reads is staged: copied from ssram1 just before it.
    copied = {c["src"] for c in memory["copies"]}
    npu_steps = [op["index"] for op in metadata["operators"] if op["backend"] == NPU]
    staged = [b for b in memory["buffers"] if "copy_of" in b]
    assert {b["copy_of"] for b in staged} == copied and {b["pool"] for b in staged} == {"psram"}
    assert all(c["before_step"] in npu_steps for c in memory["copies"])
    assert any(c["src"].startswith("tensor_1_const") for c in memory["copies"])
