"""A small CNN quantized by onnxruntime's own tool in both formats, compiled by aot and
compared with onnxruntime: in TVM (fast), as C on the host and on the Cortex-M4 board."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.onnx_int8.helpers import (
    assert_same,
    compile_vm,
    int8_initializer_bytes,
    mixed_model,
    ort_session,
    quantize,
    run_vm,
    small_cnn,
)

# (format, activations, per-channel weights): every combination quantize_static writes.
VARIANTS = [
    (fmt, act, pc) for fmt in ("qdq", "qop") for act in ("int8", "uint8") for pc in (False, True)
]


def _id(variant) -> str:
    fmt, act, pc = variant
    return f"{fmt}-{act}-{'per_channel' if pc else 'per_tensor'}"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """models(variant) -> the small CNN quantized so; models(variant, "mixed") -> the
    model of the other operators (Sigmoid, Mul, AveragePool, Concat, LeakyRelu, Softmax)."""
    folder = tmp_path_factory.mktemp("onnx_int8_models")
    float_models = {"cnn": small_cnn(folder / "cnn.onnx"), "mixed": mixed_model(folder / "m.onnx")}
    cache = {}

    def get(variant, which="cnn"):
        key = (variant, which)
        if key not in cache:
            fmt, act, pc = variant
            out = folder / f"{which}-{_id(variant)}.onnx"
            cache[key] = quantize(float_models[which], out, fmt, act, pc)
        return cache[key]

    return get


def _inputs(count: int, seed: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    # A wide spread so the input QuantizeLinear saturates on some values.
    return [[rng.normal(0, 1.5, (1, 3, 8, 8)).astype(np.float32)] for _ in range(count)]


def _expected(path, batches) -> list[list[np.ndarray]]:
    session = ort_session(path)
    return [session.run(None, {"x": b[0]}) for b in batches]


@pytest.mark.unit
@pytest.mark.parametrize("variant", VARIANTS, ids=_id)
def test_cnn_matches_onnxruntime(variant, models) -> None:
    path = models(variant)
    imported, vm = compile_vm(path)
    assert imported.frontend == "aot-onnx-int8"
    # Each QDQ group is one integer operator: no DequantizeLinear but the output's.
    fused = ["QuantizeLinear", "Conv", "MaxPool", "Conv", "Add", "GlobalAveragePool",
             "Flatten", "Gemm", "DequantizeLinear"]  # fmt: skip
    qop = ["QuantizeLinear", "QLinearConv", "MaxPool", "QLinearConv", "QLinearAdd",
           "QLinearGlobalAveragePool", "Flatten", "QGemm", "DequantizeLinear"]  # fmt: skip
    assert list(imported.operators) == (fused if variant[0] == "qdq" else qop)
    batches = _inputs(40, seed=7)
    for k, (batch, expected) in enumerate(zip(batches, _expected(path, batches))):
        assert_same(run_vm(vm, batch), expected, f"{_id(variant)} input {k}")


# onnxruntime keeps this model's int8 QDQ Conv, Sigmoid and Mul in float on x86 (its
# optimizer does not fuse them), so its output is no integer reference for that variant.
MIXED_VARIANTS = [("qdq", "uint8", True), ("qop", "int8", True), ("qop", "uint8", False)]


@pytest.mark.unit
@pytest.mark.parametrize("variant", MIXED_VARIANTS, ids=_id)
def test_model_of_the_other_operators_matches_onnxruntime(variant, models) -> None:
    path = models(variant, "mixed")
    imported, vm = compile_vm(path)
    ops = {"Sigmoid", "Mul", "AveragePool", "Concat", "LeakyRelu", "Softmax", "MatMul"}
    if variant[0] == "qop":
        ops = {"QLinear" + op for op in ops}
    assert ops <= set(imported.operators)
    batches = _inputs(40, seed=10)
    for k, (batch, expected) in enumerate(zip(batches, _expected(path, batches))):
        assert_same(run_vm(vm, batch), expected, f"mixed {_id(variant)} input {k}")


@pytest.mark.unit
@pytest.mark.parametrize("variant", VARIANTS, ids=_id)
def test_constants_and_workspace_are_near_their_bounds(variant, models, tmp_path) -> None:
    """Weights stay int8 (constants within 10% of the model's integer initializers, where
    the float frontend stores float32: 4x) and the workspace is within 5% of the planner's
    activation lower bound."""
    from aot.compiler import CompileOptions, compile_model

    path = models(variant)
    messages: list[str] = []
    meta = compile_model(path, tmp_path, CompileOptions(), progress=messages.append).metadata
    assert "imported with the aot-onnx-int8 frontend" in messages
    initializers = int8_initializer_bytes(path)
    constants = meta["constants"]["bytes"]
    assert abs(constants - initializers) <= 0.10 * initializers, (constants, initializers)
    memory = meta["memory"]
    assert memory["workspace_bytes"] <= 1.05 * memory["activation_lower_bound_bytes"], memory


HOST_VARIANTS = [
    (("qdq", "int8", True), "cnn"), (("qop", "uint8", False), "cnn"),
    (("qop", "uint8", False), "mixed"),
]  # fmt: skip


@pytest.mark.toolchain
@pytest.mark.parametrize(
    ("variant", "which"), HOST_VARIANTS, ids=["cnn-qdq-int8", "cnn-qop-uint8", "mixed-qop-uint8"]
)
def test_c_code_on_the_host_matches_onnxruntime(variant, which, models, tmp_path) -> None:
    from aot.testing.harness import build, run_many

    if shutil.which("gcc") is None:
        pytest.skip("gcc not found on PATH (bash scripts/setup.sh installs it)")
    path = models(variant, which)
    folder = build(path, tmp_path / "out", "host")
    batches = _inputs(20, seed=8)
    for k, (got, expected) in enumerate(zip(run_many(folder, batches), _expected(path, batches))):
        assert_same(got, expected, f"{_id(variant)} host input {k}")


@pytest.mark.emulator
@pytest.mark.parametrize(
    ("variant", "which"),
    [(("qdq", "uint8", True), "cnn"), (("qop", "int8", False), "cnn"),
     (("qdq", "uint8", True), "mixed"), (("qop", "int8", True), "mixed")],
    ids=["cnn-qdq-uint8", "cnn-qop-int8", "mixed-qdq-uint8", "mixed-qop-int8"],
)  # fmt: skip
def test_on_cortex_m4_matches_onnxruntime(variant, which, models, tmp_path) -> None:
    """The M4's single-precision FPU gives onnxruntime's float32 requantization bit for
    bit (QLinearAdd's fused multiply-adds run in software double, exactly)."""
    from aot.testing.harness import build, run_many

    for tool in ("arm-none-eabi-gcc", "make", "qemu-system-arm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found on PATH (bash scripts/setup.sh installs it)")
    path = models(variant, which)
    folder = build(path, tmp_path / "out", "mps2_an386")
    batches = _inputs(20, seed=9)
    for k, (got, expected) in enumerate(zip(run_many(folder, batches), _expected(path, batches))):
        assert_same(got, expected, f"{_id(variant)} mps2_an386 input {k}")
