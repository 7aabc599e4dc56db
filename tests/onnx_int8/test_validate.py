"""`aot validate` on int8 ONNX models: onnxruntime runs them with its integer kernels (full
graph optimisation), so a QDQ build compares exactly, not against a float path."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aot.validate import ValidationReport
from tests.onnx_int8.helpers import quantize, small_cnn

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.toolchain
@pytest.mark.parametrize("fmt", ["qdq", "qop"])
def test_validate_compares_an_int8_onnx_build_exactly(fmt: str, tmp_path: Path) -> None:
    from aot.testing.harness import build

    if shutil.which("gcc") is None:
        pytest.skip("gcc not found on PATH (bash scripts/setup.sh installs it)")
    model = quantize(small_cnn(tmp_path / "cnn.onnx"), tmp_path / "q.onnx", fmt, "int8", True)
    folder = build(model, tmp_path / "out", "host")
    result = subprocess.run(
        [sys.executable, "-m", "aot", "validate", str(folder), str(model), "-n", "30", "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = ValidationReport.from_json(json.loads(result.stdout))
    assert report.passed and report.samples == report.samples_passed == 30
    assert all(out.exact == 30 and out.max_abs_error == 0 for out in report.outputs)
    assert "integer kernels" in report.reference, report.reference
