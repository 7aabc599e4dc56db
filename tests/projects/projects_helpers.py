"""Shared pieces of the project tests: the example model and `aot build` in-process."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest

from aot.cli import main as aot_main
from aot.testing.shared import shared_path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_MODEL = REPO / "examples" / "tiny_kws_int8.tflite"
EXAMPLE_INPUT = REPO / "examples" / "tiny_kws_int8.input.npy"
EXAMPLE_OUTPUT = REPO / "examples" / "tiny_kws_int8.output.npy"


def aot(*args: str) -> tuple[int, str]:
    """Runs the aot CLI in-process: (exit code, what it printed on stdout)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = aot_main(list(args))
    return code, printed.getvalue()


def build(out: Path, board: str, *extra: str) -> Path:
    code, _ = aot("build", str(EXAMPLE_MODEL), "--board", board, "-o", str(out), *extra)
    assert code == 0, f"aot build --board {board} {' '.join(extra)} failed (see stderr)"
    return out


def shared(*parts: str) -> Path:
    """Reference data in ../shared; missing data fails the test (aot.testing.shared)."""
    return shared_path(*parts)


def require_tools(*names: str) -> None:
    for name in names:
        if shutil.which(name) is None:
            pytest.skip(f"{name} not found on PATH (bash scripts/setup.sh installs it)")
