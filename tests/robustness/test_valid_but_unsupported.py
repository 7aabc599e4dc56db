"""A valid file aot cannot handle is never called damaged, and a damaged float model never
leaks a Python exception (issue 8, point 4)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from mutate import CLASSES, field_map, mutate
from robustness_helpers import REPO, import_outcome

from aot.errors import UnsupportedError
from aot.frontend import import_model
from aot.frontend.validate import DAMAGED
from aot.testing import TFLiteModelBuilder

pytestmark = pytest.mark.unit


def _int8_model(strip_strings: bool) -> bytes:
    rng = np.random.default_rng(0)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4, 4, 2), "int8", scale=0.05, zero_point=-3)
    w = b.add_constant("w", rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8), scale=0.02,
                       zero_point=0)  # fmt: skip
    bias = b.add_constant("b", np.arange(3, dtype=np.int32), scale=0.001, zero_point=0)
    y = b.add_tensor("y", (1, 4, 4, 3), "int8", scale=0.1, zero_point=2)
    b.add_operator("CONV_2D", inputs=[x, w, bias], outputs=[y], options={"padding": "SAME"})
    b.mark_output(y)
    return b.build(strip_strings=strip_strings)


def test_model_without_names_imports(tmp_path: Path) -> None:
    """TFLite Micro's example models are stripped of tensor and subgraph names; that once
    read as 'truncated or corrupt TFLite file (AttributeError: ...)'."""
    path = tmp_path / "stripped.tflite"
    path.write_bytes(_int8_model(strip_strings=True))
    model = import_model(path)
    assert [spec.name for spec in model.inputs] == ["tensor_0"]
    assert model.operators == ("CONV_2D",)


def test_float_model_without_names_imports(tmp_path: Path) -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "float32")
    y = b.add_tensor("y", (1, 4), "float32")
    b.add_operator("RELU", inputs=[x], outputs=[y])
    b.mark_output(y)
    path = tmp_path / "stripped_float.tflite"
    path.write_bytes(b.build(strip_strings=True))
    model = import_model(path, frontend="relax-tflite")
    assert [spec.name for spec in model.outputs] == ["tensor_1"]


def test_unsupported_type_is_named_not_damaged(tmp_path: Path) -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "uint16")
    y = b.add_tensor("y", (1, 4), "uint16")
    b.add_operator("RELU", inputs=[x], outputs=[y])
    b.mark_output(y)
    path = tmp_path / "uint16.tflite"
    path.write_bytes(b.build())
    with pytest.raises(UnsupportedError) as err:
        import_model(path)
    message = str(err.value)
    assert "'x'" in message and "type 16" in message and "docs/operators.md" in message
    assert DAMAGED not in message and "corrupt" not in message


def test_empty_tensor_is_unsupported_not_damaged(tmp_path: Path) -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 0), "float32")
    y = b.add_tensor("y", (1, 0), "float32")
    b.add_operator("RELU", inputs=[x], outputs=[y])
    b.mark_output(y)
    path = tmp_path / "empty.tflite"
    path.write_bytes(b.build())
    expected = r"'x' \(index 0, input 0 of operator 0 \(RELU\)\) has shape \[1, 0\]"
    with pytest.raises(UnsupportedError, match=expected):
        import_model(path)


# The float model has no quantization, so the scale and zero point classes do not apply.
FLOAT_CLASSES = [k for k in CLASSES if k not in ("scale", "zero_point", "per_channel")]


@pytest.mark.parametrize("kind", FLOAT_CLASSES)
def test_damaged_float_model_never_leaks_an_exception(kind: str, tmp_path: Path) -> None:
    data = (REPO / "examples" / "tiny_kws_float.tflite").read_bytes()
    fields = field_map(data)
    rng = random.Random(f"float:{kind}")
    for n in range(15):
        mutant = mutate(data, fields, kind, rng)
        assert mutant is not None
        path = tmp_path / f"{kind}-{n}.tflite"
        path.write_bytes(mutant)
        import_outcome(path)


def test_damaged_onnx_never_leaks_an_exception(tmp_path: Path) -> None:
    from tests.compiler.test_float_models import onnx_gemm

    data = onnx_gemm()
    rng = random.Random(5)
    for n in range(30):
        mutant = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            mutant[rng.randrange(len(mutant))] ^= 1 << rng.randrange(8)
        path = tmp_path / f"gemm-{n}.onnx"
        path.write_bytes(bytes(mutant))
        import_outcome(path)


def test_variable_tensor_is_unsupported_not_damaged(tmp_path: Path) -> None:
    """SVDF-style operator state (TFLite Micro's micro_speech used SVDF): a valid feature
    that aot names, read by the operator though no operator computes it."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "float32")
    state = b.add_tensor("state", (1, 4), "float32", is_variable=True)
    y = b.add_tensor("y", (1, 4), "float32")
    b.add_operator("ADD", inputs=[x, state], outputs=[y])
    b.mark_output(y)
    path = tmp_path / "state.tflite"
    path.write_bytes(b.build())
    with pytest.raises(UnsupportedError, match=r"'state' .* is a variable tensor") as err:
        import_model(path)
    assert DAMAGED not in str(err.value) and "docs/operators.md" in str(err.value)
