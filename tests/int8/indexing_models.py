"""TFLite models for the indexing, shape and resource-variable operators
(aot/frontend/tflite_int8/indexing.py and resource_variables.py), built with
aot.testing.tflite_builder; shared by tests/int8 and tests/emulator."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aot.testing.harness import RESET
from aot.testing.tflite_builder import TFLiteModelBuilder
from aot.validate.reference import TFLiteReference


def quantization(rng: np.random.Generator, dtype: str) -> dict:
    """A random per-tensor quantization (int16: zero point 0, as TFLite's 16x8 scheme)."""
    scale = float(rng.uniform(0.01, 0.5))
    zero_point = 0 if dtype == "int16" else int(rng.integers(-20, 21))
    return {"scale": scale, "zero_point": zero_point}


def embedding_lookup_model(
    rng: np.random.Generator,
    ids: int,
    table_shape: Sequence[int],
    dtype: str,
    hybrid: bool = False,
) -> bytes:
    """EMBEDDING_LOOKUP of a constant table; ``hybrid``: an int8 table (zero point 0)
    and a float32 output."""
    b = TFLiteModelBuilder()
    q = quantization(rng, dtype)
    if hybrid:
        q["zero_point"] = 0
    info = np.iinfo(dtype)
    table = rng.integers(info.min, info.max + 1, size=table_shape).astype(dtype)
    i = b.add_input("ids", (ids,), "int32")
    t = b.add_constant("table", table, **q)
    out_q = {} if hybrid else q
    y = b.add_tensor("y", (ids, *table_shape[1:]), "float32" if hybrid else dtype, **out_q)
    b.add_operator("EMBEDDING_LOOKUP", [i, t], [y])
    b.mark_output(y)
    return b.build()


def dynamic_update_slice_model(
    rng: np.random.Generator,
    operand: Sequence[int],
    update: Sequence[int],
    dtype: str,
    index_dtype: str,
) -> bytes:
    b = TFLiteModelBuilder()
    q = quantization(rng, dtype) if dtype != "int32" else {}
    x = b.add_input("operand", operand, dtype, **q)
    u = b.add_input("update", update, dtype, **q)
    s = b.add_input("starts", (len(operand),), index_dtype)
    y = b.add_tensor("y", operand, dtype, **q)
    b.add_operator("DYNAMIC_UPDATE_SLICE", [x, u, s], [y])
    b.mark_output(y)
    return b.build()


def cumsum_model(
    shape: Sequence[int],
    dtype: str,
    axis: int,
    exclusive: bool,
    reverse: bool,
    input_q: dict | None = None,
    output_q: dict | None = None,
) -> bytes:
    """CUMSUM over a constant axis; int8 takes ``input_q`` and ``output_q``."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, dtype, **(input_q or {}))
    a = b.add_constant("axis", np.array(axis, np.int32))
    y = b.add_tensor("y", shape, dtype, **(output_q or {}))
    b.add_operator("CUMSUM", [x, a], [y], {"exclusive": exclusive, "reverse": reverse})
    b.mark_output(y)
    return b.build()


def broadcast_args_model(lhs: int, rhs: int, dtype: str) -> bytes:
    """BROADCAST_ARGS of two shape inputs (computed at run time)."""
    b = TFLiteModelBuilder()
    a = b.add_input("lhs", (lhs,), dtype)
    c = b.add_input("rhs", (rhs,), dtype)
    y = b.add_tensor("y", (max(lhs, rhs),), dtype)
    b.add_operator("BROADCAST_ARGS", [a, c], [y])
    b.mark_output(y)
    return b.build()


def shape_model(shape: Sequence[int], out_type: str) -> bytes:
    """SHAPE as a model output (the folded constant written by a kernel)."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (len(shape),), out_type)
    b.add_operator("SHAPE", [x], [y], {"out_type": out_type.upper()})
    b.mark_output(y)
    return b.build()


INDEXING_INPUTS = {"x": (2, 3, 4), "ids": (5,), "starts": (3,)}


def indexing_model() -> bytes:
    """Every indexing and shape operator in one model, for the board:

    x [2, 3, 4] int8 -> SHAPE -> BROADCAST_ARGS with [3, 1, 1, 4] -> BROADCAST_TO's shape
    (x broadcast to [3, 2, 3, 4]); ids -> EMBEDDING_LOOKUP of a [6, 4] table -> DYNAMIC_
    UPDATE_SLICE into x at run-time starts; ids -> CUMSUM (int32, exclusive); ids -> the
    hybrid EMBEDDING_LOOKUP (float32 rows)."""
    rng = np.random.default_rng(13)
    q = {"scale": 0.05, "zero_point": 3}
    b = TFLiteModelBuilder()
    x = b.add_input("x", INDEXING_INPUTS["x"], "int8", **q)
    ids = b.add_input("ids", INDEXING_INPUTS["ids"], "int32")
    starts = b.add_input("starts", INDEXING_INPUTS["starts"], "int32")
    shape = b.add_tensor("shape", (3,), "int32")
    b.add_operator("SHAPE", [x], [shape])
    other = b.add_constant("other", np.array([3, 1, 1, 4], np.int32))
    target = b.add_tensor("target", (4,), "int32")
    b.add_operator("BROADCAST_ARGS", [shape, other], [target])
    wide = b.add_tensor("wide", (3, 2, 3, 4), "int8", **q)
    b.add_operator("BROADCAST_TO", [x, target], [wide], version=2)
    b.mark_output(wide)
    table = b.add_constant("table", rng.integers(-128, 128, (6, 4)).astype(np.int8), **q)
    rows = b.add_tensor("rows", (5, 4), "int8", **q)
    b.add_operator("EMBEDDING_LOOKUP", [ids, table], [rows])
    rows3 = b.add_tensor("rows3", (1, 5, 4), "int8", **q)
    b.add_operator("RESHAPE", [rows, b.add_constant("r", np.array([1, 5, 4], np.int32))], [rows3])
    updated = b.add_tensor("updated", (2, 5, 4), "int8", **q)
    base = b.add_tensor("base", (2, 5, 4), "int8", **q)
    b.add_operator("PAD", [x, b.add_constant("p", np.array([[0, 0], [1, 1], [0, 0]], np.int32))],
                   [base])  # fmt: skip
    b.add_operator("DYNAMIC_UPDATE_SLICE", [base, rows3, starts], [updated])
    b.mark_output(updated)
    # The hybrid lookup: an int8 table at zero point 0, float32 rows.
    weights = rng.integers(-128, 128, (6, 2, 2)).astype(np.int8)
    floats = b.add_tensor("floats", (5, 2, 2), "float32")
    table2 = b.add_constant("table2", weights, scale=0.0371, zero_point=0)
    b.add_operator("EMBEDDING_LOOKUP", [ids, table2], [floats])
    b.mark_output(floats)
    sums = b.add_tensor("sums", INDEXING_INPUTS["ids"], "int32")
    b.add_operator(
        "CUMSUM", [ids, b.add_constant("axis", np.array(0, np.int32))], [sums],
        {"exclusive": True},
    )  # fmt: skip
    b.mark_output(sums)
    return b.build()


CUMSUM_INT8 = {
    "shape": (3, 5),
    "input_q": {"scale": 0.043, "zero_point": -7},
    "output_q": {"scale": 0.12, "zero_point": 11},
}


def cumsum_int8_model() -> bytes:
    """The int8 CUMSUM for the board: two of them (inclusive along rows, exclusive and
    reversed along columns), checked against TFLite Micro's interpreter (LiteRT's
    registers no int8 CUMSUM)."""
    spec = CUMSUM_INT8
    b = TFLiteModelBuilder()
    x = b.add_input("x", spec["shape"], "int8", **spec["input_q"])
    for axis, exclusive, reverse in ((1, False, False), (0, True, True)):
        y = b.add_tensor(f"y{axis}", spec["shape"], "int8", **spec["output_q"])
        a = b.add_constant(f"axis{axis}", np.array(axis, np.int32))
        options = {"exclusive": exclusive, "reverse": reverse}
        b.add_operator("CUMSUM", [x, a], [y], options)
        b.mark_output(y)
    return b.build()


def indexing_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    """Ids in range (LiteRT fails on others), starts anywhere (both clamp them)."""
    return [
        rng.integers(-128, 128, INDEXING_INPUTS["x"], dtype=np.int8),
        rng.integers(0, 6, INDEXING_INPUTS["ids"], dtype=np.int32),
        rng.integers(-3, 7, INDEXING_INPUTS["starts"], dtype=np.int32),
    ]


def accumulator_model(dtype: str = "int8", shape: Sequence[int] = (1, 4)) -> bytes:
    """A running accumulator in a resource variable, as the TFLite converter writes a
    ``tf.Variable`` updated by each call: CALL_ONCE initializes it from a constant; each
    inference reads it, adds the input (int8 ADD, saturating) and assigns the sum back; the
    output is the sum. A second, read-only variable scales the sum by MUL."""
    rng = np.random.default_rng(7)
    q = {"scale": 0.25, "zero_point": 0 if dtype == "int16" else -3}
    initial = rng.integers(-40, 40, shape).astype(dtype)
    gain = rng.integers(-6, 7, shape).astype(dtype)  # small: keeps the product in range

    init = TFLiteModelBuilder()
    for name, value in (("acc", initial), ("gain", gain)):
        handle = init.add_tensor(f"{name}_handle", (), "resource")
        init.add_operator("VAR_HANDLE", [], [handle], {"shared_name": name})
        init.add_operator("ASSIGN_VARIABLE", [handle, init.add_constant(name, value, **q)], [])

    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, dtype, **q)
    b.add_operator("CALL_ONCE", [], [], {"init_subgraph_index": b.add_subgraph(init)})
    acc, gain_handle = (b.add_tensor(f"{n}_handle", (), "resource") for n in ("acc", "gain"))
    b.add_operator("VAR_HANDLE", [], [acc], {"shared_name": "acc"})
    b.add_operator("VAR_HANDLE", [], [gain_handle], {"shared_name": "gain"})
    old = b.add_tensor("old", shape, dtype, **q)
    b.add_operator("READ_VARIABLE", [acc], [old])
    total = b.add_tensor("total", shape, dtype, **q)
    general_int16 = {"pot_scale_int16": False} if dtype == "int16" else None
    b.add_operator("ADD", [old, x], [total], general_int16)
    b.add_operator("ASSIGN_VARIABLE", [acc, total], [])
    g = b.add_tensor("g", shape, dtype, **q)
    b.add_operator("READ_VARIABLE", [gain_handle], [g])
    scaled = b.add_tensor("scaled", shape, dtype, scale=0.5, zero_point=q["zero_point"] // 3)
    b.add_operator("MUL", [total, g], [scaled])
    b.mark_output(scaled)
    return b.build()


def delay_model(shape: Sequence[int] = (1, 4)) -> bytes:
    """A one-step delay line: each inference outputs the variable (the previous input, or
    CALL_ONCE's constant at first) and assigns it the input; neither is computed by an
    operator, so aot copies them with a kernel."""
    q = {"scale": 0.5, "zero_point": -2}
    init = TFLiteModelBuilder()
    handle = init.add_tensor("h", (), "resource")
    init.add_operator("VAR_HANDLE", [], [handle], {"shared_name": "previous"})
    start = init.add_constant("start", np.arange(np.prod(shape), dtype=np.int8).reshape(shape), **q)
    init.add_operator("ASSIGN_VARIABLE", [handle, start], [])
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "int8", **q)
    b.add_operator("CALL_ONCE", [], [], {"init_subgraph_index": b.add_subgraph(init)})
    h = b.add_tensor("h", (), "resource")
    b.add_operator("VAR_HANDLE", [], [h], {"shared_name": "previous"})
    previous = b.add_tensor("previous", shape, "int8", **q)
    b.add_operator("READ_VARIABLE", [h], [previous])
    b.add_operator("ASSIGN_VARIABLE", [h, x], [])
    b.mark_output(previous)
    return b.build()


def session_plan(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> list:
    """Five inferences, a reset, then the first three inputs again; inputs a quarter of
    the range, so that an accumulator takes several steps to saturate."""
    inputs = [[rng.integers(-32, 32, size=shape).astype(dtype)] for _ in range(5)]
    return [*inputs, RESET, *inputs[:3]]


def fresh_litert_session(model: bytes, plan: list) -> list[np.ndarray]:
    """LiteRT over the plan of aot.testing.harness.run_session, a RESET being a freshly
    loaded interpreter: LiteRT's reset_all_variables() leaves resource variables as they
    are, and aot's reset restores what CALL_ONCE assigned."""
    reference = TFLiteReference(model)
    outputs = []
    for entry in plan:
        if isinstance(entry, str):
            reference = TFLiteReference(model)
        else:
            outputs.append(reference.run(list(entry))[0])
    return outputs
