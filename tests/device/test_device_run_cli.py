"""`aot run` end to end on a real host build folder whose firmware misbehaves: the
timeout holds whatever the device sends, bad --repeat and --timeout values are one-line
errors, and killing `aot run` leaves no device process and no temporary file behind.

The misbehaving devices are small Python programs put in place of the folder's host
executable, so everything from the CLI down (metadata, pipes, client) is the real path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aot.cli import main as aot_main
from aot.device import protocol as p
from aot.errors import ConfigError, DeviceError

pytestmark = pytest.mark.toolchain

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
EXAMPLE_INPUT = REPO / "examples" / "tiny_kws_int8.input.npy"
TIMEOUT_S = 2.0
# --timeout 2 must end within BOUND_S, counted from the moment the device starts: aot's own
# Python start-up comes before any device exists (it takes seconds on a loaded 2-core CI
# machine), so the whole command is bounded separately, loosely, by HANG_S.
BOUND_S = 3.0
HANG_S = 15.0

# Every fake device first notes when it started (EXE.start), for the deadline bound.
NOTES_ITS_START = "import sys, time\nopen(sys.argv[0] + '.start', 'w').write(repr(time.time()))\n"
# A well-formed HELLO reply with a sequence number the host never used (it starts at 1).
_STALE = p.Frame(p.Command.HELLO | p.REPLY_BIT, 200, p.ok()).encode()
FLOODS_STALE_REPLIES = f"""
import os
frame = bytes.fromhex("{_STALE.hex()}")
os.read(0, 4096)
while True:
    os.write(1, frame * 64)
"""
NEVER_DELIMITS = """
import os
while True:
    os.write(1, b"\\x55" * 4096)
"""
TRICKLES = """
import os, time
while True:
    os.write(1, b"\\x55")
    time.sleep(1)
"""
# Ignores SIGTERM and its input: only a kill stops it. Writes its pid for the test.
STUBBORN = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[0] + ".pid", "w") as f:
    f.write(str(os.getpid()))
while True:
    time.sleep(1)
"""


