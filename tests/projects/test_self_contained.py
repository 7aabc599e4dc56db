"""`project/` holds everything it builds from (its own copy of the model library and of
the runtime), so a copy of it builds anywhere."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from projects_helpers import EXAMPLE_INPUT, EXAMPLE_OUTPUT, build, require_tools

from aot.boards import load_board

pytestmark = pytest.mark.toolchain


def moved_project(tmp_path: Path, board: str) -> Path:
    out = build(tmp_path / "out", board, "--no-build")
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["project"]["self_contained"] is True
    project = out / "project"
    for text_file in project.rglob("*"):
        if text_file.suffix in {".mk", ".cmake", ".yml", ".txt", ""} and text_file.is_file():
            assert "../model" not in text_file.read_text(errors="replace"), text_file
    elsewhere = tmp_path / "somewhere" / "else"
    shutil.copytree(project, elsewhere)
    shutil.rmtree(out)  # nothing of the build folder is left to lean on
    subprocess.run(["make", "-s", "-C", str(elsewhere)], check=True, capture_output=True)
    return elsewhere


def test_host_project_builds_and_runs_after_a_copy(tmp_path: Path) -> None:
    require_tools("gcc", "make")
    from aot.device.client import DeviceClient
    from aot.device.transport import PipeTransport

    project = moved_project(tmp_path, "host")
    executable = project / "build" / "aot_app"
    with DeviceClient(PipeTransport.spawn([str(executable)]), timeout=30) as client:
        result = client.run([np.load(EXAMPLE_INPUT)])
        client.quit()
    np.testing.assert_array_equal(result.outputs[0], np.load(EXAMPLE_OUTPUT))


@pytest.mark.emulator
def test_cmsis_project_builds_and_runs_after_a_copy(tmp_path: Path) -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")
    from aot.device.client import DeviceClient
    from aot.device.transport import SerialTransport
    from aot.emulator.qemu import QemuInstance

    board = load_board("mps2_an386")
    project = moved_project(tmp_path, board.name)
    elf = project / "build" / "firmware.elf"
    with (
        QemuInstance(board, elf) as qemu,
        DeviceClient(SerialTransport(qemu.url), timeout=60) as client,
    ):
        result = client.run([np.load(EXAMPLE_INPUT)])
        client.quit()
    np.testing.assert_array_equal(result.outputs[0], np.load(EXAMPLE_OUTPUT))
