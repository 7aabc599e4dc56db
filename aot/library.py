"""The model library folder and its versioned metadata.json.

Layout of an output folder::

    DIR/metadata.json          the manifest every later command reads (aot/artifacts/)
    DIR/model/include/         aot_<name>.h + the runtime headers it needs (aot/*.h)
    DIR/model/src/             kernels, constants, executor
    DIR/project/               the board project (written by aot.project)

Everything is written into a temporary sibling folder that is renamed into place only when
the whole build succeeded, so a failure or an interrupt never leaves a half-written DIR
behind. Its name carries the building process's id (``.DIR.staging-<pid>-*``), so a later
build of DIR removes what a killed one left (SIGKILL runs no clean-up). The last thing
written into it is ``aot-files.json``, the list of every path the build wrote.
``--force`` replaces only a folder an earlier ``aot build`` wrote, and only while it holds
nothing but those paths (see ``check_replaceable``); the old folder is renamed aside before
the new one is renamed in, so a crash mid-replace never leaves neither.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from aot import interrupts
from aot.artifacts.assemble import LibraryFiles, ModelSource
from aot.artifacts.manifest import GENERATOR, METADATA_FILE, read_document, written_by_aot_build
from aot.artifacts.manifest import SCHEMA_VERSION as METADATA_SCHEMA_VERSION  # noqa: F401
from aot.errors import ConfigError, FileSystemError
from aot.fs_errors import describe_os_error

# Every path a build wrote, relative to its folder: --force refuses to replace a folder
# holding anything else (a file the user put into project/, say).
FILES_LIST = "aot-files.json"
# Written into a build folder by later commands (aot inspect redraws the picture).
LATER_ENTRIES = frozenset({"memory.svg"})
STAGING_INFIX = ".staging-"
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
            created = _make_output_parents(output)
            remove_stale_staging(output)
            staging = _make_staging(output)
        yield staging
        with interrupts.shield():
            interrupts.check()  # an interrupt that TVM swallowed still aborts the build
            write_files_list(staging)
            check_replaceable(output, force, reads)  # the folder may have changed meanwhile
            _swap_in(staging, output)
            interrupts.finish()
    except BaseException as err:
        with interrupts.shield():
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            if created is not None:
                _remove_empty_parents(created, output.parent)
        if staging is not None and _is_about(err, staging):
            # A full or read-only file system mid-build: nothing of it is left behind.
            assert isinstance(err, OSError)
            shown = output
            if err.filename is not None:
                shown = output / Path(err.filename).relative_to(staging)
            failure = describe_os_error(OSError(err.errno, err.strerror, str(shown)), "writing")
            raise FileSystemError(
                f"{failure}; nothing was written to {output}: choose another -o"
            ) from err
        raise


def _is_about(err: BaseException, staging: Path) -> bool:
    """Whether ``err`` is the system refusing a write into the staging folder."""
    if not isinstance(err, OSError) or err.errno is None:
        return False
    if err.filename is None:  # a failed write() names no file: a full or read-only disk
        return err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG)
    return Path(err.filename).is_relative_to(staging)


def _make_output_parents(output: Path) -> Path | None:
    """``mkdir -p`` the output's parent, as a one-line error naming -o when refused."""
    for parent in output.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise FileSystemError(
                    f"cannot create the output folder {output}: {parent} is a file, not a "
                    "folder; choose another -o"
                )
            break
    try:
        return _make_parents(output.parent)
    except OSError as err:
        raise FileSystemError(
            f"cannot create the output folder {output}: {err.strerror} ({err.filename}); "
            "choose another -o"
        ) from err


def _make_staging(output: Path) -> Path:
    prefix = f".{output.name}{STAGING_INFIX}{os.getpid()}-"
    try:
        staging = Path(tempfile.mkdtemp(prefix=prefix, dir=output.parent))
        # mkdtemp makes the folder private (0700); give it the usual umask permissions.
        staging.chmod(0o777 & ~_umask())
    except OSError as err:
        raise FileSystemError(
            f"cannot create the output folder {output}: cannot write in {output.parent} "
            f"({err.strerror}); choose another -o"
        ) from err
    return staging


