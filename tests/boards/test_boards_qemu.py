"""Run the echo firmware on every emulated board under QEMU and talk to it over pyserial."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest
import serial
from boards_firmware import CONSTANTS_SECTION, POOL_SECTION, echo_placements, require_tool

from aot.boards import Board
from aot.emulator.qemu import QemuInstance, qemu_children

pytestmark = pytest.mark.emulator

CALIBRATION_INSTRUCTIONS = 200_000  # tests/boards/firmware/echo.c


@pytest.fixture(autouse=True)
def _qemu_installed() -> None:
    require_tool("qemu-system-arm", "sudo apt-get install qemu-system-arm")


def read_exactly(port: serial.SerialBase, n: int) -> bytes:
    data = port.read(n)
    assert len(data) == n, f"expected {n} bytes, got {data!r}"
    return data


def assert_gone(pid: int | None) -> None:
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert qemu_children() == []


def session(board: Board, elf: Path, *, host_delay: float) -> dict[str, object]:
    """One QEMU run: echo, three timed workloads, calibration, placement info, QUIT.
    ``host_delay`` sleeps between commands: it must not change any tick count."""
    with QemuInstance(board, elf) as qemu:
        pid = qemu.pid
        with serial.serial_for_url(qemu.url, timeout=10) as port:
            port.write(b"?")  # the firmware speaks only after the host has connected
            assert port.read_until(b"READY\n") == b"READY\n"
            port.write(b"hello, board")
            echoed = read_exactly(port, 12)
            ticks = []
            for _ in range(3):
                time.sleep(host_delay)
                port.write(b"T")
                reply = read_exactly(port, 13)
                assert reply[:1] == b"T"
                ticks.append(struct.unpack("<III", reply[1:]))
            port.write(b"C")
            reply = read_exactly(port, 5)
            calibration = struct.unpack("<I", reply[1:])[0]
            port.write(b"V")
            reply = read_exactly(port, 5)
            assert struct.unpack("<f", reply[1:])[0] == 1008.0  # sum(i * 0.5 for i < 64)
            port.write(b"I")
            reply = read_exactly(port, 33)
            info = struct.unpack("<8I", reply[1:])
            port.write(b"Q")
            assert read_exactly(port, 1) == b"Q"
    assert_gone(pid)
    return {"echo": echoed, "ticks": ticks, "calibration": calibration, "info": info}


def test_echo_ticks_and_placement(emulated_board: Board, echo_firmware) -> None:
    board = emulated_board
    elf = echo_firmware(board.name)
    first = session(board, elf, host_delay=0.05)
    second = session(board, elf, host_delay=0.0)

    assert first["echo"] == b"hello, board"
    # Differences, not absolute counts: QEMU's counter origin is not reproducible.
    deltas = [[d for d, _, _ in run["ticks"]] for run in (first, second)]
    if board.has("deterministic_ticks"):
        # -icount shift=0,sleep=off + phase-locked reads: identical whatever the host timing.
        assert deltas[0] == deltas[1]
        assert first["calibration"] == second["calibration"]
    else:
        for a, b in zip(*deltas):
            assert abs(a - b) <= 1
        assert abs(first["calibration"] - second["calibration"]) <= 1
    assert all(hz == board.ticks.hz for _, hz, _ in first["ticks"])
    assert all(t > 0 for t, _, _ in first["ticks"])
    # Board data says how many instructions one tick is; the counter agrees.
    per_tick = CALIBRATION_INSTRUCTIONS / first["calibration"]
    assert per_tick == pytest.approx(board.ticks.instructions_per_tick, rel=0.01)

    pool, constants, initialised, zeroed, init_value, zero_value, const1, pool0 = first["info"]
    placements = echo_placements(board)
    assert (
        board.region(placements[POOL_SECTION]).base
        <= pool
        < board.region(placements[POOL_SECTION]).end
    )
    assert board.region(placements[CONSTANTS_SECTION]).base <= constants
    data = board.default_region("data")
    assert data.base <= initialised < data.end and data.base <= zeroed < data.end
    assert (init_value, zero_value, const1, pool0) == (0xC0FFEE42, 0, 0x22222222, 7)


def test_abort_and_fault_are_reported(emulated_board: Board, echo_firmware) -> None:
    elf = echo_firmware(emulated_board.name)
    for command, expected in (
        (b"A", rb"\x00aot: abort 0x0401\n\x00"),
        (b"F", rb"\x00aot: abort 0x0305 exception 03 pc 0x[0-9a-f]{8} cfsr 0x[0-9a-f]{8} "
               rb"address 0xf0000000\n\x00"),
    ):  # fmt: skip
        with (
            QemuInstance(emulated_board, elf) as qemu,
            serial.serial_for_url(qemu.url, timeout=10) as port,
        ):
            port.write(b"?")
            port.read_until(b"READY\n")
            port.write(command)
            line = port.read_until(b"\n\x00")
            assert pytest.importorskip("re").fullmatch(expected, line), line
        assert qemu_children() == []


def test_qemu_stopped_on_error_and_interrupt(echo_firmware) -> None:
    from aot.boards import load_board

    board = load_board("mps2_an385")
    elf = echo_firmware(board.name)
    for exc in (RuntimeError("boom"), KeyboardInterrupt()):
        pid = None
        with pytest.raises(type(exc)), QemuInstance(board, elf) as qemu:
            pid = qemu.pid
            raise exc
        assert_gone(pid)
    # Never connected: QEMU is still waiting for its client when it is stopped.
    qemu = QemuInstance(board, elf)
    qemu.start()
    pid = qemu.pid
    qemu.stop()
    qemu.stop()  # idempotent
    assert_gone(pid)


def test_qemu_dies_with_a_killed_host(echo_firmware, tmp_path: Path) -> None:
    """Even SIGKILL of the Python process (no cleanup runs) leaves no QEMU behind."""
    import signal
    import subprocess
    import sys

    elf = echo_firmware("mps2_an385")
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from aot.boards import load_board\n"
        "from aot.emulator.qemu import QemuInstance, qemu_children\n"
        "q = QemuInstance(load_board('mps2_an385'), Path(sys.argv[1]))\n"
        "q.start()\n"
        "print(q.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    host = subprocess.Popen(
        [sys.executable, "-c", script, str(elf)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        qemu_pid = int(host.stdout.readline())
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=10)
        deadline = time.monotonic() + 5
        while Path(f"/proc/{qemu_pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{qemu_pid}").exists()
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
