"""Zephyr projects upstream Zephyr accepts: only Kconfig symbols upstream defines,
workspace pools placed through zephyr,memory-region nodes, the west command `aot build`
prints is the one `aot flash` finds, and Zephyr's board names work with --board."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from projects_helpers import aot, build

from aot.boards import load_all_boards, load_board
from aot.errors import ConfigError

pytestmark = pytest.mark.unit

# Each Kconfig symbol aot writes and the upstream Zephyr file that defines it, looked up
# in zephyrproject-rtos/zephyr (main). CONFIG_RESET_ON_FATAL_ERROR is not upstream (it is
# an nRF Connect SDK symbol) and must never appear.
UPSTREAM_KCONFIG = {
    "SERIAL": "drivers/serial/Kconfig",
    "CONSOLE": "drivers/console/Kconfig",
    "UART_CONSOLE": "drivers/console/Kconfig",
    "PRINTK": "subsys/debug/Kconfig",
    "LOG": "subsys/logging/Kconfig",
    "BOOT_BANNER": "kernel/Kconfig",
    "HEAP_MEM_POOL_SIZE": "kernel/Kconfig",
    "MAIN_STACK_SIZE": "kernel/Kconfig",
    "FPU": "arch/Kconfig",
}
ZEPHYR_BOARDS = [b.name for b in load_all_boards() if b.zephyr_board]
TEMPLATE = Path(__file__).resolve().parents[2] / "aot" / "project" / "templates" / "zephyr"
CONFIG_LINE = re.compile(r"^CONFIG_([A-Z0-9_]+)=(.*)$")


def config_symbols(text: str) -> list[str]:
    symbols = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = CONFIG_LINE.match(line)
        assert match, f"not a Kconfig assignment: {line!r}"
        symbols.append(match.group(1))
    return symbols


def test_the_code_table_is_the_recorded_one() -> None:
    from aot.project.zephyr import KCONFIG_SOURCES

    assert dict(KCONFIG_SOURCES) == UPSTREAM_KCONFIG


def test_prj_conf_uses_only_upstream_symbols() -> None:
    symbols = config_symbols((TEMPLATE / "prj.conf").read_text())
    assert symbols and set(symbols) <= set(UPSTREAM_KCONFIG), set(symbols) - set(UPSTREAM_KCONFIG)
    assert "RESET_ON_FATAL_ERROR" not in symbols


@pytest.mark.parametrize("name", ZEPHYR_BOARDS)
def test_generated_conf_uses_only_upstream_symbols(name: str) -> None:
    from aot.project.zephyr import render_zephyr_files

    files = render_zephyr_files(load_board(name), sources=[], includes=[], main_stack_size=8192)
    symbols = config_symbols(files["aot.conf"])
    assert "MAIN_STACK_SIZE" in symbols
    assert set(symbols) <= set(UPSTREAM_KCONFIG), set(symbols) - set(UPSTREAM_KCONFIG)


def test_a_symbol_outside_the_table_is_refused() -> None:
    from aot.project.zephyr import kconfig_line

    with pytest.raises(ConfigError, match="CONFIG_RESET_ON_FATAL_ERROR is not in"):
        kconfig_line("RESET_ON_FATAL_ERROR", "n")


@pytest.fixture(scope="module")
def two_pool_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mps2_an386 with one pool in Zephyr's main RAM (ssram23) and one in PSRAM, which
    Zephyr's mps2 devicetree does not declare."""
    out = tmp_path_factory.mktemp("zephyr_pools") / "out"
    return build(
        out, "mps2_an386", "--template", "zephyr", "--name", "kws",
        "--pool", "ssram23:1K", "--pool", "psram:64K",
    )  # fmt: skip


