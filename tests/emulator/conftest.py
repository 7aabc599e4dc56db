"""Fixtures for the emulator tests: builds cached per test worker (pytest -n is safe:
each worker has its own temporary folders)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from emulator_helpers import EXAMPLE_MODEL, ModelNeeds, model_path

from aot.errors import AotError


@pytest.fixture(scope="session")
def model_needs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ModelNeeds]:
    """needs(model) -> constants, workspace and I/O bytes from one compile (no board)."""
    from aot.compiler import CompileOptions, compile_model
    from aot.project import io_arena_bytes

    cache: dict[str, ModelNeeds] = {}

    def needs(name: str) -> ModelNeeds:
        if name not in cache:
            folder = tmp_path_factory.mktemp(f"needs_{name}")
            meta = compile_model(model_path(name), folder, CompileOptions()).metadata
            cache[name] = ModelNeeds(
                constants_bytes=meta["constants"]["bytes"],
                workspace_bytes=meta["memory"]["workspace_bytes"],
                io_bytes=io_arena_bytes(meta),
            )
        return cache[name]

    return needs


@pytest.fixture(scope="session")
def firmware(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str, str], Path | AotError]:
    """firmware(model, board) -> the folder of `aot build MODEL --board BOARD`, or the
    AotError the build raised; built once per test worker."""
    from aot.testing.harness import build

    cache: dict[tuple[str, str], Path | AotError] = {}

    def get(model: str, board: str) -> Path | AotError:
        key = (model, board)
        if key not in cache:
            path = EXAMPLE_MODEL if model == "example" else model_path(model)
            out = tmp_path_factory.mktemp(f"{model}_{board}") / "out"
            try:
                cache[key] = build(path, out, board)
            except AotError as err:
                cache[key] = err
        return cache[key]

    return get
