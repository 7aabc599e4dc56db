"""The int8 importer through the whole C pipeline (lower, plan, codegen, host build, run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.testing.harness import build, run_many
from aot.testing.reference import run_tflite_reference
from aot.testing.shared import MLPERF_TINY, mlperf_tiny, shared_dir

MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = list(MLPERF_TINY)

pytestmark = pytest.mark.toolchain


@pytest.mark.parametrize("name", MODELS)
def test_generated_c_is_bit_exact(name: str, tmp_path: Path) -> None:
    model = mlperf_tiny(name)
    folder = build(model, tmp_path / "out", "host", "--frontend", "tflite-int8")
    x = np.load(MODELS_DIR / f"{name}.input.npy")
    rng = np.random.default_rng(7)
    batches = [[x]] + [[rng.integers(-128, 128, x.shape, dtype=np.int8)] for _ in range(10)]
    results = run_many(folder, batches)
    np.testing.assert_array_equal(results[0][0], np.load(MODELS_DIR / f"{name}.output.npy"))
    for inputs, outputs in zip(batches, results):
        np.testing.assert_array_equal(outputs[0], run_tflite_reference(model, inputs)[0])
