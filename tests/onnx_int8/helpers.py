"""Shared helpers for the int8 ONNX tests: build graphs with onnx.helper, quantize them
with onnxruntime's own tool, run onnxruntime and aot side by side."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)]
ELEM = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "float32": TensorProto.FLOAT,
        "int32": TensorProto.INT32}  # fmt: skip


def make_model(nodes, inputs, outputs, initializers, path: Path) -> Path:
    """Save a graph: ``inputs``/``outputs`` are (name, dtype, shape)."""
    graph = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info(n, ELEM[d], s) for n, d, s in inputs],
        [helper.make_tensor_value_info(n, ELEM[d], s) for n, d, s in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=OPSET)
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def ort_session(path: Path):
    """onnxruntime on the CPU with its full graph optimisation: QDQ groups are fused into
    the integer kernels (QLinearConv, QGemm, ...) the way a deployment runs them."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def compile_vm(path: Path):
    import tvm
    from tvm import relax

    from aot.frontend.onnx_int8 import import_onnx_int8

    imported = import_onnx_int8(path)
    executable = tvm.compile(imported.relax_module, target="llvm")
    return imported, relax.VirtualMachine(executable, tvm.cpu())


def run_vm(vm, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    import tvm

    result = vm["main"](*[tvm.runtime.tensor(np.ascontiguousarray(x)) for x in inputs])
    if hasattr(result, "numpy"):
        return [result.numpy()]
    return [r.numpy() for r in result]


def assert_same(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], what: str) -> None:
    assert len(actual) == len(expected), what
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape, (what, a.dtype, a.shape, e.dtype, e.shape)
        if not np.array_equal(a, e):
            diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
            raise AssertionError(
                f"{what}: {int((diff > 0).sum())} of {diff.size} values differ, max {diff.max()}"
            )


def assert_matches_onnxruntime(path: Path, inputs_list: Sequence[Sequence[np.ndarray]]) -> None:
    """Every input set gives identical outputs in aot's module and in onnxruntime."""
    _, vm = compile_vm(path)
    session = ort_session(path)
    names = [i.name for i in session.get_inputs()]
    for k, inputs in enumerate(inputs_list):
        expected = session.run(None, dict(zip(names, inputs)))
        assert_same(run_vm(vm, inputs), expected, f"{path.name} input set {k}")


def random_int(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape, dtype=dtype)


# -- models quantized with onnxruntime.quantization ---------------------------------------


def small_cnn(path: Path, seed: int = 0) -> Path:
    """Conv+Relu, MaxPool, Conv+Relu, a residual Add, GlobalAveragePool, Flatten, Gemm."""
    rng = np.random.default_rng(seed)

    def f(*shape, s=0.3):
        return rng.normal(0, s, shape).astype(np.float32)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Add", ["r2", "p1"], ["a1"]),
        helper.make_node("GlobalAveragePool", ["a1"], ["g"]),
        helper.make_node("Flatten", ["g"], ["fl"]),
        helper.make_node("Gemm", ["fl", "w3", "b3"], ["y"], transB=1),
    ]
    weights = {
        "w1": f(8, 3, 3, 3, s=0.5), "b1": f(8, s=0.1), "w2": f(8, 8, 3, 3), "b2": f(8, s=0.1),
        "w3": f(5, 8), "b3": f(5, s=0.1),
    }  # fmt: skip
    return make_model(nodes, [("x", "float32", [1, 3, 8, 8])], [("y", "float32", [1, 5])],
                      weights, path)  # fmt: skip


def quantize(
    float_model: Path,
    out: Path,
    fmt: str,
    activation: str,
    per_channel: bool,
    input_shape=(1, 3, 8, 8),
    seed: int = 1,
    reduce_range: bool = False,
) -> Path:
    """``quantize_static`` with a small calibration reader, as a user would run it."""
    import logging

    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    rng = np.random.default_rng(seed)
    batches = [{"x": rng.normal(0, 1, input_shape).astype(np.float32)} for _ in range(8)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.data = iter(batches)

        def get_next(self):
            return next(self.data, None)

    logging.getLogger().setLevel(logging.ERROR)  # the tool's pre-processing advice
    quantize_static(
        str(float_model), str(out), Reader(),
        quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
        activation_type=QuantType.QInt8 if activation == "int8" else QuantType.QUInt8,
        weight_type=QuantType.QInt8, per_channel=per_channel, reduce_range=reduce_range,
    )  # fmt: skip
    return out


# Where each operator takes its zero points (metadata aot folds into the code).
_ZERO_POINT_INPUTS = {
    "QuantizeLinear": (2,), "DequantizeLinear": (2,), "QLinearConv": (2, 5, 7),
    "QLinearMatMul": (2, 5, 7), "QGemm": (2, 5, 8), "QLinearAdd": (2, 5, 7),
    "QLinearGlobalAveragePool": (2, 4),
}  # fmt: skip


def int8_initializer_bytes(path: Path) -> int:
    """Bytes of the model's integer data initializers (weights int8, biases int32); zero
    points and scales are quantization parameters, not data."""
    model = onnx.load(str(path))
    zero_points = {
        node.input[i]
        for node in model.graph.node
        for i in _ZERO_POINT_INPUTS.get(node.op_type, ())
        if i < len(node.input)
    }
    total = 0
    for init in model.graph.initializer:
        array = numpy_helper.to_array(init)
        if array.dtype in (np.int8, np.uint8, np.int32) and init.name not in zero_points:
            total += array.nbytes
    return total


def mixed_model(path: Path, seed: int = 3) -> Path:
    """The other operators: Conv, Sigmoid, Mul, AveragePool, Concat, LeakyRelu, Reshape,
    MatMul, Softmax."""
    rng = np.random.default_rng(seed)

    def f(*shape, s=0.3):
        return rng.normal(0, s, shape).astype(np.float32)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c1"], ["s1"]),
        helper.make_node("Mul", ["c1", "s1"], ["m1"]),  # a SiLU
        helper.make_node("AveragePool", ["m1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxPool", ["c1"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Concat", ["p1", "p2"], ["cat"], axis=1),
        helper.make_node("LeakyRelu", ["cat"], ["lr"], alpha=0.1),
        helper.make_node("Reshape", ["lr", "shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "w2"], ["mm"]),
        helper.make_node("Softmax", ["mm"], ["y"], axis=-1),
    ]
    weights = {
        "w1": f(4, 3, 3, 3, s=0.5), "b1": f(4, s=0.1), "shape": np.array([1, 128], np.int64),
        "w2": f(128, 10, s=0.2),
    }  # fmt: skip
    return make_model(nodes, [("x", "float32", [1, 3, 8, 8])], [("y", "float32", [1, 10])],
                      weights, path)  # fmt: skip
