"""The system's refusals of a path, as one line a user can act on.

An ``OSError`` from reading or writing a file (a read-only or full file system, a path
through a regular file, ``/proc``) or a ``MemoryError`` is not a bug in aot: it becomes a
``FileSystemError`` or ``ResourceError`` naming the path, the cause and what to do. The
CLI's one handler calls ``describe_system_error`` for what no stage translated itself.
"""

from __future__ import annotations

import errno
import os

from aot.errors import AotError, FileSystemError, ResourceError

# What to do, by errno: the cause itself is os.strerror's text.
_ADVICE = {
    errno.EROFS: "the file system is read-only; choose a path on a writable one",
    errno.ENOSPC: "the device is full; free some space or choose a path on another one",
    errno.EDQUOT: "the disk quota is used up; free some space or choose another path",
    errno.EACCES: "permission denied; choose a path you may write, or change its permissions",
    errno.EPERM: "the operation is not permitted there; choose another path",
    errno.ENOTDIR: "a part of the path is a file, not a folder; choose another path",
    errno.EISDIR: "it is a folder; give a file",
    errno.ENOENT: "a folder on the way does not exist or cannot be created there",
    errno.EEXIST: "something is already there and cannot be replaced",
    errno.ENAMETOOLONG: "the name is too long; choose a shorter path",
    errno.EMFILE: "too many open files; raise the limit (ulimit -n)",
}


def describe_os_error(err: OSError, what: str | None = None) -> FileSystemError:
    """A one-line ``FileSystemError`` for ``err``; ``what`` says what the path was for
    ("the folder"), or is "writing" for a write that failed."""
    path = err.filename if err.filename is not None else "a file"
    cause = err.strerror or os.strerror(err.errno or 0) or type(err).__name__
    advice = _ADVICE.get(err.errno or -1)
    if what == "writing":
        message = f"cannot write {path}: {cause}"
    else:
        message = f"cannot use {f'{what} {path}' if what else path}: {cause}"
    if advice and advice.split(";")[0] not in cause.lower():
        message += f" ({advice})"
    elif advice and ";" in advice:
        message += f" ({advice.split('; ', 1)[1]})"
    return FileSystemError(message)


def describe_system_error(err: BaseException) -> AotError | None:
    """The ``AotError`` for a system refusal, or None when ``err`` is something else."""
    if isinstance(err, MemoryError):
        return ResourceError(
            "out of memory: the model or an input needs more memory than this process may "
            "use (a file far larger than a real model, or a memory limit such as ulimit -v)"
        )
    if isinstance(err, OSError) and err.errno is not None and not _is_network(err):
        return describe_os_error(err)
    return None


def _is_network(err: OSError) -> bool:
    # Socket failures belong to the device and farm layers, which word them themselves.
    return isinstance(err, ConnectionError | TimeoutError) or err.errno in (
        errno.ECONNREFUSED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
    )