@pytest.fixture(scope="session")
def host_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example model built for --board host, once per session."""
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("host C compiler not found; install it with: apt-get install gcc")
    from aot.testing.harness import build

    return build(EXAMPLE, tmp_path_factory.mktemp("host") / "out", "host")


@pytest.fixture
def with_firmware(host_folder: Path, tmp_path: Path) -> Callable[[str], tuple[Path, Path]]:
    """with_firmware(program) -> (folder, executable): a copy of the host build folder
    whose executable is the Python ``program``."""

    def make(program: str) -> tuple[Path, Path]:
        folder = tmp_path / "out"
        shutil.copytree(host_folder, folder)
        metadata = json.loads((folder / "metadata.json").read_text())
        exe = folder / metadata["build"]["executable"]
        exe.write_text(f"#!{sys.executable}\n{NOTES_ITS_START}{program}")
        exe.chmod(0o755)
        return folder, exe

    return make


def _aot_run(folder: Path, tmp: Path, *extra: str) -> subprocess.Popen[str]:
    """`python -m aot run FOLDER -i example ...` as its own process, TMPDIR in ``tmp``."""
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}
    argv = [sys.executable, "-m", "aot", "run", str(folder), "-i", str(EXAMPLE_INPUT), *extra]
    return subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize(
    ("program", "words"),
    [
        (FLOODS_STALE_REPLIES, r"frame\(s\) arrived, none with this request's sequence number"),
        (NEVER_DELIMITS, r"byte\(s\) arrived without completing a frame"),
        (TRICKLES, r"byte\(s\) arrived without completing a frame"),
    ],
    ids=["stale-replies", "no-delimiter", "a-byte-a-second"],
)
def test_timeout_holds_against_a_misbehaving_device(
    with_firmware, tmp_path: Path, program: str, words: str
) -> None:
    folder, exe = with_firmware(program)
    start = time.monotonic()
    run = _aot_run(folder, tmp_path / "tmp", "--timeout", f"{TIMEOUT_S:g}")
    try:
        out, err = run.communicate(timeout=30)
    finally:
        run.kill()
    ended = time.time()
    whole = time.monotonic() - start
    assert whole < HANG_S
    # aot's deadline starts before the fake device's own Python start-up is over, so the
    # lower bound counts from the command's start and the upper bound from the device's.
    assert whole >= TIMEOUT_S, f"gave up after {whole:.2f} s"
    elapsed = ended - float(Path(f"{exe}.start").read_text())
    assert run.returncode == DeviceError.exit_code, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no reply to HELLO from process"), err
    assert f"within {TIMEOUT_S:g} s" in lines[0]
    assert re.search(words, lines[0]), lines[0]
    assert elapsed < BOUND_S, f"took {elapsed:.2f} s"


def _gone(pid: int, within: float) -> bool:
    """Whether ``pid`` no longer runs (exited; a zombie awaiting its reaper counts)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_killing_aot_run_leaves_no_process_and_no_temp_files(
    with_firmware, tmp_path: Path, sig: signal.Signals
) -> None:
    folder, exe = with_firmware(STUBBORN)
    tmp = tmp_path / "tmp"
    run = _aot_run(folder, tmp, "--timeout", "60")
    pid_file = Path(f"{exe}.pid")
    try:
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text():
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.05)
        firmware_pid = int(pid_file.read_text())
        run.send_signal(sig)
        run.communicate(timeout=20)
    finally:
        run.kill()
    # SIGTERM: aot stops the device itself (SIGTERM, then SIGKILL) and exits 128 + 15.
    # SIGKILL: aot runs nothing; the kernel kills the device (PR_SET_PDEATHSIG).
    assert run.returncode == (128 + signal.SIGTERM if sig == signal.SIGTERM else -signal.SIGKILL)
    assert _gone(firmware_pid, within=5.0), f"firmware {firmware_pid} outlived aot run"
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--repeat", "0", "--repeat must be a whole number from 1 to 4294967295, got 0"),
        ("--repeat", "-1", "--repeat must be a whole number from 1 to 4294967295, got -1"),
        ("--repeat", "4294967296", "from 1 to 4294967295, got 4294967296"),
        ("--timeout", "nan", "--timeout must be a positive number of seconds, got nan"),
        ("--timeout", "inf", "--timeout must be a positive number of seconds, got inf"),
        ("--timeout", "-1", "--timeout must be a positive number of seconds, got -1"),
        ("--timeout", "0", "--timeout must be a positive number of seconds, got 0"),
        ("--timeout", "1e300", "--timeout must be at most 2.592e+06 s (30 days), got 1e+300"),
    ],
)
def test_invalid_repeat_and_timeout_are_one_line_errors(
    host_folder: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, words: str
) -> None:
    capsys.readouterr()
    code = aot_main(["run", str(host_folder), "-i", str(EXAMPLE_INPUT), option, value])
    _, err = capsys.readouterr()
    assert code == ConfigError.exit_code
    assert err.startswith("error: ") and words in err and len(err.splitlines()) == 1, err


def test_repeat_over_the_firmware_cap_names_the_cap(
    host_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = aot_main(["run", str(host_folder), "-i", str(EXAMPLE_INPUT), "--repeat", "10001"])
    _, err = capsys.readouterr()
    assert code == ConfigError.exit_code, err
    assert "at most 10000 times per request" in err and "-DAOT_APP_MAX_REPEATS=10001" in err
    # At the cap the real firmware runs, and --timeout is a deadline per reply.
    capsys.readouterr()
    argv = ["run", str(host_folder), "-i", str(EXAMPLE_INPUT), "--repeat", "10000"]
    code = aot_main([*argv, "--json", "--timeout", "30"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["runs"] == 10000
