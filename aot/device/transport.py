"""Byte transports between the host and a device running the aot server.

A :class:`Transport` moves raw bytes; framing lives in :mod:`aot.device.protocol`.
``read`` returns whatever is available (1..n bytes) so frames of any size are read
with few calls, and raises :class:`TransportTimeout` (a ``DeviceError``) when nothing
arrives in time, so a silent device is reported, never waited on forever.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import time
from abc import ABC, abstractmethod
from typing import Any

from aot.device import process as device_process
from aot.errors import ConfigError, DeviceError

_POLL_SECONDS = 0.05
# After its pipes close, a host build exits at once (QUIT, or end of input); one that
# has not after this long is stuck or misbehaving and is stopped.
_EXIT_GRACE_S = 0.2


class TransportTimeout(DeviceError):
    """Nothing arrived within the timeout."""


class Transport(ABC):
    """A bidirectional byte stream to one device."""

    #: Names the other end in messages: a port, URL or program.
    name: str = "device"

    @abstractmethod
    def read(self, n: int, timeout: float) -> bytes:
        """Returns 1..n bytes, waiting up to ``timeout`` seconds for the first.

        Raises TransportTimeout if none arrive, DeviceError if the stream closed."""

    @abstractmethod
    def write(self, data: bytes) -> None:
        """Writes all bytes."""

    def discard_input(self) -> bytes:
        """Drops (and returns) whatever was received but not read yet."""
        dropped = bytearray()
        while True:
            try:
                dropped += self.read(4096, 0.0)
            except TransportTimeout:
                return bytes(dropped)

    def close(self) -> None:  # noqa: B027 - optional for transports without resources
        """Releases the stream."""

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _timeout(self, timeout: float) -> TransportTimeout:
        return TransportTimeout(
            f"no answer from {self.name} within {timeout:g} s: nothing received"
        )


class PipeTransport(Transport):
    """The stdin/stdout of a subprocess, e.g. the host build of the runtime."""

    def __init__(self, process: subprocess.Popen[bytes], name: str | None = None) -> None:
        if process.stdin is None or process.stdout is None:
            raise ConfigError("PipeTransport needs a process started with stdin=PIPE, stdout=PIPE")
        self.process = process
        self.name = name or f"process {process.pid} ({_program(process)})"
        self._in = process.stdout.fileno()
        self._out = process.stdin.fileno()

    @classmethod
    def spawn(cls, argv: list[str], **popen: Any) -> PipeTransport:
        """Starts ``argv`` with pipes as a device process (:mod:`aot.device.process`: it
        dies with aot); stderr goes to a pipe unless given."""
        popen.setdefault("stderr", subprocess.PIPE)
        try:
            process = device_process.spawn(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, **popen
            )
        except OSError as exc:
            raise DeviceError(f"cannot start device program {argv[0]}: {exc}") from exc
        return cls(process)

    def read(self, n: int, timeout: float) -> bytes:
        ready, _, _ = select.select([self._in], [], [], max(timeout, 0.0))
        if not ready:
            raise self._timeout(timeout)
        data = os.read(self._in, n)
        if not data:
            # End of output usually means the process is exiting: give it a moment so
            # the message can say with which code.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(1.0)
            raise DeviceError(f"{self.name} closed its output{self._exit_note()}")
        return data

    def write(self, data: bytes) -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._out, view) :]
        except (BrokenPipeError, OSError) as exc:
            raise DeviceError(f"cannot write to {self.name}{self._exit_note()}: {exc}") from exc

    def wait(self, timeout: float) -> int:
        """Waits for the process to exit and returns its exit code."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            raise DeviceError(f"{self.name} did not exit within {timeout:g} s") from exc

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        device_process.stop(self.process, grace=_EXIT_GRACE_S)
        if self.process.stderr is not None:
            self.process.stderr.close()

    def _exit_note(self) -> str:
        code = self.process.poll()
        if code is None:
            return ""
        stderr = b""
        if self.process.stderr is not None and not self.process.stderr.closed:
            stderr = self.process.stderr.read() or b""
        tail = stderr.decode(errors="replace").strip()[-500:]
        return f" (exited with code {code}{': ' + tail if tail else ''})"


class SerialTransport(Transport):
    """A serial port through pyserial: a device path (``/dev/ttyACM0``, ``COM3``) or a
    pyserial URL such as ``socket://localhost:4321`` (QEMU ``-serial tcp:...``)."""

    def __init__(self, port: str, baudrate: int = 115200) -> None:
        try:
            import serial  # lazy: only serial users need pyserial
        except ImportError as exc:
            raise ConfigError(
                "pyserial is not installed; install it with: pip install pyserial"
            ) from exc
        self.name = port
        self._serial_error = serial.SerialException
        try:
            self._port = serial.serial_for_url(port, baudrate=baudrate, timeout=_POLL_SECONDS)
        except (serial.SerialException, ValueError, OSError) as exc:
            raise DeviceError(f"cannot open serial port {port}: {exc}") from exc

    def read(self, n: int, timeout: float) -> bytes:
        deadline = time.monotonic() + max(timeout, 0.0)
        try:
            while True:
                waiting = self._port.in_waiting
                if waiting:
                    return self._port.read(min(n, waiting))
                if time.monotonic() >= deadline:
                    raise self._timeout(timeout)
                # Blocks for at most the short poll timeout set at open; returns at once
                # when a byte arrives. (Changing the timeout per call would reconfigure
                # a real port every time.)
                first = self._port.read(1)
                if first:
                    rest = min(n - 1, self._port.in_waiting)
                    return first + (self._port.read(rest) if rest else b"")
        except self._serial_error as exc:
            raise DeviceError(f"serial port {self.name} failed: {exc}") from exc

    def write(self, data: bytes) -> None:
        try:
            self._port.write(data)
            self._port.flush()
        except self._serial_error as exc:
            raise DeviceError(f"cannot write to serial port {self.name}: {exc}") from exc

    def close(self) -> None:
        self._port.close()


def open_transport(port: str, baudrate: int = 115200) -> Transport:
    """A transport from a user's ``--port`` value: ``exec:<program>`` runs a host build
    over pipes; anything else (device path, ``socket://``, ``rfc2217://``) is pyserial's."""
    if port.startswith("exec:"):
        return PipeTransport.spawn([port[len("exec:") :]])
    return SerialTransport(port, baudrate)


def _program(process: subprocess.Popen[bytes]) -> str:
    args = process.args
    if isinstance(args, (list, tuple)) and args:
        return os.path.basename(str(args[0]))
    return os.path.basename(str(args))