def test_overlay_declares_the_extra_region(two_pool_project: Path) -> None:
    overlay = (two_pool_project / "project" / "aot.overlay").read_text()
    assert overlay.endswith(
        "/ {\n"
        "\taot_psram: memory@21000000 {\n"
        '\t\tcompatible = "zephyr,memory-region", "mmio-sram";\n'
        "\t\treg = <0x21000000 0x1000000>;\n"
        '\t\tzephyr,memory-region = "AOT_PSRAM";\n'
        "\t};\n"
        "};\n"
    ), overlay
    assert "ssram23" not in overlay and "0x20000000" not in overlay  # Zephyr's own RAM
    cmake = (two_pool_project / "project" / "CMakeLists.txt").read_text()
    assert "EXTRA_DTC_OVERLAY_FILE ${CMAKE_CURRENT_LIST_DIR}/aot.overlay" in cmake


def test_every_pool_section_of_the_library_is_placed(two_pool_project: Path) -> None:
    project = two_pool_project / "project"
    # The pool sections the model library really uses, read from its C source.
    used = set()
    for source in (project / "model" / "src").glob("*.c"):
        used |= set(re.findall(r'"(\.bss\.aot\.[A-Za-z0-9_.]+)"', source.read_text()))
    assert used == {".bss.aot.kws.ssram23", ".bss.aot.kws.psram"}
    snippet = (project / "aot_sections.ld").read_text()
    rules = dict(re.findall(r"\*\((\.bss\.aot\.[^)]+)\)\n.*?\n\}\s*>\s*(\w+)", snippet, re.S))
    main_ram = load_board("mps2_an386").region("ssram23")
    for section in used:
        if section.endswith(f".{main_ram.name}"):
            # Zephyr's own script takes .bss.* into zephyr,sram; a rule would be wrong.
            assert section not in rules
        else:
            assert rules.get(section) == "AOT_PSRAM", snippet


def test_a_region_the_board_devicetree_declares_needs_no_overlay(tmp_path: Path) -> None:
    out = build(tmp_path / "out", "stm32f746g_disco", "--name", "kws", "--pool", "sdram:64K")
    project = out / "project"
    assert not (project / "aot.overlay").exists()
    assert "*(.bss.aot.kws.sdram)" in (project / "aot_sections.ld").read_text()
    assert (project / "aot_sections.ld").read_text().rstrip().endswith("} > SDRAM1")


def test_printed_west_command_is_where_flash_looks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, printed = aot(
        "build", str(Path(__file__).resolve().parents[2] / "examples" / "tiny_kws_int8.tflite"),
        "--board", "nucleo_f746zg", "-o", str(out),
    )  # fmt: skip
    assert code == 0
    (line,) = [line for line in printed.splitlines() if "west build" in line]
    west = shlex.split(line.split("with: ", 1)[1])
    assert west[:4] == ["west", "build", "-b", "nucleo_f746zg"]
    build_dir = west[west.index("-d") + 1]
    assert Path(west[4]) == out / "project" and Path(build_dir) == out / "project" / "build"
    code, flash = aot("flash", str(out), "--dry-run")
    assert code == 0
    flash_argv = shlex.split(flash.strip())
    assert flash_argv[flash_argv.index("--build-dir") + 1] == build_dir


@pytest.mark.parametrize(
    ("zephyr_name", "board"),
    [
        ("mps2/an386", "mps2_an386"),
        ("mps3/corstone300/an547", "mps3_an547"),
        ("nucleo_f746zg", "nucleo_f746zg"),
        ("mps2/an521/cpu0", "mps2_an521"),
        ("mps2/an521", "mps2_an521"),
    ],
)
def test_zephyr_board_names_are_aliases(zephyr_name: str, board: str) -> None:
    assert load_board(zephyr_name).name == board


def test_zephyr_name_works_with_board_option(tmp_path: Path) -> None:
    out = build(tmp_path / "out", "mps3/corstone300/an547", "--no-build")
    import json

    assert json.loads((out / "metadata.json").read_text())["board"] == "mps3_an547"


def test_every_board_name_is_unique() -> None:
    seen: dict[str, str] = {}
    for board in load_all_boards():
        for name in board.names:
            assert seen.setdefault(name, board.name) == board.name, name


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("mps2-an386", "mps2_an386"), ("MPS2_AN386", "mps2_an386"), ("mps3_an574", "mps3_an547")],
)
def test_unknown_board_gets_a_did_you_mean(typed: str, meant: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown board '{typed}'; did you mean '{meant}'"):
        load_board(typed)
