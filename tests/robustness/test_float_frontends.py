"""The stock Relax frontends (float TFLite, ONNX): a damaged graph is named as damaged, and
a frontend failure leaves nothing on stdout/stderr but aot's one error line."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aot.errors import ModelError
from aot.frontend import import_model
from aot.frontend.validate import DAMAGED

pytestmark = pytest.mark.unit


def _matmul_with_wrong_weights(path: Path) -> Path:
    """x [1, 4] @ w [5, 3]: a graph whose declared shapes no MatMul can compute."""
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((5, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [w],
    )
    path.write_bytes(helper.make_model(graph).SerializeToString())
    return path


def test_onnx_shape_mismatch_is_damaged(tmp_path: Path) -> None:
    path = _matmul_with_wrong_weights(tmp_path / "bad.onnx")
    with pytest.raises(ModelError, match="MatMul") as err:
        import_model(path)
    assert str(err.value).startswith(f"{path}: {DAMAGED}: ")


def test_rejected_onnx_build_prints_one_line(tmp_path: Path) -> None:
    path = _matmul_with_wrong_weights(tmp_path / "bad.onnx")
    result = subprocess.run(
        [sys.executable, "-m", "aot", "build", str(path), "--board", "host", "-o",
         str(tmp_path / "out"), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == ModelError.exit_code
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr


def test_failing_tvm_frontend_leaves_no_open_block(tmp_path: Path, capfd) -> None:
    """TVM's from_onnx raising inside its BlockBuilder: without quiet_frontend the freed
    builder logs 'BlockBuilder destroyed with remaining blocks!' and the frontend prints
    the operator's inputs on stdout."""
    import onnx
    from tvm.relax.frontend.onnx import onnx_frontend

    from aot.frontend.tvm_scope import quiet_frontend

    model = onnx.load(_matmul_with_wrong_weights(tmp_path / "bad.onnx"))
    capfd.readouterr()
    with pytest.raises(Exception, match="reduction length"), quiet_frontend():
        onnx_frontend.from_onnx(model, shape_dict={"x": [1, 4]})
    gc.collect()
    out, err = capfd.readouterr()
    assert "BlockBuilder" not in err
    assert out == ""
