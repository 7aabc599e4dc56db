"""Helpers for the aot validate tests: models with the right signature but wrong weights,
a small float ONNX model, and the CLI run in a subprocess (exit status and stdout)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_INT8 = REPO / "examples" / "tiny_kws_int8.tflite"


def aot(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "aot", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )


def with_other_weights(model: Path, out: Path) -> Path:
    """A copy of a TFLite model whose largest constant buffer has every byte inverted:
    the same inputs and outputs (names, dtypes, shapes, quantization), other weights."""
    import tflite

    data = bytearray(model.read_bytes())
    flat = tflite.Model.GetRootAs(bytes(data), 0)
    largest = max(
        (flat.Buffers(i) for i in range(flat.BuffersLength())),
        key=lambda buffer: buffer.DataLength(),
    )
    weights = largest.DataAsNumpy().tobytes()
    offset = data.find(weights)
    assert offset >= 0 and data.find(weights, offset + 1) < 0, "weights not found once"
    data[offset : offset + len(weights)] = bytes(b ^ 0xFF for b in weights)
    out.write_bytes(bytes(data))
    return out


def float_onnx(path: Path, seed: int = 3) -> Path:
    """A small float32 ONNX network (Conv, Relu, MatMul, Add, Softmax); ``seed`` picks its
    weights, so two seeds give two models with one signature."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits = {
        "W": (rng.standard_normal((4, 2, 3, 3)) * 0.4).astype(np.float32),
        "B": (rng.standard_normal(4) * 0.1).astype(np.float32),
        "shape": np.array([1, 4 * 6 * 6], np.int64),
        "M": (rng.standard_normal((4 * 6 * 6, 5)) * 0.2).astype(np.float32),
        "C": (rng.standard_normal(5) * 0.1).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["f"]),
        helper.make_node("MatMul", ["f", "M"], ["m"]),
        helper.make_node("Add", ["m", "C"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5]),
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 5]),
        ],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what onnxruntime reads
    path.write_bytes(model.SerializeToString())
    return path


# One weight moved: the faults aot validate must catch (test_weight_faults, test_layers).
STEPS = 60


def int8_constant_arrays(model: Path) -> list[tuple[str, int, int]]:
    """(tensor name, offset of its data in the file, element count) per int8 constant."""
    import tflite

    data = model.read_bytes()
    flat = tflite.Model.GetRootAs(data, 0)
    graph = flat.Subgraphs(0)
    found = []
    for index in range(graph.TensorsLength()):
        tensor = graph.Tensors(index)
        if tensor.Type() != tflite.TensorType.INT8:
            continue
        values = flat.Buffers(tensor.Buffer()).DataAsNumpy()
        if isinstance(values, int) or values.size == 0:
            continue  # not a constant
        offset = data.find(values.tobytes())
        assert offset >= 0 and data.find(values.tobytes(), offset + 1) < 0
        found.append((tensor.Name().decode(), offset, int(values.size)))
    return found


def moved_weight(model: Path, offset: int, count: int, out: Path, seed: int) -> tuple[int, int]:
    """A copy of ``model`` with one weight of the array at ``offset`` moved by STEPS
    (towards zero when moving away would leave int8); returns (position, new value)."""
    data = bytearray(model.read_bytes())
    position = int(np.random.default_rng(seed).integers(count))
    stored = data[offset + position]
    old = stored - 256 if stored > 127 else stored
    new = old + STEPS if old + STEPS <= 127 else old - STEPS
    data[offset + position] = new & 0xFF
    out.write_bytes(bytes(data))
    return position, new


def consumers(model: Path, tensor_name: str) -> list[int]:
    """Indices of the operators of ``model`` that read the tensor of that name."""
    import tflite

    graph = tflite.Model.GetRootAs(model.read_bytes(), 0).Subgraphs(0)
    names = [graph.Tensors(i).Name().decode() for i in range(graph.TensorsLength())]
    return [
        k
        for k in range(graph.OperatorsLength())
        if any(names[i] == tensor_name for i in graph.Operators(k).InputsAsNumpy() if i >= 0)
    ]
