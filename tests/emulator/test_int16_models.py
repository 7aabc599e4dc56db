"""The int16 operators of issue 13 on mps2_an386 under QEMU, bit-exact with LiteRT's
reference kernels, in three small models: QUANTIZE to int16, LOGISTIC and TANH on both
scale paths, power-of-two ADD, general SUB, RELU6, SOFTMAX and DEQUANTIZE of int16; the
pools, reshapes, PAD, TRANSPOSE, STRIDED_SLICE, ABS, LEAKY_RELU, CONCATENATION and MEAN;
SLICE, SPLIT, SPLIT_V, PACK and UNPACK; MAXIMUM and MINIMUM."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulator_helpers import require_tools

from aot.testing.harness import build, run_many
from aot.testing.reference import run_tflite_reference
from tests.int8.harness import random_input
from tests.int8.int16_models import (
    int16_activations_model,
    int16_copies_model,
    int16_maximum_minimum_model,
    int16_pooling_model,
)

pytestmark = pytest.mark.emulator


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")


def _assert_bit_exact_on_the_m4(
    tmp_path: Path, data: bytes, batches: list[list[np.ndarray]], *build_args: str
) -> None:
    path = tmp_path / "int16.tflite"
    path.write_bytes(data)
    folder = build(path, tmp_path / "out", "mps2_an386", *build_args)
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        expected = run_tflite_reference(path, inputs)
        assert len(outputs) == len(expected) == 2
        for actual, reference in zip(outputs, expected, strict=True):
            np.testing.assert_array_equal(actual, reference)


def test_int16_activations_model_on_the_m4(tmp_path: Path) -> None:
    rng = np.random.default_rng(31)
    batches = [[random_input(rng, (2, 3, 8), t) for t in ("float32", "int16")] for _ in range(10)]
    # float32 at the boundary (QUANTIZE/DEQUANTIZE): --frontend auto takes the int8 importer.
    _assert_bit_exact_on_the_m4(tmp_path, int16_activations_model(), batches)


def test_int16_pooling_model_on_the_m4(tmp_path: Path) -> None:
    rng = np.random.default_rng(32)
    batches = [[random_input(rng, (1, 6, 5, 3), "int16")] for _ in range(10)]
    _assert_bit_exact_on_the_m4(tmp_path, int16_pooling_model(), batches)


def test_int16_copies_model_on_the_m4(tmp_path: Path) -> None:
    rng = np.random.default_rng(33)
    batches = [[random_input(rng, (2, 6, 4), "int16")] for _ in range(10)]
    _assert_bit_exact_on_the_m4(tmp_path, int16_copies_model(), batches)


def test_int16_maximum_minimum_model_on_the_m4(tmp_path: Path) -> None:
    rng = np.random.default_rng(33)
    batches = [[random_input(rng, (2, 3, 5), "int16"), random_input(rng, (3, 1), "int16")]
               for _ in range(6)]  # fmt: skip
    _assert_bit_exact_on_the_m4(tmp_path, int16_maximum_minimum_model(), batches)
