"""Feature TRACE: a --trace build stops after a chosen executor step and returns what the
step wrote (docs/protocol.md, TRACE and GET_TRACE), with the C server
(fixtures/traced_model.c: three steps, the second with two outputs) and the fake device.
tests/validate/test_layers.py runs real --trace builds."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from fake_device import FakeDevice, FakeTransport, add_one_model

from aot.device import DeviceClient, spec
from aot.device import protocol as p
from aot.errors import DeviceError, ProtocolError

X = np.array([[1, -3, 100, -128]], np.int8)


def _steps(x: np.ndarray) -> list[list[bytes]]:
    """What fixtures/traced_model.c writes per step."""
    a = np.clip(x.astype(np.int32) + 1, -128, 127)
    b = np.clip(2 * a, -128, 127)
    y = np.clip(-b, -128, 127)
    as_bytes = [v.astype(np.int8).tobytes() for v in (a, b, b[:, :2], y)]
    return [[as_bytes[0]], [as_bytes[1], as_bytes[2]], [as_bytes[3]]]


@pytest.mark.toolchain
def test_the_c_server_stops_after_each_step_and_returns_its_outputs(
    start: Callable[..., DeviceClient],
) -> None:
    client = start("traced_model")
    assert "TRACE" in client.hello().features and client.supports_trace
    for step, expected in enumerate(_steps(X)):
        assert client.trace([X], step) == expected
    # A traced run leaves RUN as it was: every step runs again.
    got = client.run([X]).outputs[0]
    assert got.tobytes() == _steps(X)[2][0]


@pytest.mark.toolchain
def test_the_c_server_refuses_a_step_past_the_last_and_an_output_past_the_step(
    start: Callable[..., DeviceClient],
) -> None:
    client = start("traced_model", "-DAOT_APP_MAX_PAYLOAD=64")
    client.hello()
    client.set_input(0, X.tobytes())
    with pytest.raises(ProtocolError, match=r"BAD_INDEX.*\b3\b"):
        client.request(p.Command.TRACE, p.TRACE_REQUEST.pack(3))
    reply = p.TraceReply.unpack(client.request(p.Command.TRACE, p.TRACE_REQUEST.pack(1)))
    assert (reply.model_status, reply.stopped, reply.sizes) == (0, 1, (4, 2))
    with pytest.raises(ProtocolError, match=r"BAD_INDEX.*\b2\b"):
        client.request(p.Command.GET_TRACE, p.GET_TRACE_REQUEST.pack(2, 0, 1))
    with pytest.raises(ProtocolError, match=r"OUT_OF_RANGE.*\b2\b"):
        client.request(p.Command.GET_TRACE, p.GET_TRACE_REQUEST.pack(1, 1, 2))
    with pytest.raises(ProtocolError, match=r"BAD_PAYLOAD.*\b62\b"):
        client.request(p.Command.GET_TRACE, p.GET_TRACE_REQUEST.pack(0, 0, 63))
    with pytest.raises(ProtocolError, match="BAD_PAYLOAD"):
        client.request(p.Command.TRACE, bytes(3))


@pytest.mark.toolchain
def test_a_build_without_trace_does_not_answer_it(start: Callable[..., DeviceClient]) -> None:
    client = start("add_one_model")
    assert "TRACE" not in client.hello().features
    with pytest.raises(ProtocolError, match="UNKNOWN_COMMAND"):
        client.request(p.Command.TRACE, p.TRACE_REQUEST.pack(0))
    with pytest.raises(ProtocolError, match="UNKNOWN_COMMAND"):
        client.request(p.Command.GET_TRACE, p.GET_TRACE_REQUEST.pack(0, 0, 1))
    with pytest.raises(DeviceError, match=r"rebuild the folder with 'aot build --trace'"):
        client.trace([np.zeros((1, 4), np.int8)], 0)


@pytest.mark.unit
def test_the_fake_device_traces_like_the_c_server_in_chunks() -> None:
    device = FakeDevice(add_one_model(), steps=lambda arrays: _steps(arrays[0]), max_payload=64)
    client = DeviceClient(FakeTransport(device), timeout=0.1)
    assert "TRACE" in client.hello().features
    assert client.trace([X], 1) == _steps(X)[1]
    big = [[bytes(range(200))]]  # more than one 64-byte reply
    device.steps = lambda arrays: big
    assert client.trace([X], 0) == big[0]
    with pytest.raises(ProtocolError, match="BAD_INDEX"):
        client.trace([X], 1)


@pytest.mark.unit
def test_a_trace_reply_that_does_not_hold_its_sizes_is_refused() -> None:
    body = p.TraceReply(0, 1, (4, 2)).pack()[2:]  # without the status
    assert p.TraceReply.unpack(body).sizes == (4, 2)
    with pytest.raises(ProtocolError, match="does not hold 2 output size"):
        p.TraceReply.unpack(body[:-1])
    assert p.TraceReply.FORMAT.size == spec.TRACE_REPLY_HEAD_BYTES
