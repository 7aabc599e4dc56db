"""Float32 models (TFLite and ONNX) compiled for the host match their reference runtimes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from aot.testing import TFLiteModelBuilder, run_onnx_reference, run_tflite_reference
from aot.testing.harness import build, run_many

pytestmark = pytest.mark.toolchain

RTOL = 1e-5
ATOL = 1e-6
rng = np.random.default_rng(7)


def weights(*shape: int, scale: float = 0.3) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def single_op(
    op: str,
    in_shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    constants: list[np.ndarray | None] = (),
    options: dict | None = None,
    second_input: bool = False,
) -> bytes:
    b = TFLiteModelBuilder()
    x = b.add_input("x", in_shape, "float32")
    inputs = [x]
    if second_input:
        inputs.append(b.add_input("y", in_shape, "float32"))
    for index, const in enumerate(constants):
        inputs.append(-1 if const is None else b.add_constant(f"c{index}", const))
    out = b.add_tensor("out", out_shape, "float32")
    b.add_operator(op, inputs=inputs, outputs=[out], options=options or {})
    b.mark_output(out)
    return b.build()


TFLITE_MODELS: dict[str, Callable[[], bytes]] = {
    "conv2d": lambda: single_op(
        "CONV_2D",
        (1, 9, 9, 3),
        (1, 5, 5, 4),
        [weights(4, 3, 3, 3), weights(4)],
        {"padding": "SAME", "stride_w": 2, "stride_h": 2, "fused_activation_function": "RELU"},
    ),
    "depthwise_conv2d": lambda: single_op(
        "DEPTHWISE_CONV_2D",
        (1, 8, 8, 4),
        (1, 8, 8, 4),
        [weights(1, 3, 3, 4), weights(4)],
        {"padding": "SAME", "depth_multiplier": 1, "fused_activation_function": "RELU6"},
    ),
    "fully_connected": lambda: single_op(
        "FULLY_CONNECTED", (2, 16), (2, 5), [weights(5, 16), weights(5)]
    ),
    "average_pool": lambda: single_op(
        "AVERAGE_POOL_2D",
        (1, 8, 8, 3),
        (1, 4, 4, 3),
        [],
        {"filter_width": 2, "filter_height": 2, "stride_w": 2, "stride_h": 2},
    ),
    "max_pool": lambda: single_op(
        "MAX_POOL_2D",
        (1, 8, 8, 3),
        (1, 3, 3, 3),
        [],
        {"filter_width": 3, "filter_height": 3, "stride_w": 2, "stride_h": 2},
    ),
    "add": lambda: single_op("ADD", (1, 4, 4, 3), (1, 4, 4, 3), second_input=True),
    "mul": lambda: single_op("MUL", (1, 4, 4, 3), (1, 4, 4, 3), second_input=True),
    "concatenation": lambda: single_op(
        "CONCATENATION", (1, 4, 4, 3), (1, 4, 4, 6), second_input=True, options={"axis": 3}
    ),
    "reshape": lambda: single_op(
        "RESHAPE",
        (1, 4, 4, 3),
        (1, 48),
        [np.array([1, 48], dtype=np.int32)],
        {"new_shape": [1, 48]},
    ),
    "softmax": lambda: single_op("SOFTMAX", (1, 10), (1, 10), options={"beta": 1.0}),
    "relu": lambda: single_op("RELU", (1, 4, 4, 3), (1, 4, 4, 3)),
    "relu6": lambda: single_op("RELU6", (1, 4, 4, 3), (1, 4, 4, 3)),
}


def check_against(reference: Callable, model_path, folder, specs: list[tuple], count: int = 3):
    batches = []
    for seed in range(count):
        r = np.random.default_rng(seed)
        batches.append([(r.standard_normal(shape) * 3).astype(np.float32) for shape in specs])
    got = run_many(folder, batches)
    for inputs, outputs in zip(batches, got, strict=True):
        expected = reference(model_path, inputs)
        assert len(outputs) == len(expected)
        for actual, wanted in zip(outputs, expected, strict=True):
            np.testing.assert_allclose(actual, wanted, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", sorted(TFLITE_MODELS))
def test_tflite_float_operator(name: str, tmp_path) -> None:
    model = tmp_path / f"{name}.tflite"
    model.write_bytes(TFLITE_MODELS[name]())
    folder = build(model, tmp_path / "out")
    import json

    specs = [
        tuple(s["shape"]) for s in json.loads((folder / "metadata.json").read_text())["inputs"]
    ]
    check_against(run_tflite_reference, model, folder, specs)


def onnx_cnn() -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    inits = {
        "W": weights(8, 3, 3, 3),
        "B": weights(8, scale=0.1),
        "DW": weights(8, 1, 3, 3),
        "W2": weights(8, 16, 1, 1),
        "FC": weights(128, 10, scale=0.1),
        "lo": np.array(0, np.float32),
        "hi": np.array(6, np.float32),
        "shape": np.array([1, 128], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "DW"], ["c2"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"]),
        helper.make_node("Add", ["r2", "r1"], ["a"]),
        helper.make_node("Mul", ["a", "r1"], ["m"]),
        helper.make_node("MaxPool", ["m"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["m"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Concat", ["p", "p2"], ["cc"], axis=1),
        helper.make_node("Conv", ["cc", "W2"], ["cc2"]),
        helper.make_node("Reshape", ["cc2", "shape"], ["f"]),
        helper.make_node("MatMul", ["f", "FC"], ["fc"]),
        helper.make_node("Softmax", ["fc"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString()


def onnx_gemm() -> bytes:
    import onnx  # noqa: F401
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "W", "B"], ["g"], transB=1),
            helper.make_node("Relu", ["g"], ["y"]),
        ],
        "gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 7])],
        [numpy_helper.from_array(weights(7, 20), "W"), numpy_helper.from_array(weights(7), "B")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


@pytest.mark.parametrize(
    ("name", "make", "shape"),
    [("cnn", onnx_cnn, (1, 3, 16, 16)), ("gemm", onnx_gemm, (3, 20))],
)
def test_onnx_float_model(name: str, make: Callable[[], bytes], shape, tmp_path) -> None:
    model = tmp_path / f"{name}.onnx"
    model.write_bytes(make())
    folder = build(model, tmp_path / "out")
    check_against(run_onnx_reference, model, folder, [shape])


def test_shipped_float_example(tmp_path) -> None:
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples"
    folder = build(examples / "tiny_kws_float.tflite", tmp_path / "out")
    x = np.load(examples / "tiny_kws_float.input.npy")
    (got,) = run_many(folder, [[x]])[0]
    np.testing.assert_allclose(
        got, np.load(examples / "tiny_kws_float.output.npy"), rtol=RTOL, atol=ATOL
    )
