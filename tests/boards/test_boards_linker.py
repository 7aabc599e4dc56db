"""Linker scripts rendered from board memory regions and named-section placements."""

from __future__ import annotations

import re

import pytest

from aot.boards import list_boards, load_board
from aot.errors import ConfigError
from aot.project.linker import render_linker_script, render_zephyr_sections

pytestmark = pytest.mark.unit

MCU_BOARDS = [n for n in list_boards() if load_board(n).kind == "mcu"]


def output_section(script: str, name: str) -> str:
    pattern = rf"^  {re.escape(name)}( \(NOLOAD\))? :\n  \{{\n(.*?)\n  \}} > ([^\n]*)"
    match = re.search(pattern, script, re.S | re.M)
    assert match, f"no output section {name}"
    return match.group(0)


@pytest.mark.parametrize("name", MCU_BOARDS)
def test_every_mcu_board_renders(name: str) -> None:
    board = load_board(name)
    script = render_linker_script(board)
    for region in board.memories:
        assert re.search(
            rf"^  {region.name} +\(r?w?x\) : ORIGIN = 0x{region.base:08X}, "
            rf"LENGTH = 0x{region.size:08X}",
            script,
            re.M,
        )
    assert output_section(script, ".vectors").endswith(f"> {board.boot_region.name}")
    assert "aot_stack_limit = .;" in script  # stack painting bound (aot/platform.h)
    assert "ENTRY(Reset_Handler)" in script


def test_placement_into_chosen_regions() -> None:
    board = load_board("mps2_an386")
    script = render_linker_script(
        board,
        {
            ".rodata.aot.kws.constants": "psram",
            ".bss.aot.kws.*": "blockram",
        },
    )
    constants = output_section(script, ".aot_place_rodata_aot_kws_constants")
    assert "KEEP(*(.rodata.aot.kws.constants))" in constants
    assert constants.endswith("> psram")
    pools = output_section(script, ".aot_place_bss_aot_kws")
    assert "(NOLOAD)" in pools and pools.endswith("> blockram")
    # Explicit placements come before the generic rules, which would otherwise take them.
    assert script.index(".aot_place_bss_aot_kws") < script.index("  .bss (NOLOAD)")
    assert script.index(".aot_place_rodata_aot_kws") < script.index("  .rodata :")
    # The pool is zeroed at reset; QEMU loads psram directly, so nothing is copied.
    tables = output_section(script, ".aot_tables")
    assert "LONG(ADDR(.aot_place_bss_aot_kws)) LONG(SIZEOF(.aot_place_bss_aot_kws))" in tables
    assert "LOADADDR" not in tables
    assert "/* placement: .bss.aot.kws.* -> blockram */" in script


def test_unplaced_model_sections_go_to_default_regions() -> None:
    board = load_board("mps3_an547")
    script = render_linker_script(board)
    assert output_section(script, ".aot_workspace").endswith("> dtcm")
    assert output_section(script, ".aot_constants").endswith("> itcm")


def test_ram_on_real_board_is_copied_from_flash() -> None:
    board = load_board("nucleo_f746zg")
    script = render_linker_script(board, {".rodata.aot.m.constants": "dtcm"})
    assert output_section(script, ".data").endswith("> dtcm AT> flash")
    assert output_section(script, ".aot_place_rodata_aot_m_constants").endswith("> dtcm AT> flash")
    tables = output_section(script, ".aot_tables")
    assert "LONG(LOADADDR(.data)) LONG(ADDR(.data)) LONG(SIZEOF(.data))" in tables
    assert "LONG(LOADADDR(.aot_place_rodata_aot_m_constants))" in tables


def test_stack_and_heap_sizes() -> None:
    board = load_board("mps2_an521")
    script = render_linker_script(board, stack_size=0x4000, heap_size=0, stack_region="isram")
    assert "__aot_stack_size = 0x00004000;" in script
    assert "__aot_heap_size = 0x00000000;" in script
    assert output_section(script, ".stack").endswith("> isram")


