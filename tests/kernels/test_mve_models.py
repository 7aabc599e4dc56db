"""The four MLPerf Tiny reference models with ``--kernels mve`` on mps3_an547 (QEMU):
the shipped input gives exactly the shipped LiteRT output, every convolution, depthwise
and fully connected operator ran on a Helium kernel, and 200 seeded random inputs per
model match LiteRT's reference kernels (one build and one QEMU session per model)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from aot.testing.harness import build, random_inputs, run_many
from aot.testing.shared import shared_dir
from aot.validate.reference import TFLiteReference

pytestmark = [pytest.mark.toolchain, pytest.mark.emulator, pytest.mark.slow]

MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = ["kws_ref_model", "vww_96_int8", "pretrainedResnet_quant", "ad01_int8"]
BOARD = "mps3_an547"
RANDOM_INPUTS = int(os.environ.get("AOT_EMULATOR_RANDOM_INPUTS", "200"))
SEED = 2026
MVE_KINDS = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mve_models")
    return {
        m: build(MODELS_DIR / f"{m}.tflite", root / m, BOARD, "--kernels", "mve") for m in MODELS
    }


@pytest.mark.parametrize("model", MODELS)
def test_reference_output_exact_with_mve_kernels(built: dict[str, Path], model: str) -> None:
    folder = built[model]
    x = np.load(MODELS_DIR / f"{model}.input.npy")
    (got,) = run_many(folder, [[x]])[0]
    np.testing.assert_array_equal(got, np.load(MODELS_DIR / f"{model}.output.npy"))
    metadata = json.loads((folder / "metadata.json").read_text())
    assert metadata["kernels"] == {"choice": "mve", "isas": ["mve"]}
    for op in metadata["operators"]:
        types = {s["type"] for s in op["source_operators"]}
        if types & MVE_KINDS:
            assert op["implementation"].endswith("_s8_mve"), (op["name"], op["implementation"])


def test_random_inputs_match_litert_with_mve_kernels(built: dict[str, Path]) -> None:
    for model in MODELS:
        folder = built[model]
        metadata = json.loads((folder / "metadata.json").read_text())
        batches = random_inputs(metadata["inputs"], RANDOM_INPUTS, SEED)
        results = run_many(folder, batches, timeout=600)
        reference = TFLiteReference(MODELS_DIR / f"{model}.tflite")  # loaded once
        for i, (inputs, outputs) in enumerate(zip(batches, results)):
            expected = reference.run(inputs)
            for got, want in zip(outputs, expected):
                assert np.array_equal(got, want), f"{model}: random input {i} differs"
