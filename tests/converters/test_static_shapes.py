"""The dynamic-batch import step (aot.frontend.tflite_static): batch fixed to 1, shapes
inferred over placeholders, shape arithmetic folded; on hand-built graphs and on small
Keras 3 exports (tests/fixtures/converters/folding/, made by scripts/make_folding_models.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.errors import ModelError, UnsupportedError
from aot.frontend.tflite_checks import validate
from aot.testing import run_tflite_reference
from aot.testing.tflite_builder import TFLiteModelBuilder

FOLDING = Path(__file__).resolve().parents[1] / "fixtures" / "converters" / "folding"
CONVERTER_MODELS = ("dense_3d", "flatten", "reshape_dense", "attention_block")


def _flatten_graph(batch_signature: int = -1, placeholder: tuple[int, ...] = (1, 1)) -> bytes:
    """What Keras 3 writes for Flatten + Dense with a dynamic batch: SHAPE -> STRIDED_SLICE
    -> PACK -> RESHAPE (placeholder output shape) -> FULLY_CONNECTED."""
    rng = np.random.default_rng(3)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 3, 4, 2), "int8", 0.05, -3, shape_signature=(batch_signature, 3, 4, 2))
    shape = b.add_tensor("shape", (4,), "int32")
    b.add_operator("SHAPE", [x], [shape], {"out_type": "INT32"})
    batch = b.add_tensor("batch", (), "int32")
    begin = b.add_constant("begin", np.array([0], np.int32))
    end = b.add_constant("end", np.array([1], np.int32))
    b.add_operator("STRIDED_SLICE", [shape, begin, end, end], [batch], {"shrink_axis_mask": 1})
    minus_one = b.add_constant("minus_one", np.array(-1, np.int32))
    target = b.add_tensor("target", (2,), "int32")
    b.add_operator("PACK", [batch, minus_one], [target], {"values_count": 2, "axis": 0})
    dynamic = (-1, -1) if batch_signature < 0 else None
    flat = b.add_tensor("flat", placeholder, "int8", 0.05, -3, shape_signature=dynamic)
    b.add_operator("RESHAPE", [x, target], [flat])
    w = b.add_constant("w", rng.integers(-127, 128, (5, 24), dtype=np.int8), 0.02, 0)
    bias = b.add_constant("bias", rng.integers(-500, 500, 5, dtype=np.int32), 0.001, 0)
    y = b.add_tensor("y", (1, 5), "int8", 0.3, 2, shape_signature=dynamic and (-1, 5))
    b.add_operator("FULLY_CONNECTED", [flat, w, bias], [y])
    b.mark_output(y)
    return b.build()


def _static(data: bytes):
    checked = validate(data, "<test>")
    return checked.model.subgraphs[0], checked.static


@pytest.mark.unit
def test_flatten_pattern_folds_to_a_static_reshape():
    sg, report = _static(_flatten_graph())
    assert [op.name for op in sg.operators] == ["RESHAPE", "FULLY_CONNECTED"]
    assert report.fixed_inputs == ("x",)
    assert report.folded == (
        "operator 0 (SHAPE)",
        "operator 1 (STRIDED_SLICE)",
        "operator 2 (PACK)",
    )
    by_name = {t.name: t for t in sg.tensors}
    assert by_name["flat"].shape == (1, 24)
    assert by_name["target"].shape == (2,)
    assert all(not t.signature for t in sg.tensors)
    assert "dynamic batch fixed to 1" in report.notes()[0]


@pytest.mark.unit
def test_a_static_graph_is_returned_unchanged():
    data = _flatten_graph(batch_signature=1, placeholder=(1, 24))
    checked = validate(data, "<test>")
    assert not checked.static.changed
    assert [op.name for op in checked.model.subgraphs[0].operators] == [
        "SHAPE", "STRIDED_SLICE", "PACK", "RESHAPE", "FULLY_CONNECTED",
    ]  # fmt: skip


@pytest.mark.unit
def test_a_dynamic_non_batch_input_dimension_is_one_line_error():
    b = TFLiteModelBuilder()
    x = b.add_input("tokens", (1, 8, 4), "int8", 0.1, 0, shape_signature=(-1, -1, 4))
    y = b.add_tensor("y", (1, 8, 4), "int8", 0.1, 0, shape_signature=(-1, -1, 4))
    b.add_operator("RELU", [x], [y])
    b.mark_output(y)
    with pytest.raises(
        UnsupportedError, match=r"input 'tokens' has the dynamic shape \[-1, -1, 4\]"
    ):
        validate(b.build(), "<test>")


@pytest.mark.unit
def test_a_target_shape_that_does_not_fit_is_still_damage():
    """A folded target shape of the wrong size is damage, worded as validate words it."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 3, 4), "int8", 0.05, 0, shape_signature=(-1, 3, 4))
    shape = b.add_tensor("shape", (3,), "int32")
    b.add_operator("SHAPE", [x], [shape], {"out_type": "INT32"})
    seven = b.add_constant("seven", np.array([7], np.int32))
    target = b.add_tensor("target", (4,), "int32")
    b.add_operator("CONCATENATION", [shape, seven], [target], {"axis": 0})
    y = b.add_tensor("y", (1, 1, 1, 1), "int8", 0.05, 0, shape_signature=(-1, -1, -1, -1))
    b.add_operator("RESHAPE", [x, target], [y])
    b.mark_output(y)
    with pytest.raises(ModelError, match=r"damaged.*operator 2 \(RESHAPE\) reshapes \[1, 3, 4\]"):
        validate(b.build(), "<test>")


