"""``aot bench``: time a built model N times, per inference and per operator."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aot.artifacts import LibraryManifest
from aot.cli.common import (
    add_device_options,
    add_farm_options,
    add_json_option,
    farm_target,
)
from aot.errors import ConfigError

HELP = "time a built model: per inference and, with --profile builds, per operator"

DESCRIPTION = """\
Run the model in a folder made by 'aot build' REPEATS times on its board (host, QEMU, or
a physical board on --port) and print min / median / max per inference, peak stack,
workspace per pool and code size. A folder built with 'aot build --profile' also gets a
per-operator table: the source operator, its time, its share of the sum, its MACs and
time per MAC.

Time is in the board's unit: instructions under QEMU (-icount: identical in every
repeat), cycles on hardware, nanoseconds on the host.

examples:
  aot build model.tflite --board mps2_an386 -o out/ --profile
  aot bench out/ -n 10                         table on stdout
  aot bench out/ --json > bench.json           machine-readable (BenchReport)
  aot bench out/ --plot ops.svg -i input.npy   bar chart of the operators
  aot bench out/ --tracker lab:9190 --key m4   on a board of the farm (docs/farm.md)
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from aot.cli.run import FILL_MODES

    parser = subparsers.add_parser(
        "bench",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "folder", help="a folder made by 'aot build' (with --profile for operators)"
    )
    parser.add_argument(
        "-n",
        "--repeat",
        type=int,
        default=10,
        help="inferences, each timed on its own (default: 10)",
    )
    parser.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="NPY",
        help="an input as a .npy file, once per model input (default: --fill zeros)",
    )
    parser.add_argument(
        "--fill",
        choices=FILL_MODES,
        help="made-up inputs instead of -i: all zeros (the default) or seeded random values",
    )
    parser.add_argument("--seed", type=int, help="seed of --fill random (default: 0)")
    parser.add_argument(
        "--plot",
        metavar="FILE.svg",
        help="also write an SVG bar chart of the per-operator times",
    )
    add_device_options(parser)
    add_farm_options(parser)
    add_json_option(parser)
    parser.set_defaults(func=run)


def _inputs(args: argparse.Namespace, manifest: LibraryManifest) -> list[Any]:
    from aot.cli.run import fill_inputs
    from aot.runner import load_inputs

    if args.fill and args.input:
        raise ConfigError("give the inputs either with -i or with --fill, not both")
    if args.input:
        return load_inputs(args.input, manifest)
    return fill_inputs(manifest.inputs, args.fill or "zeros", args.seed)


def run(args: argparse.Namespace) -> int:
    from aot.artifacts import read_manifest
    from aot.bench import bench_folder, format_report, render_svg
    from aot.cli.run import check_seed
    from aot.device.client import check_repeats, check_timeout
    from aot.runner import connect

    # Checked before anything starts, like aot run.
    check_repeats(args.repeat, what="--repeat")
    check_timeout(args.timeout, what="--timeout")
    check_seed(args)  # --seed with -i or zeros is refused, not ignored
    farm = farm_target(args)
    plot = Path(args.plot) if args.plot else None
    if plot is not None and plot.suffix.lower() != ".svg":
        raise ConfigError(f"--plot writes an SVG picture; name the file *.svg, not {plot.name}")
    folder = Path(args.folder)
    manifest = read_manifest(folder)
    if plot is not None and not manifest.library.profile:
        raise ConfigError(
            f"{folder} was built without --profile, so there is nothing per operator to "
            "plot; rebuild it with 'aot build --profile'"
        )
    inputs = _inputs(args, manifest)

    def open_device(output: Path, built: LibraryManifest, board: Any, timeout: float) -> Any:
        return connect(output, built, board, timeout, args.port, args.baud)

    if farm is not None:
        from aot.farm.client import bench_remote

        tracker, key = farm
        report = bench_remote(folder, args.repeat, args.timeout, inputs, tracker=tracker, key=key)
    else:
        report = bench_folder(folder, args.repeat, args.timeout, connect=open_device, inputs=inputs)
    if plot is not None:
        try:
            plot.write_text(render_svg(report))
        except OSError as err:
            raise ConfigError(f"cannot write {plot}: {err.strerror}") from None
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        print()
        return 0
    print("\n".join(format_report(report)))
    if plot is not None:
        print(f"  chart          {plot}")
    return 0
