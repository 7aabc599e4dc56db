"""``aot flash``: put a built model's firmware on its physical board."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

HELP = "flash a built model's firmware onto its physical board"

DESCRIPTION = """\
Flash the firmware in a folder made by 'aot build' onto the physical board it was built
for, with the flash runner the board's YAML names (flash.runner) or another one
(--runner). Emulated and host boards need no flashing: 'aot run' starts them.

examples:
  aot flash out/                       flash with the board's runner (e.g. west)
  aot flash out/ --dry-run             print the command instead of running it
  aot flash out/ --runner pyocd --probe 066DFF485550755187121020
  aot run out/ -i input.npy --port /dev/ttyACM0     flash, then run over the serial port

Zephyr projects are built by you first: west build -b <zephyr board> out/project -d
out/project/build. Runners: west, pyocd, openocd, plus any registered in the
aot.flash_runners entry-point group.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "flash",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("folder", help="a folder made by 'aot build'")
    parser.add_argument(
        "--runner", metavar="NAME", help="flash runner to use (default: the board's flash.runner)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the command line, do not run it"
    )
    parser.add_argument(
        "--probe", metavar="ID", help="serial number of the probe to use when several are plugged"
    )
    parser.add_argument("--erase", action="store_true", help="erase the whole chip first")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to let the tool run (default: 300)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from aot.artifacts import read_manifest
    from aot.boards import load_build_board
    from aot.flash import FlashOptions, firmware_from_metadata, runner_for

    folder = Path(args.folder)
    manifest = read_manifest(folder)
    board = load_build_board(manifest)
    if board.is_host or board.emulated:
        where = "runs natively" if board.is_host else "is emulated (QEMU)"
        print(
            f"board '{board.name}' {where}: it needs no flashing; 'aot run {folder}' starts it "
            "with the firmware"
        )
        return 0
    runner = runner_for(board, args.runner)
    firmware = firmware_from_metadata(folder, manifest)
    options = FlashOptions(probe=args.probe, erase=args.erase, timeout=args.timeout)
    argv = runner.command(board, firmware, options)
    if args.dry_run:
        print(shlex.join(argv))
        return 0
    runner.flash(board, firmware, options)
    print(f"flashed {board.name} with {runner.name}: {firmware.elf}")
    return 0
