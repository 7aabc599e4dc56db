"""Command-line entry point: ``python -m aot <command>``.

Each subcommand lives in its own module in this package and exposes
``add_parser(subparsers)`` which registers its parser and sets ``func``.
The one ``except AotError`` of the tool is here.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from aot import __version__
from aot.errors import AotError

# Modules under aot.cli, one per subcommand, in the order --help lists them.
SUBCOMMANDS = ["build", "run", "flash", "inspect", "boards", "operators"]

DESCRIPTION = """\
Compile a neural network into plain C for a microcontroller and run it.

typical flow:
  aot build model.tflite --board host -o out/     compile + build a native executable
  aot run out/ -i input.npy --save results/       run it, write output_0.npy ...
  aot boards                                      list the boards aot knows
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aot",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"aot {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show debug logs and tracebacks on errors"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"aot.cli.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"aot.cli.{name}":
                continue  # subcommand not shipped in this build
            raise
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(message)s",
        stream=sys.stderr,
    )
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except AotError as err:
        if args.verbose:
            logging.exception("aot failed")
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (aot boards | head): not an error worth a traceback.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
