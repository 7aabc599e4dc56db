"""Run firmware under qemu-system-arm with its console UART on a loopback TCP socket.

``QemuInstance`` is a context manager: QEMU listens on 127.0.0.1:<free port> and waits
for the client (``wait=on``), so nothing the firmware prints before the host connects is
lost. ``url`` is a pyserial URL (``socket://127.0.0.1:PORT``). On leaving the block,
whatever happened (success, exception, timeout, Ctrl-C), QEMU is terminated, then
killed, then reaped: no orphan processes.

Time: ``-icount shift=0`` makes virtual time advance 1 ns per executed instruction, and
``sleep=off`` keeps it still while the core sleeps in WFI waiting for the host. The
board's tick counter then counts instructions (see ``TickSource.instructions_per_tick``),
never cycles, and identical runs give identical tick counts.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from aot.boards import Board
from aot.errors import ConfigError, DeviceError, ToolchainError
from aot.toolchain import qemu_system_arm

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
ICOUNT = "shift=0,sleep=off"
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 3.0
_LISTENING_RE = re.compile(r"QEMU waiting for connection on")
_PORT_IN_USE_RE = re.compile(r"Address already in use|Failed to bind", re.IGNORECASE)


def _die_with_parent() -> None:
    """In the child before exec: have Linux kill QEMU if this Python process dies without
    running its cleanup (SIGKILL, crash), so not even then is QEMU orphaned."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the context manager still stops QEMU on every normal exit


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
        self._stderr_dir: tempfile.TemporaryDirectory[str] | None = None
        self._stderr_path: Path | None = None
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
        if self._stderr_path is None or not self._stderr_path.exists():
            return self._last_stderr
        return self._stderr_path.read_text(errors="replace")

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
        self._stderr_dir = tempfile.TemporaryDirectory(prefix="aot-qemu-")
        self._stderr_path = Path(self._stderr_dir.name) / "stderr.txt"
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
        assert self._stderr_path is not None
        self.port = free_port()
        self.command = qemu_command(
            self.board, self.firmware, self.port, qemu=qemu, extra_args=self.extra_args
        )
        log.debug("starting %s", " ".join(self.command))
        with open(self._stderr_path, "wb") as err:
            # New session: Ctrl-C in the terminal reaches only us, and we stop QEMU.
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
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
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_S)
        elif process is not None:
            process.wait()
        self.port = None
        if self._stderr_dir is not None:
            self._last_stderr = self.stderr_text()
            self._stderr_dir.cleanup()
            self._stderr_dir = None
            self._stderr_path = None


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
