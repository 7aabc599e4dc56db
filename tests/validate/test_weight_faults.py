"""``aot validate`` with its default inputs catches one weight moved by 60 steps.

The model (tests/fixtures/validate/saturating_classifier.tflite, made by
scripts/make_saturating_classifier.py and tuned nowhere else) is a classifier whose softmax
saturates on full-range random inputs: they all give one and the same output, so a
comparison over them alone passes whatever the weights. For every int8 constant array of
the model, one at a time, one weight (seeded position) is moved by 60 steps; the firmware
built from that model must fail validation against the original.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from validate_helpers import int8_constant_arrays, moved_weight

from aot.testing.harness import build

pytestmark = [pytest.mark.toolchain, pytest.mark.slow]

CHECKOUT = Path(__file__).resolve().parents[2]
MODEL = CHECKOUT / "tests" / "fixtures" / "validate" / "saturating_classifier.tflite"


def validate(folder: Path, model: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "aot", "validate", str(folder), str(model), "--json", "-q"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_full_range_inputs_alone_would_miss_everything() -> None:
    from aot.testing import run_tflite_reference

    rng = np.random.default_rng(0)
    outputs = {
        run_tflite_reference(MODEL, [rng.integers(-128, 128, (1, 24, 16, 1), np.int8)])[0].tobytes()
        for _ in range(20)
    }
    assert len(outputs) == 1  # saturated: the old default inputs told nothing


def test_one_weight_moved_by_60_steps_is_caught_in_every_array(tmp_path: Path) -> None:
    arrays = int8_constant_arrays(MODEL)
    assert len(arrays) >= 4  # conv, depthwise, pointwise and dense weights
    missed = []
    for seed, (name, offset, count) in enumerate(arrays):
        faulty = tmp_path / f"faulty_{seed}.tflite"
        position, value = moved_weight(MODEL, offset, count, faulty, seed)
        folder = build(faulty, tmp_path / f"build_{seed}")
        report = validate(folder, MODEL)
        if report["passed"]:
            missed.append(f"{name}[{position}] -> {value}")
    assert missed == [], f"validate's default inputs missed: {missed}"
