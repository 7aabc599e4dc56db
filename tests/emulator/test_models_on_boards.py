"""The MLPerf Tiny int8 models on every emulated board, under QEMU, bit-exact.

For each model x board: `aot build` for the board, then the shipped X.input.npy must give
exactly X.output.npy (ai-edge-litert's reference kernels). Whether a model fits a board
is decided from the board's memory sizes (emulator_helpers.overflowing_regions); where it
does not, the build must fail with a PlanningError naming the memory. The failure path is
also exercised on purpose with shrunken copies of each board.

On the default board (mps2_an386, Cortex-M4F) each model also runs seeded random inputs
in one QEMU session and is compared with the TFLite reference kernels. Measured cost per
inference under QEMU on the CI machine: ad01 ~40 ms, kws ~60 ms, resnet ~350 ms,
vww ~1.2 s (about 5.5 min of one core for 200 inputs of all four); set
AOT_EMULATOR_RANDOM_INPUTS to run fewer or more.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from emulator_helpers import (
    EMULATED,
    MODELS,
    MODELS_DIR,
    model_path,
    overflowing_regions,
    require_tools,
)

from aot.boards import load_board
from aot.errors import AotError, PlanningError, ToolchainError
from aot.sizes import parse_size
from aot.testing import run_tflite_reference
from aot.testing.harness import build, random_inputs, run_many

pytestmark = pytest.mark.emulator

# 60 by default: vww_96_int8's 200 took about 190 s of the default suite's CPU (CI's
# 30 minutes); AOT_EMULATOR_RANDOM_INPUTS=200 runs the full set.
RANDOM_INPUTS = int(os.environ.get("AOT_EMULATOR_RANDOM_INPUTS", "60"))
SEED = 2026
M4_BOARD = "mps2_an386"  # Cortex-M4F: the reference board for the random inputs


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("board_name", EMULATED)
def test_reference_output_is_exact_on_board(board_name, model, firmware, model_needs) -> None:
    board = load_board(board_name)
    expected_overflow = overflowing_regions(board, model_needs(model))
    built = firmware(model, board_name)
    if expected_overflow:
        assert isinstance(built, PlanningError | ToolchainError), (
            f"{model} should not fit {', '.join(expected_overflow)} of {board_name}, "
            f"but the build gave {built}"
        )
        assert any(f"'{region}'" in str(built) for region in expected_overflow), str(built)
        return
    if isinstance(built, AotError):
        pytest.fail(f"{model} fits {board_name} by its memory sizes, but the build failed: {built}")
    x = np.load(MODELS_DIR / f"{model}.input.npy")
    (got,) = run_many(built, [[x]])[0]
    np.testing.assert_array_equal(got, np.load(MODELS_DIR / f"{model}.output.npy"))


def shrunken_board(board_name: str, kind: str, size: int, folder: Path) -> str:
    """Write a copy of the board whose default ``kind`` region has ``size`` bytes into
    ``folder`` (to be put on AOT_BOARDS_PATH); return its name. For constants every
    memory that may hold them shrinks: they would move to the next one with room."""
    board = load_board(board_name)
    assert board.path is not None
    data = yaml.safe_load(board.path.read_text())
    region = board.default_region(kind).name
    for memory in data["memories"]:
        if memory["name"] == region or (kind == "constants" and kind in memory["holds"]):
            memory["size"] = min(size, parse_size(memory["size"]))
    data["name"] = f"{board_name}_small_{kind}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{data['name']}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return str(data["name"])


@pytest.mark.parametrize(
    ("kind", "size"),
    [("constants", 128 * 1024), ("workspace", 32 * 1024)],
    ids=["constants_128K", "workspace_32K"],
)
@pytest.mark.parametrize("board_name", EMULATED)
def test_model_too_large_for_a_memory_fails_naming_it(
    board_name, kind, size, model_needs, tmp_path, monkeypatch
) -> None:
    """vww (232 KB constants, 54 KB workspace) on a board whose constants regions are
    128 KB (the plan-time capacity check refuses them) or whose workspace region is 32 KB
    (the planner refuses the pool): a PlanningError naming that memory, and nothing left
    behind."""
    monkeypatch.setenv("AOT_BOARDS_PATH", str(tmp_path / "boards"))
    small = shrunken_board(board_name, kind, size, tmp_path / "boards")
    region = load_board(small).default_region(kind).name
    assert overflowing_regions(load_board(small), model_needs("vww_96_int8")) == [region]
    out = tmp_path / "out"
    with pytest.raises(PlanningError) as info:
        build(model_path("vww_96_int8"), out, small)
    message = str(info.value)
    assert f"'{region}'" in message and "\n" not in message, message
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["boards"], "staging folder left behind"


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_random_inputs_match_tflite_reference_kernels_on_m4(model, firmware) -> None:
    built = firmware(model, M4_BOARD)
    if isinstance(built, AotError):
        pytest.fail(f"{model} does not build for {M4_BOARD}: {built}")
    specs = json.loads((built / "metadata.json").read_text())["inputs"]
    batches = random_inputs(specs, RANDOM_INPUTS, seed=SEED)
    results = run_many(built, batches)  # one QEMU session for all inputs
    mismatches = []
    for index, (inputs, outputs) in enumerate(zip(batches, results, strict=True)):
        expected = run_tflite_reference(model_path(model), inputs)
        if not all(np.array_equal(a, b) for a, b in zip(outputs, expected, strict=True)):
            mismatches.append(index)
    assert mismatches == [], (
        f"{model} on {M4_BOARD}: {len(mismatches)} of {RANDOM_INPUTS} inputs differ "
        f"(first: {mismatches[:5]})"
    )
