"""PipeTransport error paths with a stand-in process (no toolchain needed)."""

from __future__ import annotations

import sys

import pytest

from aot.device import DeviceClient, PipeTransport
from aot.errors import DeviceError

pytestmark = pytest.mark.unit


def test_dying_process_is_reported_with_its_exit_code_and_stderr() -> None:
    script = "import sys; sys.stdin.buffer.read(1); sys.stderr.write('boom'); sys.exit(3)"
    with PipeTransport.spawn([sys.executable, "-c", script]) as transport:
        client = DeviceClient(transport, timeout=5.0)
        with pytest.raises(DeviceError, match="closed its output \\(exited with code 3: boom\\)"):
            client.hello()


def test_silent_process_times_out() -> None:
    script = "import sys, time; sys.stdin.buffer.read(); time.sleep(30)"
    with PipeTransport.spawn([sys.executable, "-c", script]) as transport:
        client = DeviceClient(transport, timeout=0.2)
        with pytest.raises(DeviceError, match=r"no answer from process .* within 0.2 s: .*HELLO"):
            client.hello()


def test_missing_program() -> None:
    with pytest.raises(DeviceError, match="cannot start device program /nonexistent/app"):
        PipeTransport.spawn(["/nonexistent/app"])
