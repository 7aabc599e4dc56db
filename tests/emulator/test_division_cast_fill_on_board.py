"""ADD_N, DIV, ELU, CAST, ZEROS_LIKE, FILL and REDUCE_ALL (issue 13) on mps2_an386 under QEMU:
the LiteRT-dtype model bit-exact with LiteRT's kernels, the TFLite-Micro-only dtypes
(int8 ADD_N and ZEROS_LIKE) with TensorFlow Lite Micro's interpreter, each over
random inputs in one session."""

from __future__ import annotations

from pathlib import Path

import pytest
from emulator_helpers import require_tools

from tests.int8.division_cast_fill_models import MODEL_NAMES, assert_model_bit_exact

pytestmark = pytest.mark.emulator


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_division_cast_fill_models_are_bit_exact_on_m4(name: str, tmp_path: Path) -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")
    assert_model_bit_exact(name, "mps2_an386", tmp_path, count=20, seed=31)
