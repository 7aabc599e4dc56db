"""`aot run --json` on the emulated boards: what the report holds, that QEMU numbers are
deterministic instructions, that QEMU is always gone afterwards, and that a firmware that
never answers ends in a clear DeviceError within the timeout."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
from emulator_helpers import (
    EMULATED,
    EXAMPLE_INPUT,
    REPO,
    qemu_processes_running,
    require_tools,
)

from aot.boards import load_board
from aot.cli import main as aot_main
from aot.emulator.qemu import qemu_children
from aot.errors import AotError, DeviceError
from aot.project.linker import DEFAULT_STACK_SIZE

pytestmark = pytest.mark.emulator

SILENT_TIMEOUT_S = 3.0
# QEMU start-up (a few hundred ms) plus its stop (terminate, at most 3 s, then kill).
QEMU_OVERHEAD_S = 8.0


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")


def aot_run_json(folder: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    """`aot run FOLDER -i example --json` in this process; the parsed report."""
    capsys.readouterr()
    code = aot_main(["run", str(folder), "-i", str(EXAMPLE_INPUT), "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(params=EMULATED)
def built_example(request: pytest.FixtureRequest, firmware) -> tuple[str, Path]:
    folder = firmware("example", request.param)
    if isinstance(folder, AotError):
        pytest.fail(f"the example model does not build for {request.param}: {folder}")
    return request.param, folder


def test_report_has_instructions_stack_sections_and_pools(built_example, capsys) -> None:
    board_name, folder = built_example
    board = load_board(board_name)
    metadata = json.loads((folder / "metadata.json").read_text())
    report = aot_run_json(folder, capsys)

    assert report["board"] == board_name and report["status"] == 0 and report["runs"] == 1
    # Time: instructions under QEMU -icount, with the resolution of one counter tick.
    per_tick = board.ticks.instructions_per_tick
    assert report["time_unit"] == "instructions"
    assert report["time_per_run"] > 0 and report["time_per_run"] % per_tick == 0
    assert report["time_per_run"] == report["ticks_per_run"] * per_tick
    assert report["time_min"] == report["time_max"] == report["time_per_run"]
    assert report["ticks_per_second"] == board.ticks.hz
    # Stack: measured (linker-defined aot_stack_limit), not exhausted.
    assert isinstance(report["peak_stack_bytes"], int)
    assert 0 < report["peak_stack_bytes"] < DEFAULT_STACK_SIZE
    assert report["model_stack_bytes"] > 0 and report["stack_exhausted"] is False
    # Sections of the ELF: constants in rodata, the workspace pool in bss.
    sections = report["sections"]
    assert set(sections) == {"text", "rodata", "data", "bss"}
    assert sections["text"] > 0
    assert sections["rodata"] >= metadata["constants"]["bytes"] == report["constants_bytes"]
    assert sections["bss"] >= report["workspace_bytes"] > 0
    # One pool, in the board's default workspace memory, limited by its size.
    region = board.default_region("workspace")
    (pool,) = report["pools"]
    assert (pool["name"], pool["size_limit"], pool["used_bytes"]) == (
        region.name,
        region.size,
        report["workspace_bytes"],
    )
    assert [{"shape": o["shape"], "dtype": o["dtype"]} for o in report["outputs"]] == [
        {"shape": o["shape"], "dtype": o["dtype"]} for o in metadata["outputs"]
    ]
    assert [len(o["values"]) for o in report["outputs"]] == [
        math.prod(o["shape"]) for o in metadata["outputs"]
    ]


def test_two_runs_count_the_same_instructions(built_example, capsys) -> None:
    board_name, folder = built_example
    if not load_board(board_name).has("deterministic_ticks"):
        pytest.skip(f"{board_name} does not claim deterministic ticks")
    first = aot_run_json(folder, capsys, "--repeat", "3")
    second = aot_run_json(folder, capsys, "--repeat", "3")
    keys = ["time_per_run", "time_min", "time_max", "ticks_per_run", "peak_stack_bytes"]
    assert {k: first[k] for k in keys} == {k: second[k] for k in keys}
    # Within one session the three runs count the same too.
    assert first["time_min"] == first["time_max"] == first["time_per_run"]


def test_no_qemu_left_after_runs(firmware, capsys) -> None:
    folder = firmware("example", "mps2_an386")
    assert not isinstance(folder, AotError), folder
    aot_run_json(folder, capsys)
    assert qemu_children() == [], "aot run (in-process) left a QEMU child"
    assert qemu_processes_running(str(folder)) == []
    # As a separate process: once `aot run` exits, no QEMU of this firmware survives.
    result = subprocess.run(
        [sys.executable, "-m", "aot", "run", str(folder), "-i", str(EXAMPLE_INPUT), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["time_unit"] == "instructions"
    assert qemu_processes_running(str(folder)) == []


def test_silent_firmware_times_out_with_a_device_error(silent_folder, capsys) -> None:
    capsys.readouterr()
    start = time.monotonic()
    code = aot_main(
        ["run", str(silent_folder), "-i", str(EXAMPLE_INPUT), "--timeout", str(SILENT_TIMEOUT_S)]
    )
    elapsed = time.monotonic() - start
    out, err = capsys.readouterr()
    assert code == DeviceError.exit_code, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "no answer" in lines[0] and f"within {SILENT_TIMEOUT_S:g} s" in lines[0], lines[0]
    assert "HELLO" in lines[0], lines[0]
    assert SILENT_TIMEOUT_S <= elapsed < SILENT_TIMEOUT_S + QEMU_OVERHEAD_S
    assert qemu_children() == [] and qemu_processes_running(str(silent_folder)) == []
