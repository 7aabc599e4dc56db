"""Test models for ADD_N, DIV, ELU, CAST, ZEROS_LIKE, FILL and REDUCE_ALL (issue 13), written
with aot.testing.tflite_builder; shared by the host and emulator tests. The int8 ADD_N and
ZEROS_LIKE, which LiteRT lacks, are checked against TensorFlow Lite Micro's interpreter."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from aot.testing.harness import build, run_many
from aot.testing.reference import TFLMReference
from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.math_models import f32


def run_litert_builtin(model: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run ``model`` with LiteRT's builtin kernels, without the default XNNPACK delegate
    (whose int8 ELU rounds ties differently): ELU is registered there, not in BUILTIN_REF
    (its DIV agrees with the reference one: test_div_int8_every_pair_of_values)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(
        model_content=model,
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs, strict=True):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def divisors_avoiding(values: np.ndarray, zero_point: int) -> np.ndarray:
    """``values`` with the zero point moved by one: LiteRT refuses a divisor at zero."""
    moved = zero_point + 1 if zero_point < 127 else zero_point - 1
    return np.where(values == zero_point, moved, values).astype(values.dtype)


def litert_model() -> bytes:
    """DIV (int8, broadcast), ELU, CAST int8 -> int32, DIV int32 by a constant, ADD_N int32
    (with ZEROS_LIKE), CAST int32 -> int8 (wrapping) and int16, FILL int8 of a computed
    scalar, REDUCE_ALL and CAST bool -> int32:
    every operator of the family in dtypes LiteRT's kernels run."""
    b = TFLiteModelBuilder()
    shape = (2, 3, 8)
    x = b.add_input("x", shape, "int8", scale=f32(0.05), zero_point=-3)
    y = b.add_input("y", (1, 1, 8), "int8", scale=f32(0.04), zero_point=5)
    n = b.add_input("n", shape, "int32")
    q = b.add_tensor("quotient", shape, "int8", scale=f32(0.12), zero_point=10)
    b.add_operator("DIV", [x, y], [q])
    e = b.add_tensor("elu", shape, "int8", scale=f32(0.08), zero_point=-40)
    b.add_operator("ELU", [q], [e])
    wide = b.add_tensor("elu_int32", shape, "int32")
    b.add_operator("CAST", [e], [wide], {"in_data_type": "INT8", "out_data_type": "INT32"})
    k = b.add_constant("k", np.array([[[-7, -3, -1, 1, 2, 5, 9, 100]]], np.int32))
    d = b.add_tensor("n_over_k", shape, "int32")
    b.add_operator("DIV", [n, k], [d])
    zeros = b.add_tensor("zeros", shape, "int32")
    b.add_operator("ZEROS_LIKE", [n], [zeros])
    total = b.add_tensor("total", shape, "int32")
    b.add_operator("ADD_N", [wide, d, n, zeros], [total])
    narrow = b.add_tensor("total_int8", shape, "int8")
    b.add_operator("CAST", [total], [narrow], {"in_data_type": "INT32", "out_data_type": "INT8"})
    half = b.add_tensor("total_int16", shape, "int16")
    b.add_operator("CAST", [total], [half], {"in_data_type": "INT32", "out_data_type": "INT16"})
    # FILL's value computed (a constant one would fold into a constant output): max(x).
    all_axes = b.add_constant("all_axes", np.array([0, 1, 2], np.int32))
    largest = b.add_tensor("largest", (), "int8", scale=f32(0.05), zero_point=-3)
    b.add_operator("REDUCE_MAX", [x, all_axes], [largest], {"keep_dims": False})
    dims = b.add_constant("dims", np.array([2, 4], np.int32))
    filled = b.add_tensor("filled", (2, 4), "int8", scale=f32(0.05), zero_point=-3)
    b.add_operator("FILL", [dims, largest], [filled])
    # bool tensors cannot cross the model boundary: the flags come from a comparison, and
    # REDUCE_ALL's result leaves through a CAST.
    limit = b.add_constant("limit", np.array([1 << 29], np.int32))
    flags = b.add_tensor("flags", shape, "bool")
    b.add_operator("LESS", [n, limit], [flags])
    axis = b.add_constant("axis", np.array([2], np.int32))
    every = b.add_tensor("all", (2, 3), "bool")
    b.add_operator("REDUCE_ALL", [flags, axis], [every], {"keep_dims": False})
    every_int = b.add_tensor("all_int32", (2, 3), "int32")
    b.add_operator("CAST", [every], [every_int], {"in_data_type": "BOOL", "out_data_type": "INT32"})
    for out in (e, narrow, half, filled, every_int):
        b.mark_output(out)
    return b.build()


