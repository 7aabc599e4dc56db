"""Build folders for the bench tests, cached per session (each worker has its own)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The in-memory fake device lives with the protocol tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "device"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_helpers import Builder


@pytest.fixture(scope="session")
def profiled_build(tmp_path_factory: pytest.TempPathFactory) -> Builder:
    from aot.cli import main as aot_main

    cache: dict[tuple[str, ...], Path] = {}

    def build(model: Path, board: str, *extra: str) -> Path:
        key = (str(model), board, *extra)
        if key not in cache:
            folder = tmp_path_factory.mktemp("bench") / f"{model.stem}_{board}"
            argv = ["build", str(model), "--board", board, "-o", str(folder), "-q", *extra]
            assert aot_main(argv) == 0
            cache[key] = folder
        return cache[key]

    return build
