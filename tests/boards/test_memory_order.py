"""A model that fits the board builds with the defaults (issue 17): the constants go to the
first memory in the board's order that may hold them and has room (fast first), and a
memory that overflows only at link time is named with the option that moves what aot
put there, never ``--pool`` when no pool is there."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from aot.boards import BOARDS_DIR
from aot.errors import PlanningError
from aot.library import read_metadata
from aot.testing import run_tflite_reference
from aot.testing.harness import build, random_inputs, run_many
from aot.testing.shared import mlperf_tiny

ROOT = Path(__file__).resolve().parents[2]
MOBILENET = ROOT / "tests/fixtures/converters/tflite/mobilenet_v2_035_96_int8_fixed.tflite"


def _require(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (scripts/setup.sh installs it)")


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MobileNetV2 0.35 at 96x96 (1.78 MB of int8 weights, past the 512 KiB ITCM) built
    with --board mps3_an547 and nothing else."""
    _require("arm-none-eabi-gcc", "make", "qemu-system-arm")
    if not MOBILENET.is_file():
        pytest.fail(f"{MOBILENET} is missing (scripts/make_converter_models.py makes it)")
    return build(MOBILENET, tmp_path_factory.mktemp("mobilenet") / "out", "mps3_an547")


@pytest.mark.emulator
@pytest.mark.slow
def test_mobilenet_v2_builds_with_the_board_alone(mobilenet: Path) -> None:
    metadata = read_metadata(mobilenet)
    # ITCM is first and may hold constants, but 512 KiB is too small: the 2 MiB SRAM next.
    assert metadata["constants"]["memory"] == "sram"
    assert metadata["constants"]["section_bytes"] > 512 * 1024
    assert metadata["build"]["executable"]


@pytest.mark.emulator
@pytest.mark.slow
def test_mobilenet_v2_runs_bit_exact_on_mps3_an547(mobilenet: Path) -> None:
    batches = random_inputs(read_metadata(mobilenet)["inputs"], 2, seed=17)
    results = run_many(mobilenet, batches, timeout=600)
    for inputs, outputs in zip(batches, results, strict=True):
        (want,) = run_tflite_reference(MOBILENET, inputs)
        np.testing.assert_array_equal(outputs[0], want)
        assert len(np.unique(want)) > 10  # a real spread of logits, not a constant output


@pytest.mark.toolchain
def test_code_and_constants_over_the_itcm_name_the_constants_memory(tmp_path: Path) -> None:
    """kws's constants (34960 B with the Helium kernels' layouts) fit a 48 KiB ITCM alone,
    so the plan keeps them there; with the code they do not, which only the linker knows."""
    _require("arm-none-eabi-gcc", "make")
    data = yaml.safe_load((BOARDS_DIR / "mps3_an547.yaml").read_text())
    (itcm,) = [m for m in data["memories"] if m["name"] == "itcm"]
    itcm["size"] = 48 * 1024
    board = tmp_path / "board" / "mps3_an547.yaml"
    board.parent.mkdir()
    board.write_text(yaml.safe_dump(data))
    with pytest.raises(PlanningError) as info:
        build(mlperf_tiny("kws_ref_model"), tmp_path / "out", str(board))
    message = str(info.value)
    assert message.startswith(
        "the firmware does not fit memory 'itcm' of board 'mps3_an547' (49152 bytes): "
    )
    assert message.endswith(
        "bytes over at link time; it holds the code, constants 34960 B; move the constants "
        "with --constants-memory sram"
    )
    assert "\n" not in message and "--pool" not in message
