"""An integer UNIDIRECTIONAL_SEQUENCE_LSTM on mps2_an386 under QEMU: its output and cell
states carry across inferences in the persistent pool exactly as LiteRT's interpreter
carries them across invoke() calls, and the RESET command restores them (the int8 output
state to its zero point). The 16x8 form is checked against TFLite Micro's interpreter,
its reference (LiteRT cannot run it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from emulator_helpers import require_tools

from aot.testing.harness import build, run_session
from tests.int8.lstm_models import int16_session_plan, lstm_model, tflm_session
from tests.int8.svdf_models import litert_session, session_plan

pytestmark = pytest.mark.emulator

BOARD = "mps2_an386"


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")


def _session_is_bit_exact(
    tmp_path: Path, data: bytes, plan: list, reference: Callable = litert_session
) -> None:
    path = tmp_path / "lstm.tflite"
    path.write_bytes(data)
    folder = build(path, tmp_path / "out", BOARD)
    actual = [o[0] for o in run_session(folder, plan)]
    expected = reference(data, plan)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert np.array_equal(a, e), (step, a, e)
    assert [a.tobytes() for a in actual[6:]] == [a.tobytes() for a in actual[:3]]


def test_lstm_states_on_the_m4_are_bit_exact_and_reset(tmp_path: Path) -> None:
    # Two batches and three time steps, peephole, a cell clip: most branches at once.
    data = lstm_model(
        np.random.default_rng(57), batch=2, steps=3, n_input=6, n_cell=5, cell_clip=3.0,
        peephole=True,
    )  # fmt: skip
    _session_is_bit_exact(tmp_path, data, session_plan(23, (2, 3, 6)))


def test_lstm_layer_norm_and_projection_on_the_m4(tmp_path: Path) -> None:
    # Layer norm on every gate, a projection to 3 outputs with bias and clip, time-major.
    data = lstm_model(
        np.random.default_rng(58), batch=2, steps=3, n_input=4, n_cell=6, time_major=True,
        layer_norm=True, projection=True, n_output=3, projection_bias=True, proj_clip=0.8,
    )  # fmt: skip
    _session_is_bit_exact(tmp_path, data, session_plan(24, (3, 2, 4)))


def test_16x8_lstm_on_the_m4_is_bit_exact_with_tflite_micro(tmp_path: Path) -> None:
    # int16 activations, two batches, time-major, a cell clip.
    data = lstm_model(
        np.random.default_rng(59), batch=2, steps=3, n_input=5, n_cell=6, time_major=True,
        cell_clip=2.5, cell_scale_log2=-12, activation_dtype="int16",
    )  # fmt: skip
    _session_is_bit_exact(tmp_path, data, int16_session_plan(25, (3, 2, 5)), tflm_session)
