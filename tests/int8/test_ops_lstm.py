"""The integer UNIDIRECTIONAL_SEQUENCE_LSTM bit-exact with LiteRT's reference kernels (8x8)
and with TFLite Micro's interpreter (16x8, which LiteRT cannot run), with both states
carried across invocations as the interpreters carry them, and restored by a reset (the
output state to its zero point, as TFLite resets it)."""

from __future__ import annotations

import numpy as np
import pytest

from aot.errors import UnsupportedError
from aot.frontend.tflite_int8 import import_tflite_int8
from aot.validate.reference import TFLiteReference
from tests.int8.harness import compile_vm, random_input
from tests.int8.lstm_models import int16_session_plan, lstm_model, tflm_session

pytestmark = pytest.mark.unit

OP = "UNIDIRECTIONAL_SEQUENCE_LSTM"
STEPS = 4  # invocations per model: the states carry them


def _initial(imported) -> list[np.ndarray]:
    return [np.zeros(s.shape, s.dtype) if s.initial is None else s.initial for s in imported.states]


def _run(model: bytes, plan: list) -> list[np.ndarray]:
    """Our module over a plan of inputs and "reset" entries, threading the states."""
    import tvm

    imported, vm = compile_vm(model)
    states = _initial(imported)
    outputs = []
    for entry in plan:
        if isinstance(entry, str):
            states = _initial(imported)
            continue
        result = [r.numpy() for r in vm["main"](*(tvm.runtime.tensor(a) for a in (entry, *states)))]
        outputs.append(result[0])
        states = result[1:]
    return outputs


def _reference(model: bytes, plan: list) -> list[np.ndarray]:
    reference = TFLiteReference(model)
    outputs = []
    for entry in plan:
        if isinstance(entry, str):
            reference.interpreter.reset_all_variables()
        else:
            outputs.append(reference.run([entry])[0])
    return outputs


@pytest.mark.parametrize("seed", range(8))
def test_lstm_carries_state_like_litert(seed: int) -> None:
    rng = np.random.default_rng(700 + seed)
    shape = dict(
        batch=int(rng.integers(1, 3)),
        steps=int(rng.integers(1, 4)),
        n_input=int(rng.integers(1, 9)),
        n_cell=int(rng.integers(1, 9)),
        cifg=seed % 3 == 1,
        time_major=seed % 2 == 1,
        cell_clip=float(rng.uniform(1.0, 4.0)) if seed % 3 == 2 else 0.0,
        cell_scale_log2=int(rng.integers(-15, -8)),
        peephole=seed % 2 == 0,
    )
    expected = _session_matches_litert(rng, lstm_model(rng, **shape), shape)
    # Not all saturated: the scales exercise the gates.
    assert np.abs(np.concatenate([e.ravel() for e in expected]).astype(int)).min() < 127


def _session_matches_litert(rng: np.random.Generator, model: bytes, shape: dict) -> list:
    """STEPS random inputs, a reset, then the first two again: bit-exact with LiteRT, and
    the first outputs again after the reset. Returns LiteRT's outputs."""
    steps, batch = shape.get("steps", 3), shape.get("batch", 1)
    leading = (steps, batch) if shape.get("time_major") else (batch, steps)
    inputs = [random_input(rng, (*leading, shape["n_input"])) for _ in range(STEPS)]
    plan = [*inputs, "reset", *inputs[:2]]
    expected = _reference(model, plan)
    actual = _run(model, plan)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert np.array_equal(a, e), (step, shape, a, e)
    assert [a.tobytes() for a in actual[STEPS:]] == [a.tobytes() for a in actual[:2]]
    return expected


# Projection (with and without bias and clip) and layer normalization, alone and together,
# with CIFG, peephole and time-major among them: one model each.
_OPTION_CASES = [
    dict(projection=True, n_output=3),
    dict(projection=True, n_output=6, projection_bias=True, proj_clip=0.6, time_major=True),
    dict(layer_norm=True, batch=2, cell_clip=2.0),
    dict(layer_norm=True, cifg=True, peephole=True, projection=True, n_output=5,
         projection_bias=True),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(_OPTION_CASES)))
