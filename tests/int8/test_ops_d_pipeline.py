"""The group-D operators through the whole C pipeline on the host, bit-exact with LiteRT:
bool tensors between operators in the generated C."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.testing.harness import build, run_many
from aot.testing.reference import run_tflite_reference
from tests.int8.logic_models import multi_operator_model, random_inputs

pytestmark = pytest.mark.toolchain


def test_multi_operator_model_is_bit_exact_on_the_host(tmp_path: Path) -> None:
    model = tmp_path / "ops_d.tflite"
    model.write_bytes(multi_operator_model())
    folder = build(model, tmp_path / "out", "host")
    batches = random_inputs(np.random.default_rng(17), 20)
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        for got, want in zip(outputs, run_tflite_reference(model, inputs), strict=True):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
