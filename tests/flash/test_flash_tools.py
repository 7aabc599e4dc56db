"""Running a flash tool: fake executables on a temporary PATH stand in for the real ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from flash_helpers import crafted_folder, fake_tool, only_path, recorded_args

from aot.artifacts import read_manifest
from aot.boards import load_board
from aot.errors import ConfigError, FlashError, ToolchainError
from aot.flash import Firmware, FlashOptions, firmware_from_metadata, flash_runners, runner_for

pytestmark = pytest.mark.unit

OPENOCD_FAILURE = """\
Open On-Chip Debugger 0.12.0
Info : auto-selecting first available session transport "hla_swd".
Error: open failed
Info : shutdown command invoked"""


def firmware_of(folder: Path) -> Firmware:
    return firmware_from_metadata(folder, read_manifest(folder))


def test_runs_the_exact_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, bin_dir)
    fake_tool(bin_dir, "pyocd", stdout="0001 I Loading zephyr.elf\n0002 I Done")
    folder = crafted_folder(tmp_path / "out", "nucleo_f746zg")
    board = load_board("nucleo_f746zg")
    runner = runner_for(board, "pyocd")
    runner.flash(board, firmware_of(folder), FlashOptions(probe="0669FF"))
    elf = folder / "project/build/zephyr/zephyr.elf"
    assert recorded_args(bin_dir, "pyocd") == [
        "flash",
        "-t",
        "stm32f746zgtx",
        "--uid",
        "0669FF",
        str(elf),
    ]


@pytest.mark.parametrize(
    ("runner", "stderr", "message"),
    [
        (
            "openocd",
            OPENOCD_FAILURE,
            "openocd could not flash nucleo_f746zg (exit code 1): Error: open failed",
        ),
        (
            "west",
            "-- west flash: using runner openocd\nFATAL ERROR: command exited with status 1",
            "west could not flash nucleo_f746zg (exit code 1): FATAL ERROR: command exited "
            "with status 1",
        ),
    ],
)
def test_failing_tool_gives_one_line_flash_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: str, stderr: str, message: str
) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, bin_dir)
    fake_tool(bin_dir, runner, stderr=stderr, code=1)
    folder = crafted_folder(tmp_path / "out", "nucleo_f746zg")
    board = load_board("nucleo_f746zg")
    with pytest.raises(FlashError) as info:
        runner_for(board, runner).flash(board, firmware_of(folder))
    assert str(info.value) == message
    assert "\n" not in str(info.value)
    assert info.value.exit_code == 7


@pytest.mark.parametrize(
    ("runner", "install"),
    [
        ("pyocd", "pip install 'aot[pyocd]'"),
        ("openocd", "sudo apt-get install openocd"),
        ("west", "pip install 'aot[zephyr]' (west)"),
    ],
)
def test_missing_tool_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: str, install: str
) -> None:
    only_path(monkeypatch, tmp_path / "empty")
    folder = crafted_folder(tmp_path / "out", "nucleo_f746zg")
    board = load_board("nucleo_f746zg")
    with pytest.raises(
        ToolchainError, match=f"'{runner}' not found on PATH.*`{re.escape(install)}"
    ) as info:
        runner_for(board, runner).flash(board, firmware_of(folder))
    assert info.value.exit_code == 6


def test_env_var_overrides_the_path_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, tmp_path / "empty")
    tool = fake_tool(bin_dir, "my-openocd")
    monkeypatch.setenv("AOT_OPENOCD", str(tool))
    folder = crafted_folder(tmp_path / "out", "nucleo_f746zg")
    board = load_board("nucleo_f746zg")
    runner_for(board, "openocd").flash(board, firmware_of(folder))
    assert recorded_args(bin_dir, "my-openocd")[:2] == ["-f", "board/st_nucleo_f7.cfg"]


def test_tool_that_hangs_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, bin_dir)
    fake_tool(bin_dir, "west", sleep=5)
    folder = crafted_folder(tmp_path / "out", "nucleo_f746zg")
    board = load_board("nucleo_f746zg")
    with pytest.raises(
        FlashError, match=r"west did not finish flashing nucleo_f746zg within 0\.5 s"
    ):
        runner_for(board).flash(board, firmware_of(folder), FlashOptions(timeout=0.5))


def test_unbuilt_zephyr_project_says_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, bin_dir)
    fake_tool(bin_dir, "west")
    folder = crafted_folder(tmp_path / "out", "nucleo_f746zg", built=False)
    board = load_board("nucleo_f746zg")
    with pytest.raises(
        ConfigError,
        match=r"not found; build the project with `west build -b nucleo_f746zg .*/project -d "
        r".*/project/build`",
    ):
        runner_for(board).flash(board, firmware_of(folder))
    assert not (bin_dir / "west.args").exists()  # the tool never ran


def test_every_builtin_runner_runs_through_a_fake_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, bin_dir)
    folder = crafted_folder(tmp_path / "out", "nucleo_l4r5zi")
    board = load_board("nucleo_l4r5zi")
    for name, cls in flash_runners:
        fake_tool(bin_dir, cls.tool)
        runner = cls()
        runner.flash(board, firmware_of(folder))
        assert recorded_args(bin_dir, cls.tool) == runner.command(board, firmware_of(folder))[1:]
        assert name
