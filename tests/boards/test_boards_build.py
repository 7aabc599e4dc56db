"""Cross-compile the echo firmware from aot/project/templates/cmsis for every emulated board."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path
from types import MappingProxyType

import pytest
from boards_firmware import (
    CONSTANTS_SECTION,
    EMULATED,
    POOL_SECTION,
    echo_placements,
    make_echo_project,
    require_tool,
)

from aot.boards import Board, Console, TickSource, load_board
from aot.building.toolchain import build_with_make, elf_size
from aot.errors import ToolchainError
from aot.project.linker import render_linker_script

pytestmark = pytest.mark.toolchain


def symbols(elf: Path) -> dict[str, int]:
    out = subprocess.run(
        ["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    return {
        parts[2]: int(parts[0], 16) for parts in map(str.split, out.splitlines()) if len(parts) == 3
    }


def region_of(board: Board, address: int) -> str:
    for m in board.memories:
        if m.base <= address < m.end:
            return m.name
    raise AssertionError(f"0x{address:08x} is in no region of {board.name}")


@pytest.mark.parametrize("name", EMULATED)
def test_echo_links_and_fits(name: str, echo_firmware) -> None:
    board = load_board(name)
    elf = echo_firmware(name)
    size = elf_size(elf)
    assert 0 < size.text < board.boot_region.size
    syms = symbols(elf)
    placements = echo_placements(board)
    assert syms["aot_vector_table"] == board.boot_region.base
    assert region_of(board, syms["echo_pool"]) == placements[POOL_SECTION]
    assert region_of(board, syms["echo_constants"]) == placements[CONSTANTS_SECTION]
    assert region_of(board, syms["echo_initialised"]) == board.default_region("data").name
    assert region_of(board, syms["aot_stack_limit"]) == board.default_region("stack").name
    assert syms["__aot_stack_top"] - syms["aot_stack_limit"] >= 16 * 1024


def test_overflowing_region_fails_clearly(tmp_path: Path) -> None:
    require_tool("arm-none-eabi-gcc", "sudo apt-get install gcc-arm-none-eabi")
    board = load_board("mps2_an385")
    project = make_echo_project(board, tmp_path / "p")
    # A stack bigger than the whole stack region cannot link.
    (project / "board.ld").write_text(render_linker_script(board, stack_size=8 << 20))
    with pytest.raises(ToolchainError, match=r"(?s)make exit 2.*overflowed"):
        build_with_make(project, target="echo")


def test_copy_table_for_physical_board(tmp_path: Path) -> None:
    """A board whose RAM the flasher cannot load: .data is copied from flash at reset."""
    require_tool("arm-none-eabi-gcc", "sudo apt-get install gcc-arm-none-eabi")
    board = dataclasses.replace(
        load_board("nucleo_f746zg"),
        ports=MappingProxyType({"cmsis": "cmsdk"}),  # link check only: never run
        console=Console("cmsdk_uart", 0x40004000, 0),
        ticks=TickSource("fpgaio_counter", 1000, "cycles", 0x40028018),
    )
    elf = build_with_make(make_echo_project(board, tmp_path / "p"), target="echo")
    headers = subprocess.run(
        ["arm-none-eabi-objdump", "-h", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    data = next(line.split() for line in headers.splitlines() if " .data " in line)
    vma, lma = int(data[3], 16), int(data[4], 16)
    assert region_of(board, vma) == "dtcm"
    assert region_of(board, lma) == "flash"


def test_cmake_build(tmp_path: Path) -> None:
    require_tool("cmake", "sudo apt-get install cmake")
    require_tool("arm-none-eabi-gcc", "sudo apt-get install gcc-arm-none-eabi")
    project = make_echo_project(load_board("mps2_an386"), tmp_path / "p")
    build = tmp_path / "b"
    for cmd in (
        ["cmake", "-S", str(project), "-B", str(build),
         f"-DCMAKE_TOOLCHAIN_FILE={project / 'cmake' / 'arm-none-eabi.cmake'}"],
        ["cmake", "--build", str(build)],
    ):  # fmt: skip
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr
    assert (build / "echo.elf").is_file()
    assert shutil.which("arm-none-eabi-size")
