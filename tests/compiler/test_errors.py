"""Bad input gives one clear line, a category exit code, and leaves no output folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aot.testing import TFLiteModelBuilder
from aot.testing import tflite_builder as tb

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def aot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aot", *args], capture_output=True, text=True, timeout=300
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int, *words: str):
    assert result.returncode == code, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def build_fails(tmp_path: Path, model: Path, code: int, *words: str, extra=()) -> None:
    out = tmp_path / "out"
    result = aot("build", str(model), "--board", "host", "-o", str(out), *extra)
    assert_one_line_error(result, code, *words)
    assert not out.exists()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    assert leftovers == []


def test_not_a_model(tmp_path: Path) -> None:
    model = tmp_path / "notes.tflite"
    model.write_text("these are my notes, not a model\n" * 4)
    build_fails(tmp_path, model, 3, "is not a TFLite model", "notes.tflite")


def test_truncated_tflite(tmp_path: Path) -> None:
    data = (EXAMPLES / "tiny_kws_int8.tflite").read_bytes()
    model = tmp_path / "cut.tflite"
    model.write_bytes(data[: len(data) // 2])
    build_fails(tmp_path, model, 3, "truncated or corrupt", "cut.tflite")


def test_truncated_onnx(tmp_path: Path) -> None:
    from tests.compiler.test_float_models import onnx_gemm

    data = onnx_gemm()
    model = tmp_path / "cut.onnx"
    model.write_bytes(data[: len(data) - 40])
    build_fails(tmp_path, model, 3, "not a valid ONNX model")


def test_unsupported_operator_is_named_with_its_position(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(tb.OPERATORS, "RNN", tb.OperatorSpec(None))
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "float32")
    y = b.add_tensor("y", (1, 4), "float32")
    z = b.add_tensor("z", (1, 4), "float32")
    b.add_operator("RELU", inputs=[x], outputs=[y])
    b.add_operator("RNN", inputs=[y], outputs=[z])
    b.mark_output(z)
    model = tmp_path / "rnn.tflite"
    model.write_bytes(b.build())
    build_fails(tmp_path, model, 4, "operator #1 RNN", "not supported")


def test_dynamic_shape(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    )
    model = tmp_path / "dyn.onnx"
    model.write_bytes(helper.make_model(graph).SerializeToString())
    build_fails(tmp_path, model, 4, "dynamic shape", "'x'")


def test_existing_output_needs_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = aot(
        "build", str(EXAMPLES / "tiny_kws_float.tflite"), "--board", "host", "-o", str(out)
    )
    assert_one_line_error(result, 2, "already exists", "--force")
    assert (out / "keep.txt").read_text() == "mine"


def test_missing_model_file(tmp_path: Path) -> None:
    build_fails(tmp_path, tmp_path / "nope.tflite", 2, "does not exist")


def test_bad_pool_option(tmp_path: Path) -> None:
    build_fails(
        tmp_path, EXAMPLES / "tiny_kws_float.tflite", 2, "NAME:SIZE", extra=("--pool", "sram=12")
    )


def test_model_that_does_not_fit_its_pool(tmp_path: Path) -> None:
    build_fails(
        tmp_path, EXAMPLES / "tiny_kws_float.tflite", 5, "tiny", extra=("--pool", "tiny:64")
    )


def test_verbose_shows_traceback(tmp_path: Path) -> None:
    model = tmp_path / "x.tflite"
    model.write_bytes(b"\0" * 64)
    result = aot("-v", "build", str(model), "--board", "host", "-o", str(tmp_path / "o"))
    assert result.returncode == 3
    assert "Traceback" in result.stderr


def test_run_rejects_wrong_input_shape(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert (
        aot(
            "build", str(EXAMPLES / "tiny_kws_float.tflite"), "--board", "host", "-o", str(out)
        ).returncode
        == 0
    )
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((1, 3), np.float32))
    result = aot("run", str(out), "-i", str(bad))
    assert_one_line_error(result, 2, "shape", "(1, 16, 16, 1)")
