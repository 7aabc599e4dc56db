"""GNU ld linker scripts generated from a board's memory regions.

The model library names its sections (``.rodata.aot.<name>.constants``,
``.bss.aot.<name>.<pool>``); ``render_linker_script`` can put any named input section
into any region that may hold that kind of data. Initialised bytes that land in a region
the loader cannot write (RAM on a real board) are stored in the boot region and copied at
reset through ``__aot_copy_table``; NOLOAD sections are zeroed through ``__aot_zero_table``
(both read by aot/project/templates/cmsis/startup/startup.c).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass

from aot.boards import Board, MemoryRegion
from aot.errors import ConfigError
from aot.naming import CONSTANTS_SECTION_PREFIX, POOL_SECTION_PREFIX

DEFAULT_STACK_SIZE = 16 * 1024
DEFAULT_HEAP_SIZE = 4 * 1024

# Input-section prefix -> (memory kinds that may hold it, has initialised bytes, zeroed)
_SECTION_KINDS: tuple[tuple[str, tuple[str, ...], bool, bool], ...] = (
    (".text", ("code",), True, False),
    (".rodata", ("constants",), True, False),
    (".data", ("data",), True, False),
    (".bss", ("workspace", "data", "io"), False, True),
    (".noinit", ("workspace", "data", "io"), False, False),
)


@dataclass(frozen=True)
class _Placed:
    pattern: str
    region: MemoryRegion
    loads: bool  # has initialised bytes
    zeroed: bool
    output: str  # output section name


def _classify(section: str) -> tuple[tuple[str, ...], bool, bool]:
    for prefix, kinds, loads, zeroed in _SECTION_KINDS:
        if section == prefix or section.startswith(prefix + "."):
            return kinds, loads, zeroed
    known = ", ".join(p + ".*" for p, *_ in _SECTION_KINDS)
    raise ConfigError(f"cannot place section '{section}': its name must start with one of {known}")


def _output_name(pattern: str, used: set[str]) -> str:
    base = ".aot_place_" + re.sub(r"[^A-Za-z0-9_]+", "_", pattern.strip(".")).strip("_")
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    used.add(name)
    return name


def _hex(value: int) -> str:
    return f"0x{value:08X}"


def render_linker_script(
    board: Board,
    placements: Mapping[str, str] | None = None,
    *,
    stack_size: int = DEFAULT_STACK_SIZE,
    heap_size: int = DEFAULT_HEAP_SIZE,
    stack_region: str | None = None,
) -> str:
    """A GNU ld script for ``board``; ``placements`` maps input section names (globs
    allowed, e.g. ``.bss.aot.mymodel.*``) to region names."""
    if board.is_host or not board.memories:
        raise ConfigError(f"board '{board.name}' has no memory map: no linker script for it")
    if stack_size <= 0 or stack_size % 8 or heap_size < 0 or heap_size % 8:
        raise ConfigError(
            f"stack size ({stack_size}) must be a positive and heap size ({heap_size}) a "
            "non-negative multiple of 8"
        )
    boot = board.boot_region
    code = board.default_region("code")
    data = board.default_region("data")
    constants = board.default_region("constants")
    workspace = board.default_region("workspace")
    stack = board.region(stack_region) if stack_region else board.default_region("stack")
    if not stack.may_hold("stack"):
        raise ConfigError(
            f"board '{board.name}': region '{stack.name}' may not hold the stack; it holds "
            f"{', '.join(stack.holds)}"
        )

    used: set[str] = set()
    placed: list[_Placed] = []
    for pattern, region_name in (placements or {}).items():
        kinds, loads, zeroed = _classify(pattern)
        region = board.region(region_name)
        if not any(region.may_hold(k) for k in kinds):
            raise ConfigError(
                f"cannot place '{pattern}' in '{region.name}' of board '{board.name}': it "
                f"needs a region holding {' or '.join(kinds)}, '{region.name}' holds "
                f"{', '.join(region.holds)}"
            )
        placed.append(_Placed(pattern, region, loads, zeroed, _output_name(pattern, used)))

    copy_entries: list[str] = []
    zero_entries: list[str] = []
    out: list[str] = []

    def section(name: str, region: MemoryRegion, body: str, loads: bool, zeroed: bool) -> None:
        """Emit an output section, routed through the copy/zero tables as needed."""
        noload = "" if loads else " (NOLOAD)"
        at = ""
        if loads and not region.loadable:
            at = f" AT> {boot.name}"
            copy_entries.append(name)
        if zeroed:
            zero_entries.append(name)
        out.append(f"  {name}{noload} :\n  {{\n{body}\n  }} > {region.name}{at}\n")

    for p in placed:
        rule = f"KEEP(*({p.pattern}))" if p.loads else f"*({p.pattern})"
        body = f"    . = ALIGN(4);\n    {rule}\n    . = ALIGN(4);"
        section(p.output, p.region, body, p.loads, p.zeroed)

    section(
        ".text",
        code,
        "\n".join(
            [
                "    *(.text .text.* .gnu.linkonce.t.*)",
                "    *(.glue_7) *(.glue_7t) *(.vfp11_veneer) *(.v4_bx)",
                "    KEEP(*(.init)) KEEP(*(.fini))",
                "    . = ALIGN(4);",
            ]
        ),
        True,
        False,
    )
    section(
        ".aot_constants",
        constants,
        f"    . = ALIGN(4);\n    KEEP(*({CONSTANTS_SECTION_PREFIX}*))",
        True,
        False,
    )
    section(
        ".rodata",
        constants,
        "    *(.rodata .rodata.* .gnu.linkonce.r.*)\n    . = ALIGN(4);",
        True,
        False,
    )
    tables = [
        (".ARM.extab", "    *(.ARM.extab* .gnu.linkonce.armextab.*)"),
        (
            ".ARM.exidx",
            "    __exidx_start = .;\n    *(.ARM.exidx* .gnu.linkonce.armexidx.*)\n"
            "    __exidx_end = .;",
        ),
        (
            ".preinit_array",
            "    PROVIDE_HIDDEN(__preinit_array_start = .);\n"
            "    KEEP(*(.preinit_array))\n"
            "    PROVIDE_HIDDEN(__preinit_array_end = .);",
        ),
        (
            ".init_array",
            "    PROVIDE_HIDDEN(__init_array_start = .);\n"
            "    KEEP(*(SORT(.init_array.*)))\n    KEEP(*(.init_array))\n"
            "    PROVIDE_HIDDEN(__init_array_end = .);",
        ),
        (
            ".fini_array",
            "    PROVIDE_HIDDEN(__fini_array_start = .);\n"
            "    KEEP(*(SORT(.fini_array.*)))\n    KEEP(*(.fini_array))\n"
            "    PROVIDE_HIDDEN(__fini_array_end = .);",
        ),
    ]
    for name, body in tables:
        out.append(f"  {name} :\n  {{\n{body}\n  }} > {boot.name}\n")

    section(
        ".data",
        data,
        "    . = ALIGN(4);\n    *(.data .data.* .gnu.linkonce.d.*)\n    . = ALIGN(4);",
        True,
        False,
    )
    section(
        ".bss",
        data,
        "    . = ALIGN(4);\n    __bss_start__ = .;\n"
        "    *(.bss .bss.* .gnu.linkonce.b.* COMMON)\n    . = ALIGN(4);\n"
        "    __bss_end__ = .;",
        False,
        True,
    )
    # Pools not placed explicitly: after .bss so the generic pattern does not take them
    # first (ld uses the first matching rule in script order).
    section(
        ".aot_workspace",
        workspace,
        f"    . = ALIGN(4);\n    *({POOL_SECTION_PREFIX}*)\n    . = ALIGN(4);",
        False,
        True,
    )
    out.append(
        f"  .heap (NOLOAD) :\n  {{\n    . = ALIGN(8);\n    __aot_heap_start = .;\n"
        f"    . += __aot_heap_size;\n    __aot_heap_end = .;\n  }} > {data.name}\n"
    )
    out.append(
        f"  .stack (NOLOAD) :\n  {{\n    . = ALIGN(8);\n    aot_stack_limit = .;\n"
        f"    . += __aot_stack_size;\n    . = ALIGN(8);\n    __aot_stack_top = .;\n"
        f"  }} > {stack.name}\n"
    )

    # The two tables live in the boot region and must come before the sections they
    # describe only in the file, not in memory; ld resolves the forward references.
    copy_rows = "".join(
        f"    LONG(LOADADDR({n})) LONG(ADDR({n})) LONG(SIZEOF({n}))\n" for n in copy_entries
    )
    zero_rows = "".join(f"    LONG(ADDR({n})) LONG(SIZEOF({n}))\n" for n in zero_entries)
    tables_section = (
        "  .aot_tables :\n  {\n    . = ALIGN(4);\n    __aot_copy_table_start = .;\n"
        f"{copy_rows}    __aot_copy_table_end = .;\n    __aot_zero_table_start = .;\n"
        f"{zero_rows}    __aot_zero_table_end = .;\n  }} > {boot.name}\n"
    )

    lines = [
        f"/* Generated by aot for board '{board.name}' ({board.core}); do not edit. */",
        "/* Regenerate with aot.project.linker.render_linker_script(). */",
    ]
    for p in placed:
        lines.append(f"/* placement: {p.pattern} -> {p.region.name} */")
    lines += ["", "ENTRY(Reset_Handler)", "", "MEMORY", "{"]
    width = max(len(m.name) for m in board.memories)
    for m in board.memories:
        writable = any(m.may_hold(k) for k in ("data", "workspace", "stack", "io"))
        attrs = "rwx" if writable else "rx"
        note = f"  /* {m.note} */" if m.note else ""
        lines.append(
            f"  {m.name:<{width}} ({attrs}) : ORIGIN = {_hex(m.base)}, LENGTH = {_hex(m.size)}"
            f"{note}"
        )
    lines += [
        "}",
        "",
        f"__aot_stack_size = {_hex(stack_size)};",
        f"__aot_heap_size = {_hex(heap_size)};",
        "",
        "SECTIONS",
        "{",
        "  /* First in the boot region: the core reads the initial SP and PC from here. */",
        f"  .vectors :\n  {{\n    KEEP(*(.vectors))\n  }} > {boot.name}\n",
        tables_section,
        *out,
        "}",
        "",
    ]
    return "\n".join(lines)


def matching_placement(placements: Mapping[str, str], section: str) -> str | None:
    """The region a section goes to under ``placements`` (first glob that matches)."""
    for pattern, region in placements.items():
        if fnmatch.fnmatchcase(section, pattern):
            return region
    return None


def render_zephyr_sections(
    board: Board,
    placements: Mapping[str, str],
    region_names: Mapping[str, str] | None = None,
) -> str:
    """A snippet for ``zephyr_linker_sources(RAM_SECTIONS aot_sections.ld)`` that moves
    named model sections into devicetree memory regions. ``region_names`` maps a board
    memory to its ``zephyr,memory-region`` name (default: the memory's ``zephyr_region``);
    such regions come from the board's devicetree or from aot's overlay. RAM_SECTIONS is
    included before Zephyr's own .data/.bss rules, so these rules see the sections first."""
    lines = [f"/* Generated by aot for Zephyr board '{board.zephyr_board}'; do not edit. */"]
    used: set[str] = set()
    for pattern, region_name in placements.items():
        kinds, loads, _zeroed = _classify(pattern)
        region = board.region(region_name)
        if not any(region.may_hold(k) for k in kinds):
            raise ConfigError(
                f"cannot place '{pattern}' in '{region.name}' of board '{board.name}': it "
                f"needs a region holding {' or '.join(kinds)}"
            )
        target = (region_names or {}).get(region.name) or region.zephyr_region
        if target is None:
            raise ConfigError(
                f"board '{board.name}': region '{region.name}' has no zephyr_region and no "
                "overlay declares it; Zephyr places model sections in its default RAM and "
                "FLASH only"
            )
        name = _output_name(pattern, used)
        noload = "" if loads else " (NOLOAD)"
        rule = f"KEEP(*({pattern}))" if loads else f"*({pattern})"
        lines.append(
            f"{name}{noload} :\n{{\n    . = ALIGN(4);\n    {rule}\n    . = ALIGN(4);\n}} > {target}"
        )
    return "\n".join(lines) + "\n"