def test_lstm_projection_and_layer_norm_match_litert(case: int) -> None:
    rng = np.random.default_rng(900 + case)
    shape = dict(batch=1, steps=3, n_input=int(rng.integers(2, 7)), n_cell=int(rng.integers(3, 9)))
    shape.update(_OPTION_CASES[case])
    model = lstm_model(rng, **shape)
    expected = _session_matches_litert(rng, model, shape)
    values = np.concatenate([e.ravel() for e in expected]).astype(int)
    assert len(np.unique(values)) > 4, values  # the outputs vary, not one saturated value
    if shape.get("proj_clip"):
        # The clip bites: some outputs sit on it (it is applied around 0, not the zero point).
        assert np.abs(values).max() == int(shape["proj_clip"] / _output_scale(model))


def _output_scale(model: bytes) -> float:
    return TFLiteReference(model).interpreter.get_output_details()[0]["quantization"][0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"activation": "RELU"}, r"fused activation RELU; the integer LSTM needs TANH"),
        ({"cell_scale_log2": -8}, r"cell state scale .* must be a power of two"),
    ],
)
def test_lstm_refused_options_name_the_option(kwargs: dict, message: str) -> None:
    rng = np.random.default_rng(3)
    model = lstm_model(rng, **kwargs)
    with pytest.raises(
        UnsupportedError,
        match=rf"operator 0 \({OP}\): {message}.*docs/operators.md",
    ):
        import_tflite_int8(model)


def test_litert_cannot_run_a_16x8_lstm() -> None:
    """Why the 16x8 form's reference is TFLite Micro's interpreter: LiteRT's kernel takes
    an int16 input for float and fails to prepare. When a LiteRT release runs it, this
    fails: then check aot against it too (docs/int8.md)."""
    from aot.errors import ModelError

    model = lstm_model(np.random.default_rng(5), activation_dtype="int16")
    with pytest.raises(ModelError, match=r"UNIDIRECTIONAL_SEQUENCE_LSTM\) failed to prepare"):
        TFLiteReference(model)


def _plan_outputs(model: bytes, plan: list) -> list[np.ndarray]:
    return _run(model, [e if isinstance(e, str) else e[0] for e in plan])


# Batch- and time-major, one and two batches, cell clips, cell scales 2**-15..2**-10.
_16X8_CASES = [
    dict(batch=1, steps=3, n_input=5, n_cell=4, cell_scale_log2=-11),
    dict(batch=2, steps=2, n_input=3, n_cell=6, time_major=True, cell_scale_log2=-15),
    dict(batch=2, steps=3, n_input=7, n_cell=3, cell_clip=1.5, cell_scale_log2=-12),
    dict(batch=1, steps=4, n_input=2, n_cell=8, time_major=True, cell_clip=3.0,
         cell_scale_log2=-10),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(_16X8_CASES)))
def test_16x8_lstm_carries_state_like_tflite_micro(case: int) -> None:
    """Six random int16 inferences, TFLite Micro's reset(), three again: bit-exact with
    TFLite Micro's interpreter, and the first outputs again after aot's reset."""
    shape = _16X8_CASES[case]
    rng = np.random.default_rng(1600 + case)
    model = lstm_model(rng, activation_dtype="int16", **shape)
    leading = (shape["steps"], shape["batch"]) if shape.get("time_major") else (
        shape["batch"], shape["steps"])  # fmt: skip
    plan = int16_session_plan(1700 + case, (*leading, shape["n_input"]))
    expected = tflm_session(model, plan)
    actual = _plan_outputs(model, plan)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert a.dtype == np.int16 and np.array_equal(a, e), (step, shape, a, e)
    assert [a.tobytes() for a in actual[6:]] == [a.tobytes() for a in actual[:3]]
    values = np.concatenate([e.ravel() for e in expected]).astype(int)
    assert len(np.unique(values)) > 8 and np.abs(values).min() < 32767, values


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"cifg": True}, "CIFG"),
        ({"peephole": True}, "peephole weights"),
        ({"projection": True, "n_output": 3}, "projection"),
        ({"layer_norm": True}, "layer normalization"),
    ],
)
def test_16x8_lstm_refuses_what_tflite_micro_lacks(kwargs: dict, option: str) -> None:
    """TFLite Micro's 16x8 kernel is the standard LSTM only, and it is the reference."""
    model = lstm_model(np.random.default_rng(6), activation_dtype="int16", **kwargs)
    with pytest.raises(
        UnsupportedError,
        match=rf"operator 0 \({OP}\): {option}.* in a 16x8 LSTM is not supported: TFLite "
        r"Micro's 16x8 kernel .*docs/operators.md",
    ):
        import_tflite_int8(model)


