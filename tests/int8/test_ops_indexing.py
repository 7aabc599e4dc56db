"""EMBEDDING_LOOKUP, DYNAMIC_UPDATE_SLICE, CUMSUM, SHAPE and BROADCAST_ARGS bit-exact with
LiteRT's reference kernels, randomized over shapes, dtypes, zero points and indices
(out-of-range start indices included: both sides clamp them), many cases per compile
where a case is one input set."""

from __future__ import annotations

import numpy as np
import pytest

from aot.errors import UnsupportedError
from aot.frontend.tflite_int8 import import_tflite_int8
from aot.testing.reference import TFLMReference
from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.harness import assert_bit_exact, compile_vm, random_input, run_vm
from tests.int8.indexing_models import (
    broadcast_args_model,
    cumsum_model,
    dynamic_update_slice_model,
    embedding_lookup_model,
    indexing_inputs,
    indexing_model,
    shape_model,
)

pytestmark = pytest.mark.unit

CASES = 6  # input sets per compiled model
# The operators of aot/frontend/tflite_int8/indexing.py, all in the board's model.
OPERATORS = ("EMBEDDING_LOOKUP", "DYNAMIC_UPDATE_SLICE", "CUMSUM", "SHAPE", "BROADCAST_ARGS")


def test_the_board_model_holds_every_indexing_operator(tmp_path) -> None:
    from aot.frontend.tflite_file import read_tflite

    path = tmp_path / "indexing.tflite"
    path.write_bytes(indexing_model())
    assert set(OPERATORS) <= set(read_tflite(path).operators)


@pytest.mark.parametrize("dtype, hybrid", [("int8", False), ("int16", False), ("int8", True)])
def test_embedding_lookup_matches_litert(dtype: str, hybrid: bool) -> None:
    rng = np.random.default_rng(510 + 2 * hybrid + (dtype == "int16"))
    for _ in range(3):
        ids = int(rng.integers(1, 7))
        table = (int(rng.integers(1, 9)), *rng.integers(1, 5, size=int(rng.integers(1, 3))))
        model = embedding_lookup_model(rng, ids, table, dtype, hybrid)
        # LiteRT fails on an id outside the table, so only ids in range compare.
        inputs = [[rng.integers(0, table[0], (ids,), dtype=np.int32)] for _ in range(CASES)]
        assert_bit_exact(model, inputs)


@pytest.mark.parametrize(
    "dtype, index_dtype", [("int8", "int32"), ("int16", "int64"), ("int32", "int32")]
)
def test_dynamic_update_slice_matches_litert(dtype: str, index_dtype: str) -> None:
    rng = np.random.default_rng(hash((dtype, index_dtype)) % 1000)
    for _ in range(3):
        rank = int(rng.integers(1, 5))
        operand = tuple(int(d) for d in rng.integers(1, 6, size=rank))
        update = tuple(int(rng.integers(1, d + 1)) for d in operand)
        model = dynamic_update_slice_model(rng, operand, update, dtype, index_dtype)
        inputs = [
            [
                random_input(rng, operand, dtype),
                random_input(rng, update, dtype),
                # Starts past either end are clamped, by TFLite and by aot.
                rng.integers(-3, 8, size=(rank,)).astype(index_dtype),
            ]
            for _ in range(CASES)
        ]
        assert_bit_exact(model, inputs)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_cumsum_matches_litert(dtype: str) -> None:
    rng = np.random.default_rng(520 if dtype == "int32" else 521)
    for exclusive in (False, True):
        for reverse in (False, True):
            rank = int(rng.integers(1, 4))
            shape = tuple(int(d) for d in rng.integers(1, 6, size=rank))
            axis = int(rng.integers(-rank, rank))
            model = cumsum_model(shape, dtype, axis, exclusive, reverse)
            inputs = [
                [rng.integers(-(2**20), 2**20, size=shape).astype(dtype)] for _ in range(CASES)
            ]
            assert_bit_exact(model, inputs)


