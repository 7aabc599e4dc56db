"""The four MLPerf Tiny reference models with each ISA's kernels (``--kernels <isa>``) on
the emulated boards of that ISA, bit-exact with LiteRT: the shipped input on every
board, and seeded random inputs in one QEMU session on the first board: 8 in the default
run (slow), the issue's 200 in the soak tier (bash scripts/test.sh -m soak tests/kernels)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from aot.kernels import ISAS, variants
from aot.library import read_metadata
from aot.testing import run_tflite_reference
from aot.testing.harness import build, random_inputs, run_many
from aot.testing.shared import shared_dir

pytestmark = [pytest.mark.toolchain, pytest.mark.emulator]

MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = ["ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"]
# The emulated boards whose core runs each ISA; the first takes the random inputs.
BOARDS = {"scalar": ["mps2_an385"], "dsp": ["mps2_an386", "mps2_an500"], "mve": ["mps3_an547"]}
SOAK_INPUTS = int(os.environ.get("AOT_EMULATOR_RANDOM_INPUTS", "200"))
QUICK_INPUTS = 8
SEED = 2026

_built: dict[tuple[str, str, str], Path] = {}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    def get(isa: str, board: str, model: str) -> Path:
        if not variants(isa):
            pytest.skip(f"no {isa} kernels yet")
        key = (isa, board, model)
        if key not in _built:
            out = tmp_path_factory.mktemp(f"{isa}_{board}_{model}")
            _built[key] = build(MODELS_DIR / f"{model}.tflite", out / "b", board, "--kernels", isa)
        return _built[key]

    return get


CASES = [(isa, board) for isa in ISAS for board in BOARDS[isa]]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("isa", "board"), CASES)
def test_reference_output_is_exact(isa: str, board: str, model: str, folder) -> None:  # type: ignore[no-untyped-def]
    built = folder(isa, board, model)
    ran = {op["implementation"] for op in read_metadata(built)["operators"]}
    assert any(name.endswith(f"_{isa}") for name in ran), ran
    x = np.load(MODELS_DIR / f"{model}.input.npy")
    (got,) = run_many(built, [[x]])[0]
    np.testing.assert_array_equal(got, np.load(MODELS_DIR / f"{model}.output.npy"))


def _random_inputs_are_exact(isa: str, model: str, folder, count: int) -> None:  # type: ignore[no-untyped-def]
    built = folder(isa, BOARDS[isa][0], model)
    batches = random_inputs(read_metadata(built)["inputs"], count, SEED)
    model_path = MODELS_DIR / f"{model}.tflite"
    for index, (batch, outputs) in enumerate(zip(batches, run_many(built, batches), strict=True)):
        expected = run_tflite_reference(model_path, batch)
        for got, want in zip(outputs, expected, strict=True):
            assert np.array_equal(got, want), f"{model} with {isa} kernels: input {index} differs"


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("isa", ISAS)
def test_random_inputs_are_exact(isa: str, model: str, folder) -> None:  # type: ignore[no-untyped-def]
    _random_inputs_are_exact(isa, model, folder, QUICK_INPUTS)


@pytest.mark.soak
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("isa", ISAS)
def test_200_random_inputs_are_exact(isa: str, model: str, folder) -> None:  # type: ignore[no-untyped-def]
    _random_inputs_are_exact(isa, model, folder, SOAK_INPUTS)
