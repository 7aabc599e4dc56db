"""Builds the echo test firmware from aot/project/templates/cmsis for a board."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aot.boards import Board, load_all_boards
from aot.building.toolchain import build_with_make
from aot.project.cmsis import cmsis_build_config, write_build_config
from aot.project.linker import render_linker_script

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "aot" / "project" / "templates" / "cmsis"
ECHO_C = Path(__file__).resolve().parent / "firmware" / "echo.c"
EMULATED = [b.name for b in load_all_boards() if b.emulated]
POOL_SECTION = ".bss.aot.echo.pool"
CONSTANTS_SECTION = ".rodata.aot.echo.constants"


def echo_placements(board: Board) -> dict[str, str]:
    """Put the pool and the constants in the last region that may hold them, so the
    test sees them leave the default regions when a board has a choice."""
    pool = [m.name for m in board.memories if m.may_hold("workspace")][-1]
    constants = [m.name for m in board.memories if m.may_hold("constants")][-1]
    return {POOL_SECTION: pool, CONSTANTS_SECTION: constants}


def make_echo_project(board: Board, dest: Path) -> Path:
    shutil.copytree(TEMPLATE, dest)
    (dest / "board.ld").write_text(render_linker_script(board, echo_placements(board)))
    config = cmsis_build_config(
        board,
        sources=[
            str(ECHO_C),
            str(REPO / "aot" / "runtime_c" / "ports" / board.port_for("cmsis") / "port.c"),
        ],
        includes=[str(REPO / "aot" / "runtime_c" / "include")],
        target="echo",
    )
    write_build_config(dest, config, board)
    return dest


def build_echo(board: Board, dest: Path) -> Path:
    return build_with_make(make_echo_project(board, dest), target="echo")


def require_tool(name: str, hint: str) -> None:
    if shutil.which(name) is None:
        pytest.skip(f"{name} not found; install it with: {hint}")
