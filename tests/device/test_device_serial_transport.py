"""SerialTransport over pyserial's socket:// URL, against the fake device on a local socket."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from fake_device import FakeDevice, add_one_model

from aot.device import DeviceClient, SerialTransport, open_transport
from aot.errors import DeviceError

pytestmark = pytest.mark.unit

pytest.importorskip("serial")


@pytest.fixture
def fake_server() -> Iterator[tuple[int, threading.Event]]:
    """A TCP server that answers like a device (like QEMU's -serial tcp::PORT,server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    mute = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        device = FakeDevice(add_one_model())
        with conn:
            while data := conn.recv(4096):
                reply = device.feed(data)
                if reply and not mute.is_set():
                    conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], mute
    listener.close()


def test_client_over_socket_url(fake_server: tuple[int, threading.Event]) -> None:
    port, mute = fake_server
    transport = open_transport(f"socket://127.0.0.1:{port}")
    assert isinstance(transport, SerialTransport)
    with DeviceClient(transport, timeout=2.0) as client:
        x = np.array([[1, 2, 3, 127]], dtype=np.int8)
        np.testing.assert_array_equal(client.run([x]).outputs[0], [[2, 3, 4, 127]])
        mute.set()
        client.timeout = 0.3
        with pytest.raises(
            DeviceError, match=r"no answer from socket://127\.0\.0\.1:\d+ within 0\.3 s"
        ):
            client.stats()


def test_unopenable_port_is_a_device_error() -> None:
    with pytest.raises(DeviceError, match="cannot open serial port /dev/does-not-exist"):
        SerialTransport("/dev/does-not-exist")