def remove_stale_staging(output: Path) -> list[Path]:
    """Remove the staging folders of ``output`` whose building process is gone.

    A build killed by SIGKILL cannot clean up; its folder is named after its process id, so
    the next build of the same output knows it is dead. Folders of live processes (another
    build running now) are left alone; a folder without an id (an older aot) only if empty.
    """
    removed = []
    for candidate in output.parent.glob(f".{glob_escape(output.name)}{STAGING_INFIX}*"):
        if not candidate.is_dir() or candidate.is_symlink():
            continue
        owner = candidate.name[len(f".{output.name}{STAGING_INFIX}") :].split("-", 1)[0]
        if owner.isdigit():
            if _process_alive(int(owner)):
                continue
            shutil.rmtree(candidate, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                candidate.rmdir()  # only an empty one
        if not candidate.exists():
            removed.append(candidate)
    return removed


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def write_files_list(folder: Path) -> None:
    """Record every path under ``folder`` (the last file a build writes)."""
    paths = sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))
    document = {"generator": GENERATOR, "paths": [*paths, FILES_LIST]}
    (folder / FILES_LIST).write_text(json.dumps(document, indent=1) + "\n")


def _written_paths(folder: Path) -> set[str] | None:
    try:
        document = json.loads((folder / FILES_LIST).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("paths"), list):
        return None
    return {str(path) for path in document["paths"]}


def _paths_not_written(folder: Path, written: set[str]) -> list[str]:
    """Paths under ``folder`` that no build wrote: a folder is named once, not its contents."""
    foreign = []
    pending = [folder]
    while pending:
        current = pending.pop()
        for entry in sorted(current.iterdir()):
            relative = str(entry.relative_to(folder))
            if relative in written or relative in LATER_ENTRIES:
                if entry.is_dir() and not entry.is_symlink():
                    pending.append(entry)
            else:
                foreign.append(relative + ("/" if entry.is_dir() else ""))
    return sorted(foreign)


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
    if not written_by_aot_build(output):
        raise ConfigError(
            f"{refuse}: it is not a folder written by 'aot build' (no {METADATA_FILE} with "
            f'"generator": "{GENERATOR}"); remove it yourself or choose another -o'
        )
    written = _written_paths(output)
    if written is None:
        raise ConfigError(
            f"{refuse}: it has no {FILES_LIST} listing what 'aot build' wrote there (an "
            "unfinished or older build); remove it yourself or choose another -o"
        )
    foreign = _paths_not_written(output, written)
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        shown = ", ".join(foreign[:3]) + more
        raise ConfigError(
            f"{refuse}: it holds {shown}, which 'aot build' did not write; "
            "move them out or choose another -o"
        )


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


def read_metadata(folder: str | Path) -> dict[str, Any]:
    """A build folder's metadata.json as JSON data (tests and scripts look into it; the
    commands read the typed manifest, ``aot.artifacts.read_manifest``)."""
    return read_document(folder)


def library_files(generated: Any, lowered: Any, runtimes: Mapping[str, Any]) -> LibraryFiles:
    """The generated C, and the runtime files of every backend that took a step
    (``runtimes``, by backend name): its sources in a folder of its own (two drivers'
    util.c never meet), its headers in the shared include/ (two backends' headers of one
    name must be one header)."""
    files = dict(generated.files)
    include_dirs: list[str] = []
    defines: dict[str, str] = {}
    header_owners: dict[str, str] = {}  # include/<name> -> the backend that shipped it
    for backend, runtime in runtimes.items():
        # The backend's files for every build, then those its steps' artifacts name.
        kernels = {step.kernel for step in lowered.steps if step.backend == backend}
        stepwise = [
            a.runtime for a in lowered.artifacts if a.symbol in kernels and a.runtime is not None
        ]
        sources = list(dict.fromkeys([*runtime.sources, *(f for r in stepwise for f in r.sources)]))
        headers = list(dict.fromkeys([*runtime.headers, *(f for r in stepwise for f in r.headers)]))
        for path in sources:
            files[f"src/backends/{backend}/{path.name}"] = path.read_text()
        for path in headers:
            text = path.read_text()
            key = f"include/{path.name}"
            if key in files and files[key] != text:
                owner = header_owners.get(key, "the model library")
                raise ConfigError(
                    f"backends {owner} and {backend} both ship a different {path.name} "
                    "header (model/include/ is shared); rename one of them, or build without "
                    f"--accelerator {backend}"
                )
            files[key] = text
            header_owners.setdefault(key, backend)
        include_dirs += [str(d) for d in runtime.include_dirs]
        defines.update(runtime.defines)
        for files_of in stepwise:
            include_dirs += [str(d) for d in files_of.include_dirs if str(d) not in include_dirs]
            defines.update(files_of.defines)
    return LibraryFiles(files, tuple(include_dirs), defines)


def model_source(model_path: str | Path) -> ModelSource:
    """What the library records of the model file it was compiled from: its absolute
    path and its SHA-256."""
    path = Path(model_path)
    return ModelSource(str(path.resolve()), hashlib.sha256(path.read_bytes()).hexdigest())