def litert_model_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    shape = (2, 3, 8)
    y = divisors_avoiding(rng.integers(-128, 128, (1, 1, 8), dtype=np.int8), 5)
    n = rng.integers(-(1 << 31), 1 << 31, shape, dtype=np.int64).astype(np.int32) // 2
    n[0, 1] //= 4  # a row below the limit everywhere, so REDUCE_ALL is true somewhere
    return [rng.integers(-128, 128, shape, dtype=np.int8), y, n]


ADD_N_QUANT = (f32(0.03), -20)
ADD_N_OUT_QUANT = (f32(0.07), 9)


def tflm_dtypes_model() -> bytes:
    """The dtypes TFLite Micro runs and LiteRT does not: ADD_N int8 of three inputs (one
    twice) and ZEROS_LIKE int8."""
    b = TFLiteModelBuilder()
    shape = (4, 10)
    scale, zp = ADD_N_QUANT
    x = b.add_input("x", shape, "int8", scale=scale, zero_point=zp)
    w = b.add_input("w", shape, "int8", scale=scale, zero_point=zp)
    total = b.add_tensor("total", shape, "int8", scale=ADD_N_OUT_QUANT[0], zero_point=9)
    b.add_operator("ADD_N", [x, w, x], [total])
    zeros = b.add_tensor("zeros", shape, "int8", scale=scale, zero_point=zp)
    b.add_operator("ZEROS_LIKE", [w], [zeros])
    b.mark_output(total)
    b.mark_output(zeros)
    return b.build()


# The models have int32 inputs and outputs, which --frontend auto leaves to the float frontend.
FRONTEND = ("--frontend", "tflite-int8")
MODEL_NAMES = ("litert_dtypes", "tflm_dtypes")


def assert_model_bit_exact(name: str, board: str, folder: Path, count: int, seed: int) -> None:
    """Build model ``name`` (one of MODEL_NAMES) for ``board`` in ``folder``, run ``count``
    random input sets in one session and compare every output with its reference (LiteRT,
    or TFLite Micro's interpreter); also check the build kept the operators."""
    rng = np.random.default_rng(seed)
    if name == "litert_dtypes":
        model = litert_model()
        operators = {"ADD_N", "CAST", "DIV", "ELU", "FILL", "REDUCE_ALL", "ZEROS_LIKE"}
        batches = [litert_model_inputs(rng) for _ in range(count)]
        expected = [run_litert_builtin(model, inputs) for inputs in batches]
    else:
        model = tflm_dtypes_model()
        operators = {"ADD_N", "ZEROS_LIKE"}
        batches = [
            [rng.integers(-128, 128, (4, 10), dtype=np.int8) for _ in range(2)]
            for _ in range(count)
        ]
        reference = TFLMReference(model)
        expected = [reference.run(inputs) for inputs in batches]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.tflite"
    path.write_bytes(model)
    built = build(path, folder / "out", board, *FRONTEND)
    metadata = json.loads((built / "metadata.json").read_text())
    assert operators <= {op["type"] for op in metadata["model"]["source_operators"]}
    for outputs, wanted in zip(run_many(built, batches), expected, strict=True):
        for got, want in zip(outputs, wanted, strict=True):
            np.testing.assert_array_equal(got, want)