@pytest.mark.toolchain
def test_lstm_on_the_host_keeps_both_states_and_resets(tmp_path) -> None:
    import json

    from aot.testing.harness import build, run_session
    from tests.int8.svdf_models import litert_session, session_plan

    path = tmp_path / "lstm.tflite"
    path.write_bytes(lstm_model(np.random.default_rng(8), batch=1, steps=4, n_cell=6, cifg=True))
    folder = build(path, tmp_path / "out", "host")
    memory = json.loads((folder / "metadata.json").read_text())["memory"]
    state = next(p for p in memory["pools"] if p.get("kind") == "persistent")
    # The int8 output state (6 bytes) and the int16 cell state (12), each aligned to 16.
    assert state["used_bytes"] == 32
    assert [s["name"] for s in memory["states"]] == ["output_state", "cell_state"]
    plan = session_plan(4, (1, 4, 5))
    actual = [o[0] for o in run_session(folder, plan)]
    expected = litert_session(path.read_bytes(), plan)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert np.array_equal(a, e), (step, a, e)
    assert [a.tobytes() for a in actual[6:]] == [a.tobytes() for a in actual[:3]]


@pytest.mark.parametrize(("function", "integer_bits"), [("logistic", 3), ("tanh", 3), ("tanh", 4)])
def test_int16_fixed_point_activations_track_the_real_functions(
    function: str, integer_bits: int
) -> None:
    """Over every int16 input: within 12 steps of 2**-15 of the real function and tanh
    odd (not checked: monotonicity; the fixed-point result wiggles by a step here and
    there). Bit-exactness with LiteRT is checked through the LSTM tests above."""
    import tvm
    from tvm import te

    from aot.ops.lstm import fixedpoint16

    data = te.placeholder((65536,), "int16", "data")
    kernel = tvm.compile(
        te.create_prim_func(
            [data, fixedpoint16(data, function=function, integer_bits=integer_bits)]
        ),
        target="llvm",
    )
    x = np.arange(-32768, 32768, dtype=np.int64)
    out = tvm.runtime.tensor(np.zeros(65536, np.int16))
    kernel(tvm.runtime.tensor(x.astype(np.int16)), out)
    y = out.numpy().astype(np.int64)
    real = x / 2.0 ** (15 - integer_bits)
    expected = (1 / (1 + np.exp(-real)) if function == "logistic" else np.tanh(real)) * 32768
    assert np.abs(y - expected).max() <= 12
    if function == "tanh":
        assert (y[1:] == -y[1:][::-1]).all()  # x and -x, leaving out -32768


@pytest.mark.parametrize(("activation_dtype", "kind"), [("int8", "int8"), ("int16", "int16x8")])
def test_lstm_steps_share_their_kernels(activation_dtype: str, kind: str) -> None:
    """The step index is a tensor, so the time steps call the same three kernels: the code
    does not grow with the sequence length (the calls do, one line each)."""
    from tvm import tirx

    model = lstm_model(
        np.random.default_rng(4), steps=12, n_input=3, n_cell=3, activation_dtype=activation_dtype
    )
    module = import_tflite_int8(model).relax_module
    kernels = sorted(
        gv.name_hint for gv, f in module.functions.items() if isinstance(f, tirx.PrimFunc)
    )
    assert kernels == [f"lstm_{part}_{kind}" for part in ("cell", "hidden", "output", "step_input")]


def test_a_long_lstm_chain_partitions_in_seconds() -> None:
    """Each step reads the previous step's two states: partitioning keyed every operator
    by the nested keys of all it depends on, and hashing those took exponential time in
    the sequence length (10 s at 16 steps, a 50-step model never got to lowering)."""
    import time

    from aot.backends import Backend, OperatorPattern
    from aot.partition import partition

    class TakesNothing(Backend):
        name = "takes_nothing"

        def patterns(self):
            return [OperatorPattern("none", ("lstm_cell_int8",), lambda op: False)]

    imported = import_tflite_int8(
        lstm_model(np.random.default_rng(4), steps=18, n_input=2, n_cell=2)
    )
    start = time.perf_counter()
    partition(imported, [TakesNothing()])
    assert time.perf_counter() - start < 5.0
