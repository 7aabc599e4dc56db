"""The indexing, shape and resource-variable operators on mps2_an386 under QEMU,
bit-exact with LiteRT's reference kernels: one model with EMBEDDING_LOOKUP (plain and
hybrid), DYNAMIC_UPDATE_SLICE, CUMSUM, SHAPE and BROADCAST_ARGS; the int8 CUMSUM against
TensorFlow Lite Micro's interpreter; and a running accumulator in a resource variable (CALL_ONCE,
VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE) over several inferences and a reset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulator_helpers import require_tools

from aot.testing.harness import build, run_many, run_session
from aot.testing.reference import TFLMReference, run_tflite_reference
from tests.int8.harness import random_input
from tests.int8.indexing_models import (
    CUMSUM_INT8,
    accumulator_model,
    cumsum_int8_model,
    fresh_litert_session,
    indexing_inputs,
    indexing_model,
    session_plan,
)

pytestmark = pytest.mark.emulator

BOARD = "mps2_an386"


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")


@pytest.mark.slow
def test_indexing_model_on_the_m4(tmp_path: Path) -> None:
    path = tmp_path / "indexing.tflite"
    path.write_bytes(indexing_model())
    # Its hybrid lookup's float32 output would make --frontend auto pick the float frontend.
    folder = build(path, tmp_path / "out", BOARD, "--frontend", "tflite-int8")
    rng = np.random.default_rng(25)
    batches = [indexing_inputs(rng) for _ in range(10)]
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        expected = run_tflite_reference(path, inputs)
        assert len(outputs) == len(expected) == 4
        for actual, reference in zip(outputs, expected, strict=True):
            np.testing.assert_array_equal(actual, reference)


@pytest.mark.slow
def test_int8_cumsum_on_the_m4_follows_the_reference_kernel(tmp_path: Path) -> None:
    """LiteRT registers no int8 CUMSUM, so the board is checked against TFLite Micro's
    interpreter, as the VM tests are."""
    path = tmp_path / "cumsum_int8.tflite"
    path.write_bytes(cumsum_int8_model())
    folder = build(path, tmp_path / "out", BOARD)
    reference = TFLMReference(path)
    rng = np.random.default_rng(27)
    batches = [[random_input(rng, CUMSUM_INT8["shape"])] for _ in range(10)]
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        for actual, expected in zip(outputs, reference.run(inputs), strict=True):
            np.testing.assert_array_equal(actual, expected)


@pytest.mark.slow
def test_resource_variable_on_the_m4_is_bit_exact_and_resets(tmp_path: Path) -> None:
    data = accumulator_model("int8", (2, 3))
    path = tmp_path / "accumulator.tflite"
    path.write_bytes(data)
    folder = build(path, tmp_path / "out", BOARD)
    plan = session_plan(np.random.default_rng(26), (2, 3), "int8")
    actual = [o[0] for o in run_session(folder, plan)]
    expected = fresh_litert_session(data, plan)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert np.array_equal(a, e), (step, a, e)
    assert [a.tobytes() for a in actual[5:]] == [a.tobytes() for a in actual[:3]]