def test_int8_cumsum_follows_the_tflite_reference_kernel() -> None:
    """Randomized shapes, zero points and scale ratios (saturating ones too), up to 6
    terms per sum (where TFLite's int32 accumulator cannot overflow), against TFLite
    Micro's interpreter (LiteRT's registers no int8 CUMSUM)."""
    rng = np.random.default_rng(560)
    saturated = 0
    for case in range(8):
        rank = int(rng.integers(1, 4))
        shape = tuple(int(d) for d in rng.integers(1, 7, size=rank))
        axis = int(rng.integers(-rank, rank))
        exclusive, reverse = bool(case & 1), bool(case & 2)
        input_q = {"scale": float(rng.uniform(0.01, 0.2)), "zero_point": int(rng.integers(-40, 41))}
        output_q = {
            "scale": input_q["scale"] * float(rng.uniform(0.5, 8)),
            "zero_point": int(rng.integers(-40, 41)),
        }
        model = cumsum_model(shape, "int8", axis, exclusive, reverse, input_q, output_q)
        _, vm = compile_vm(model)
        reference = TFLMReference(model)
        for _ in range(CASES):
            x = random_input(rng, shape)
            (expected,) = reference.run([x])
            np.testing.assert_array_equal(run_vm(vm, [x])[0], expected)
            saturated += int(np.isin(expected, (-128, 127)).sum())
    assert saturated > 0  # some sums leave the int8 range


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_broadcast_args_matches_litert(dtype: str) -> None:
    rng = np.random.default_rng(530 if dtype == "int32" else 531)
    for lhs, rhs in ((3, 3), (4, 2), (1, 5)):
        inputs = []
        for _ in range(CASES):
            # Compatible shapes (LiteRT refuses others): each pair equal, or one of them 1.
            out = rng.integers(1, 6, size=max(lhs, rhs))
            a, b = out[-lhs:].copy(), out[-rhs:].copy()
            a[rng.random(lhs) < 0.4] = 1
            b[rng.random(rhs) < 0.4] = 1
            inputs.append([a.astype(dtype), b.astype(dtype)])
        assert_bit_exact(broadcast_args_model(lhs, rhs, dtype), inputs)


@pytest.mark.parametrize("out_type", ["int32", "int64"])
def test_shape_output_matches_litert(out_type: str) -> None:
    rng = np.random.default_rng(540)
    shape = (2, 5, 3, 1)
    assert_bit_exact(shape_model(shape, out_type), [[random_input(rng, shape)]])


def test_indexing_model_folds_shape_and_broadcast_args() -> None:
    """SHAPE and BROADCAST_ARGS of static shapes cost no kernel: BROADCAST_TO reads the
    folded shape as its constant operand."""
    imported = import_tflite_int8(indexing_model())
    names = {gv.name_hint for gv in imported.relax_module.functions}
    assert not any(n.startswith(("copy", "broadcast_args")) for n in names), names
    rng = np.random.default_rng(550)
    assert_bit_exact(indexing_model(), [indexing_inputs(rng) for _ in range(CASES)])


def _int16_cumsum() -> bytes:
    q = {"scale": 0.1, "zero_point": 0}
    return cumsum_model((2, 3), "int16", 0, False, False, q, q)


def _hybrid_embedding_lookup() -> bytes:
    b = TFLiteModelBuilder()
    ids = b.add_input("ids", (2,), "int32")
    table = b.add_constant("table", np.ones((4, 3), np.int8), scale=0.1, zero_point=3)
    y = b.add_tensor("y", (2, 3), "float32")
    b.add_operator("EMBEDDING_LOOKUP", [ids, table], [y])
    b.mark_output(y)
    return b.build()


def _oversized_update() -> bytes:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (4,), "int8", scale=0.1, zero_point=0)
    u = b.add_input("u", (5,), "int8", scale=0.1, zero_point=0)
    s = b.add_input("s", (1,), "int32")
    y = b.add_tensor("y", (4,), "int8", scale=0.1, zero_point=0)
    b.add_operator("DYNAMIC_UPDATE_SLICE", [x, u, s], [y])
    b.mark_output(y)
    return b.build()


@pytest.mark.parametrize(
    "model, message",
    [
        (_int16_cumsum, r"operator 0 \(CUMSUM\): input 'x' is int16, expected int8 or int32"),
        (_hybrid_embedding_lookup, r"\(EMBEDDING_LOOKUP\): the hybrid form needs .* zero point 0"),
        (_oversized_update, r"operator 0 \(DYNAMIC_UPDATE_SLICE\): update \[5\] does not fit"),
    ],
)
def test_unsupported_forms_are_one_line_errors(model, message: str) -> None:
    with pytest.raises(UnsupportedError, match=message + r".*docs/operators.md") as err:
        import_tflite_int8(model())
    assert "\n" not in str(err.value)
