"""``python -m aot`` and the ``aot`` console script.

The signal handlers go in before anything heavy is imported, so a Ctrl-C while the
command-line modules load still exits 130 with ``error: interrupted`` (Python's own
handling would print a traceback, or die of the signal with -2).
"""

from __future__ import annotations

import os
import sys


def entry() -> int:
    from aot import interrupts

    interrupts.install()
    try:
        from aot.cli import main
    except KeyboardInterrupt:
        return interrupts.report()
    code = main()
    if interrupts.received() is not None and code in (130, 143):
        # Said all there is to say: keep TVM's teardown noise about the objects the
        # interrupted stage left behind ("BlockBuilder destroyed ...") off the terminal.
        sys.stderr.flush()
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stderr.fileno())
    return code


if __name__ == "__main__":
    raise SystemExit(entry())
