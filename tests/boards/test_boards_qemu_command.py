"""The exact QEMU command line, tool discovery, and `aot boards`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aot.boards import load_board
from aot.building.toolchain import arm_gcc, qemu_system_arm
from aot.cli import main
from aot.emulator.qemu import QemuInstance, qemu_command
from aot.errors import ConfigError, ToolchainError

pytestmark = pytest.mark.unit


def test_qemu_command_line() -> None:
    cmd = qemu_command(load_board("mps2_an386"), Path("/tmp/fw.elf"), 4321)
    assert cmd == [
        "qemu-system-arm",
        "-M", "mps2-an386",
        "-nographic",
        "-monitor", "none",
        "-icount", "shift=0,sleep=off",
        "-kernel", "/tmp/fw.elf",
        "-serial", "tcp:127.0.0.1:4321,server=on,wait=on,nodelay=on",
    ]  # fmt: skip


def test_qemu_command_line_tz_board_and_extra_args() -> None:
    cmd = qemu_command(
        load_board("mps3_an547"), Path("fw.elf"), 5000, qemu="/opt/q", extra_args=["-d", "int"]
    )
    assert cmd[:3] == ["/opt/q", "-M", "mps3-an547"]
    assert cmd[-2:] == ["-d", "int"]


def test_physical_board_is_not_emulated() -> None:
    with pytest.raises(ConfigError, match="'nucleo_f746zg' is not emulated"):
        qemu_command(load_board("nucleo_f746zg"), Path("fw.elf"), 1)


def test_missing_tools_say_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolchainError, match=r"apt-get install gcc-arm-none-eabi libnewlib"):
        arm_gcc()
    with pytest.raises(ToolchainError, match=r"apt-get install qemu-system-arm.*setup\.sh"):
        qemu_system_arm()
    with pytest.raises(ToolchainError, match="qemu-system-arm"):
        QemuInstance(load_board("mps2_an385"), Path(__file__)).start()


def test_cli_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["boards"]) == 0
    out = capsys.readouterr().out
    assert "mps2_an386 *" in out  # the default board is marked
    assert "QEMU mps3-an547" in out
    assert "itcm 512 KiB" in out
    assert "hardware (west)" in out


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["boards", "--json"]) == 0
    boards = {b["name"]: b for b in json.loads(capsys.readouterr().out)}
    assert boards["mps2_an385"]["emulated"] is True
    assert boards["nucleo_l4r5zi"]["emulated"] is False
    assert boards["mps2_an385"]["memories"][0] == {
        "name": "ssram1",
        "base": 0,
        "size": 4 << 20,
        "holds": ["code", "constants"],
        "loadable": True,
    }


def test_cli_detail_and_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["boards", "mps2_an521"]) == 0
    assert "50 instructions per tick" in capsys.readouterr().out
    assert main(["boards", "nope"]) == 2
    assert "error: unknown board 'nope'; known:" in capsys.readouterr().err
