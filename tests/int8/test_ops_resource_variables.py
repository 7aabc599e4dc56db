"""Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE) bit-exact
with LiteRT over several inferences, the variable carried between them as LiteRT's
interpreter carries it across invoke(), and after a reset, which restores what CALL_ONCE
assigned (as a freshly loaded interpreter has it); plus the control flow that is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aot.errors import UnsupportedError
from aot.frontend.tflite_int8 import import_tflite_int8
from aot.testing.harness import build, run_session
from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.harness import compile_vm
from tests.int8.indexing_models import (
    accumulator_model,
    delay_model,
    fresh_litert_session,
    session_plan,
)

pytestmark = pytest.mark.unit

# The operators of aot/frontend/tflite_int8/resource_variables.py, all in accumulator_model.
OPERATORS = ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE")


def run_vm_session(model: bytes, plan: list) -> list[np.ndarray]:
    """Our module over ``plan``, threading the state; RESET restores the initial values."""
    import tvm

    imported, vm = compile_vm(model)

    def initial() -> list[np.ndarray]:
        return [s.initial if s.initial is not None else np.zeros(s.shape, s.dtype)
                for s in imported.states]  # fmt: skip

    states, outputs = initial(), []
    for entry in plan:
        if isinstance(entry, str):
            states = initial()
            continue
        args = [tvm.runtime.tensor(np.ascontiguousarray(a)) for a in (*entry, *states)]
        result = [r.numpy() for r in vm["main"](*args)]
        outputs.append(result[0])
        states = result[1:]
    return outputs


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_accumulator_matches_litert_across_inferences_and_reset(dtype: str) -> None:
    model = accumulator_model(dtype, (2, 3))
    imported = import_tflite_int8(model)
    assert set(OPERATORS) <= set(imported.operators)
    # Only the assigned variable is state; the read-only one is a constant.
    assert [(s.name, s.shape, s.dtype) for s in imported.states] == [("acc", (2, 3), dtype)]
    plan = session_plan(np.random.default_rng(60), (2, 3), dtype)
    expected = fresh_litert_session(model, plan)
    actual = run_vm_session(model, plan)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert np.array_equal(a, e), (step, a, e)
    assert len({e.tobytes() for e in expected[:5]}) == 5  # the variable changes each call
    assert [a.tobytes() for a in actual[5:]] == [a.tobytes() for a in actual[:3]]


def test_delay_line_matches_litert() -> None:
    """The variable read straight into the output and assigned the input itself."""
    model = delay_model()
    plan = session_plan(np.random.default_rng(62), (1, 4), "int8")
    expected = fresh_litert_session(model, plan)
    for step, (a, e) in enumerate(zip(run_vm_session(model, plan), expected, strict=True)):
        assert np.array_equal(a, e), (step, a, e)


@pytest.mark.toolchain
def test_delay_line_on_the_host_copies_what_no_operator_computes(tmp_path) -> None:
    path = tmp_path / "delay.tflite"
    path.write_bytes(delay_model())
    folder = build(path, tmp_path / "out", "host")
    plan = session_plan(np.random.default_rng(63), (1, 4), "int8")
    actual = [o[0] for o in run_session(folder, plan)]
    expected = fresh_litert_session(path.read_bytes(), plan)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert np.array_equal(a, e), (step, a, e)


@pytest.mark.toolchain
def test_accumulator_on_the_host_keeps_the_variable_in_the_persistent_pool(tmp_path) -> None:
    path = tmp_path / "accumulator.tflite"
    path.write_bytes(accumulator_model("int8", (2, 3)))
    folder = build(path, tmp_path / "out", "host")
    memory = json.loads((folder / "metadata.json").read_text())["memory"]
    state = next(p for p in memory["pools"] if p.get("kind") == "persistent")
    # The int8 [2, 3] accumulator, nothing else (the pool rounds up to its alignment).
    assert [(s["name"], s["size_bytes"], s["initial"]) for s in memory["states"]] == [
        ("acc", 6, "constant")
    ]
    assert state["used_bytes"] == 16
    plan = session_plan(np.random.default_rng(61), (2, 3), "int8")
    actual = [o[0] for o in run_session(folder, plan)]
    expected = fresh_litert_session(path.read_bytes(), plan)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert np.array_equal(a, e), (step, a, e)


def _variable_model(init_ops: str = "constant", call_once: bool = True) -> bytes:
    """x + v assigned back to v; CALL_ONCE's subgraph assigns v a constant, or (init_ops
    "computed") an ADD's result."""
    q = {"scale": 0.1, "zero_point": 0}
    init = TFLiteModelBuilder()
    handle = init.add_tensor("h", (), "resource")
    init.add_operator("VAR_HANDLE", [], [handle], {"shared_name": "v"})
    value = init.add_constant("c", np.ones((4,), np.int8), **q)
    if init_ops == "computed":
        doubled = init.add_tensor("d", (4,), "int8", **q)
        init.add_operator("ADD", [value, value], [doubled])
        value = doubled
    init.add_operator("ASSIGN_VARIABLE", [handle, value], [])
    b = TFLiteModelBuilder()
    x = b.add_input("x", (4,), "int8", **q)
    if call_once:
        b.add_operator("CALL_ONCE", [], [], {"init_subgraph_index": b.add_subgraph(init)})
    h = b.add_tensor("h", (), "resource")
    b.add_operator("VAR_HANDLE", [], [h], {"shared_name": "v"})
    old = b.add_tensor("old", (4,), "int8", **q)
    b.add_operator("READ_VARIABLE", [h], [old])
    new = b.add_tensor("new", (4,), "int8", **q)
    b.add_operator("ADD", [old, x], [new])
    b.add_operator("ASSIGN_VARIABLE", [h, new], [])
    b.mark_output(new)
    return b.build()


