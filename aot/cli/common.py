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
