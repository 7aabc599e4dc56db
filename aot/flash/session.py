"""A session with a physical board: flash its firmware, open its serial port, HELLO."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from aot.boards import Board
from aot.device.client import DeviceClient
from aot.errors import ConfigError, DeviceError, ProtocolError
from aot.flash.core import Firmware, FlashOptions, runner_for

# A reset board answers within a second; USB serial ports (native CDC) may take a few
# seconds to come back after the reset, so keep trying for this long.
HELLO_WAIT_S = 10.0
_ATTEMPT_S = 1.0

PORT_EXAMPLES = "e.g. /dev/ttyACM0 on Linux, /dev/cu.usbmodem* on macOS, COM3 on Windows"


def require_port(board: Board, port: str | None) -> str:
    if not port:
        raise ConfigError(
            f"board '{board.name}' is a physical board: give its serial port with --port "
            f"({PORT_EXAMPLES}; 'python -m serial.tools.list_ports' lists them)"
        )
    return port


def wait_for_hello(
    port: str, baud: int, timeout: float, wait: float = HELLO_WAIT_S
) -> DeviceClient:
    """Opens ``port`` and sends HELLO until the device answers or ``wait`` seconds pass.

    The returned client uses ``timeout`` for later requests."""
    from aot.device.transport import SerialTransport  # lazy: pyserial

    deadline = time.monotonic() + wait
    last: DeviceError | None = None
    while True:
        try:
            transport = SerialTransport(port, baud)
        except DeviceError as err:  # the port is not there (yet)
            last = err
        else:
            client = DeviceClient(transport, timeout=min(_ATTEMPT_S, wait))
            try:
                client.hello()
            except ProtocolError:
                client.close()  # an answer, but a wrong one: retrying will not help
                raise
            except DeviceError as err:
                client.close()
                last = err
            else:
                client.timeout = timeout
                return client
        if time.monotonic() >= deadline:
            raise DeviceError(
                f"no HELLO from the board on {port} within {wait:g} s after flashing "
                f"({last}); check that {port} is this board's serial port, that it runs at "
                f"{baud} baud and that the firmware is this folder's"
            )
        time.sleep(0.2)


@contextlib.contextmanager
def open_board(
    board: Board,
    firmware: Firmware,
    port: str | None,
    baud: int | None = None,
    timeout: float = 60.0,
    options: FlashOptions | None = None,
    runner: str | None = None,
) -> Iterator[DeviceClient]:
    """Flashes ``firmware`` with the board's runner, then yields a client on ``port``."""
    port = require_port(board, port)  # before flashing: fail fast
    flasher = runner_for(board, runner)
    flasher.flash(board, firmware, options)
    baud = baud or (board.console.baud if board.console else 115200)
    with wait_for_hello(port, baud, timeout, wait=min(HELLO_WAIT_S, timeout)) as client:
        yield client
