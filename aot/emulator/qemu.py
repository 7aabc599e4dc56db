"""Run firmware under qemu-system-arm with its console UART on a loopback TCP socket.

``QemuInstance`` is a context manager: QEMU listens on 127.0.0.1:<free port> and waits
for the client (``wait=on``), so nothing the firmware prints before the host connects is
lost. ``url`` is a pyserial URL (``socket://127.0.0.1:PORT``). On leaving the block,
whatever happened (success, exception, timeout, Ctrl-C), QEMU is terminated, then
killed, then reaped; it is started as a device process (:mod:`aot.device.process`), so
it dies with aot even when aot is killed. What QEMU prints goes to an unnamed temporary
file: nothing is left in the temporary folder, whatever happens to aot.

Time: ``-icount shift=0`` makes virtual time advance 1 ns per executed instruction, and
``sleep=off`` keeps it still while the core sleeps in WFI waiting for the host. The
board's tick counter then counts instructions (see ``TickSource.instructions_per_tick``),
never cycles, and identical runs give identical tick counts.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from aot.boards import Board
from aot.building.toolchain import qemu_system_arm
from aot.device import process as device_process
from aot.errors import ConfigError, DeviceError, ToolchainError

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
ICOUNT = "shift=0,sleep=off"
START_TIMEOUT_S = 10.0
_LISTENING_RE = re.compile(r"QEMU waiting for connection on")
_PORT_IN_USE_RE = re.compile(r"Address already in use|Failed to bind", re.IGNORECASE)


def free_port() -> int:
    """A TCP port free on loopback right now (QEMU binds it moments later; a lost race
    is retried by QemuInstance)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def qemu_command(
    board: Board,
    firmware: Path,
    port: int,
    *,
    qemu: str | Path = "qemu-system-arm",
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The exact QEMU command line for ``board`` (tested as data)."""
    if board.qemu is None:
        raise ConfigError(
            f"board '{board.name}' is not emulated (no 'qemu' section in {board.path})"
        )
    cmd = [str(qemu), "-M", board.qemu.machine]
    if board.qemu.cpu:
        cmd += ["-cpu", board.qemu.cpu]
    cmd += [
        "-nographic",
        "-monitor",
        "none",
        "-icount",
        ICOUNT,
        "-kernel",
        str(firmware),
        "-serial",
        f"tcp:{LOOPBACK}:{port},server=on,wait=on,nodelay=on",
        *board.qemu.extra_args,
        *extra_args,
    ]
    return cmd


class QemuInstance:
    """``with QemuInstance(board, elf) as q: serial.serial_for_url(q.url)``."""

    def __init__(
        self,
        board: Board,
        firmware: Path,
        *,
        extra_args: Sequence[str] = (),
        start_timeout: float = START_TIMEOUT_S,
    ) -> None:
        self.board = board
        self.firmware = Path(firmware)
        self.extra_args = tuple(extra_args)
        self.start_timeout = start_timeout
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.command: list[str] = []
        self._stderr: IO[bytes] | None = None
        self._last_stderr = ""

    @property
    def url(self) -> str:
        if self.port is None:
            raise DeviceError("QEMU is not running")
        return f"socket://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def stderr_text(self) -> str:
        """What QEMU printed (also available after stop())."""
        if self._stderr is None:
            return self._last_stderr
        # pread: QEMU shares this file's offset and appends at it; reading must not move it.
        fd = self._stderr.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def __enter__(self) -> QemuInstance:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        if not self.firmware.is_file():
            raise ConfigError(f"firmware {self.firmware} does not exist")
        qemu = qemu_system_arm()
        try:
            for _attempt in range(3):
                if self._start_once(qemu):
                    return
            raise DeviceError("QEMU could not bind a free loopback port after 3 attempts")
        except BaseException:
            self.stop()  # includes KeyboardInterrupt while waiting
            raise

    def _start_once(self, qemu: Path) -> bool:
        """True when QEMU listens; False when the port was taken (retry)."""
        self._close_stderr()
        # Unlinked at once (O_TMPFILE on Linux): no folder to leave behind if aot is killed.
        self._stderr = tempfile.TemporaryFile(prefix="aot-qemu-")  # noqa: SIM115 - stop() closes it
        self.port = free_port()
        self.command = qemu_command(
            self.board, self.firmware, self.port, qemu=qemu, extra_args=self.extra_args
        )
        log.debug("starting %s", " ".join(self.command))
        try:
            self.process = device_process.spawn(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=self._stderr,
                stderr=subprocess.STDOUT,
            )
        except OSError as exc:
            raise ToolchainError(f"cannot start {qemu}: {exc}") from exc
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            text = self.stderr_text()
            if _LISTENING_RE.search(text):
                return True
            if self.process.poll() is not None:
                if _PORT_IN_USE_RE.search(text):
                    self.process = None
                    return False
                raise ToolchainError(
                    f"QEMU exited with code {self.process.returncode} before listening:\n"
                    f"{text.strip()[-2000:]}\ncommand: {' '.join(self.command)}"
                )
            time.sleep(0.01)
        raise DeviceError(
            f"QEMU did not open its serial socket within {self.start_timeout:.0f} s; "
            f"output so far:\n{self.stderr_text().strip()[-2000:]}"
        )

    def stop(self) -> None:
        """Terminate, then kill, then reap QEMU. Safe to call twice."""
        process, self.process = self.process, None
        if process is not None:
            device_process.stop(process)
        self.port = None
        self._close_stderr()

    def _close_stderr(self) -> None:
        if self._stderr is not None:
            self._last_stderr = self.stderr_text()
            self._stderr.close()
            self._stderr = None


def qemu_children(pid: int | None = None) -> list[int]:
    """Child processes of ``pid`` (default: this process) named qemu-system-*, zombies
    included: a zombie means QEMU was not reaped."""
    parent = os.getpid() if pid is None else pid
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and comm.startswith("qemu-system"):
            found.append(int(entry.name))
    return found
