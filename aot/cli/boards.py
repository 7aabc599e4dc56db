"""``aot boards``: list the boards aot knows (table, or JSON with --json)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from aot.boards import DEFAULT_BOARD, Board, load_all_boards, load_board
from aot.cli.common import add_json_option


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "boards",
        help="list the boards aot knows",
        description="List the boards aot knows: core, memories, emulated or physical. "
        f"The default board is {DEFAULT_BOARD}.",
    )
    parser.add_argument("name", nargs="?", help="show one board in detail")
    add_json_option(parser)
    parser.set_defaults(func=run)


def _kib(size: int) -> str:
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return f"{size >> 20} MiB"
    return f"{size / 1024:g} KiB"


def board_to_json(board: Board) -> dict[str, Any]:
    return {
        "name": board.name,
        "description": board.description,
        "kind": board.kind,
        "core": board.core,
        "features": {
            "fpu": board.features.fpu,
            "dsp": board.features.dsp,
            "mve": board.features.mve,
        },
        "clock_hz": board.clock_hz,
        "gcc_flags": board.gcc_flags(),
        "memories": [
            {
                "name": m.name,
                "base": m.base,
                "size": m.size,
                "holds": list(m.holds),
                "loadable": m.loadable,
            }
            for m in board.memories
        ],
        "accelerators": [
            {"name": a.name, "memories": list(a.memories)} for a in board.accelerators
        ],
        "emulated": board.emulated,
        "qemu_machine": board.qemu.machine if board.qemu else None,
        "zephyr_board": board.zephyr_board,
        "templates": list(board.templates),
        "ticks": None
        if board.ticks is None
        else {
            "source": board.ticks.source,
            "hz": board.ticks.hz,
            "unit": board.ticks.unit,
            "instructions_per_tick": board.ticks.instructions_per_tick,
        },
        "flash_runner": board.flash.runner if board.flash else None,
        "capabilities": sorted(board.capabilities),
        "default": board.name == DEFAULT_BOARD,
    }


def _where(board: Board) -> str:
    if board.is_host:
        return "native"
    if board.emulated:
        return f"QEMU {board.qemu.machine}" if board.qemu else "emulated"
    return f"hardware ({board.flash.runner})" if board.flash else "hardware"


def _memories(board: Board) -> str:
    if not board.memories:
        return "(no limits)"
    return ", ".join(f"{m.name} {_kib(m.size)}" for m in board.memories)


def format_table(boards: list[Board]) -> str:
    rows = [("NAME", "CORE", "RUNS ON", "MEMORIES")]
    for b in boards:
        name = b.name + (" *" if b.name == DEFAULT_BOARD else "")
        core = b.core or "-"
        if b.core and b.features.fpu != "none":
            core += f" fpu:{b.features.fpu}"
        if b.features.mve != "none":
            core += f" mve:{b.features.mve}"
        rows.append((name, core, _where(b), _memories(b)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}" for r in rows]
    lines.append("\n* default board; details: aot boards <name>")
    return "\n".join(lines)


def format_detail(board: Board) -> str:
    lines = [f"{board.name}: {board.description}"]
    if board.core:
        lines.append(f"  core        {board.core} ({' '.join(board.gcc_flags())})")
    if board.clock_hz:
        lines.append(f"  clock       {board.clock_hz / 1e6:g} MHz")
    lines.append(f"  runs on     {_where(board)}")
    if board.zephyr_board:
        lines.append(f"  zephyr      {board.zephyr_board}")
    lines.append(f"  templates   {', '.join(f'{t} (port {p})' for t, p in board.ports.items())}")
    if board.ticks:
        t = board.ticks
        per = ""
        if t.instructions_per_tick:
            per = f", {t.instructions_per_tick} instructions per tick"
        lines.append(f"  ticks       {t.source} at {t.hz / 1e6:g} MHz, unit {t.unit}{per}")
    if board.capabilities:
        lines.append(f"  capabilities {', '.join(sorted(board.capabilities))}")
    if board.memories:
        lines.append("  memories")
        for m in board.memories:
            lines.append(
                f"    {m.name:<10} 0x{m.base:08X}  {_kib(m.size):>9}  {', '.join(m.holds)}"
            )
    for a in board.accelerators:
        lines.append(f"  accelerator {a.name}, reaches {', '.join(a.memories)}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    boards = [load_board(args.name)] if args.name else load_all_boards()
    if args.json:
        data: Any = board_to_json(boards[0]) if args.name else [board_to_json(b) for b in boards]
        print(json.dumps(data, indent=2))
    elif args.name:
        print(format_detail(boards[0]))
    else:
        print(format_table(boards))
    return 0
