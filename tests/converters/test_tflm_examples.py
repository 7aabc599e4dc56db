"""TensorFlow Lite Micro's own example models, built by aot, bit-exact against TFLite
Micro's interpreter (issue 17).

The models are TFLM's (../shared/tflm, ``aot.testing.shared.tflm_model``): hello_world
(int8 and float), micro_speech, person_detect, the keyword benchmark (int16 and int8
SVDF), mnist_lstm, memory_footprint's ADD, and the xtensa micro_speech_lstm. Each runs
seeded random inputs in one session, its state carried from one inference to the next
as TFLite Micro's interpreter carries it (``run(reset=False)``): SVDF and LSTM are
stateful.

FULLY_CONNECTED: aot's default rounding follows LiteRT (single rounding, the importer's
``LITERT_ROUNDING``), TFLite Micro's reference kernel rounds twice (docs/int8.md, "LiteRT
against TFLite Micro"). These builds take TFLite Micro's rounding by emptying that table
for the build, so every operator rounds as TFLite Micro does;
``test_default_build_follows_litert`` shows the default build against LiteRT on the one
model where the two differ on our inputs (hello_world, every input).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aot.errors import ModelError, UnsupportedError
from aot.frontend.tflite_checks import validate
from aot.frontend.validate import DAMAGED
from aot.testing import run_tflite_reference
from aot.testing.harness import build, random_inputs, run_many
from aot.testing.reference import TFLMReference
from aot.testing.shared import TFLM_MODELS, tflm_model

# Model -> seeded random inputs per run (person_detect is ~7M MACs an inference).
BIT_EXACT = {
    "hello_world_int8": 20,
    "hello_world_float": 20,
    "micro_speech": 10,
    "person_detect": 3,
    "keyword_scrambled": 12,
    "keyword_scrambled_8bit": 12,
    "mnist_lstm": 8,
    "memory_footprint": 10,
    "micro_speech_lstm": 6,
}
SEED = 1717
BOARD = "mps2_an386"


def build_with_tflm_rounding(name: str, output: Path, board: str = "host") -> Path:
    """``aot build`` with every operator rounding as TFLite Micro's kernels do."""
    from aot.frontend.tflite_int8 import importer

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(importer, "LITERT_ROUNDING", {})
        return build(tflm_model(name), output, board)


def session_inputs(folder: Path, name: str) -> list[list[np.ndarray]]:
    specs = json.loads((folder / "metadata.json").read_text())["inputs"]
    return random_inputs(specs, BIT_EXACT[name], seed=SEED)


def tflm_session(name: str, batches: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """TFLite Micro's outputs for ``batches`` in order, the state carried between them."""
    tflm = TFLMReference(tflm_model(name))
    tflm.interpreter.reset()
    return [tflm.run(inputs, reset=False) for inputs in batches]


def assert_same_session(name: str, got: list, want: list, float_exact: bool = True) -> None:
    """Integer outputs bit-exact; float ones too unless ``float_exact`` is false, then
    within `aot validate`'s float rule (atol 1e-5 + rtol 1e-4)."""

    def same(a: np.ndarray, b: np.ndarray) -> bool:
        if a.dtype.kind == "f" and not float_exact:
            return bool(np.allclose(a, b, rtol=1e-4, atol=1e-5))
        return np.array_equal(a, b)

    differing = [
        index
        for index, (g, w) in enumerate(zip(got, want, strict=True))
        if not all(same(a, b) for a, b in zip(g, w, strict=True))
    ]
    assert differing == [], f"{name}: inferences {differing} of {len(want)} differ"


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(TFLM_MODELS))
def test_tflm_models_are_not_called_damaged(name: str) -> None:
    """A model TFLite Micro's interpreter runs is valid: the import checks take every one
    (person_detect's 1-D biases say quantized_dimension 3; the LSTM models carry empty
    intermediates). Only the audio preprocessor's TFLM signal operators are refused, later,
    as unsupported."""
    path = tflm_model(name)
    try:
        validate(path.read_bytes(), str(path))
    except ModelError as err:
        assert DAMAGED not in str(err), str(err)
        raise
    except UnsupportedError as err:  # valid but not handled: never the damaged message
        assert DAMAGED not in str(err)


