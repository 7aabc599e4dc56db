"""Ctrl-C (SIGINT) and SIGTERM: recorded once, raised as ``Interrupted``, checked again later.

Python's own SIGINT handling is not enough for a compiler built on TVM: a
``KeyboardInterrupt`` raised inside a Python callback that C++ called (a pass, a packed
function) can be swallowed ("Exception ignored ...") or turned into another exception, and
the build carries on. So the handler also records the signal, and ``check()`` raises it
again at stage boundaries and right before an output folder is renamed into place.

``shield()`` defers signals over a few statements that must not be cut in half (creating
or removing a staging folder, swapping it in); ``finish()`` says the user's work is on
disk, so a late signal no longer undoes anything and is only recorded.

This module imports nothing from aot: every stage may use it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The process got SIGINT or SIGTERM; the CLI exits with 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _State:
    received: int | None = None  # the first signal, kept until reset()
    shield_depth = 0
    pending = False  # a signal arrived inside a shield and was not raised yet
    finished = False


_state = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.received is None:
        _state.received = signum
    if _state.finished:
        return
    if _state.shield_depth:
        _state.pending = True
        return
    raise Interrupted(_state.received)


def reset() -> None:
    global _state
    _state = _State()


def received() -> int | None:
    """The signal number of the first SIGINT/SIGTERM since reset(), else None."""
    return _state.received


def finished() -> bool:
    return _state.finished


def finish() -> None:
    """The output is complete: from now on signals are only recorded, never raised."""
    _state.finished = True


def check() -> None:
    """Raise ``Interrupted`` if a signal arrived, even one whose exception was swallowed."""
    if _state.received is not None and not _state.finished:
        raise Interrupted(_state.received)


def report() -> int:
    """Print ``error: interrupted`` (``terminated`` for SIGTERM); return 128 + the signal."""
    finish()  # a second Ctrl-C must not cut the report short
    signum = _state.received or signal.SIGINT
    word = "terminated" if signum == signal.SIGTERM else "interrupted"
    print(f"error: {word}", file=sys.stderr)
    return 128 + signum


@contextlib.contextmanager
def shield() -> Iterator[None]:
    """Defer SIGINT/SIGTERM over the block; one that arrived is raised when it ends."""
    _state.shield_depth += 1
    try:
        yield
    finally:
        _state.shield_depth -= 1
    if not _state.shield_depth and _state.pending and not _state.finished:
        _state.pending = False
        raise Interrupted(_state.received or signal.SIGINT)


def _ours() -> bool:
    return signal.getsignal(signal.SIGINT) is _handler


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """Python prints an exception it cannot raise (one from a weakref callback, such as
    importlib's module-lock cleanup, when the signal lands there) as "Exception ignored
    in ...". An ``Interrupted`` is already recorded and ``check()`` raises it again at the
    next stage boundary, so it is dropped here; anything else goes to the previous hook."""
    if isinstance(unraisable.exc_value, Interrupted):
        return
    _previous_unraisable_hook(unraisable)


_previous_unraisable_hook = sys.unraisablehook


def install() -> None:
    """Handle SIGINT and SIGTERM with ``_handler`` (main thread only: Python's rule)."""
    if threading.current_thread() is not threading.main_thread() or _ours():
        return
    reset()
    global _previous_unraisable_hook
    if sys.unraisablehook is not _unraisable:
        _previous_unraisable_hook = sys.unraisablehook
        sys.unraisablehook = _unraisable
    for signum in SIGNALS:
        signal.signal(signum, _handler)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """``install()`` for the block, then put back the handlers that were there before."""
    if threading.current_thread() is not threading.main_thread() or _ours():
        yield  # not allowed here, or an outer caller (the entry point) owns them
        return
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    previous_hook = sys.unraisablehook
    install()
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sys.unraisablehook = previous_hook
