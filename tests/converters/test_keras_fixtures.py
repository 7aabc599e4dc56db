"""What TensorFlow's converter makes of Keras models, through aot as a user runs it.

Every fixture of tests/fixtures/converters/tflite/models.json (scripts/make_converter_models.py:
keras.applications at small sizes, DS-CNN, a transformer block, Conv1D, U-Net, GRU, LSTM;
dynamic and fixed batch; int8 and 16x8) must

- pass aot's import checks: a file the converter wrote is never called damaged;
- build for the host with default options and give, on seeded random inputs, exactly the
  outputs of LiteRT's reference kernels (TensorFlow Lite Micro's interpreter where LiteRT
  cannot run the model: keras_fixtures.TFLM_REFERENCE says why);
- for a chosen set, build with only ``--board`` for mps2_an386 and mps3_an547 and be
  bit-exact under QEMU.

No failure is marked expected: a fixture aot refuses is a failing test (issue 17).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aot.errors import AotError, ModelError, UnsupportedError
from aot.frontend import import_model
from aot.testing.harness import build, random_inputs, run_many
from tests.converters.keras_fixtures import (
    differing_inputs,
    entries,
    is_slow,
    manifest,
    model_path,
    reference_outputs,
)

HOST_INPUTS = 8
BOARD_INPUTS = 3
SEED = 2026
NAMES = [m["name"] for m in entries()]

# Boards run the fixtures that fit them and cover the families: a MobileNetV3Small and a
# transformer block on the Cortex-M4F, the MobileNetV2 whose constants need the placement
# across memories on the Cortex-M55.
AN386_MODELS = [
    "ds_cnn_int8_fixed",
    "ds_cnn_int8_dynamic",
    "ds_cnn_16x8_fixed",
    "transformer_block_int8_fixed",
    "transformer_block_int8_dynamic",
    "conv1d_int8_fixed",
    "conv1d_int8_dynamic",
    "unet_resizing_int8_fixed",
    "mobilenet_v1_025_96_int8_fixed",
    "mobilenet_v3_small_050_96_int8_fixed",
    "mobilenet_v3_small_min_050_96_int8_dynamic",
    "lstm_unrolled_int8_fixed",
]
AN547_MODELS = [
    "ds_cnn_int8_dynamic",
    "transformer_block_int8_fixed",
    "conv1d_int8_fixed",
    "unet_resizing_int8_dynamic",
    "mobilenet_v1_025_96_int8_dynamic",
    "mobilenet_v2_035_96_int8_fixed",
]


def with_marks(names: list[str], *marks: pytest.MarkDecorator) -> list:
    return [
        pytest.param(name, marks=[*marks, *([pytest.mark.slow] if is_slow(name) else [])])
        for name in names
    ]


@pytest.mark.unit
def test_the_manifest_lists_every_file_and_says_why_a_model_is_missing() -> None:
    """models.json and the folder agree, each entry records the converter settings and
    tool versions, and every model the converter could not make is named with the reason."""
    folder = model_path("x").parent
    files = sorted(p.stem for p in folder.glob("*.tflite"))
    assert files == sorted(NAMES)
    assert len(NAMES) >= 30
    for model in entries():
        assert model_path(model["name"]).stat().st_size == model["bytes"], model["name"]
        assert model["batch"] in ("dynamic", "fixed") and model["quantization"] in ("int8", "16x8")
        assert set(model["tools"]) == {"tensorflow", "keras", "numpy"}
        assert model["converter"]["api"] == "tf.lite.TFLiteConverter.from_keras_model"
    for missing in manifest()["not_converted"]:
        assert missing["why"], missing
    families = {(m["family"], m["batch"]) for m in entries()}
    for family in {m["family"] for m in entries()}:
        assert {(family, "dynamic"), (family, "fixed")} <= families, family


@pytest.mark.unit
@pytest.mark.parametrize("name", NAMES)
def test_no_converter_output_is_called_damaged(name: str) -> None:
    """aot's import stage (the validation pass, then the int8 importer's own checks)
    takes the file, or at most names an operator it does not handle (UnsupportedError,
    which the host build below reports as a failure); it never calls it damaged."""
    try:
        import_model(model_path(name))
    except UnsupportedError:
        pass
    except ModelError as err:
        pytest.fail(str(err))


@pytest.fixture(scope="module")
def host_build(tmp_path_factory):
    """host_build(name) -> the folder of `aot build NAME --board host`, or the AotError."""
    cache: dict[str, Path | AotError] = {}

    def get(name: str) -> Path | AotError:
        if name not in cache:
            out = tmp_path_factory.mktemp(name) / "out"
            try:
                cache[name] = build(model_path(name), out, "host")
            except AotError as err:
                cache[name] = err
        return cache[name]

    return get


@pytest.mark.toolchain
@pytest.mark.parametrize("name", with_marks(NAMES))
def test_host_build_is_bit_exact_with_the_reference(name: str, host_build) -> None:
    built = host_build(name)
    if isinstance(built, AotError):
        pytest.fail(f"{name}: aot build --board host failed: {built}")
    specs = json.loads((built / "metadata.json").read_text())["inputs"]
    batches = random_inputs(specs, HOST_INPUTS, seed=SEED)
    differ = differing_inputs(run_many(built, batches), reference_outputs(name, batches))
    assert differ == [], f"{name}: {len(differ)} of {HOST_INPUTS} inputs differ: {differ}"


def run_on_board(name: str, board: str, folder: Path) -> None:
    for tool in ("arm-none-eabi-gcc", "make", "qemu-system-arm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found on PATH (bash scripts/setup.sh installs it)")
    try:
        built = build(model_path(name), folder, board)
    except AotError as err:
        pytest.fail(f"{name}: aot build --board {board} failed: {err}")
    specs = json.loads((built / "metadata.json").read_text())["inputs"]
    batches = random_inputs(specs, BOARD_INPUTS, seed=SEED + 1)
    differ = differing_inputs(run_many(built, batches), reference_outputs(name, batches))
    assert differ == [], f"{name} on {board}: {len(differ)} of {BOARD_INPUTS} inputs differ"


@pytest.mark.emulator
@pytest.mark.parametrize("name", with_marks(AN386_MODELS))
def test_bit_exact_on_mps2_an386(name: str, tmp_path: Path) -> None:
    run_on_board(name, "mps2_an386", tmp_path / "out")


@pytest.mark.emulator
@pytest.mark.parametrize("name", with_marks(AN547_MODELS))
def test_bit_exact_on_mps3_an547(name: str, tmp_path: Path) -> None:
    run_on_board(name, "mps3_an547", tmp_path / "out")
