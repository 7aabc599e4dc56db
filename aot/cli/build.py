"""``aot build``: compile a model into a model library and a project for a board."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from aot.cli.common import (
    add_json_option,
    add_kernels_option,
    add_output_options,
    progress_printer,
)
from aot.errors import ConfigError
from aot.planning.model import PoolSpec
from aot.sizes import parse_size

if TYPE_CHECKING:
    from aot.pipeline import BuildOptions

HELP = "compile a model (.tflite or .onnx) into C and build it for a board"

DESCRIPTION = """\
Compile a model into a self-contained C model library (kernels, constants, an AOT
executor with one run() function, statically planned workspace) and, for a board,
generate a project from a template and build it.

examples:
  aot build model.tflite --board host -o out/
  aot build model.tflite --board mps2_an386 -o out/ --name kws
  aot build model.onnx --board host -o out/ --pool sram:64K --pool ext:1M
  aot build model.tflite --board host -o out/ --pool-file pools.json
  aot build model.tflite --board mps3_an547 -o out/ --accelerator NAME   ('aot backends')

The folder gets metadata.json (read by 'aot run' and 'aot inspect'), model/ (the C
library: include/aot_<name>.h is its interface) and project/ (the board project).
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from aot.compiler import DEFAULT_PLANNER

    parser = subparsers.add_parser(
        "build",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", help="the model file: TFLite flatbuffer or ONNX")
    from aot.boards import DEFAULT_BOARD

    parser.add_argument(
        "--board",
        default=DEFAULT_BOARD,
        help=f"board to build for (default: {DEFAULT_BOARD}); 'aot boards' lists them",
    )
    add_output_options(parser)
    parser.add_argument(
        "--name",
        default=None,
        help="model name, the prefix of every generated C symbol (aot_<name>_run); default: "
        "the model file name as a C identifier (vww_96_int8.tflite -> vww_96_int8)",
    )
    parser.add_argument(
        "--template",
        default=None,
        help="project template (default: the board's first, e.g. cmsis or host)",
    )
    parser.add_argument(
        "--frontend",
        default="auto",
        help="importer: auto (by file content), relax-tflite, relax-onnx, tflite-int8, onnx-int8",
    )
    parser.add_argument(
        "--accelerator",
        action="append",
        default=[],
        metavar="NAME",
        help="an accelerator backend to put operators on, repeatable, in priority order (the "
        "first that takes an operator gets it; the CPU takes the rest); 'aot backends' lists "
        "them; the board must declare it (see docs/accelerators.md)",
    )
    add_kernels_option(parser)
    parser.add_argument(
        "--backend-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option for the accelerator backends, repeatable, e.g. "
        "ethosu_driver_dir=DIR and cmsis_core_dir=DIR (they override $ETHOSU_DRIVER_DIR and "
        "$CMSIS_CORE_DIR; see docs/accelerators.md)",
    )
    parser.add_argument(
        "--planner",
        default=DEFAULT_PLANNER,
        help=f"memory planning algorithm (default: {DEFAULT_PLANNER}); see docs/memory_planning.md",
    )
    parser.add_argument(
        "--pool",
        action="append",
        metavar="NAME:SIZE[:TARGETS]",
        help="a workspace pool, repeatable, fastest first (e.g. --pool dtcm:16K --pool sram:1M); "
        "TARGETS is a comma-separated list of what accesses it (default: cpu); "
        "default: the board's workspace memory (host: one unbounded pool 'workspace')",
    )
    # --pool-file: the same pools from a JSON file (aot/planning/pools_file.py).
    parser.add_argument(
        "--pool-file",
        metavar="FILE",
        help='workspace pools from a JSON list, fastest first, e.g. [{"name": "dtcm", '
        '"size": "16K", "targets": ["cpu"]}, {"name": "sram", "size": 1048576}]; '
        "instead of --pool",
    )
    parser.add_argument(
        "--constants-memory",
        metavar="REGION",
        help="board memory for the weights (default: the first memory in the board's order, "
        "fast first, that may hold constants and has room for them; 'aot boards NAME' lists "
        "them); e.g. a faster RAM when they fit",
    )
    parser.add_argument(
        "--io-in-pool",
        action="store_true",
        help="plan the model's inputs and outputs into the pools too, so their RAM is reused "
        "by intermediate tensors (the caller writes inputs through aot_<name>_input_buffers)",
    )
    parser.add_argument(
        "--ram-budget",
        metavar="SIZE",
        help="the most RAM the model may use, e.g. 40K: below what whole operators need, "
        "the first convolutions run tile by tile (patch stages, a few %% more instructions) "
        "and convolutions in place; "
        "aot picks the fastest schedule that fits and says which (with --io-in-pool the "
        "inputs and outputs count; 'aot inspect DIR' shows the choices)",
    )
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="let convolutions (depthwise ones too) write their output over the input rows "
        "they have read, where that lowers the peak RAM: the same arithmetic, a few more "
        "kernel calls (one per band of rows); --ram-budget considers it too",
    )
    parser.add_argument(
        "--frontier",
        action="store_true",
        help="record the RAM each patch-stage schedule reaches and the instructions it adds, "
        "for 'aot inspect DIR', without changing the schedule",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="time every operator on the device (read back by 'aot bench'); off by default, "
        "and a build without it reads no timer inside the model",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="a debug build whose model can stop after any operator and send back what it "
        "wrote, so 'aot validate --layers' can name the first operator that differs from "
        "the reference; a few instructions per operator, off by default",
    )
    parser.add_argument(
        "--allow-copies",
        action="store_true",
        help="where the operators touching a tensor (or constant) share no pool they all "
        "reach, or the shared pool is too small, insert copy steps (the port's "
        "aot_platform_copy, memcpy by default) with staging buffers instead of failing",
    )
    parser.add_argument(
        "--constants-alignment",
        type=int,
        default=16,
        metavar="BYTES",
        help="alignment of every constant array (default: 16)",
    )
    parser.add_argument(
        "--no-build",
        action="store_true",
        help="generate the model library and the project, but do not compile the project",
    )
    parser.add_argument(
        "--zephyr-base",
        metavar="DIR",
        help="the Zephyr tree that builds a --template zephyr project (default: $ZEPHYR_BASE; "
        "neither: the project is generated and the west command printed); see docs/boards.md",
    )
    add_json_option(parser)
    parser.set_defaults(func=run)


