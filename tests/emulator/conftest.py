"""Fixtures for the emulator tests: builds cached per test worker (pytest -n is safe:
each worker has its own temporary folders)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from emulator_helpers import EXAMPLE_MODEL, REPO, ModelNeeds, model_path, require_tools

from aot.boards import load_board
from aot.building.toolchain import build_with_make
from aot.errors import AotError
from aot.project.cmsis import cmsis_build_config, write_build_config
from aot.project.linker import render_linker_script

SILENT_C = Path(__file__).resolve().parent / "firmware" / "silent.c"


@pytest.fixture(scope="session")
def model_needs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ModelNeeds]:
    """needs(model) -> constants, workspace and I/O bytes from one compile (no board)."""
    from aot.compiler import CompileOptions, compile_model
    from aot.project import io_arena_bytes

    cache: dict[str, ModelNeeds] = {}

    def needs(name: str) -> ModelNeeds:
        if name not in cache:
            folder = tmp_path_factory.mktemp(f"needs_{name}")
            manifest = compile_model(model_path(name), folder, CompileOptions()).manifest
            cache[name] = ModelNeeds(
                constants_bytes=manifest.constants.bytes,
                workspace_bytes=manifest.memory.workspace_bytes,
                io_bytes=io_arena_bytes(manifest),
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


@pytest.fixture
def silent_folder(firmware, tmp_path: Path) -> Path:
    """A copy of the example's build folder whose firmware never speaks the protocol."""
    require_tools("arm-none-eabi-gcc", "make")
    board = load_board("mps2_an386")
    example = firmware("example", board.name)
    assert not isinstance(example, AotError), example
    project = tmp_path / "silent_project"
    shutil.copytree(REPO / "aot" / "project" / "templates" / "cmsis", project)
    (project / "board.ld").write_text(render_linker_script(board, {}))
    port = REPO / "aot" / "runtime_c" / "ports" / board.port_for("cmsis") / "port.c"
    config = cmsis_build_config(
        board,
        sources=[str(SILENT_C), str(port)],
        includes=[str(REPO / "aot" / "runtime_c" / "include")],
        target="silent",
    )
    write_build_config(project, config, board)
    elf = build_with_make(project, target="silent")
    folder = tmp_path / "silent"
    shutil.copytree(example, folder)
    metadata = json.loads((folder / "metadata.json").read_text())
    shutil.copy2(elf, folder / metadata["build"]["executable"])
    return folder
