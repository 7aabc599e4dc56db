"""Digests of the model library a build writes, so a refactoring can prove it changed nothing.

One golden build is ``aot build MODEL --board BOARD [--accelerator NAME] --no-build`` of a
reference model (MLPerf Tiny, from the shared folder). Its digest is a sha256 per file of
the generated model library (``model/``) and one of ``metadata.json`` with what depends
on the machine taken out: the tool versions, the compile times and the model's absolute
path (kept as its file name). The C runtime's headers that the build copies verbatim into
``model/include/aot/`` are left out: they are not generated, and their own tests cover
them.

``tests/golden/library_digests.json`` holds the digests of every build in
:data:`GOLDEN_BUILDS`; ``scripts/make_golden.py`` writes it and
``tests/golden/test_library_digests.py`` compares against it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aot.testing.shared import CHECKOUT, MLPERF_TINY, mlperf_tiny

GOLDEN_FILE = CHECKOUT / "tests" / "golden" / "library_digests.json"

# The emulated boards and the host; the accelerator where a board's data declares it.
BOARDS = ("host", "mps2_an385", "mps2_an386", "mps2_an500", "mps2_an521", "mps3_an547")
ACCELERATOR = "example_npu"

# Left out of metadata.json's digest: they differ between machines and runs, not builds.
MACHINE_KEYS = ("tool_versions", "compile_seconds")


@dataclass(frozen=True)
class GoldenBuild:
    model: str  # an MLPerf Tiny reference model's name
    board: str
    accelerator: str | None = None

    @property
    def key(self) -> str:
        return "/".join([self.model, self.board, *([self.accelerator] if self.accelerator else [])])

    def argv(self, output: Path) -> list[str]:
        accelerator = ["--accelerator", self.accelerator] if self.accelerator else []
        return [
            "-q",
            "build",
            str(mlperf_tiny(self.model)),
            "--board",
            self.board,
            *accelerator,
            "-o",
            str(output),
            "--no-build",
        ]


def _boards_with(accelerator: str) -> set[str]:
    from aot.boards import load_board

    return {b for b in BOARDS if any(a.name == accelerator for a in load_board(b).accelerators)}


def golden_builds() -> tuple[GoldenBuild, ...]:
    """Every reference model on every emulated board and the host, and again with the
    example NPU on the boards that have it."""
    npu = _boards_with(ACCELERATOR)
    builds = []
    for model in MLPERF_TINY:
        for board in BOARDS:
            builds.append(GoldenBuild(model, board))
            if board in npu:
                builds.append(GoldenBuild(model, board, ACCELERATOR))
    return tuple(builds)


def _runtime_headers() -> frozenset[str]:
    from aot.library import RUNTIME_HEADERS

    return frozenset(f"model/include/aot/{h}" for h in RUNTIME_HEADERS)


def normalised_metadata(document: dict[str, Any]) -> dict[str, Any]:
    """metadata.json without what depends on the machine (see the module's docstring)."""
    document = {k: v for k, v in document.items() if k not in MACHINE_KEYS}
    model = dict(document["model"])
    model["source"] = Path(model["source"]).name
    document["model"] = model
    return document


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def folder_digests(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every generated model library file and of the
    normalised metadata.json, in path order."""
    skipped = _runtime_headers()
    digests = {}
    for path in sorted((folder / "model").rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_file() and relative not in skipped:
            digests[relative] = _sha256(path.read_bytes())
    metadata = normalised_metadata(json.loads((folder / "metadata.json").read_text()))
    digests["metadata.json"] = _sha256((json.dumps(metadata, indent=2) + "\n").encode())
    return digests


def build_digests(build: GoldenBuild, workdir: Path) -> dict[str, str]:
    """Build ``build`` into a folder under ``workdir`` (the model library and the project,
    no firmware) and return its digests."""
    from aot.cli import main

    output = workdir / build.key.replace("/", "-")
    status = main(build.argv(output))
    if status != 0:
        raise AssertionError(f"aot {' '.join(build.argv(output))} exited {status}")
    return folder_digests(output)


def read_golden() -> dict[str, dict[str, str]]:
    return json.loads(GOLDEN_FILE.read_text())["builds"]


def write_golden(digests: dict[str, dict[str, str]]) -> None:
    document = {
        "about": "sha256 of each generated model library file and of the normalised "
        "metadata.json per reference build; written by scripts/make_golden.py, compared by "
        "tests/golden/test_library_digests.py (aot/testing/golden.py says what is left out)",
        "builds": digests,
    }
    GOLDEN_FILE.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN_FILE.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def differences(expected: dict[str, str], found: dict[str, str]) -> Iterator[str]:
    """One line per file that differs, is missing or is new."""
    for path in sorted(set(expected) | set(found)):
        if path not in found:
            yield f"{path}: no longer written"
        elif path not in expected:
            yield f"{path}: new"
        elif expected[path] != found[path]:
            yield f"{path}: differs"