@pytest.mark.unit
@pytest.mark.parametrize("name", ["keyword_scrambled", "keyword_scrambled_8bit", "person_detect"])
def test_auto_sends_integer_models_to_the_int8_importer(name: str) -> None:
    """keyword_scrambled has an int16 input and a quantized int32 output: still an integer
    model, so --frontend auto must not hand it to TVM's float frontend."""
    from aot.frontend import import_model

    assert import_model(tflm_model(name)).frontend == "aot-tflite-int8"


@pytest.mark.unit
def test_audio_preprocessor_is_refused_naming_its_custom_operator() -> None:
    """TFLM's signal library operators (CUSTOM:SignalWindow, ...) have no aot kernel."""
    from aot.frontend import import_model

    with pytest.raises(UnsupportedError, match="CUSTOM:SignalWindow") as err:
        import_model(tflm_model("audio_preprocessor_int8"))
    assert "docs/operators.md" in str(err.value)


@pytest.fixture(scope="module", params=sorted(BIT_EXACT))
def host_build(request, tmp_path_factory) -> tuple[str, Path]:
    name = request.param
    return name, build_with_tflm_rounding(name, tmp_path_factory.mktemp(name) / "out")


@pytest.mark.toolchain
def test_host_build_equals_tflite_micro(host_build) -> None:
    name, folder = host_build
    batches = session_inputs(folder, name)
    assert_same_session(name, run_many(folder, batches), tflm_session(name, batches))


@pytest.mark.toolchain
def test_default_build_follows_litert(tmp_path: Path) -> None:
    """hello_world's FULLY_CONNECTED layers: over all 256 inputs the default build equals
    LiteRT's reference kernels, and TFLite Micro's double rounding differs on some."""
    name = "hello_world_int8"
    folder = build(tflm_model(name), tmp_path / "out")
    batches = [[np.array([[value]], dtype=np.int8)] for value in range(-128, 128)]
    got = run_many(folder, batches)
    litert = [run_tflite_reference(tflm_model(name), inputs) for inputs in batches]
    assert_same_session(name, got, litert)
    tflm = tflm_session(name, batches)
    same = [np.array_equal(g[0], t[0]) for g, t in zip(got, tflm, strict=True)]
    assert not all(same)  # the difference is real; docs/int8.md records it


@pytest.fixture(scope="module", params=sorted(BIT_EXACT))
def board_build(request, tmp_path_factory) -> tuple[str, Path]:
    name = request.param
    return name, build_with_tflm_rounding(name, tmp_path_factory.mktemp(name) / "out", BOARD)


@pytest.mark.emulator
@pytest.mark.slow
def test_board_build_equals_tflite_micro(board_build) -> None:
    name, folder = board_build
    batches = session_inputs(folder, name)
    got = run_many(folder, batches, 600.0)
    # hello_world_float: the Cortex-M4F build's float32 arithmetic (gcc contracts a*b+c
    # into one fused, singly rounded VFMA) is a few ulp from TFLite Micro's on the host.
    assert_same_session(name, got, tflm_session(name, batches), float_exact=False)


def _fc_with_per_channel(weight_axis: int, bias_axis: int, bias_scales: int) -> bytes:
    """An int8 FULLY_CONNECTED with per-channel weights and bias, written with the given
    quantized dimensions and bias scale count (the builder refuses what a broken converter
    writes, so the fields are set on its tensor records after the checks)."""
    from aot.testing.tflite_builder import TFLiteModelBuilder

    rng = np.random.default_rng(17)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 16), "int8", scale=0.05, zero_point=-3)
    w_scales = [0.01 + 0.001 * i for i in range(8)]
    w = b.add_constant(
        "w", rng.integers(-127, 128, (8, 16), dtype=np.int8), scale=w_scales,
        zero_point=[0] * 8, quantized_dimension=0,
    )  # fmt: skip
    bias = b.add_constant(
        "bias", rng.integers(-500, 500, 8, dtype=np.int32),
        scale=[0.05 * s for s in w_scales], zero_point=[0] * 8, quantized_dimension=0,
    )  # fmt: skip
    b._tensors[w].quantized_dimension = weight_axis
    b._tensors[bias].quantized_dimension = bias_axis
    b._tensors[bias].scale = b._tensors[bias].scale[:bias_scales]
    b._tensors[bias].zero_point = b._tensors[bias].zero_point[:bias_scales]
    y = b.add_tensor("y", (1, 8), "int8", scale=0.1, zero_point=2)
    b.add_operator("FULLY_CONNECTED", inputs=[x, w, bias], outputs=[y])
    b.mark_output(y)
    return b.build()


