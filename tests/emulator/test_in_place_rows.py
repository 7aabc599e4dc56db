"""In-place convolutions under QEMU and on the host (issue 21): models whose convolutions
write their output over their input, band by band, give LiteRT's outputs bit for bit.

A converter-made MobileNetV2 with two schedules: --in-place alone (depthwise and 1x1
convolutions, bands from the first and from the last) and a --ram-budget that takes patch
stages and convolutions in place; and kws with --in-place (its depthwise and pointwise
chain, directions alternating). The DSP kernels on mps2_an386 and the plain C kernels on
the host in the default tier, and TVM's generated kernels on the host (one call, as they
are: their loop order was shown safe, aot/tir_to_c/analysis.py); the other boards
(scalar on the M3, DSP on the M7, the M33 without DSP, Helium on the M55) and TVM's
kernels on the M4 in the soak tier.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aot.artifacts import read_manifest
from aot.testing.harness import build
from aot.testing.shared import mlperf_tiny

pytestmark = [pytest.mark.emulator, pytest.mark.toolchain]

REPO = Path(__file__).resolve().parents[2]
MODEL = (
    REPO / "tests" / "fixtures" / "converters" / "tflite" / "mobilenet_v2_035_96_int8_fixed.tflite"
)
# Patch stages over operators 0-5 and one depthwise in place: below what the stages
# alone reach (59,952 B on mps2_an386).
BUDGET = "57400"
SCHEDULES = {"in_place": ("--in-place",), "budget": ("--ram-budget", BUDGET)}
KWS = mlperf_tiny("kws_ref_model")


@pytest.fixture(autouse=True)
def _tools() -> None:
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found on PATH (bash scripts/setup.sh installs it)")


def _validate(folder: Path, model: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "aot", "validate", str(folder), str(model), "-q", "-n", "3"],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip


def _check(board: str, schedule: str, folder: Path, *extra: str, model: Path = MODEL) -> None:
    folder = build(model, folder, board, "--io-in-pool", *SCHEDULES[schedule], *extra)
    manifest = read_manifest(folder)
    assert manifest.schedule is not None and manifest.schedule.in_place, manifest.schedule
    assert manifest.memory.workspace_bytes < manifest.schedule.whole_ram_bytes
    if schedule == "budget":
        assert manifest.schedule.stages
        assert manifest.memory.workspace_bytes <= int(BUDGET)
    result = _validate(folder, model)
    assert result.returncode == 0, result.stderr + result.stdout


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_in_place_on_the_m4_equals_litert(schedule: str, tmp_path: Path) -> None:
    _check("mps2_an386", schedule, tmp_path / schedule)


def test_kws_in_place_on_the_m4_equals_litert(tmp_path: Path) -> None:
    _check("mps2_an386", "in_place", tmp_path / "kws", model=KWS)


def test_in_place_with_plain_c_kernels_on_the_host(tmp_path: Path) -> None:
    _check("host", "in_place", tmp_path / "host", "--kernels", "scalar")


def test_in_place_with_tvm_kernels_on_the_host(tmp_path: Path) -> None:
    """TVM's kernel runs as it is, one call, its output pointer no longer restrict."""
    _check("host", "in_place", tmp_path / "tvm", "--kernels", "tvm")
    manifest = read_manifest(tmp_path / "tvm")
    assert [s.bands for s in manifest.schedule.in_place] == [0]
    kernels = next((tmp_path / "tvm" / "model" / "src").glob("*_kernels.c")).read_text()
    signatures = [line for line in kernels.splitlines() if line.startswith("void ")]
    aliased = [line for line in signatures if "_in_place(" in line]
    assert len(aliased) == 1 and "restrict" not in aliased[0]
    assert all("restrict" in line for line in signatures if "depthwise" in line and
               line not in aliased)  # fmt: skip


@pytest.mark.soak
@pytest.mark.parametrize("board", ["mps2_an385", "mps2_an500", "mps2_an521", "mps3_an547"])
@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_in_place_on_every_board(board: str, schedule: str, tmp_path: Path) -> None:
    _check(board, schedule, tmp_path / schedule)


@pytest.mark.soak
def test_in_place_with_tvm_kernels_on_the_m4(tmp_path: Path) -> None:
    _check("mps2_an386", "in_place", tmp_path / "tvm", "--kernels", "tvm")
