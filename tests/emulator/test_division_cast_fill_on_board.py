"""ADD_N, DIV, ELU, CAST, ZEROS_LIKE, FILL and REDUCE_ALL (issue 13) on mps2_an386 under QEMU:
the LiteRT-dtype model bit-exact with LiteRT's kernels, the TFLite-Micro-only dtypes
(int8 ADD_N and ZEROS_LIKE) with the transcription of TFLite Micro's kernel, each over
random inputs in one session."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from emulator_helpers import require_tools

from aot.testing.harness import build, run_many
from tests.int8.division_cast_fill_models import (
    litert_model,
    litert_model_inputs,
    run_litert_builtin,
    tflm_dtypes_expected,
    tflm_dtypes_model,
)
from tests.int8.harness import random_input

pytestmark = pytest.mark.emulator

BOARD = "mps2_an386"
# int32 inputs and outputs: --frontend auto would pick the float frontend.
FRONTEND = ("--frontend", "tflite-int8")


def _build(model: bytes, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(model)
    return build(path, tmp_path / name, BOARD, *FRONTEND)


def _operators(folder: Path) -> set[str]:
    metadata = json.loads((folder / "metadata.json").read_text())
    return {op["type"] for op in metadata["model"]["source_operators"]}


@pytest.mark.parametrize("name", ["litert_dtypes", "tflm_dtypes"])
def test_division_cast_fill_models_are_bit_exact_on_m4(name: str, tmp_path: Path) -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")
    rng = np.random.default_rng(31)
    if name == "litert_dtypes":
        model = litert_model()
        folder = _build(model, tmp_path, name)
        expected_ops = {"ADD_N", "CAST", "DIV", "ELU", "FILL", "REDUCE_ALL", "ZEROS_LIKE"}
        batches = [litert_model_inputs(rng) for _ in range(20)]
        expected = [run_litert_builtin(model, inputs) for inputs in batches]
    else:
        folder = _build(tflm_dtypes_model(), tmp_path, name)
        expected_ops = {"ADD_N", "ZEROS_LIKE"}
        batches = [[random_input(rng, (4, 10)), random_input(rng, (4, 10))] for _ in range(20)]
        expected = [tflm_dtypes_expected(*inputs) for inputs in batches]
    assert expected_ops <= _operators(folder)
    for outputs, wanted in zip(run_many(folder, batches), expected, strict=True):
        for got, want in zip(outputs, wanted, strict=True):
            np.testing.assert_array_equal(got, want)