@pytest.mark.unit
@pytest.mark.parametrize(
    "op, inputs, options, expected",
    [
        ("GATHER", [np.array([1, 6, 6, 4]), np.array([1, 2])], {"axis": 0}, [6, 6]),
        ("REDUCE_PROD", [np.array([6, 6, 4]), np.array([0])], {}, 144),
        ("CONCATENATION", [np.array([1, 6]), np.array([-1])], {"axis": 0}, [1, 6, -1]),
        ("ADD", [np.array([2, 3]), np.array([5, -7])], {}, [7, -4]),
        ("MUL", [np.array([2**30, 3]), np.array([4, -7])], {}, [0, -21]),  # int32 wraps
        ("SUB", [np.array([2, 3]), np.array([5, 1])], {"fused_activation_function": "RELU"},
         [0, 2]),
        ("DIV", [np.array([-7, 7]), np.array([2, 2])], {}, [-3, 3]),  # truncates, as C does
        ("FLOOR_DIV", [np.array([-7, 7]), np.array([2, 2])], {}, [-4, 3]),
        ("STRIDED_SLICE", [np.arange(6), np.array([-1]), np.array([0]), np.array([-2])], {},
         [5, 3, 1]),
        ("STRIDED_SLICE", [np.arange(6), np.array([4]), np.array([3]), np.array([1])],
         {"begin_mask": 1}, [0, 1, 2]),
        ("STRIDED_SLICE", [np.arange(6), np.array([-2]), np.array([0]), np.array([1])],
         {"shrink_axis_mask": 1}, 4),
        ("PACK", [np.array(3), np.array(-1)], {"values_count": 2}, [3, -1]),
        ("FILL", [np.array([2]), np.array(9)], {}, [9, 9]),
    ],
)  # fmt: skip
def test_folding_computes_as_tflite(op, inputs, options, expected):
    """One integer operator on constants folds to what LiteRT computes for it."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 2), "int8", 0.1, 0, shape_signature=(-1, 2))
    consts = [b.add_constant(f"c{k}", np.asarray(v, np.int32)) for k, v in enumerate(inputs)]
    expected = np.asarray(expected, np.int32)
    result = b.add_tensor("r", expected.shape, "int32")
    b.add_operator(op, consts, [result], options)
    y = b.add_tensor("y", (1, 2), "int8", 0.1, 0, shape_signature=(-1, 2))
    b.add_operator("RELU", [x], [y])
    b.mark_output(y)
    b.mark_output(result)
    data = b.build()
    litert = run_tflite_reference(data, [np.zeros((1, 2), np.int8)])[1]
    np.testing.assert_array_equal(litert, expected)
    sg = validate(data, "<test>").model.subgraphs[0]
    assert [o.name for o in sg.operators] == [op, "RELU"]  # a model output is never folded
    # The same graph where the result is no output folds it to LiteRT's value.
    np.testing.assert_array_equal(_folded_value(data, result), expected)


def _folded_value(data: bytes, index: int) -> np.ndarray:
    """The constant the step computes for tensor ``index`` when it is not a model output."""
    from aot.frontend import tflite_static
    from aot.frontend.validate import _init_vector_slots, _name_roles, _read

    _init_vector_slots()
    model = _read(data)
    sg = model.subgraphs[0]
    _name_roles(sg)
    sg.outputs = tuple(o for o in sg.outputs if o != index)
    static, report = tflite_static.make_static(model, data + b"\0" * 16, "<test>")
    assert len(report.folded) == 1
    return tflite_static._Step(static, static.subgraphs[0], data).constant(index)


@pytest.mark.unit
def test_the_importer_sees_the_static_graph():
    from aot.frontend.tflite_int8 import import_tflite_int8

    imported = import_tflite_int8(_flatten_graph())
    assert imported.operators == ("RESHAPE", "FULLY_CONNECTED")
    assert imported.inputs[0].shape == (1, 3, 4, 2)
    assert imported.outputs[0].shape == (1, 5)
    assert imported.notes and "folded 3 shape operators" in imported.notes[0]


@pytest.mark.toolchain
def test_hand_built_flatten_is_bit_exact_on_the_host(tmp_path):
    _bit_exact_on_host(_flatten_graph(), tmp_path)


@pytest.mark.toolchain
@pytest.mark.parametrize("name", CONVERTER_MODELS)
def test_converter_model_is_bit_exact_on_the_host(name, tmp_path):
    _bit_exact_on_host(FOLDING / f"{name}.tflite", tmp_path)


def _bit_exact_on_host(model: bytes | Path, tmp_path: Path) -> None:
    from aot.library import read_metadata
    from aot.testing.harness import build, random_inputs, run_many

    path = model if isinstance(model, Path) else tmp_path / "model.tflite"
    if not isinstance(model, Path):
        path.write_bytes(model)
    folder = build(path, tmp_path / "build", "host")
    batches = random_inputs(read_metadata(folder)["inputs"], 3, seed=11)
    for inputs, outputs in zip(batches, run_many(folder, batches)):
        expected = run_tflite_reference(path, inputs)
        assert len(outputs) == len(expected)
        for got, want in zip(outputs, expected):
            np.testing.assert_array_equal(got, want)


def _dilated_conv1d_graph(dtype: str) -> bytes:
    """A dilated Conv1D's export with a dynamic batch: SPACE_TO_BATCH_ND grows the batch
    to 2 (stored as the placeholder 1), BATCH_TO_SPACE_ND shrinks it back."""
    b = TFLiteModelBuilder()
    q = {"scale": 0.05, "zero_point": -3 if dtype == "int8" else 0}
    x = b.add_input("x", (1, 1, 10, 3), dtype, **q, shape_signature=(-1, 1, 10, 3))
    block = b.add_constant("block", np.array([1, 2], np.int32))
    pads = b.add_constant("pads", np.array([[0, 0], [1, 1]], np.int32))
    batched = b.add_tensor("batched", (1, 1, 6, 3), dtype, **q, shape_signature=(-1, 1, 6, 3))
    b.add_operator("SPACE_TO_BATCH_ND", [x, block, pads], [batched])
    crops = b.add_constant("crops", np.array([[0, 0], [0, 2]], np.int32))
    y = b.add_tensor("y", (1, 1, 10, 3), dtype, **q, shape_signature=(-1, 1, 10, 3))
    b.add_operator("BATCH_TO_SPACE_ND", [batched, block, crops], [y])
    b.mark_output(y)
    return b.build()


@pytest.mark.unit
@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_space_to_batch_grows_the_placeholder_batch(dtype):
    from tests.int8.harness import assert_bit_exact, random_input

    data = _dilated_conv1d_graph(dtype)
    sg, report = _static(data)
    assert {t.name: t.shape for t in sg.tensors}["batched"] == (2, 1, 6, 3)
    assert report.reshaped == ("batched",)
    rng = np.random.default_rng(5)
    assert_bit_exact(data, [[random_input(rng, (1, 1, 10, 3), dtype)] for _ in range(3)])


@pytest.mark.unit
def test_float_split_between_dequantize_and_quantize_is_exact():
    """Keras' unrolled LSTM: DEQUANTIZE -> SPLIT (float32) -> QUANTIZE per gate."""
    from tests.int8.harness import assert_bit_exact, random_input

    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 8), "int8", 0.05, 3)
    wide = b.add_tensor("wide", (1, 8), "float32")
    b.add_operator("DEQUANTIZE", [x], [wide])
    axis = b.add_constant("axis", np.array(1, np.int32))
    halves = [b.add_tensor(f"half{k}", (1, 4), "float32") for k in range(2)]
    b.add_operator("SPLIT", [axis, wide], halves, {"num_splits": 2})
    for k, half in enumerate(halves):
        y = b.add_tensor(f"y{k}", (1, 4), "int8", 0.03 * (k + 1), -5)
        b.add_operator("QUANTIZE", [half], [y])
        b.mark_output(y)
    rng = np.random.default_rng(9)
    assert_bit_exact(b.build(), [[random_input(rng, (1, 8))] for _ in range(3)])
