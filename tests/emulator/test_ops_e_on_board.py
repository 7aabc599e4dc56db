"""The operators of issue 13's group E in one small model on mps2_an386 under QEMU,
bit-exact with LiteRT's reference kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulator_helpers import require_tools

from aot.testing.harness import build, run_many
from aot.testing.reference import run_tflite_reference
from tests.int8.harness import random_input
from tests.int8.transpose_norm_models import conv_16x8_chain_model, ops_e_model

pytestmark = pytest.mark.emulator


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")


@pytest.mark.slow
def test_ops_e_model_on_the_m4(tmp_path: Path) -> None:
    path = tmp_path / "ops_e.tflite"
    path.write_bytes(ops_e_model())
    folder = build(path, tmp_path / "out", "mps2_an386")
    rng = np.random.default_rng(23)
    batches = [[random_input(rng, (1, 3, 4, 3))] for _ in range(10)]
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        expected = run_tflite_reference(path, inputs)
        assert len(outputs) == len(expected) == 2
        for actual, reference in zip(outputs, expected, strict=True):
            np.testing.assert_array_equal(actual, reference)


@pytest.mark.slow
def test_conv_16x8_model_on_the_m4(tmp_path: Path) -> None:
    """int16 activations through a CONV_2D and a DEPTHWISE_CONV_2D (int64 accumulators)
    and a MUL."""
    path = tmp_path / "conv16.tflite"
    path.write_bytes(conv_16x8_chain_model())
    folder = build(path, tmp_path / "out", "mps2_an386")
    rng = np.random.default_rng(24)
    batches = [[random_input(rng, (1, 5, 5, 2), "int16")] for _ in range(10)]
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        np.testing.assert_array_equal(outputs[0], run_tflite_reference(path, inputs)[0])
