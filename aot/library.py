"""The model library folder and its versioned metadata.json.

Layout of an output folder::

    DIR/metadata.json          read by every later command (run, inspect, bench)
    DIR/model/include/         aot_<name>.h + the runtime headers it needs (aot/*.h)
    DIR/model/src/             kernels, constants, executor
    DIR/project/               the board project (written by aot.project)

Everything is written into a temporary sibling folder that is renamed into place only when
the whole build succeeded, so a failure never leaves a half-written DIR behind.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aot.errors import ConfigError, ModelError

METADATA_FILE = "metadata.json"
METADATA_SCHEMA_VERSION = 1
LIBRARY_DIR = "model"
RUNTIME_HEADERS = ("model.h", "error.h")

# The C runtime ships inside the package (package data), so a wheel install finds it too.
RUNTIME_C_DIR = Path(__file__).resolve().parent / "runtime_c"


@contextlib.contextmanager
def staged_output(output: Path, force: bool) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``output`` only if the block succeeds."""
    output = Path(output)
    if output.exists() and not force:
        raise ConfigError(f"output folder {output} already exists; use --force to replace it")
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if output.exists():
        if output.is_dir():
            shutil.rmtree(output)
        else:
            output.unlink()
    staging.rename(output)


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
    document = {"schema_version": METADATA_SCHEMA_VERSION, **metadata}
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
