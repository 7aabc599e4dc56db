"""``aot run``: run a built model on its board (host, QEMU) and read the results."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aot.artifacts.manifest import LibraryManifest, Quantization
from aot.cli.common import (
    add_device_options,
    add_farm_options,
    add_json_option,
    farm_target,
)
from aot.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

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
  aot run out/ --fill random --seed 1 --top 3      no input file; the 3 largest outputs
  aot run out/ -i input.npy --tracker lab:9190 --key m4   on a board of the farm

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
    parser.add_argument(
        "--fill",
        choices=FILL_MODES,
        help="run without input files: every input all zeros; seeded random values over "
        "the input type's range (integers) or N(0, 1) (floats); or 'spread', the inputs "
        "'aot validate' draws (seed S: values within zero point +-32, +-8, +-2 or the whole "
        "range as S %% 4 is 1, 2, 3 or 0); instead of -i",
    )
    parser.add_argument("--seed", type=int, help="seed of --fill random or spread (default: 0)")
    parser.add_argument(
        "--top",
        type=int,
        metavar="K",
        help="show the K largest values of each output with their index and, for "
        "quantized outputs, the dequantized value (for classifiers)",
    )
    parser.add_argument("--save", metavar="DIR", help="write output_<n>.npy files here")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="inferences to time, each on its own (min / median / max; every run's figure "
        "in --json), at most what the firmware announces (default: 1)",
    )
    add_device_options(parser)
    add_farm_options(parser)
    add_json_option(parser)
    parser.set_defaults(func=run)


FILL_MODES = ("zeros", "random", "spread")
# Outputs with at most this many values are printed whole; longer ones show their head.
SHOWN_WHOLE = 32
HEAD = 8


def section_lines(sections: dict[str, int], reserved: dict[str, int] | None) -> list[str]:
    """The ELF's sizes, labelled with what they count: text + rodata, data and bss are
    arm-none-eabi-size's columns; bss includes the stack and heap the runtime reserves."""
    if not sections:
        return []
    lines = [f"  {kind:<14} {sections[kind]} B" for kind in ("text", "rodata", "data")]
    if sections.get("text") is not None and sections.get("rodata") is not None:
        lines[1] += f"  (text + rodata = {sections['text'] + sections['rodata']} B)"
    parts = [f"{name} {size} B" for name, size in (reserved or {}).items() if size]
    if parts:
        rest = sections["bss"] - sum((reserved or {}).values())
        parts.append(f"pools and statics {rest} B")
    lines.append(
        f"  {'bss':<14} {sections['bss']} B" + (f"  ({', '.join(parts)})" if parts else "")
    )
    lines.append("  (text + rodata, data, bss: the columns of arm-none-eabi-size)")
    return lines


def fill_inputs(specs: list[dict[str, Any]], mode: str, seed: int) -> list[np.ndarray]:
    """Inputs made up from the metadata's shapes and types (--fill); 'aot validate' draws
    its random inputs with the same function."""
    from aot.runner import fill_inputs as fill

    return fill(specs, mode, seed)