@pytest.mark.parametrize(
    ("placements", "kwargs", "message"),
    [
        ({".bss.aot.m.p": "nowhere"}, {}, r"has no memory region 'nowhere'; regions: ssram1"),
        ({".rodata.aot.m.constants": "blockram"}, {}, r"needs a region holding constants"),
        ({".bss.aot.m.p": "ssram1"}, {}, r"'ssram1' holds code, constants"),
        ({".weird": "psram"}, {}, r"must start with one of \.text\.\*"),
        ({}, {"stack_region": "psram"}, r"region 'psram' may not hold the stack"),
        ({}, {"stack_size": 100}, r"multiple of 8"),
    ],
)
def test_bad_placements(placements: dict[str, str], kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        render_linker_script(load_board("mps2_an385"), placements, **kwargs)


def test_host_has_no_linker_script() -> None:
    with pytest.raises(ConfigError, match="no memory map"):
        render_linker_script(load_board("host"))


def test_zephyr_section_snippet() -> None:
    board = load_board("stm32f746g_disco")
    snippet = render_zephyr_sections(board, {".bss.aot.kws.*": "sdram"})
    assert (
        ".aot_place_bss_aot_kws (NOLOAD) :\n{\n    . = ALIGN(4);\n    *(.bss.aot.kws.*)" in snippet
    )
    assert snippet.rstrip().endswith("} > SDRAM1")
    with pytest.raises(ConfigError, match="has no zephyr_region"):
        render_zephyr_sections(board, {".bss.aot.kws.*": "sram1"})


def test_build_config_files() -> None:
    import yaml

    from aot.project.cmsis import cmsis_build_config, render_config_mk, render_csolution

    board = load_board("mps2_an386")
    config = cmsis_build_config(
        board, sources=["src/a.c"], includes=["include"], defines={"AOT_APP_IO_BYTES": "8192"}
    )
    mk = render_config_mk(config)
    assert "CPU_FLAGS := -mcpu=cortex-m4 \\\n    -mthumb" in mk
    assert "AOT_UART_BASE=0x40004000u" in mk and "AOT_APP_IO_BYTES=8192" in mk
    files = render_csolution(board, config)
    solution = yaml.safe_load(files["aot.csolution.yml"])["solution"]
    assert solution["target-types"] == [{"type": "mps2_an386", "device": "ARM::ARMCM4"}]
    assert solution["packs"] == [{"pack": "ARM::Cortex_DFP"}]
    layer = yaml.safe_load(files["aot.clayer.yml"])["layer"]
    assert layer["groups"][0]["files"] == [{"file": "src/a.c"}]
    with pytest.raises(ConfigError, match="cannot use the cmsis template"):
        cmsis_build_config(load_board("nucleo_f746zg"), sources=[], includes=[])
    with pytest.raises(ConfigError, match="spaces or quote"):
        render_config_mk(cmsis_build_config(board, sources=["a b.c"], includes=[]))


@pytest.mark.parametrize("name", MCU_BOARDS)
def test_every_cmsis_board_names_its_cmsis_device(name: str) -> None:
    board = load_board(name)
    assert (board.cmsis_device() is not None) == ("cmsis" in board.ports)


def test_zephyr_files() -> None:
    from aot.project.zephyr import render_zephyr_files

    files = render_zephyr_files(
        load_board("nucleo_f746zg"),
        sources=["lib/src/kernels.c"],
        includes=["lib/include"],
        defines={"AOT_APP_MODEL_DESC": "aot_kws_model"},
        main_stack_size=8192,
    )
    assert "set(AOT_DEFINES\n  AOT_APP_MODEL_DESC=aot_kws_model)" in files["aot_config.cmake"]
    assert "CONFIG_FPU=y" in files["aot.conf"]
    assert "CONFIG_MAIN_STACK_SIZE=8192" in files["aot.conf"]
    with pytest.raises(ConfigError, match="no Zephyr board name"):
        render_zephyr_files(load_board("host"), sources=[], includes=[])
