"""``aot serve``: offer a board on this machine to a TVM RPC tracker (the board farm)."""

from __future__ import annotations

import argparse
import signal
import sys

HELP = "offer a board attached to this machine (or an emulated one) to a board farm"

DESCRIPTION = """\
Register a board with a TVM RPC tracker under a key, so that 'aot run', 'aot bench' and
'aot validate' with --tracker HOST:PORT --key KEY on any machine can borrow it: the
client sends the firmware and inputs, this server starts QEMU or the host build, or
flashes the board on --port, runs the job and returns the report. One 'aot serve' per
board; clients queue at the tracker while every board of their key is busy. Serves until
Ctrl-C or SIGTERM. See docs/farm.md.

examples:
  python -m tvm.exec.rpc_tracker --host 0.0.0.0 --port 9190       the lab's tracker
  aot serve --tracker lab:9190 --key m4 --board mps2_an386          an emulated board
  aot serve --tracker lab:9190 --key f746 --board nucleo_f746zg --port /dev/ttyACM0 \\
    --runner openocd                                                 a physical board
  python -m tvm.exec.query_rpc_tracker --host lab --port 9190      boards and queue

The server runs any firmware a client sends: serve only on a network you trust.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--tracker", required=True, metavar="HOST:PORT", help="address of the RPC tracker"
    )
    parser.add_argument(
        "--key", required=True, help="the key clients borrow this board by (same for alike boards)"
    )
    parser.add_argument("--board", required=True, help="the board served ('aot boards' lists them)")
    parser.add_argument(
        "--port",
        metavar="PORT",
        help="serial port of a physical board, e.g. /dev/ttyACM0 (required for those)",
    )
    parser.add_argument(
        "--baud", type=int, metavar="RATE", help="baud rate of --port (default: the board's)"
    )
    parser.add_argument(
        "--runner",
        metavar="NAME",
        help="flash runner of a physical board (default: the board's); it must flash the ELF "
        "(pyocd, openocd): clients send no build folder",
    )
    parser.add_argument(
        "--host",
        default="0.0.0.0",
        help="address the server listens on (default: 0.0.0.0, every interface)",
    )
    parser.add_argument(
        "--rpc-port",
        type=int,
        default=9091,
        metavar="N",
        help="first TCP port to listen on; the next free one up to N+108 is taken (default: 9091)",
    )
    parser.add_argument(
        "--address",
        metavar="HOST",
        help="address clients reach this machine at, if not the one the tracker sees",
    )
    parser.set_defaults(func=run)


# How far above --rpc-port a free port is looked for (TVM's own default range).
PORT_RANGE = 108


def run(args: argparse.Namespace) -> int:
    from aot.farm.client import parse_tracker
    from aot.farm.server import ServeConfig, serve

    config = ServeConfig(
        tracker=parse_tracker(args.tracker),
        key=args.key,
        board=args.board,
        serial_port=args.port,
        baud=args.baud,
        flash_runner=args.runner,
        host=args.host,
        rpc_port=args.rpc_port,
        rpc_port_end=min(args.rpc_port + PORT_RANGE, 65535),
        address=args.address,
    )
    from aot import interrupts

    try:
        serve(config, ready=lambda line: print(line, file=sys.stderr, flush=True))
    except interrupts.Interrupted as stop:
        if stop.signum != signal.SIGTERM:
            raise  # Ctrl-C: 'error: interrupted', exit 130, as every command
        # SIGTERM is how a lab (systemd, a script) stops a server: a normal end, no
        # 'error: terminated' and exit 0, once the board's sessions are stopped.
        interrupts.finish()
    return 0
