"""Killing `aot run` on an emulated board (SIGTERM or SIGKILL, as a CI runner or a user
would) leaves no QEMU running and nothing in the temporary folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from emulator_helpers import EXAMPLE_INPUT, REPO, qemu_processes_running, require_tools

pytestmark = pytest.mark.emulator


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_killing_aot_run_leaves_no_qemu_and_no_temp_folder(
    silent_folder: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    require_tools("qemu-system-arm")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}
    argv = [sys.executable, "-m", "aot", "run", str(silent_folder), "-i", str(EXAMPLE_INPUT)]
    # The silent firmware never answers: aot waits for HELLO while QEMU runs.
    run = subprocess.Popen(
        [*argv, "--timeout", "60"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    marker = str(silent_folder)
    try:
        deadline = time.monotonic() + 30
        while not qemu_processes_running(marker):
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.05)
        time.sleep(0.5)  # past QEMU's start: listening, client connected
        run.send_signal(sig)
        run.communicate(timeout=20)
    finally:
        run.kill()
    expected = 128 + signal.SIGTERM if sig == signal.SIGTERM else -signal.SIGKILL
    assert run.returncode == expected
    deadline = time.monotonic() + 5
    while qemu_processes_running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert qemu_processes_running(marker) == [], "QEMU outlived aot run"
    assert list(tmp.iterdir()) == []
