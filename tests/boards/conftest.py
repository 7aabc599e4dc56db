"""Fixtures for the board tests: the emulated boards and their echo firmware."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from boards_firmware import EMULATED, build_echo, require_tool

from aot.boards import Board, load_board


@pytest.fixture(scope="session")
def echo_firmware(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """firmware(board_name) -> ELF of tests/boards/firmware/echo.c, built once."""
    require_tool(
        "arm-none-eabi-gcc", "sudo apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi"
    )
    require_tool("make", "sudo apt-get install make")
    root = tmp_path_factory.mktemp("echo")
    cache: dict[str, Path] = {}

    def firmware(name: str) -> Path:
        if name not in cache:
            cache[name] = build_echo(load_board(name), root / name)
        return cache[name]

    return firmware


@pytest.fixture(params=EMULATED)
def emulated_board(request: pytest.FixtureRequest) -> Board:
    return load_board(request.param)
