"""The four MLPerf Tiny int8 models: bit-exact, int8 between operators, constants <= 1.1x."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from aot.frontend.tflite_int8 import import_tflite_int8, relax_constant_bytes
from aot.testing.shared import MLPERF_TINY, mlperf_tiny, shared_dir
from tests.int8.harness import compile_vm, run_vm

MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = list(MLPERF_TINY)
RANDOM_INPUTS = 200


def _path(name: str) -> str:
    return str(mlperf_tiny(name))


@pytest.fixture(scope="module", params=MODELS)
def compiled(request: pytest.FixtureRequest):
    imported, vm = compile_vm(_path(request.param))
    return request.param, imported, vm


@pytest.mark.unit
def test_reference_input_bit_exact(compiled) -> None:
    name, _, vm = compiled
    x = np.load(MODELS_DIR / f"{name}.input.npy")
    expected = np.load(MODELS_DIR / f"{name}.output.npy")
    (actual,) = run_vm(vm, [x])
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.slow
def test_random_inputs_bit_exact(compiled) -> None:
    from aot.testing.reference import run_tflite_reference

    name, imported, vm = compiled
    spec = imported.inputs[0]
    rng = np.random.default_rng(20240501)
    for _ in range(RANDOM_INPUTS):
        x = rng.integers(-128, 128, size=spec.shape, dtype=np.int8)
        (expected,) = run_tflite_reference(_path(name), [x])
        (actual,) = run_vm(vm, [x])
        np.testing.assert_array_equal(actual, expected)


def _call_tir_bindings(mod):
    from tvm import relax

    main = mod["main"]
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Call) and value.op.name == "relax.call_tir":
                yield binding.var, value


def _tflite_weight_bias_bytes(path: str) -> int:
    """Bytes of the weights and biases of CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED."""
    model_cls = importlib.import_module("tflite.Model").Model
    names = {
        v: k
        for k, v in vars(importlib.import_module("tflite.BuiltinOperator").BuiltinOperator).items()
        if not k.startswith("_")
    }
    data = Path(path).read_bytes()
    model = model_cls.GetRootAs(data, 0)
    graph = model.Subgraphs(0)
    total = 0
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex())
        name = names[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())]
        if name in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            for t in op.InputsAsNumpy()[1:3]:
                if t >= 0:
                    total += model.Buffers(graph.Tensors(int(t)).Buffer()).DataLength()
    return total


@pytest.mark.unit
@pytest.mark.parametrize("name", MODELS)
def test_int8_end_to_end_and_constant_size(name: str) -> None:
    imported = import_tflite_int8(_path(name))
    mod = imported.relax_module
    for var, call in _call_tir_bindings(mod):
        assert str(var.ty.dtype) == "int8", f"{var} is {var.ty.dtype}"
        for arg in call.args[1]:
            if hasattr(arg, "value") and hasattr(arg.value, "numpy"):  # a relax constant
                assert str(arg.value.numpy().dtype) in ("int8", "int32"), arg.value.numpy().dtype
    ratio = relax_constant_bytes(mod) / _tflite_weight_bias_bytes(_path(name))
    assert ratio <= 1.1, f"{name}: constants are {ratio:.3f}x the TFLite weights and biases"


@pytest.mark.unit
@pytest.mark.parametrize("name", MODELS)
def test_kernels_avoid_float_and_int64_division(name: str) -> None:
    """What the C backend needs: integer-only kernels, no int64 division or modulo."""
    import re

    mod = import_tflite_int8(_path(name)).relax_module
    for gv, func in mod.functions.items():
        if gv.name_hint == "main":
            continue
        text = func.script()
        assert "float" not in text, f"{gv.name_hint} uses float"
        assert not re.search(r"//|%|T\.floordiv|T\.floormod|T\.truncmod", text), gv.name_hint
        for match in re.finditer(r"T\.Div\(", text):
            operand = text[match.end() : match.end() + 40]
            assert "int64" not in operand, f"{gv.name_hint}: int64 division {operand}"