@pytest.mark.unit
def test_per_channel_rule_judges_what_the_kernels_read() -> None:
    """A 1-D bias is per-channel along its one dimension (person_detect's say 3); its scale
    count must still match its length, and a 2-D tensor's quantized dimension must exist."""
    from aot.frontend.tflite_int8 import import_tflite_int8

    import_tflite_int8(_fc_with_per_channel(0, 3, 8))
    with pytest.raises(ModelError, match=r"7 per-channel scales for dimension 0 of size 8"):
        validate(_fc_with_per_channel(0, 3, 7), "short_bias.tflite")
    with pytest.raises(ModelError, match=r"quantized along dimension 2 of its shape \[8, 16\]"):
        validate(_fc_with_per_channel(2, 0, 8), "bad_weights.tflite")


def _int8_svdf_model(rng: np.random.Generator, state_zp: int) -> bytes:
    """One SVDF in TFLite Micro's int8 form (int8 time weights and state), scales chosen
    so the feature product saturates the int8 state now and then."""
    from aot.testing.tflite_builder import TFLiteModelBuilder

    batch, depth, rank = 2, 6, 2
    filters, memory = 2 * rank, 4
    f32 = np.float32
    b = TFLiteModelBuilder()
    x_scale = float(f32(0.05))
    x = b.add_input("x", (batch, depth), "int8", scale=x_scale, zero_point=-7)
    wf_scale, wt_scale, st_scale = float(f32(0.01)), float(f32(0.008)), float(f32(0.06))
    wf = b.add_constant(
        "wf", rng.integers(-127, 128, (filters, depth), dtype=np.int8), scale=wf_scale,
        zero_point=0,
    )  # fmt: skip
    wt = b.add_constant(
        "wt", rng.integers(-127, 128, (filters, memory), dtype=np.int8), scale=wt_scale,
        zero_point=0,
    )  # fmt: skip
    bias = b.add_constant(
        "bias", rng.integers(-3000, 3000, filters // rank, dtype=np.int32),
        scale=float(f32(f32(st_scale) * f32(wt_scale))), zero_point=0,
    )  # fmt: skip
    state = b.add_tensor(
        "state", (batch, filters * memory), "int8", scale=st_scale, zero_point=state_zp,
        is_variable=True,
    )  # fmt: skip
    y = b.add_tensor("y", (batch, filters // rank), "int8", scale=0.2, zero_point=3)
    b.add_operator("SVDF", [x, wf, wt, bias, state], [y], {"rank": rank})
    b.mark_output(y)
    return b.build()


@pytest.mark.unit
@pytest.mark.parametrize("state_zp", [0, -50, 100])
def test_int8_svdf_carries_state_like_tflite_micro(state_zp: int) -> None:
    """The int8 form over 6 inferences against TFLite Micro's interpreter; a zero point of
    100 makes the clamped newest entry plus the zero point wrap, as TFLite Micro stores it."""
    import tvm

    from tests.int8.harness import compile_vm

    rng = np.random.default_rng(900 + state_zp)
    model = _int8_svdf_model(rng, state_zp)
    steps = [rng.integers(-128, 128, (2, 6), dtype=np.int8) for _ in range(6)]
    imported, vm = compile_vm(model, "double")
    states = [
        np.zeros(s.shape, s.dtype) if s.initial is None else np.asarray(s.initial, s.dtype)
        for s in imported.states
    ]
    # The state starts at its zero point, as TFLite Micro resets an int8 variable.
    assert (states[0] == state_zp).all()
    tflm = TFLMReference(model)
    tflm.interpreter.reset()
    for index, x in enumerate(steps):
        result = [r.numpy() for r in vm["main"](*(tvm.runtime.tensor(a) for a in (x, *states)))]
        states = result[1:]
        want = tflm.run([x], reset=False)[0]
        np.testing.assert_array_equal(result[0], want, err_msg=f"inference {index}")
