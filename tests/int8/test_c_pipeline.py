"""The int8 importer through the whole C pipeline (lower, plan, codegen, host build, run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.testing.harness import build, run_many
from aot.testing.reference import run_tflite_reference

MODELS_DIR = Path("/work/shared/models/mlperf_tiny")
MODELS = ["ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"]

pytestmark = [
    pytest.mark.toolchain,
    pytest.mark.skipif(not MODELS_DIR.is_dir(), reason="MLPerf Tiny models not present"),
]


@pytest.mark.parametrize("name", MODELS)
def test_generated_c_is_bit_exact(name: str, tmp_path: Path) -> None:
    model = MODELS_DIR / f"{name}.tflite"
    folder = build(model, tmp_path / "out", "host", "--frontend", "tflite-int8")
    x = np.load(MODELS_DIR / f"{name}.input.npy")
    rng = np.random.default_rng(7)
    batches = [[x]] + [[rng.integers(-128, 128, x.shape, dtype=np.int8)] for _ in range(10)]
    results = run_many(folder, batches)
    np.testing.assert_array_equal(results[0][0], np.load(MODELS_DIR / f"{name}.output.npy"))
    for inputs, outputs in zip(batches, results):
        np.testing.assert_array_equal(outputs[0], run_tflite_reference(model, inputs)[0])
