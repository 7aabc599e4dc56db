"""The Keras -> TFLite converter fixtures (tests/fixtures/converters/tflite/, made by
scripts/make_converter_models.py) and their reference runtime."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from aot.testing import run_tflite_reference
from aot.testing.reference import TFLMReference

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "converters" / "tflite"

# Fixtures LiteRT's reference kernels cannot run, checked against TensorFlow Lite Micro's
# interpreter instead (name -> why). None today: every converted fixture loads in LiteRT
# (the 16x8 UNIDIRECTIONAL_SEQUENCE_LSTM it lacks is not made: the converter crashes on
# Keras 3's LSTM, models.json "not_converted").
TFLM_REFERENCE: dict[str, str] = {}

# Host builds of more than this many multiply-accumulates, parameters or operators (the
# unrolled GRU: ~170) take 10-60 s each: marked slow.
SLOW_MACS = 5_000_000
SLOW_PARAMETERS = 500_000
SLOW_OPERATORS = 120


@cache
def manifest() -> dict:
    return json.loads((FIXTURES / "models.json").read_text())


def entries() -> list[dict]:
    return list(manifest()["models"])


def entry(name: str) -> dict:
    return next(m for m in entries() if m["name"] == name)


def model_path(name: str) -> Path:
    return FIXTURES / f"{name}.tflite"


def is_slow(name: str) -> bool:
    from aot.frontend.tflite_file import read_tflite

    model = entry(name)
    if model["macs"] > SLOW_MACS or model["parameters"] > SLOW_PARAMETERS:
        return True
    return len(read_tflite(model_path(name)).operators) > SLOW_OPERATORS


def reference_outputs(name: str, batches: Sequence[Sequence[np.ndarray]]) -> list[list[np.ndarray]]:
    """The reference outputs of each input set: LiteRT's reference kernels, or TFLite
    Micro's interpreter for the fixtures in TFLM_REFERENCE."""
    path = model_path(name)
    if name in TFLM_REFERENCE:
        interpreter = TFLMReference(path)
        return [interpreter.run(list(inputs)) for inputs in batches]
    return [run_tflite_reference(path, list(inputs)) for inputs in batches]


def differing_inputs(
    results: Sequence[Sequence[np.ndarray]], expected: Sequence[Sequence[np.ndarray]]
) -> list[int]:
    """Indexes of the input sets whose outputs are not all bit-equal to the reference."""
    return [
        index
        for index, (got, want) in enumerate(zip(results, expected, strict=True))
        if len(got) != len(want)
        or not all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(got, want))
    ]