def _number(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def format_values(output: np.ndarray) -> str:
    """The whole tensor when small, else its first values, '...' and how many there are."""
    flat = output.reshape(-1).tolist()
    if len(flat) <= SHOWN_WHOLE:
        return "[" + ", ".join(_number(v) for v in flat) + "]"
    head = ", ".join(_number(v) for v in flat[:HEAD])
    return f"[{head}, ...] ({len(flat)} values; --top K or --save DIR for the rest)"


def dequantize(
    index: int, value: float, output: np.ndarray, quant: Quantization | None
) -> float | None:
    """real = scale * (q - zero_point) for the value at flat ``index``; None when the
    output is not quantized."""
    import numpy as np

    if quant is None or not quant.scale:
        return None
    channel = 0
    if quant.axis is not None and len(quant.scale) > 1:
        channel = int(np.unravel_index(index, output.shape)[quant.axis])
    scale, zero_point = quant.scale[channel], quant.zero_point[channel]
    return float(scale) * (float(value) - int(zero_point))


def top_values(output: np.ndarray, quant: Quantization | None, k: int) -> list[dict[str, Any]]:
    """The k largest values (ties: lower index first) with their flat index."""
    import numpy as np

    flat = output.reshape(-1)
    order = np.argsort(-flat.astype(np.float64), kind="stable")[:k]
    return [
        {
            "index": int(i),
            "value": flat[i].item(),
            "dequantized": dequantize(int(i), flat[i].item(), output, quant),
        }
        for i in order
    ]


def check_seed(args: argparse.Namespace) -> None:
    """--seed means something only for seeded fills: refused elsewhere, not ignored."""
    if args.seed is not None and args.fill in (None, "zeros"):
        source = "the inputs come from the -i files" if args.input else "--fill zeros has no seed"
        raise ConfigError(f"--seed seeds --fill random or --fill spread; {source}, so drop --seed")
    if args.seed is None:
        args.seed = 0


def _inputs(args: argparse.Namespace, manifest: LibraryManifest) -> list[np.ndarray]:
    from aot.runner import load_inputs

    specs = manifest.inputs
    if args.fill and args.input:
        raise ConfigError("give the inputs either with -i or with --fill, not both")
    if args.fill:
        return fill_inputs(specs, args.fill, args.seed)
    if not args.input and specs:
        names = ", ".join(s.name for s in specs)
        raise ConfigError(
            f"the model takes {len(specs)} input(s) ({names}); give one -i NPY per input, "
            "or run on made-up inputs with --fill zeros or --fill random"
        )
    return load_inputs(args.input, manifest)


def run(args: argparse.Namespace) -> int:
    from aot.artifacts import read_manifest
    from aot.device.client import check_repeats, check_timeout
    from aot.runner import run_model

    # Checked before anything starts: nan, inf or 2**32 would fail deep in the transport.
    check_repeats(args.repeat, what="--repeat")
    check_timeout(args.timeout, what="--timeout")
    if args.top is not None and args.top < 1:
        raise ConfigError(f"--top {args.top}: expected a number of values >= 1")
    check_seed(args)
    farm = farm_target(args)
    folder = Path(args.folder)
    manifest = read_manifest(folder)
    inputs = _inputs(args, manifest)
    if args.save:
        from aot.user_files import check_save_folder

        check_save_folder(args.save)  # before the run: a bad path fails at once
    if farm is not None:
        from aot.farm.client import run_remote

        tracker, key = farm
        report = run_remote(
            folder, inputs, tracker=tracker, key=key, repeats=args.repeat, timeout=args.timeout
        )
    else:
        report = run_model(
            folder,
            inputs,
            repeats=args.repeat,
            timeout=args.timeout,
            port=args.port,
            baud=args.baud,
        )
    from aot.user_files import save_arrays

    saved = save_arrays(args.save, report.outputs, "output") if args.save else []
    document = report.to_json(manifest)
    document["saved"] = saved
    document["inputs_filled"] = (
        None
        if not args.fill
        else {"mode": args.fill, "seed": args.seed if args.fill == "random" else None}
    )
    tops = []
    for entry, output, spec in zip(
        document["outputs"], report.outputs, manifest.outputs, strict=True
    ):
        entry["name"] = spec.name
        entry["values"] = output.reshape(-1).tolist()
        tops.append(top_values(output, spec.quantization, args.top) if args.top else None)
        if args.top:
            entry["top"] = tops[-1]
    if args.json:
        json.dump(document, sys.stdout, indent=2)
        print()
        return 0
    print(f"model '{manifest.name}' on {report.board}: {report.result.runs} run(s)")
    print(f"  time per run   {document['time_per_run']} {document['time_unit']}")
    if report.result.runs > 1:
        spread = f"{document['time_min']} / {_number(document['time_median'])} / "
        print(f"  min/med/max    {spread}{document['time_max']} {document['time_unit']}")
    if document.get("clock"):
        print(f"  clock          {document['clock']}, one tick {document['clock_resolution']}")
    if document.get("server"):
        print(f"  ran by         {document['server']}")
    reserved = manifest.build.reserved if manifest.build is not None else None
    for line in section_lines(document["sections"], reserved):
        print(line)
    if document.get("peak_stack_bytes") is not None:
        print(f"  peak stack     {document['peak_stack_bytes']} B")
    print(f"  workspace      {document['workspace_bytes']} B")
    print(f"  constants      {document['constants_bytes']} B")
    if args.fill:
        seed = f" (seed {args.seed})" if args.fill == "random" else ""
        print(f"  inputs         --fill {args.fill}{seed}")
    for index, (output, top) in enumerate(zip(report.outputs, tops, strict=True)):
        print(f"  output {index:<7} {output.dtype}{list(output.shape)} {format_values(output)}")
        for rank, item in enumerate(top or [], start=1):
            real = item["dequantized"]
            value = _number(item["value"])
            shown = "" if real is None else f"  dequantized {real:.6g}"
            print(f"    top {rank:<2} index {item['index']:<6} value {value:<10}{shown}")
    for path in saved:
        print(f"  saved {path}")
    return 0