def _control_flow_model(op: str) -> bytes:
    """IF (or WHILE) over two one-operator subgraphs."""
    q = {"scale": 0.1, "zero_point": 0}
    branches = []
    for _ in range(2):
        g = TFLiteModelBuilder()
        i = g.add_input("i", (4,), "int8", **q)
        o = g.add_tensor("o", (4,), "int8", **q)
        g.add_operator("RELU", [i], [o])
        g.mark_output(o)
        branches.append(g)
    b = TFLiteModelBuilder()
    cond = b.add_input("cond", (1,), "bool")
    x = b.add_input("x", (4,), "int8", **q)
    y = b.add_tensor("y", (4,), "int8", **q)
    first, second = (b.add_subgraph(g) for g in branches)
    if op == "IF":
        options = {"then_subgraph_index": first, "else_subgraph_index": second}
        b.add_operator("IF", [cond, x], [y], options)
    else:
        options = {"cond_subgraph_index": first, "body_subgraph_index": second}
        b.add_operator("WHILE", [x], [y], options)
    b.mark_output(y)
    return b.build()


@pytest.mark.parametrize(
    "model, message",
    [
        (
            lambda: _variable_model(call_once=False),
            r"operator 1 \(READ_VARIABLE\): variable 'v' is read before anything assigns it",
        ),
        (
            lambda: _variable_model("computed"),
            r"operator 0 \(CALL_ONCE\): initialization subgraph 1 contains ADD",
        ),
        (
            lambda: _control_flow_model("IF"),
            r"operator 0 \(IF\): control flow is not supported: aot compiles one static graph",
        ),
        (
            lambda: _control_flow_model("WHILE"),
            r"operator 0 \(WHILE\): control flow is not supported: .*unroll the loop",
        ),
    ],
)
def test_refusals_are_one_line_errors_naming_the_operator(model, message: str) -> None:
    with pytest.raises(UnsupportedError, match=message + r".*docs/operators.md") as err:
        import_tflite_int8(model())
    assert "\n" not in str(err.value)
