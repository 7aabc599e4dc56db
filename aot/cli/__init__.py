"""Command-line entry point: ``python -m aot <command>``.

Each subcommand lives in its own module in this package and exposes
``add_parser(subparsers)`` which registers its parser and sets ``func``.
The one handler of the tool is here: an ``AotError`` prints one line and exits with its
class's code; SIGINT/SIGTERM exit 130/143 (``aot.interrupts``); the system's refusal of a
path or of memory is a one-line ``FileSystemError``/``ResourceError`` (``aot.fs_errors``);
anything else is a bug in aot and exits 70 with a one-line request to report it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback

from aot import __version__, interrupts
from aot.errors import AotError, InternalError

# Modules under aot.cli, one per subcommand, in the order --help lists them.
SUBCOMMANDS = [
    "build",
    "run",
    "validate",
    "bench",
    "flash",
    "inspect",
    "boards",
    "operators",
    "serve",
    "backends",
]

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
    add_output_level_options(parser, False)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"aot.cli.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"aot.cli.{name}":
                continue  # subcommand not shipped in this build
            raise
        module.add_parser(subparsers)
    for subparser in subparsers.choices.values():
        # Also after the subcommand (aot build m.tflite -v); SUPPRESS keeps a flag given
        # before it from being reset by the subcommand's default.
        add_output_level_options(subparser, argparse.SUPPRESS)
    return parser


def add_output_level_options(parser: argparse.ArgumentParser, default: object) -> None:
    levels = parser.add_mutually_exclusive_group()
    levels.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default,
        help="show debug logs and tracebacks on errors",
    )
    levels.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default,
        help="no progress lines or info logs; results and errors still print",
    )


def log_level(args: argparse.Namespace) -> int:
    if args.verbose:
        return logging.DEBUG
    return logging.WARNING if args.quiet else logging.INFO


def main(argv: list[str] | None = None) -> int:
    with interrupts.installed():
        return _main(sys.argv[1:] if argv is None else argv)


def _main(argv: list[str]) -> int:
    args: argparse.Namespace | None = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.verbose and args.quiet:  # one before the subcommand, one after
            parser.error("-v/--verbose and -q/--quiet exclude each other")
        logging.basicConfig(
            level=log_level(args),
            format="%(message)s",
            stream=sys.stderr,
        )
        if args.command is None:
            parser.print_help()
            return 2
        code = int(args.func(args) or 0)
        interrupts.check()  # a swallowed interrupt: the command did not really finish
        return code
    except SystemExit:
        raise  # argparse: --help, --version and usage errors
    except BaseException as err:  # the one place every failure is reported
        verbose = args.verbose if args is not None else bool({"-v", "--verbose"} & set(argv))
        return report_failure(err, verbose)


def report_failure(err: BaseException, verbose: bool) -> int:
    """Print the one-line message for ``err`` on stderr and return the exit code."""
    if interrupts.received() is not None or isinstance(err, KeyboardInterrupt):
        # Checked first: TVM may have turned the KeyboardInterrupt into any other error.
        return interrupts.report()
    if isinstance(err, BrokenPipeError):
        # The reader went away (aot boards | head): not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    if not isinstance(err, Exception):
        raise err  # GeneratorExit and the like are not failures to report
    if verbose:
        traceback.print_exception(err, file=sys.stderr)
    if not isinstance(err, AotError):
        from aot.fs_errors import describe_system_error

        err = describe_system_error(err) or err
    if isinstance(err, AotError):
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    print(
        f"error: internal error in aot ({type(err).__name__}); please report it with the "
        "output of 'aot -v ...'",
        file=sys.stderr,
    )
    return InternalError.exit_code
