"""``aot validate``: run many inputs on the board and through the reference, compare."""

from __future__ import annotations

import argparse
import json
import sys

from aot.cli.common import (
    add_device_options,
    add_farm_options,
    add_json_option,
    farm_target,
    progress_printer,
)

HELP = "check a built model on its board against the reference runtime"

DESCRIPTION = """\
Run seeded random inputs (or a folder of .npy files) through the model in a folder made
by 'aot build', on its board (one session for all inputs), and through MODEL in its
reference runtime: LiteRT's reference kernels for .tflite, onnxruntime for .onnx. Reports
per output how many input sets match exactly, the largest error (quantized steps and
dequantized for integer outputs; mean error, RMSE and cosine similarity for float ones)
and the first failing input set, with the command that reruns it alone.

Integer outputs pass only when exact (--max-steps N allows N steps); float outputs pass
within --atol + --rtol * |reference| with cosine >= --min-cosine. Exit status 0: every
input set passed; 1: some failed; other codes: errors (a MODEL whose inputs or outputs
do not match the folder's is one).

examples:
  aot validate out/ model.tflite                    100 random input sets, seed 0
  aot validate out/ model.tflite -n 1000 --seed 7 --save failing/
  aot validate out/ model.onnx --inputs samples/    every samples/*.npy
  aot validate out/ model.tflite --max-steps 1 --json
  aot validate out/ model.tflite --tracker lab:9190 --key m4   on a board of the farm
  aot build model.tflite --board mps2_an386 --trace -o dbg/
  aot validate dbg/ model.tflite --layers           which operator's output differs first
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("folder", help="a folder made by 'aot build'")
    parser.add_argument("model", help="the reference model: the .tflite or .onnx it was built from")
    parser.add_argument(
        "-n",
        "--count",
        type=int,
        metavar="N",
        help="random input sets to run (default: 100); not with --inputs",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the first random input set; set i uses seed + i (default: 0)",
    )
    parser.add_argument(
        "--inputs",
        metavar="DIR",
        help="run the .npy files in DIR instead: NAME.npy per input set (NAME.K.npy for "
        "input K of a model with several inputs)",
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        default=0,
        metavar="N",
        help="integer outputs pass within N quantized steps (default: 0, exact)",
    )
    parser.add_argument(
        "--atol", type=float, default=1e-5, help="float outputs: absolute tolerance (1e-5)"
    )
    parser.add_argument(
        "--rtol", type=float, default=1e-4, help="float outputs: relative tolerance (1e-4)"
    )
    parser.add_argument(
        "--min-cosine",
        type=float,
        default=0.9999,
        help="float outputs: least cosine similarity per input set (default: 0.9999)",
    )
    parser.add_argument("--save", metavar="DIR", help="write the failing input sets here")
    parser.add_argument(
        "--labels",
        metavar="FILE",
        help="with --inputs: 'NAME LABEL' lines (the set's name in the folder, its class "
        "index); reports the top-1 accuracy of the board and of the reference",
    )
    parser.add_argument(
        "--float-model",
        metavar="MODEL",
        help="with --labels: the float model the int8 one came from; reports its accuracy on "
        "the dequantized inputs and its top-1 agreement with the board",
    )
    parser.add_argument(
        "--layers",
        action="store_true",
        help="then compare every operator's output with the reference on one input set (the "
        "first failing one, else the first) and name the first operator that differs; "
        "needs a folder built with 'aot build --trace' and a .tflite reference",
    )
    add_device_options(parser)
    add_farm_options(parser)
    add_json_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from aot.device.client import check_timeout
    from aot.errors import ConfigError
    from aot.validate import Tolerance, format_report, validate_folder

    check_timeout(args.timeout, what="--timeout")
    if args.inputs is not None and args.count is not None:
        raise ConfigError("give either --count (random inputs) or --inputs DIR, not both")
    farm = farm_target(args)
    if farm is not None and args.layers:
        from aot.validate.core import LAYERS_NOT_ON_FARM

        raise ConfigError(LAYERS_NOT_ON_FARM)
    session = None if farm is None else _farm_session(args, *farm)
    tolerance = Tolerance(
        max_steps=args.max_steps, atol=args.atol, rtol=args.rtol, min_cosine=args.min_cosine
    )
    report = validate_folder(
        args.folder,
        args.model,
        count=100 if args.count is None else args.count,
        seed=args.seed,
        inputs_dir=args.inputs,
        tolerance=tolerance,
        save=args.save,
        timeout=args.timeout,
        port=args.port,
        baud=args.baud,
        progress=progress_printer(args.quiet),
        session=session,
        labels=args.labels,
        float_model=args.float_model,
        layers=args.layers,
    )
    server = getattr(session, "server", None)  # a farm run names the server that ran it
    if args.json:
        document = report.to_json()
        if server:
            document["server"] = server
        json.dump(document, sys.stdout, indent=2)
        print()
    else:
        lines = format_report(report)
        if server:
            lines.insert(2, f"ran by {server}")
        print("\n".join(lines))
    return 0 if report.passed else 1


def _farm_session(args: argparse.Namespace, tracker: object, key: str) -> object:
    """The input sets validate_folder will draw, run beforehand on one farm board in one
    device session; the session it is given replays their outputs (docs/farm.md)."""
    from pathlib import Path

    from aot.artifacts import read_manifest
    from aot.farm.client import ReplaySession, run_sets_on_a_board
    from aot.validate import check_signature, open_reference
    from aot.validate.core import MAX_COUNT
    from aot.validate.inputs import folder_samples, random_samples

    manifest = read_manifest(args.folder)
    # A wrong reference is reported before a board is borrowed.
    check_signature(manifest, open_reference(args.model), Path(args.model))
    specs = manifest.inputs
    if args.inputs is not None:
        samples = folder_samples(args.inputs, specs)
    else:
        count = 100 if args.count is None else args.count
        if not 1 <= count <= MAX_COUNT or args.seed < 0:
            return None  # validate_folder names the bad option
        samples = list(random_samples(specs, count, args.seed))
    sets = [sample.arrays for sample in samples]
    progress_printer(args.quiet)(f"running {len(sets)} input set(s) on a board of key '{key}'")
    outputs, server = run_sets_on_a_board(
        args.folder, sets, tracker=tracker, key=key, timeout=args.timeout
    )
    return ReplaySession(sets, outputs, server)
