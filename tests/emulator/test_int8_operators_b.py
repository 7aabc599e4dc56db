"""The int8 operators of issue 13's group B in one small model on mps2_an386 under QEMU,
bit-exact with LiteRT's reference kernels (the stateful SVDF has its own file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulator_helpers import require_tools

from aot.testing.harness import build, run_many
from aot.testing.reference import run_tflite_reference
from tests.int8.harness import random_input
from tests.int8.int16_models import fc_16x8_model
from tests.int8.math_models import matmul_exp_rsqrt_model

pytestmark = pytest.mark.emulator


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")


def test_batch_matmul_exp_and_rsqrt_on_the_m4(tmp_path: Path) -> None:
    path = tmp_path / "matmul_exp_rsqrt.tflite"
    path.write_bytes(matmul_exp_rsqrt_model())
    folder = build(path, tmp_path / "out", "mps2_an386")
    rng = np.random.default_rng(21)
    batches = [[random_input(rng, (2, 3, 8))] for _ in range(10)]
    results = run_many(folder, batches)
    for inputs, outputs in zip(batches, results, strict=True):
        np.testing.assert_array_equal(outputs[0], run_tflite_reference(path, inputs)[0])


def test_fully_connected_16x8_on_the_m4(tmp_path: Path) -> None:
    """int16 activations, an int64 and an int32 bias, double requantization in software
    floating point on the Cortex-M4F."""
    path = tmp_path / "fc16.tflite"
    path.write_bytes(fc_16x8_model())
    folder = build(path, tmp_path / "out", "mps2_an386")
    rng = np.random.default_rng(22)
    batches = [[random_input(rng, (2, 16), "int16")] for _ in range(10)]
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        np.testing.assert_array_equal(outputs[0], run_tflite_reference(path, inputs)[0])
