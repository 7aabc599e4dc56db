"""`aot build --template zephyr` for every board with a Zephyr name.

Without a Zephyr tree aot generates the project and does not build it (the builds with
../shared/zephyr are in test_zephyr_builds.py). This checks what can be checked without
west: the files are right for the board, and every C source but the Zephyr port (which
needs Zephyr's headers) cross-compiles cleanly for the board's core with the project's
includes and defines.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from emulator_helpers import EXAMPLE_MODEL, REPO, require_tools

from aot.boards import Board, load_all_boards, load_board
from aot.cli import main as aot_main

pytestmark = pytest.mark.toolchain

ZEPHYR_BOARDS = [board.name for board in load_all_boards() if board.zephyr_board]
TEMPLATE = REPO / "aot" / "project" / "templates" / "zephyr"
ZEPHYR_PORT = "runtime/port/port.c"  # needs <zephyr/...> headers: built by west only
STRICT_CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2"]


def cmake_lists(text: str) -> dict[str, list[str]]:
    """The set(NAME item ...) commands of a generated aot_config.cmake."""
    return {
        match.group(1): shlex.split(match.group(2))
        for match in re.finditer(r"set\((\w+)([^)]*)\)", text)
    }


@pytest.fixture(scope="module", params=ZEPHYR_BOARDS)
def zephyr_project(request, tmp_path_factory) -> tuple[Board, Path, str]:
    """(board, output folder, what `aot build` printed on stdout)."""
    board = load_board(request.param)
    out = tmp_path_factory.mktemp(f"zephyr_{board.name}") / "out"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = aot_main(
            ["build", str(EXAMPLE_MODEL), "--board", board.name, "--template", "zephyr",
             "-o", str(out)]
        )  # fmt: skip
    assert code == 0, f"aot build --template zephyr failed for {board.name} (see stderr)"
    return board, out, printed.getvalue()


def test_project_files_are_right_for_the_board(zephyr_project, capsys) -> None:
    board, out, printed = zephyr_project
    project = out / "project"
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["board"] == board.name
    assert metadata["project"]["template"] == "zephyr"
    assert metadata["project"]["port"] == board.port_for("zephyr")
    assert metadata["project"]["built_by_aot"] is False and "build" not in metadata
    assert metadata["project"]["executable"] == "project/build/zephyr/zephyr.elf"

    # Copied unchanged: the CMake entry point and the Kconfig base.
    for name in ("CMakeLists.txt", "prj.conf", "README.md"):
        assert (project / name).read_text() == (TEMPLATE / name).read_text(), name
    cmakelists = (project / "CMakeLists.txt").read_text()
    assert "include(${CMAKE_CURRENT_LIST_DIR}/aot_config.cmake)" in cmakelists
    assert "aot.conf" in cmakelists and "west build -b <zephyr board>" in cmakelists

    # The west command, with the board's Zephyr name, is printed by `aot build`; the
    # template's README points at `aot boards <name>` for the same name.
    assert f"west build -b {board.zephyr_board} {project}" in printed, printed
    capsys.readouterr()
    assert aot_main(["boards", board.name, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    shown = shown[0] if isinstance(shown, list) else shown
    assert shown["zephyr_board"] == board.zephyr_board
    sections_ld = project / "aot_sections.ld"
    if sections_ld.exists():
        assert f"Zephyr board '{board.zephyr_board}'" in sections_ld.read_text()

    # Kconfig from board data: the FPU exactly when the board has one.
    conf = (project / "aot.conf").read_text().splitlines()
    assert ("CONFIG_FPU=y" in conf) == (board.features.fpu != "none"), conf
    assert "CONFIG_UART_CONSOLE=n" in (project / "prj.conf").read_text()

    # aot_config.cmake: every source and include folder exists; the app is sized.
    lists = cmake_lists((project / "aot_config.cmake").read_text())
    assert set(lists) == {"AOT_SOURCES", "AOT_INCLUDES", "AOT_DEFINES", "AOT_COMPILE_OPTIONS"}
    # The cmsis template's optimisation for the model sources (tests/emulator/
    # test_zephyr_builds.py checks it reaches the compiler after Zephyr's flags).
    assert lists["AOT_COMPILE_OPTIONS"][:2] == ["-O2", "-std=gnu11"]
    for source in lists["AOT_SOURCES"]:
        assert (project / source).is_file(), source
    for include in lists["AOT_INCLUDES"]:
        assert (project / include).is_dir(), include
    assert ZEPHYR_PORT in lists["AOT_SOURCES"] and "app/aot_app_model.c" in lists["AOT_SOURCES"]
    assert (project / ZEPHYR_PORT).read_text() == (
        REPO / "aot" / "runtime_c" / "ports" / board.port_for("zephyr") / "port.c"
    ).read_text()
    defines = dict(d.split("=", 1) for d in lists["AOT_DEFINES"])
    assert {"AOT_APP_IO_BYTES", "AOT_APP_MAX_TENSORS", "AOT_APP_MAX_PAYLOAD"} <= set(defines)
    # No CMSIS/bare-metal build files: this project is built by west.
    assert not (project / "Makefile").exists() and not (project / "board.ld").exists()


def test_sources_compile_for_the_board_core(zephyr_project, tmp_path) -> None:
    require_tools("arm-none-eabi-gcc")
    from aot.building.toolchain import arm_gcc

    board, out, _ = zephyr_project
    project = out / "project"
    lists = cmake_lists((project / "aot_config.cmake").read_text())
    sources = [s for s in lists["AOT_SOURCES"] if s != ZEPHYR_PORT]
    assert len(sources) >= 4, sources  # model library, runtime, app glue
    flags = [
        *board.gcc_flags(),
        *STRICT_CFLAGS,
        *(f"-I{project / i}" for i in lists["AOT_INCLUDES"]),
        *(f"-D{d}" for d in lists["AOT_DEFINES"]),
    ]
    failures = []
    for index, source in enumerate(sources):
        obj = tmp_path / f"{index}.o"
        cmd = [str(arm_gcc()), *flags, "-c", str(project / source), "-o", str(obj)]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not obj.is_file():
            failures.append(f"{source}:\n{result.stderr.strip()[-1500:]}")
    assert not failures, f"{board.name} ({' '.join(board.gcc_flags())}):\n" + "\n".join(failures)
