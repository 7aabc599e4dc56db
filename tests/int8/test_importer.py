"""Importer behaviour: the artifact, constants, errors for what is not supported."""

from __future__ import annotations

import numpy as np
import pytest

from aot.errors import ConfigError, ModelError, UnsupportedError
from aot.frontend.tflite_int8 import SUPPORTED_OPERATORS, import_tflite_int8
from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.harness import random_input

pytestmark = pytest.mark.unit


def _fc_model(bias_quantized_dimension: int = 0) -> bytes:
    rng = np.random.default_rng(0)
    b = TFLiteModelBuilder()
    x = b.add_input("input:0", (1, 16), "int8", scale=0.05, zero_point=-128)
    w = b.add_constant(
        "w", rng.integers(-127, 128, (8, 16), dtype=np.int8), scale=0.02, zero_point=0
    )
    bias = b.add_constant(
        "bias", rng.integers(-500, 500, 8, dtype=np.int32),
        scale=float(np.float32(0.05) * np.float32(0.02)), zero_point=0,
        quantized_dimension=bias_quantized_dimension,  # some converters write nonzero
    )  # fmt: skip
    y = b.add_tensor("y", (1, 8), "int8", scale=0.1, zero_point=3)
    b.add_operator("FULLY_CONNECTED", inputs=[x, w, bias], outputs=[y])
    b.mark_output(y)
    return b.build()


def test_artifact_specs_and_constants(tmp_path) -> None:
    path = tmp_path / "fc.tflite"
    path.write_bytes(_fc_model())
    imported = import_tflite_int8(str(path))
    assert imported.source_format == "tflite"
    assert imported.frontend == "aot-tflite-int8"
    assert imported.operators == ("FULLY_CONNECTED",)
    (spec,) = imported.inputs
    assert (spec.name, spec.shape, spec.dtype) == ("input:0", (1, 16), "int8")
    assert spec.quantization is not None and spec.quantization.zero_point == (-128,)
    assert imported.outputs[0].quantization.scale == (pytest.approx(0.1),)
    text = imported.relax_module.script()
    assert "fully_connected_int8" in text and "float32" not in text


def test_bias_with_nonzero_quantized_dimension_imports() -> None:
    """TFLite Micro accepts a 1-D bias whose quantized_dimension is not 0; so do we.

    LiteRT refuses such a model, so the reference is the same model with dimension 0.
    """
    from aot.testing.reference import run_tflite_reference
    from tests.int8.harness import compile_vm, run_vm

    rng = np.random.default_rng(1)
    x = random_input(rng, (1, 16))
    _, vm = compile_vm(_fc_model(bias_quantized_dimension=3))
    (expected,) = run_tflite_reference(_fc_model(bias_quantized_dimension=0), [x])
    np.testing.assert_array_equal(run_vm(vm, [x])[0], expected)


def test_unsupported_operator_names_op_index_and_docs() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 4), "int8", scale=0.1, zero_point=0)
    z = b.add_tensor("z", (1, 4), "int8", scale=0.1, zero_point=0)
    b.add_operator("RELU", inputs=[x], outputs=[y])
    b.add_operator("GELU", inputs=[y], outputs=[z])
    b.mark_output(z)
    with pytest.raises(UnsupportedError, match=r"operator 1 \(GELU\).*docs/operators\.md"):
        import_tflite_int8(b.build())


def test_float_operator_is_rejected() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "float32")
    y = b.add_tensor("y", (1, 4), "float32")
    b.add_operator("RELU", inputs=[x], outputs=[y])
    b.mark_output(y)
    with pytest.raises(UnsupportedError, match=r"operator 0 \(RELU\).*float32"):
        import_tflite_int8(b.build())


def test_dynamic_shape_is_rejected_but_dynamic_batch_is_not() -> None:
    for signature, ok in (((-1, 4), True), ((1, -1), False)):
        b = TFLiteModelBuilder()
        x = b.add_input("x", (1, 4), "int8", scale=0.1, zero_point=0, shape_signature=signature)
        y = b.add_tensor("y", (1, 4), "int8", scale=0.1, zero_point=0)
        b.add_operator("RELU", inputs=[x], outputs=[y])
        b.mark_output(y)
        if ok:
            import_tflite_int8(b.build())
        else:
            with pytest.raises(UnsupportedError, match="dynamic shape"):
                import_tflite_int8(b.build())


def test_not_a_model_and_bad_rounding() -> None:
    with pytest.raises(ModelError):
        import_tflite_int8(b"definitely not a flatbuffer")
    with pytest.raises(ConfigError):
        import_tflite_int8(_fc_model(), rounding="banker")


def test_supported_list_matches_docs() -> None:
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "int8.md").read_text()
    for name in SUPPORTED_OPERATORS:
        assert f"`{name}`" in docs, f"{name} is missing from docs/int8.md"


def _float_boundary_model(last: str) -> bytes:
    """float32 -> QUANTIZE -> FULLY_CONNECTED -> ``last``: the converter's default form of
    an integer model (float32 inputs and outputs)."""
    rng = np.random.default_rng(1)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 16), "float32")
    q = b.add_tensor("q", (1, 16), "int8", scale=0.05, zero_point=-3)
    b.add_operator("QUANTIZE", inputs=[x], outputs=[q])
    w = b.add_constant(
        "w", rng.integers(-127, 128, (8, 16), dtype=np.int8), scale=0.02, zero_point=0
    )
    y = b.add_tensor("y", (1, 8), "int8", scale=0.1, zero_point=3)
    b.add_operator("FULLY_CONNECTED", inputs=[q, w, -1], outputs=[y])
    out = b.add_tensor("out", (1, 8), "float32")
    b.add_operator(last, inputs=[y], outputs=[out])
    b.mark_output(out)
    return b.build()


@pytest.mark.parametrize(("last", "frontend"), [("DEQUANTIZE", "aot-tflite-int8"),
                                               ("LOGISTIC", "relax-tflite")])  # fmt: skip
def test_auto_takes_an_integer_model_with_float_boundaries(tmp_path, last, frontend) -> None:
    from aot.frontend import import_model

    path = tmp_path / "float_io.tflite"
    path.write_bytes(_float_boundary_model(last))
    # With a float operator writing the output the model is not integer inside: the float
    # frontend keeps it.
    assert import_model(str(path)).frontend == frontend
