"""Stateful int8 operators (SVDF) bit-exact with LiteRT's reference kernels, with the
state carried across invocations as LiteRT's interpreter carries it across ``invoke()``,
and restored by a reset."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aot.errors import UnsupportedError
from aot.frontend.tflite_int8 import import_tflite_int8
from aot.testing.harness import build, run_session
from aot.testing.tflite_builder import TFLiteModelBuilder
from aot.validate.reference import TFLiteReference
from tests.int8.harness import compile_vm, random_input
from tests.int8.svdf_models import litert_session, session_plan, svdf_keyword_model, svdf_model

pytestmark = pytest.mark.unit

SEEDS = range(6)
STEPS = 5  # invocations per model: the state carries them


def run_vm_steps(
    model: bytes, inputs: list[np.ndarray], rounding: str = "litert"
) -> list[np.ndarray]:
    """Our module over several inputs, threading the state from one call to the next."""
    import tvm

    imported, vm = compile_vm(model, rounding)
    states = [np.zeros(s.shape, s.dtype) for s in imported.states]
    outputs = []
    for x in inputs:
        args = [tvm.runtime.tensor(a) for a in (x, *states)]
        result = [r.numpy() for r in vm["main"](*args)]
        outputs.append(result[0])
        states = result[1:]
    return outputs


@pytest.mark.parametrize("seed", SEEDS)
def test_svdf_carries_state_like_litert(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    rank = int(rng.integers(1, 4))
    shape = dict(
        batch=int(rng.integers(1, 3)),
        depth=int(rng.integers(1, 12)),
        filters=rank * int(rng.integers(1, 5)),
        memory=int(rng.integers(1, 7)),
        rank=rank,
        bias=seed % 3 != 2,
    )
    model = svdf_model(rng, **shape)
    x_shape = (shape["batch"], shape["depth"])
    inputs = [random_input(rng, x_shape) for _ in range(STEPS)]
    reference = TFLiteReference(model)
    expected = [reference.run([x])[0] for x in inputs]
    actual = run_vm_steps(model, inputs)
    for step, (a, e) in enumerate(zip(actual, expected)):
        assert np.array_equal(a, e), (step, a, e)
    # Not all saturated: the scales exercise the requantization.
    assert np.abs(np.concatenate(expected).astype(int)).min() < 127


def test_svdf_other_activation_is_unsupported() -> None:
    rng = np.random.default_rng(1)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "int8", scale=0.1, zero_point=0)
    wf = b.add_constant("wf", np.ones((2, 4), np.int8), scale=0.1, zero_point=0)
    wt = b.add_constant("wt", np.ones((2, 3), np.int16), scale=0.1, zero_point=0)
    st = b.add_tensor("st", (1, 6), "int16", scale=0.1, zero_point=0, is_variable=True)
    y = b.add_tensor("y", (1, 2), "int8", scale=0.1, zero_point=0)
    b.add_operator("SVDF", [x, wf, wt, -1, st], [y], {"fused_activation_function": "NONE"})
    b.mark_output(y)
    del rng
    with pytest.raises(
        UnsupportedError, match=r"operator 0 \(SVDF\): fused activation NONE.*docs/operators.md"
    ):
        import_tflite_int8(b.build())


def test_svdf_keyword_model_carries_two_states() -> None:
    model = svdf_keyword_model()
    rng = np.random.default_rng(5)
    inputs = [random_input(rng, (1, 20)) for _ in range(8)]
    reference = TFLiteReference(model)
    expected = [reference.run([x])[0] for x in inputs]
    actual = run_vm_steps(model, inputs)
    for step, (a, e) in enumerate(zip(actual, expected)):
        assert np.array_equal(a, e), (step, a, e)
    assert len({e.tobytes() for e in expected}) > 1


def test_variable_tensor_updated_by_no_operator_is_unsupported() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "int8", scale=0.1, zero_point=0)
    st = b.add_tensor("st", (1, 4), "int8", scale=0.1, zero_point=0, is_variable=True)
    y = b.add_tensor("y", (1, 4), "int8", scale=0.1, zero_point=0)
    b.add_operator("ADD", [x, st], [y])
    b.mark_output(y)
    with pytest.raises(UnsupportedError, match=r"'st' .* is a variable tensor"):
        import_tflite_int8(b.build())


@pytest.mark.toolchain
def test_svdf_keyword_model_on_the_host_carries_state_and_resets(tmp_path) -> None:
    path = tmp_path / "svdf_kws.tflite"
    path.write_bytes(svdf_keyword_model())
    folder = build(path, tmp_path / "out", "host")
    metadata = json.loads((folder / "metadata.json").read_text())
    memory = metadata["memory"]
    state = next(p for p in memory["pools"] if p.get("kind") == "persistent")
    assert state["used_bytes"] == (16 * 6 + 8 * 4) * 2  # both int16 states, nothing else
    assert [s["name"] for s in memory["states"]] == ["svdf1_state", "svdf2_state"]
    plan = session_plan(9, (1, 20))
    actual = [o[0] for o in run_session(folder, plan)]
    expected = litert_session(path.read_bytes(), plan)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert np.array_equal(a, e), (step, a, e)
    assert [a.tobytes() for a in actual[6:]] == [a.tobytes() for a in actual[:3]]
    assert actual[3].tobytes() != actual[0].tobytes() or actual[4].tobytes() != actual[1].tobytes()
