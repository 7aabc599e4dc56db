"""Ctrl-C (SIGINT) or SIGTERM at any moment of ``aot build``: one line, 130 / 143, no output.

The subprocess trials wait until aot's handler is installed (SIGTERM shows up as caught in
/proc/PID/status), because a signal during Python's own start-up, before any aot code
runs, gets Python's default behaviour.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import aot.lowering
import aot.project
from aot import interrupts
from aot.cli import main

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_kws_int8.tflite"
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}
MESSAGE = {signal.SIGINT: "error: interrupted", signal.SIGTERM: "error: terminated"}

needs_proc = pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux")


def handler_installed(pid: int) -> bool:
    """Whether process ``pid`` catches SIGTERM (only aot's handler does)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.M).group(1), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def start_build(output: Path, *extra: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aot",
            "build",
            str(MODEL),
            "--board",
            "host",
            "-o",
            str(output),
            *extra,
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not handler_installed(process.pid):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "aot never installed its signal handler"
        time.sleep(0.001)
    return process


def interrupt(process: subprocess.Popen[str], delay: float, signum: int) -> tuple[int, str]:
    time.sleep(delay)
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    return process.returncode, err


def assert_clean_abort(code: int, err: str, signum: int, area: Path) -> None:
    assert code == EXIT[signum], err
    assert err.strip().splitlines()[-1] == MESSAGE[signum], err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert list(area.iterdir()) == [], "a build folder or a staging folder was left behind"


@needs_proc
@pytest.mark.parametrize(
    ("delay", "signum"),
    [(0.0, signal.SIGINT), (0.1, signal.SIGTERM), (0.3, signal.SIGINT)],
    ids=["while-importing", "sigterm", "while-compiling"],
)
def test_signal_aborts_cleanly(delay: float, signum: int, tmp_path: Path) -> None:
    # --no-build takes over a second after the handler is in, so every delay lands inside.
    area = tmp_path / "area"
    area.mkdir()
    process = start_build(area / "out", "--no-build")
    code, err = interrupt(process, delay, signum)
    assert_clean_abort(code, err, signum, area)


def swallow_an_interrupt_inside_tvm() -> None:
    """What TVM does to a Ctrl-C that lands in a Python callback it called from C++: the
    KeyboardInterrupt comes back as a RuntimeError, which lowering code may catch."""
    import tvm_ffi

    callback = tvm_ffi.convert(lambda: os.kill(os.getpid(), signal.SIGINT))
    try:
        callback()
    except Exception:  # e.g. aot.tir_to_c.fusion's "not schedulable: keep it as it is"
        return
    raise AssertionError("the signal did not reach the callback")


@pytest.mark.parametrize("stage", ["lowering", "project"])
def test_an_interrupt_tvm_swallowed_still_aborts(
    stage: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    target, name = (
        (aot.lowering, "lower") if stage == "lowering" else (aot.project, "generate_project")
    )
    real = getattr(target, name)

    def swallowing(*args, **kwargs):
        swallow_an_interrupt_inside_tvm()
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, swallowing)
    area = tmp_path / "area"
    area.mkdir()
    code = main(["build", str(MODEL), "--board", "host", "-o", str(area / "out"), "--no-build"])
    assert code == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: interrupted"
    assert list(area.iterdir()) == []


def test_handlers_are_put_back_after_main(capsys) -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert main(["boards"]) == 0
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert interrupts.received() is None


@needs_proc
@pytest.mark.slow
def test_twenty_signals_at_random_moments(tmp_path: Path) -> None:
    # A reference build says when its last stage (the C compile, ~1 s) starts: a signal
    # sent before then always lands inside the build.
    reference = tmp_path / "reference"
    process = start_build(reference)
    started = time.monotonic()
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    last_stage = re.search(r"\[\s*([\d.]+)s\] compiling the project", err)
    latest = float(last_stage.group(1)) if last_stage else (time.monotonic() - started) / 2
    rng = random.Random(20240501)
    for trial in range(20):
        area = tmp_path / f"trial{trial}"
        area.mkdir()
        signum = signal.SIGTERM if trial % 5 == 4 else signal.SIGINT
        delay = rng.uniform(0.0, latest)
        process = start_build(area / "out")
        code, err = interrupt(process, delay, signum)
        assert_clean_abort(code, err, signum, area)


# A signal that lands in a weakref callback (importlib's module-lock cleanup is one, and a
# build imports lazily) cannot be raised there: Python would print "Exception ignored in"
# beside the one-line error. The signal is recorded and raised again at the next check.
_UNRAISABLE = """
import gc, weakref
from aot import interrupts
interrupts.install()
class Thing: pass
def raises(exc):
    def callback(ref):
        raise exc
    return callback
thing = Thing(); ref = weakref.ref(thing, raises(interrupts.Interrupted(2))); del thing
gc.collect()
thing = Thing(); ref2 = weakref.ref(thing, raises(ValueError("other"))); del thing
gc.collect()
"""


def test_an_interrupt_python_cannot_raise_is_not_printed_but_others_are() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _UNRAISABLE], capture_output=True, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Interrupted" not in result.stderr, result.stderr
    assert result.stderr.count("Exception ignored") == 1 and "ValueError: other" in result.stderr
