"""Arrays written into a folder the user names (``aot run --save``, ``aot validate --save``).

The folder is checked before the (possibly long) run, so a path that cannot be written
fails at once; each file is written under a temporary name and renamed into place, and a
failure removes every file this call wrote, so nothing half-written is left and nothing
that was there before is touched (except files of the same names, replaced whole).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from aot.errors import FileSystemError
from aot.fs_errors import describe_os_error


def check_save_folder(folder: str | Path, option: str = "--save") -> Path:
    """Create ``folder`` if needed and prove it writable, or a one-line error naming
    ``option``."""
    folder = Path(folder)
    for parent in (folder, *folder.parents):
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise FileSystemError(
                    f"cannot save to {folder}: {parent} is a file, not a folder; choose "
                    f"another {option}"
                )
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".aot-probe-"):
            pass
    except OSError as err:
        raise FileSystemError(
            f"{describe_os_error(err, 'the folder')}; choose another {option}"
        ) from err
    return folder


def save_arrays(
    folder: str | Path, arrays: Sequence[np.ndarray], stem: str, option: str = "--save"
) -> list[str]:
    """Write ``<stem>_<n>.npy`` for each array; all of them, or none (a one-line error)."""
    folder = check_save_folder(folder, option)
    written: list[Path] = []
    try:
        for index, array in enumerate(arrays):
            path = folder / f"{stem}_{index}.npy"
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.")
            try:
                with os.fdopen(handle, "wb") as f:
                    np.save(f, array)
                os.chmod(temporary, 0o666 & ~_umask())  # mkstemp's file is private (0600)
                os.replace(temporary, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
            written.append(path)
    except OSError as err:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        raise FileSystemError(
            f"{describe_os_error(err, 'the file')}; nothing was saved: choose another {option}"
        ) from err
    return [str(path) for path in written]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
