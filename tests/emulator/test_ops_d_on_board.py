"""The group-D operators of issue 13 (one model using all of them: comparisons, logical
operators, SELECT_V2, REDUCE_MIN) on mps2_an386 under QEMU, bit-exact with LiteRT's
reference kernels on random inputs in one session."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from emulator_helpers import require_tools

from aot.testing.harness import build, run_many
from aot.testing.reference import run_tflite_reference
from tests.int8.logic_models import OPERATORS, multi_operator_model, random_inputs

pytestmark = pytest.mark.emulator


def test_group_d_operators_are_bit_exact_on_m4(tmp_path: Path) -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")
    model = tmp_path / "ops_d.tflite"
    model.write_bytes(multi_operator_model())
    folder = build(model, tmp_path / "out", "mps2_an386")
    imported = json.loads((folder / "metadata.json").read_text())["model"]["source_operators"]
    assert set(OPERATORS) <= {op["type"] for op in imported}
    batches = random_inputs(np.random.default_rng(13), 30)
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        for got, want in zip(outputs, run_tflite_reference(model, inputs), strict=True):
            np.testing.assert_array_equal(got, want)
