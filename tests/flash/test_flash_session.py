"""Flash, open the serial port, wait for HELLO: with a fake tool and an in-memory device."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from flash_helpers import crafted_folder, fake_tool, only_path, recorded_args

from aot.artifacts import read_manifest
from aot.boards import load_board
from aot.cli import main
from aot.errors import DeviceError, ProtocolError
from aot.flash import firmware_from_metadata, open_board, wait_for_hello

pytestmark = pytest.mark.unit


def _fake_device_module() -> ModuleType:
    # The protocol tests' in-memory device (tests/device is not a package).
    path = Path(__file__).resolve().parents[1] / "device" / "fake_device.py"
    spec = importlib.util.spec_from_file_location("aot_tests_fake_device", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


fake_device = _fake_device_module()


class FakeSerial:
    """Stands in for SerialTransport: records how it was opened, serves a FakeDevice
    once ``absent_opens`` attempts have failed like a port that is not there yet."""

    opened: list[tuple[str, int]] = []
    absent_opens = 0
    answer = True

    def __new__(cls, port: str, baudrate: int = 115200) -> Any:
        cls.opened.append((port, baudrate))
        if cls.absent_opens > 0:
            cls.absent_opens -= 1
            raise DeviceError(f"cannot open serial port {port}: [Errno 2] No such file")
        if not cls.answer:
            return _Silent(port)
        transport = fake_device.FakeTransport(fake_device.FakeDevice(fake_device.add_one_model()))
        transport.name = port
        return transport


class _Silent(fake_device.Transport):  # type: ignore[name-defined,misc]
    def __init__(self, port: str) -> None:
        self.name = port

    def read(self, n: int, timeout: float) -> bytes:
        raise self._timeout(timeout)

    def write(self, data: bytes) -> None:
        pass


@pytest.fixture
def serial(monkeypatch: pytest.MonkeyPatch) -> type[FakeSerial]:
    FakeSerial.opened = []
    FakeSerial.absent_opens = 0
    FakeSerial.answer = True
    monkeypatch.setattr("aot.device.transport.SerialTransport", FakeSerial)
    return FakeSerial


def test_flashes_then_says_hello(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serial: type[FakeSerial]
) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, bin_dir)
    fake_tool(bin_dir, "west")
    folder = crafted_folder(tmp_path / "out", "nucleo_f746zg")
    board = load_board("nucleo_f746zg")
    firmware = firmware_from_metadata(folder, read_manifest(folder))
    with open_board(board, firmware, "/dev/ttyACM7", timeout=5.0) as client:
        assert client.info is not None and client.info.name == "add_one"
        assert client.timeout == 5.0
    assert recorded_args(bin_dir, "west")[0] == "flash"
    assert serial.opened == [("/dev/ttyACM7", 115200)]  # the board's console baud


def test_waits_for_the_port_to_come_back(serial: type[FakeSerial]) -> None:
    serial.absent_opens = 2  # e.g. a USB CDC port re-enumerating after the reset
    with wait_for_hello("/dev/ttyACM0", 921600, timeout=5.0, wait=5.0) as client:
        assert client.info is not None
    assert serial.opened == [("/dev/ttyACM0", 921600)] * 3


def test_silent_port_gives_a_device_error_naming_it(serial: type[FakeSerial]) -> None:
    serial.answer = False
    with pytest.raises(DeviceError, match=r"no HELLO from the board on /dev/ttyUSB3 within 0\.3 s"):
        wait_for_hello("/dev/ttyUSB3", 115200, timeout=5.0, wait=0.3)


def test_missing_port_gives_a_device_error_naming_it(serial: type[FakeSerial]) -> None:
    serial.absent_opens = 1000
    with pytest.raises(DeviceError) as info:
        wait_for_hello("/dev/ttyACM9", 115200, timeout=5.0, wait=0.3)
    message = str(info.value)
    assert message.startswith("no HELLO from the board on /dev/ttyACM9 within 0.3 s after flashing")
    assert "cannot open serial port /dev/ttyACM9" in message
    assert not isinstance(info.value, ProtocolError)


def test_aot_run_on_a_physical_board(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    serial: type[FakeSerial],
    capsys: pytest.CaptureFixture[str],
) -> None:
    bin_dir = tmp_path / "bin"
    only_path(monkeypatch, bin_dir)
    fake_tool(bin_dir, "west")
    folder = crafted_folder(tmp_path / "out", "nucleo_f746zg")
    np.save(tmp_path / "x.npy", np.array([[1, 2, 3, 127]], np.int8))
    argv = ["run", str(folder), "-i", str(tmp_path / "x.npy"), "--port", "/dev/ttyACM0"]
    assert main([*argv, "--baud", "230400", "--save", str(tmp_path / "res"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["board"] == "nucleo_f746zg" and report["time_unit"] == "cycles"
    assert np.load(tmp_path / "res" / "output_0.npy").tolist() == [[2, 3, 4, 127]]
    assert serial.opened == [("/dev/ttyACM0", 230400)]
    assert recorded_args(bin_dir, "west")[:3] == [
        "flash",
        "--build-dir",
        str(folder / "project/build"),
    ]
