"""The model library folder and its versioned metadata.json.

Layout of an output folder::

    DIR/metadata.json          read by every later command (run, inspect, bench)
    DIR/model/include/         aot_<name>.h + the runtime headers it needs (aot/*.h)
    DIR/model/src/             kernels, constants, executor
    DIR/project/               the board project (written by aot.project)

Everything is written into a temporary sibling folder that is renamed into place only when
the whole build succeeded, so a failure or an interrupt never leaves a half-written DIR
behind. ``--force`` replaces only a folder an earlier ``aot build`` wrote (see
``check_replaceable``), and the old folder is renamed aside before the new one is renamed
in, so a crash mid-replace never leaves neither.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from aot import interrupts
from aot.errors import ConfigError, ModelError

METADATA_FILE = "metadata.json"
METADATA_SCHEMA_VERSION = 1
# Who wrote a folder: --force replaces only folders whose metadata.json says this.
GENERATOR = "aot build"
# The top-level entries of a build folder (aot inspect adds memory.svg); --force refuses
# to replace a folder holding anything else.
BUILD_ENTRIES = frozenset({METADATA_FILE, "model", "project", "memory.svg"})
LIBRARY_DIR = "model"
RUNTIME_HEADERS = ("model.h", "error.h")

# The C runtime ships inside the package (package data), so a wheel install finds it too.
RUNTIME_C_DIR = Path(__file__).resolve().parent / "runtime_c"


@contextlib.contextmanager
def staged_output(
    output: Path, force: bool, reads: Iterable[str | Path | None] = ()
) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``output`` only if the block succeeds.

    ``reads`` are the files the build reads (the model, a pool file): never inside what
    gets replaced. With ``force`` only a folder an earlier ``aot build`` wrote is replaced.
    """
    output = Path(output)
    reads = tuple(reads)  # checked twice: now and right before the swap
    check_replaceable(output, force, reads)
    staging: Path | None = None
    created: Path | None = None  # the topmost parent folder this call created
    try:
        with interrupts.shield():
            created = _make_parents(output.parent)
            staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.staging-", dir=output.parent))
            # mkdtemp makes the folder private (0700); give it the usual umask permissions.
            staging.chmod(0o777 & ~_umask())
        yield staging
        with interrupts.shield():
            interrupts.check()  # an interrupt that TVM swallowed still aborts the build
            check_replaceable(output, force, reads)  # the folder may have changed meanwhile
            _swap_in(staging, output)
            interrupts.finish()
    except BaseException:
        with interrupts.shield():
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            if created is not None:
                _remove_empty_parents(created, output.parent)
        raise


def check_replaceable(output: Path, force: bool, reads: Iterable[str | Path | None] = ()) -> None:
    """Refuse (ConfigError) unless ``output`` is absent, or ``force`` and an aot build folder."""
    if not output.exists() and not output.is_symlink():
        return
    if not force:
        raise ConfigError(f"output folder {output} already exists; use --force to replace it")
    refuse = f"--force refuses to replace {output}"
    if output.is_symlink():
        raise ConfigError(f"{refuse}: it is a symbolic link; give the folder it points to")
    if not output.is_dir():
        raise ConfigError(f"{refuse}: it is a file, not a build folder; choose another -o")
    target = output.resolve()
    protected = [
        ("the current directory", Path.cwd()),
        ("your home folder", Path.home()),
        ("aot's own installation", Path(__file__).resolve().parent),
        *(("the input file " + str(path), Path(path)) for path in reads if path is not None),
    ]
    for what, path in protected:
        if path.resolve().is_relative_to(target):
            raise ConfigError(f"{refuse}: it contains {what}; choose another -o")
    entries = sorted(entry.name for entry in output.iterdir())
    if not entries:
        return  # an empty folder: nothing to lose
    if not _written_by_aot_build(output):
        raise ConfigError(
            f"{refuse}: it is not a folder written by 'aot build' (no {METADATA_FILE} with "
            f'"generator": "{GENERATOR}"); remove it yourself or choose another -o'
        )
    foreign = [name for name in entries if name not in BUILD_ENTRIES]
    if foreign:
        raise ConfigError(
            f"{refuse}: it holds {', '.join(foreign)}, which 'aot build' did not write; "
            "move them out or choose another -o"
        )


def _written_by_aot_build(folder: Path) -> bool:
    try:
        document = json.loads((folder / METADATA_FILE).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(document, dict) and document.get("generator") == GENERATOR


def _swap_in(staging: Path, output: Path) -> None:
    """Rename ``staging`` to ``output``; an old ``output`` is renamed aside first.

    At every moment one of them is whole on disk: a crash between the two renames leaves
    the old folder beside ``output`` as ``.<name>.old-*``, never nothing.
    """
    if not output.exists():
        staging.rename(output)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{output.name}.old-", dir=output.parent))
    output.rename(aside / output.name)
    try:
        staging.rename(output)
    except BaseException:
        (aside / output.name).rename(output)
        aside.rmdir()
        raise
    shutil.rmtree(aside)


def _make_parents(folder: Path) -> Path | None:
    """``mkdir -p folder``; return the topmost folder it created, so a failure can remove it."""
    missing = [parent for parent in (folder, *folder.parents) if not parent.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    return missing[-1] if missing else None


def _remove_empty_parents(top: Path, folder: Path) -> None:
    for parent in (folder, *folder.parents):
        with contextlib.suppress(OSError):
            parent.rmdir()  # only succeeds on a folder that is empty
        if parent == top:
            return


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_files(root: Path, files: dict[str, str]) -> None:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def copy_runtime_headers(include_dir: Path) -> None:
    target = include_dir / "aot"
    target.mkdir(parents=True, exist_ok=True)
    for header in RUNTIME_HEADERS:
        shutil.copy2(RUNTIME_C_DIR / "include" / "aot" / header, target / header)


def write_metadata(root: Path, metadata: dict[str, Any]) -> None:
    document = {"schema_version": METADATA_SCHEMA_VERSION, "generator": GENERATOR, **metadata}
    (root / METADATA_FILE).write_text(json.dumps(document, indent=2) + "\n")


def read_metadata(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / METADATA_FILE
    if not path.is_file():
        raise ConfigError(
            f"{folder} is not an aot build folder (no {METADATA_FILE}); create one with "
            "'aot build MODEL -o DIR'"
        )
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ModelError(f"{path} is corrupt: {err}") from err
    version = document.get("schema_version")
    if version != METADATA_SCHEMA_VERSION:
        raise ConfigError(
            f"{path} has metadata schema version {version}; this aot reads version "
            f"{METADATA_SCHEMA_VERSION}: rebuild the folder with this version of aot"
        )
    return document
