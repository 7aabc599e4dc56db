"""Frontend selection and the one-line errors of the int8 ONNX importer."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from aot.cli import main
from aot.errors import UnsupportedError
from aot.frontend import import_model
from tests.onnx_int8.helpers import make_model, quantize, small_cnn

pytestmark = pytest.mark.unit


def _tanh_qdq(path):
    """x -> Q -> DQ -> Tanh -> Q -> DQ: a QDQ group of an operator aot lacks."""
    s, z = np.float32(0.05), np.array(0, np.int8)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"]),
        helper.make_node("Tanh", ["xf"], ["sf"], name="act"),
        helper.make_node("QuantizeLinear", ["sf", "s", "z"], ["sq"]),
        helper.make_node("DequantizeLinear", ["sq", "s", "z"], ["y"]),
    ]
    return make_model(nodes, [("x", "float32", [1, 4])], [("y", "float32", [1, 4])],
                      {"s": s, "z": z}, path)  # fmt: skip


def test_auto_picks_the_int8_importer_for_quantized_onnx_only(tmp_path) -> None:
    float_model = small_cnn(tmp_path / "cnn.onnx")
    assert import_model(float_model).frontend == "relax-onnx"
    qdq = quantize(float_model, tmp_path / "qdq.onnx", "qdq", "int8", True)
    assert import_model(qdq).frontend == "aot-onnx-int8"
    qop = quantize(float_model, tmp_path / "qop.onnx", "qop", "uint8", False)
    assert import_model(qop, "onnx-int8").frontend == "aot-onnx-int8"


def test_an_operator_aot_lacks_is_named_with_its_index(tmp_path) -> None:
    with pytest.raises(UnsupportedError) as info:
        import_model(_tanh_qdq(tmp_path / "tanh.onnx"))
    message = str(info.value)
    assert "operator #2 Tanh (node 'act')" in message
    assert "docs/operators.md" in message and "\n" not in message


def test_aot_build_reports_the_error_in_one_line(tmp_path, capsys) -> None:
    code = main(["build", str(_tanh_qdq(tmp_path / "m.onnx")), "-o", str(tmp_path / "o")])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert code == UnsupportedError.exit_code
    assert len(errors) == 1 and errors[0].startswith("error: "), errors
    assert "operator #2 Tanh" in errors[0] and "Traceback" not in errors[0]


def _conv_qdq(path, activation: str | None):
    """x -> Q -> DQ -> Conv [-> Relu/Clip] -> Q -> DQ, uint8 activations, int8 weights."""
    rng = np.random.default_rng(4)
    zp = np.array(128, np.uint8)
    inits = {
        "s": np.float32(0.02), "z": zp, "ys": np.float32(0.05), "yz": np.array(100, np.uint8),
        "w": rng.integers(-60, 60, (4, 2, 3, 3), dtype=np.int8), "ws": np.float32(0.01),
        "wz": np.array(0, np.int8), "lo": np.float32(-0.5), "hi": np.float32(2.0),
    }  # fmt: skip
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"]),
        helper.make_node("Conv", ["xf", "wf"], ["c"], pads=[1, 1, 1, 1]),
    ]
    last = "c"
    if activation == "Relu":
        nodes.append(helper.make_node("Relu", ["c"], ["a"]))
        last = "a"
    elif activation == "Clip":
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["a"]))
        last = "a"
    nodes += [
        helper.make_node("QuantizeLinear", [last, "ys", "yz"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"]),
    ]
    return make_model(nodes, [("x", "float32", [1, 2, 5, 5])], [("y", "float32", [1, 4, 5, 5])],
                      inits, path)  # fmt: skip


@pytest.mark.parametrize("activation", ["Relu", "Clip"])
def test_relu_or_clip_between_conv_and_quantize_folds_into_the_range(activation, tmp_path):
    """The folded group equals onnxruntime's integer convolution with its output clamped
    to QuantizeLinear(0) (Relu) or to QuantizeLinear(-0.5), QuantizeLinear(2.0) (Clip)."""
    from tests.onnx_int8.helpers import compile_vm, ort_session, run_vm

    _, vm = compile_vm(_conv_qdq(tmp_path / "act.onnx", activation))
    plain = ort_session(_conv_qdq(tmp_path / "plain.onnx", None))
    lo, hi = (0.0, None) if activation == "Relu" else (-0.5, 2.0)
    rng = np.random.default_rng(5)
    for _ in range(10):
        x = rng.normal(0, 1.5, (1, 2, 5, 5)).astype(np.float32)
        (expected,) = plain.run(None, {"x": x})
        expected = np.maximum(expected, np.float32(lo))
        if hi is not None:
            expected = np.minimum(expected, np.float32(0.05) * np.float32(np.rint(hi / 0.05)))
        (got,) = run_vm(vm, [x])
        np.testing.assert_array_equal(got, expected)


def _qlinear_conv(path, strides=(1, 1), zero_point_dtype=np.uint8):
    inits = {
        "s": np.float32(0.02), "z": np.array(128, zero_point_dtype),
        "w": np.ones((2, 1, 3, 3), np.int8), "ws": np.float32(0.01),
        "wz": np.array(0, np.int8), "ys": np.float32(0.05), "yz": np.array(100, np.uint8),
    }  # fmt: skip
    node = helper.make_node(
        "QLinearConv", ["x", "s", "z", "w", "ws", "wz", "ys", "yz"], ["y"], strides=list(strides)
    )
    return make_model([node], [("x", "uint8", [1, 1, 5, 5])], [("y", "uint8", [1, 2, 3, 3])],
                      inits, path)  # fmt: skip


def test_damaged_models_fail_in_one_line_naming_the_operator(tmp_path) -> None:
    from aot.errors import ModelError

    with pytest.raises(ModelError, match=r"operator #0 QLinearConv: strides \[0, 1\] must be"):
        import_model(_qlinear_conv(tmp_path / "stride.onnx", strides=(0, 1)), "onnx-int8")
    with pytest.raises(UnsupportedError, match="the zero point 'z' is int32; int8 and uint8"):
        import_model(_qlinear_conv(tmp_path / "zp.onnx", zero_point_dtype=np.int32), "onnx-int8")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(_qlinear_conv(tmp_path / "ok.onnx").read_bytes()[:-40])
    with pytest.raises(ModelError, match="not a valid ONNX model") as info:
        import_model(broken, "onnx-int8")
    assert "\n" not in str(info.value)


def test_fma32_rounds_once_to_float32() -> None:
    """fma32 (QLinearAdd's fixed part) rounds the exact a*b + c once, ties to even: for
    doubles it equals numpy's float32 rounding, and it differs from two roundings."""
    from fractions import Fraction

    from aot.frontend.onnx_int8 import _round_f32, fma32

    rng = np.random.default_rng(6)
    for value in [*rng.normal(0, 1e3, 2000).tolist(), 2.0**-130, 1.5 * 2.0**-149, 3.0]:
        assert _round_f32(Fraction(value)) == float(np.float32(value)), value
    a, b, c = 1.0 + 2.0**-12, 1.0 + 2.0**-12, -1.0
    assert fma32(a, b, c) == 2.0**-11 + 2.0**-24  # exact: the product's low bit survives
    assert float(np.float32(np.float32(a) * np.float32(b)) + np.float32(c)) == 2.0**-11
