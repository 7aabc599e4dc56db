"""``aot flash`` and the physical-board path of ``aot run``."""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
import pytest
from flash_helpers import crafted_folder, fake_tool, only_path, recorded_args

from aot.cli import main

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
KWS = REPO / "examples" / "tiny_kws_int8.tflite"


def test_dry_run_prints_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_path(monkeypatch, tmp_path / "empty")  # a dry run needs no tool
    folder = crafted_folder(tmp_path / "my out", "nucleo_f746zg", built=False)
    assert main(["flash", str(folder), "--dry-run"]) == 0
    build_dir = folder / "project" / "build"
    assert capsys.readouterr().out == (
        shlex.join(["west", "flash", "--build-dir", str(build_dir), "--runner", "openocd"]) + "\n"
    )


def test_dry_run_with_another_runner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = crafted_folder(tmp_path / "out", "stm32f746g_disco")
    assert main(["flash", str(folder), "--runner", "pyocd", "--probe", "X1", "--dry-run"]) == 0
    elf = folder / "project/build/zephyr/zephyr.elf"
    assert capsys.readouterr().out.split() == [
        "pyocd",
        "flash",
        "-t",
        "stm32f746nghx",
        "--uid",
        "X1",
        str(elf),
    ]


def test_flash_runs_the_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, bin_dir)
    fake_tool(bin_dir, "west")
    folder = crafted_folder(tmp_path / "out", "nrf5340dk_nrf5340_cpuapp")
    assert main(["flash", str(folder), "--erase"]) == 0
    assert recorded_args(bin_dir, "west") == [
        "flash",
        "--build-dir",
        str(folder / "project/build"),
        "--runner",
        "nrfjprog",
        "--erase",
    ]
    assert "flashed nrf5340dk_nrf5340_cpuapp with west" in capsys.readouterr().out


def test_failing_flash_prints_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, bin_dir)
    fake_tool(bin_dir, "openocd", stderr="Info : hello\nError: open failed\nInfo : bye", code=1)
    folder = crafted_folder(tmp_path / "out", "nucleo_f746zg")
    assert main(["flash", str(folder), "--runner", "openocd"]) == 7
    assert capsys.readouterr().err == (
        "error: openocd could not flash nucleo_f746zg (exit code 1): Error: open failed\n"
    )


def test_missing_board_args_for_runner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = crafted_folder(tmp_path / "out", "nrf5340dk_nrf5340_cpuapp")
    assert main(["flash", str(folder), "--runner", "openocd", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "board 'nrf5340dk_nrf5340_cpuapp' has no arguments for flash runner 'openocd'" in err
    assert "use the board's runner 'west'" in err


def test_emulated_board_needs_no_flashing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = crafted_folder(tmp_path / "out", "mps2_an386", built_by_aot=True)
    assert main(["flash", str(folder), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "board 'mps2_an386' is emulated (QEMU): it needs no flashing" in out
    assert f"'aot run {folder}' starts it" in out


def test_run_on_physical_board_needs_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, bin_dir)
    fake_tool(bin_dir, "west")
    folder = crafted_folder(tmp_path / "out", "nucleo_f746zg")
    np.save(tmp_path / "x.npy", np.zeros((1, 4), np.int8))
    assert main(["run", str(folder), "-i", str(tmp_path / "x.npy")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: board 'nucleo_f746zg' is a physical board: give its serial port")
    assert "--port" in err and "/dev/ttyACM0" in err
    assert not (bin_dir / "west.args").exists()  # nothing was flashed


@pytest.mark.skipif(not KWS.is_file(), reason="example model missing")
def test_real_zephyr_build_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'aot build --template zephyr' metadata, as it is written today, reaches the runner."""
    out = tmp_path / "out"
    # --pool sram1:64K: a memory without a zephyr_region needs no Zephyr placement
    args = ["build", str(KWS), "--board", "nucleo_f746zg", "--template", "zephyr"]
    assert main([*args, "--pool", "sram1:64K", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["flash", str(out), "--dry-run"]) == 0
    assert capsys.readouterr().out.split() == [
        "west",
        "flash",
        "--build-dir",
        str(out / "project" / "build"),
        "--runner",
        "openocd",
    ]
