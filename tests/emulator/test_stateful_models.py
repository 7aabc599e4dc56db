"""Stateful models (SVDF) on mps2_an386 under QEMU: several inferences carry the state in
the persistent pool exactly as LiteRT's interpreter carries it across invoke() calls,
and the RESET command restores it (docs/memory_planning.md, "The persistent pool")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulator_helpers import require_tools

from aot.testing.harness import build, run_session
from tests.int8.svdf_models import litert_session, session_plan, svdf_keyword_model, svdf_model

pytestmark = pytest.mark.emulator

BOARD = "mps2_an386"


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")


def _model(name: str) -> tuple[bytes, tuple[int, ...]]:
    if name == "svdf_keyword":
        return svdf_keyword_model(), (1, 20)
    # Two batches, rank 3, no bias: the other branches of the kernels.
    rng = np.random.default_rng(41)
    return svdf_model(rng, batch=2, depth=10, filters=9, memory=7, rank=3, bias=False), (2, 10)


@pytest.mark.parametrize("name", ["svdf_keyword", "svdf_batched"])
def test_svdf_state_on_the_m4_is_bit_exact_and_resets(name: str, tmp_path: Path) -> None:
    data, shape = _model(name)
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    folder = build(path, tmp_path / "out", BOARD)
    plan = session_plan(17, shape)
    actual = [o[0] for o in run_session(folder, plan)]
    expected = litert_session(data, plan)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert np.array_equal(a, e), (step, a, e)
    assert [a.tobytes() for a in actual[6:]] == [a.tobytes() for a in actual[:3]]