def pools_option(args: argparse.Namespace) -> tuple[PoolSpec, ...] | None:
    """The pools of --pool-file or --pool; None when neither is given (the board's
    default, aot/planning/memory_map.py)."""
    if args.pool_file and args.pool:
        raise ConfigError("give the pools either with --pool or with --pool-file, not both")
    if args.pool_file:
        from aot.planning.pools_file import read_pool_file

        return read_pool_file(args.pool_file)
    if args.pool:
        from aot.planning.pools_file import pools_from_args

        return pools_from_args(args.pool)
    return None


def backend_options(items: list[str]) -> dict[str, str]:
    """``--backend-option KEY=VALUE`` pairs."""
    options: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--backend-option '{item}' is not KEY=VALUE")
        options[key.strip()] = value
    return options


def build_options(args: argparse.Namespace) -> BuildOptions:
    """The command line as one typed ``BuildOptions``: every option parsed and checked
    here, the board loaded; nothing is compiled yet."""
    from aot.boards import board_file_for_metadata, load_board
    from aot.compiler import CompileOptions
    from aot.naming import model_name_from_path
    from aot.pipeline import BuildOptions

    accelerator_options = backend_options(args.backend_option)
    pools = pools_option(args)
    board = load_board(args.board)
    # --board path/b.yaml: later commands load that file, not a board of its name.
    board_file = board_file_for_metadata(board)
    ram_budget = None if args.ram_budget is None else parse_size(args.ram_budget, "--ram-budget")
    library = CompileOptions(
        name=args.name or model_name_from_path(args.model),
        frontend=args.frontend,
        planner=args.planner,
        constants_alignment=args.constants_alignment,
        io_in_pool=args.io_in_pool,
        profile=args.profile,
        trace=args.trace,
        ram_budget=ram_budget,
        frontier=args.frontier,
        in_place=args.in_place,
        accelerators=tuple(args.accelerator),
        allow_copies=args.allow_copies,
        backend_options=accelerator_options,
        kernels=args.kernels,
    )
    return BuildOptions(
        model=Path(args.model),
        output=Path(args.output),
        board=board,
        library=library,
        board_file=board_file,
        pools=pools,
        pool_file=Path(args.pool_file) if args.pool_file else None,
        constants_memory=args.constants_memory,
        template=args.template,
        zephyr_base=args.zephyr_base,
        force=args.force,
        no_build=args.no_build,
    )


def run(args: argparse.Namespace) -> int:
    from aot.pipeline import build

    quiet = args.json or getattr(args, "quiet", False)
    progress = progress_printer(quiet=quiet)
    options = build_options(args)
    built = build(options, progress)
    output, manifest = built.output, built.manifest
    if not quiet:
        # What each accelerator's own compiler said (its report's lines), then aot's
        # pools with the bytes used and who reaches them, to read side by side.
        reporting = [b for b in manifest.backends if b.report]
        for line in [line for b in reporting for line in b.report_lines]:
            print(line)
        for pool in manifest.memory.pools if reporting else ():
            targets = ", ".join(pool.targets)
            print(f"aot pool {pool.name}: {pool.used_bytes} B used, reached by {targets}")
    summary = {
        "output": str(output),
        "board": manifest.board,
        "constants_bytes": manifest.constants.bytes,
        "workspace_bytes": manifest.memory.workspace_bytes,
        "lower_bound_bytes": manifest.memory.lower_bound_bytes,
        "operators": len(manifest.operators),
        "executable": manifest.executable,
        # The template's build command, with the folder as given: 'aot flash' and
        # 'aot run' look for the firmware where it puts it (west: -d project/build).
        "west_command": shlex.join(built.west_command) if built.west_command else None,
    }
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        print(
            f"built {output}: {summary['operators']} kernels, constants "
            f"{summary['constants_bytes']} B, workspace {summary['workspace_bytes']} B "
            f"(lower bound {summary['lower_bound_bytes']} B)"
            + (f", executable {output / summary['executable']}" if summary["executable"] else "")
        )
        if summary["west_command"] and not summary["executable"]:
            print(
                f"the Zephyr project is in {output / 'project'}; build it in a Zephyr workspace "
                f"with: {summary['west_command']}"
            )
    return 0
