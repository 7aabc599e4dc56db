"""Float64 ONNX models compile end to end and match onnxruntime in double precision."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.frontend import import_model
from aot.testing import run_onnx_reference
from aot.testing.harness import build, random_inputs, run_many

# Float32 arithmetic anywhere (a cast, a float literal, expf) moves results by ~1e-8.
RTOL = 1e-12
ATOL = 1e-14


def float64_model() -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    inits = {
        "W1": rng.standard_normal((12, 8)) * 0.3,
        "B1": rng.standard_normal(8) * 0.1,
        "W2": rng.standard_normal((8, 5)) * 0.3,
        "third": np.array(1 / 3),  # not a float32 value
    }
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["m"]),
        helper.make_node("Add", ["m", "B1"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Tanh", ["a"], ["t"]),
        helper.make_node("Sigmoid", ["a"], ["s"]),
        helper.make_node("Mul", ["t", "s"], ["ts"]),
        helper.make_node("Add", ["ts", "r"], ["q"]),
        helper.make_node("Mul", ["q", "third"], ["q3"]),
        helper.make_node("Gemm", ["q3", "W2"], ["g"]),
        helper.make_node("Exp", ["g"], ["e"]),
        helper.make_node("Log", ["e"], ["l"]),
        helper.make_node("Softmax", ["l"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "float64",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 12])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 5])],
        [numpy_helper.from_array(v.astype(np.float64), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what onnxruntime reads
    return model.SerializeToString()


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "double.onnx"
    path.write_bytes(float64_model())
    return path


@pytest.mark.unit
def test_float64_onnx_imports_as_float64(model_path: Path) -> None:
    imported = import_model(model_path)
    assert [(s.name, s.dtype) for s in imported.inputs] == [("x", "float64")]
    assert [(s.name, s.dtype) for s in imported.outputs] == [("y", "float64")]


def check_board(model_path: Path, folder: Path, board: str) -> Path:
    build(model_path, folder, board)
    specs = [{"name": "x", "shape": [2, 12], "dtype": "float64"}]
    batches = random_inputs(specs, count=3, seed=5)
    for batch, outputs in zip(batches, run_many(folder, batches), strict=True):
        (expected,) = run_onnx_reference(model_path, batch)
        assert outputs[0].dtype == np.float64
        np.testing.assert_allclose(outputs[0], expected, rtol=RTOL, atol=ATOL)
    return folder


@pytest.mark.toolchain
def test_float64_onnx_matches_onnxruntime_on_host(model_path: Path, tmp_path: Path) -> None:
    folder = check_board(model_path, tmp_path / "host", "host")
    kernels = "\n".join(p.read_text() for p in (folder / "model" / "src").glob("*kernels.c"))
    # Double math calls the double libm functions, never their float versions.
    assert "double" in kernels and "float" not in kernels.replace("float64", "")
    for function in ("exp(", "tanh(", "log("):
        assert function in kernels
    assert "expf(" not in kernels and "tanhf(" not in kernels and "logf(" not in kernels


@pytest.mark.toolchain
@pytest.mark.emulator
@pytest.mark.parametrize(
    ("board", "double_math"),
    [("mps2_an386", "__aeabi_dmul"), ("mps3_an547", "vmul.f64")],  # soft doubles, dp FPU
)
def test_float64_onnx_on_cortex_m(
    model_path: Path, tmp_path: Path, board: str, double_math: str
) -> None:
    import subprocess

    from aot.building.toolchain import arm_gcc
    from aot.library import read_metadata

    folder = check_board(model_path, tmp_path / board, board)
    elf = folder / read_metadata(folder)["build"]["executable"]
    objdump = arm_gcc().with_name("arm-none-eabi-objdump")
    listing = subprocess.run(
        [str(objdump), "-d", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    assert double_math in listing


@pytest.mark.unit
def test_other_element_types_are_named(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    from aot.errors import UnsupportedError

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "half",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4])],
    )
    path = tmp_path / "half.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    with pytest.raises(UnsupportedError, match=r"element type 10 \(float16\).*convert the model"):
        import_model(path)


@pytest.mark.unit
def test_dtype_codes_agree_in_c_executor_and_protocol() -> None:
    import re

    from aot.codegen.executor import MODEL_DTYPES
    from aot.device.protocol import DTYPES

    header = Path(__file__).resolve().parents[2] / "aot/runtime_c/include/aot/model.h"
    enum = {
        name.lower(): int(code)
        for name, code in re.findall(r"AOT_DTYPE_(\w+) = (\d+)", header.read_text())
    }
    assert enum == MODEL_DTYPES
    assert {name: np.dtype(name) for name in MODEL_DTYPES} == {
        name: DTYPES[code] for name, code in MODEL_DTYPES.items()
    }
    assert MODEL_DTYPES["float64"] == 5
