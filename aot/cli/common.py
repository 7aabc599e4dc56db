"""Option groups shared by several subcommands, defined once."""

from __future__ import annotations

import argparse


def add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", required=True, metavar="DIR", help="output folder to create"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace the output folder if an earlier 'aot build' wrote it; nothing else is "
        "ever replaced",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print a machine-readable JSON report on stdout"
    )


def progress_printer(quiet: bool = False):  # type: ignore[no-untyped-def]
    """A progress callback printing '[n.n s] message' lines on stderr."""
    import sys
    import time

    start = time.perf_counter()

    def progress(message: str) -> None:
        from aot import interrupts

        interrupts.check()  # stage boundary: stop here if TVM swallowed a KeyboardInterrupt
        if not quiet:
            print(f"[{time.perf_counter() - start:5.1f}s] {message}", file=sys.stderr, flush=True)

    return progress


def add_device_options(parser: argparse.ArgumentParser) -> None:
    """How to reach the device: reply timeout, and the serial port of a physical board."""
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


def add_farm_options(parser: argparse.ArgumentParser) -> None:
    """--tracker/--key: run on a board borrowed from a farm ('aot serve') instead."""
    group = parser.add_argument_group("board farm (see docs/farm.md)")
    group.add_argument(
        "--tracker",
        metavar="HOST:PORT",
        help="borrow a board from this TVM RPC tracker instead of using a local one; waits "
        "in its queue at most --timeout seconds while all boards of --key are busy",
    )
    group.add_argument("--key", help="which boards to borrow: the key they were served with")


def farm_target(args: argparse.Namespace) -> tuple[object, str] | None:
    """(tracker address, key) when --tracker was given, after checking the options."""
    from aot.errors import ConfigError

    if args.tracker is None:
        if args.key is not None:
            raise ConfigError("--key names boards of a farm: give --tracker HOST:PORT too")
        return None
    from aot.farm.client import check_key, parse_tracker

    if args.key is None:
        raise ConfigError("--tracker needs --key KEY: the key the farm's boards were served with")
    if getattr(args, "port", None):
        raise ConfigError(
            "--port is for a board on this machine; with --tracker the farm's server owns "
            "the board's port"
        )
    return parse_tracker(args.tracker), check_key(args.key)


def add_kernels_option(parser: argparse.ArgumentParser) -> None:
    """--kernels: which CPU kernels compile the operators (docs/kernels.md)."""
    from aot.kernels import CHOICES, DEFAULT_CHOICE

    parser.add_argument(
        "--kernels",
        choices=CHOICES,
        default=DEFAULT_CHOICE,
        help="CPU kernels: auto (default: the fastest the board's features allow), tvm "
        "(TVM-generated C, the portable reference), or one ISA's hand-written kernels: "
        "scalar (plain C), dsp (SMLAD, Cortex-M4/M7/M33), mve (Helium, Cortex-M55); "
        "operators they lack stay on tvm; see docs/kernels.md",
    )
