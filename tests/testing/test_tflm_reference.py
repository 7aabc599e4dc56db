"""aot.testing's TensorFlow Lite Micro reference: it runs a model from bytes or a file, and
a missing package is a one-line error naming the install command."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from aot.errors import ToolchainError
from aot.testing.reference import TFLMReference, run_tflm_reference
from aot.testing.tflite_builder import TFLiteModelBuilder

pytestmark = pytest.mark.unit


def _two_outputs() -> bytes:
    """ZEROS_LIKE int8 (a TFLite-Micro-only dtype) and ADD_N int8 of one input twice."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", (2, 3), "int8", scale=0.1, zero_point=0)
    zeros = b.add_tensor("zeros", (2, 3), "int8", scale=0.1, zero_point=0)
    b.add_operator("ZEROS_LIKE", [x], [zeros])
    total = b.add_tensor("total", (2, 3), "int8", scale=0.2, zero_point=0)
    b.add_operator("ADD_N", [x, x], [total])
    b.mark_output(zeros)
    b.mark_output(total)
    return b.build()


def test_runs_bytes_and_files_alike(tmp_path: Path) -> None:
    model = _two_outputs()
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    x = np.arange(-3, 3, dtype=np.int8).reshape(2, 3)
    from_bytes = run_tflm_reference(model, [x])
    from_file = TFLMReference(path).run([x])
    assert len(from_bytes) == 2
    np.testing.assert_array_equal(from_bytes[0], 0)
    np.testing.assert_array_equal(from_bytes[1], x)  # 2 x * 0.1 / 0.2, zero point 0
    for a, b in zip(from_bytes, from_file, strict=True):
        np.testing.assert_array_equal(a, b)


def test_missing_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tflite_micro.python.tflite_micro", None)
    with pytest.raises(ToolchainError) as info:
        TFLMReference(_two_outputs())
    message = str(info.value)
    assert "pip install tflite-micro" in message and "\n" not in message
