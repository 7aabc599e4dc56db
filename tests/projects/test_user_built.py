"""`aot run` and `aot flash` work on a project the user built themselves, as long as the
firmware is where metadata.json says the build puts it; a missing one names the path
and the command that builds it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from projects_helpers import EXAMPLE_INPUT, EXAMPLE_OUTPUT, build, require_tools

from aot.errors import ConfigError
from aot.runner import run_model


@pytest.mark.unit
def test_missing_firmware_names_path_and_build_command(tmp_path: Path) -> None:
    out = build(tmp_path / "out", "mps2_an386", "--no-build")
    elf = out / "project" / "build" / "firmware.elf"
    with pytest.raises(ConfigError) as info:
        run_model(out, [np.load(EXAMPLE_INPUT)])
    message = str(info.value)
    assert f"firmware {elf} not found" in message
    assert f"build the project with `make -C {out / 'project'}`" in message
    assert "--no-build; build it with 'aot build' first" not in message


@pytest.mark.unit
def test_zephyr_project_is_not_called_no_build(tmp_path: Path) -> None:
    """A Zephyr project is never built by aot; running it before `west build` says so
    with the west command, not 'generated with --no-build'."""
    out = build(tmp_path / "out", "mps2_an386", "--template", "zephyr")
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["project"]["build_tool"] == "west"
    with pytest.raises(ConfigError) as info:
        run_model(out, [np.load(EXAMPLE_INPUT)])
    message = str(info.value)
    assert f"firmware {out / 'project/build/zephyr/zephyr.elf'} not found" in message
    assert f"`west build -b mps2/an386 {out / 'project'} -d {out / 'project/build'}`" in message


@pytest.mark.toolchain
@pytest.mark.emulator
def test_run_a_project_built_with_make_by_the_user(tmp_path: Path) -> None:
    require_tools("arm-none-eabi-gcc", "make", "qemu-system-arm")
    out = build(tmp_path / "out", "mps2_an386", "--no-build")
    assert "build" not in json.loads((out / "metadata.json").read_text())
    subprocess.run(["make", "-s", "-C", str(out / "project")], check=True, capture_output=True)
    report = run_model(out, [np.load(EXAMPLE_INPUT)], timeout=60)
    np.testing.assert_array_equal(report.outputs[0], np.load(EXAMPLE_OUTPUT))
