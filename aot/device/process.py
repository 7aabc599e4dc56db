"""Processes that play the device (the host build, QEMU), started so none outlives aot.

One mechanism for all of them:

* each starts in a new session, hence its own process group: Ctrl-C in the terminal
  reaches only aot (which then stops the device), and :func:`stop` signals the whole
  group, so helpers the device program started go too;
* on Linux the child asks the kernel (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) to be
  killed when aot dies, so even SIGKILL of aot, which runs no cleanup, leaves nothing;
* :func:`sigterm_unwinds` turns SIGTERM into ``SystemExit`` while a device is open, so
  the ``with`` blocks that own devices run and stop them as on any other exit.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

STOP_TIMEOUT_S = 3.0
_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    # Resolved in the parent: a forked child should only call it, not dlopen.
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None  # not Linux: stop() and sigterm_unwinds() still cover normal exits


_PRCTL = _load_prctl()


def _die_with_parent(parent: int) -> Callable[[], None]:
    def hook() -> None:  # runs in the child between fork and exec
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)  # aot died before the request took effect

    return hook


def spawn(argv: list[str], **popen: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **popen)`` as a device process (see the module doc).

    Raises OSError as Popen does; callers turn it into their own error."""
    return subprocess.Popen(
        argv, start_new_session=True, preexec_fn=_die_with_parent(os.getpid()), **popen
    )


def stop(process: subprocess.Popen[bytes], grace: float = 0.0) -> None:
    """Lets ``process`` exit by itself for ``grace`` seconds, then terminates its group,
    then kills it, then reaps it. Safe to call on a process that has exited."""
    if process.poll() is None and grace > 0:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace)
    # Signal the group only while its leader is unreaped: its id cannot be reused then.
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_TIMEOUT_S)
    process.wait()


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While inside, SIGTERM raises ``SystemExit(143)`` in the main thread, so enclosing
    ``with`` blocks stop their devices; a second SIGTERM during that cleanup is ignored
    (SIGKILL still works, and the kernel then kills the devices)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; PDEATHSIG still applies
        return

    def handler(signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
