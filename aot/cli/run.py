"""``aot run``: run a built model on its board (host, QEMU) and read the results."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from aot.cli.common import add_json_option

HELP = "run a built model on its board with inputs from .npy files"

DESCRIPTION = """\
Run the model in a folder made by 'aot build' on the board it was built for: a native
process for --board host, QEMU for emulated boards, a physical board on --port (flashed
first with its flash runner). Inputs go over the aot serial
protocol; outputs come back and can be saved as .npy files.

examples:
  aot run out/ -i input.npy --save results/       writes results/output_0.npy ...
  aot run out/ -i a.npy -i b.npy --json            two inputs, machine-readable report
  aot run out/ -i input.npy --repeat 10            time 10 inferences
  aot run out/ -i input.npy --port /dev/ttyACM0    a physical board: flash, then run

Time is reported in the board's tick unit: nanoseconds on the host, instructions under
QEMU (-icount makes them deterministic; QEMU does not model cycles).
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("folder", help="a folder made by 'aot build'")
    parser.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="NPY",
        help="an input as a .npy file, once per model input, in order",
    )
    parser.add_argument("--save", metavar="DIR", help="write output_<n>.npy files here")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="inferences to time, at most what the firmware announces (default: 1)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds to wait for each reply of the device, positive (default: 120)",
    )
    parser.add_argument(
        "--port",
        metavar="PORT",
        help="serial port of a physical board, e.g. /dev/ttyACM0 or COM3 (required for those: "
        "the board is flashed first, see 'aot flash')",
    )
    parser.add_argument(
        "--baud", type=int, metavar="RATE", help="baud rate of --port (default: the board's)"
    )
    add_json_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from aot.device.client import check_repeats, check_timeout
    from aot.library import read_metadata
    from aot.runner import load_inputs, run_model

    # Checked before anything starts: nan, inf or 2**32 would fail deep in the transport.
    check_repeats(args.repeat, what="--repeat")
    check_timeout(args.timeout, what="--timeout")
    folder = Path(args.folder)
    metadata = read_metadata(folder)
    inputs = load_inputs(args.input, metadata)
    report = run_model(
        folder, inputs, repeats=args.repeat, timeout=args.timeout, port=args.port, baud=args.baud
    )
    saved = []
    if args.save:
        save_dir = Path(args.save)
        save_dir.mkdir(parents=True, exist_ok=True)
        for index, output in enumerate(report.outputs):
            path = save_dir / f"output_{index}.npy"
            np.save(path, output)
            saved.append(str(path))
    document = report.to_json(metadata)
    document["saved"] = saved
    if args.json:
        json.dump(document, sys.stdout, indent=2)
        print()
        return 0
    print(f"model '{metadata['model']['name']}' on {report.board}: {report.result.runs} run(s)")
    print(f"  time per run   {document['time_per_run']} {document['time_unit']}")
    for kind, size in document["sections"].items():
        print(f"  {kind:<14} {size} B")
    if document.get("peak_stack_bytes") is not None:
        print(f"  peak stack     {document['peak_stack_bytes']} B")
    print(f"  workspace      {document['workspace_bytes']} B")
    print(f"  constants      {document['constants_bytes']} B")
    for index, output in enumerate(report.outputs):
        preview = np.array2string(output.reshape(-1)[:8], separator=", ")
        print(f"  output {index}       {output.dtype}{list(output.shape)} {preview}")
    for path in saved:
        print(f"  saved {path}")
    return 0
