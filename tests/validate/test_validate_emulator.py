"""The acceptance run: aot validate on the four MLPerf Tiny models on mps2_an386 (QEMU,
Cortex-M4F), 100 random input sets each in one QEMU session, 100/100 exact against
LiteRT's reference kernels; a wrong reference fails.

Measured on the shared 2-core CI machine (100 inputs with the build, under load): ad01
~9-14 s, kws ~9-20 s, resnet ~50-90 s, vww ~175-225 s. So ad01 and kws run by default in
this tier and resnet and vww in the soak tier (their bit-exactness on the board is in the
default run through tests/kernels/test_models.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from validate_helpers import aot, with_other_weights

from aot.testing.harness import build
from aot.testing.shared import mlperf_tiny

pytestmark = [pytest.mark.emulator, pytest.mark.toolchain]

BOARD = "mps2_an386"
COUNT = 100


@pytest.fixture(autouse=True)
def _tools() -> None:
    for name in ("arm-none-eabi-gcc", "make", "qemu-system-arm"):
        if shutil.which(name) is None:
            pytest.skip(f"{name} not found on PATH (bash scripts/setup.sh installs it)")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            out = tmp_path_factory.mktemp(name) / "out"
            cache[name] = build(mlperf_tiny(name), out, BOARD)
        return cache[name]

    return get


def check_exact(folder: Path, name: str) -> None:
    result = aot("validate", folder, mlperf_tiny(name), "-n", COUNT, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["board"] == BOARD and report["passed"] is True
    assert report["samples"] == report["samples_passed"] == COUNT
    for out in report["outputs"]:
        assert (out["exact"], out["max_abs_error"], out["first_mismatch"]) == (COUNT, 0, None)


@pytest.mark.parametrize("name", ["ad01_int8", "kws_ref_model"])
def test_100_random_inputs_exact(built, name: str) -> None:
    check_exact(built(name), name)


# Four to five minutes of the default suite's CPU for what tests/kernels/test_models.py
# and tests/emulator already check on these two models (bit-exact on their boards): the
# soak tier (bash scripts/test.sh -m soak tests/validate).
@pytest.mark.soak
@pytest.mark.parametrize("name", ["pretrainedResnet_quant", "vww_96_int8"])
def test_100_random_inputs_exact_large_models(built, name: str) -> None:
    check_exact(built(name), name)


def test_another_model_is_a_one_line_error(built) -> None:
    """kws_ref_model given as the reference of the ad01 build: nothing like its inputs."""
    result = aot("validate", built("ad01_int8"), mlperf_tiny("kws_ref_model"))
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"error: reference {mlperf_tiny('kws_ref_model')}: input 0 'input_1' is "
        "int8[-1, 49, 10, 1], the built model's 'input_1' is int8[1, 640]; give the model "
        "the folder was built from"
    )


def test_same_signature_other_weights_fails(built, tmp_path: Path) -> None:
    wrong = with_other_weights(mlperf_tiny("kws_ref_model"), tmp_path / "kws_wrong.tflite")
    result = aot("validate", built("kws_ref_model"), wrong, "-n", "10")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert f"note: {wrong} is not the model" in result.stdout
    assert lines[-1].startswith("FAIL: ") and lines[-1].endswith(
        " of 10 input sets outside the tolerance"
    )
    assert any(
        line.startswith("first failure of 'Identity': input ") and "--fill spread --seed" in line
        for line in lines
    )
