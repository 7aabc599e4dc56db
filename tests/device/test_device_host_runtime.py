"""The C runtime built for the host with fixture models, driven over pipes."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from aot.device import DeviceClient, PipeTransport
from aot.device import protocol as p
from aot.device.transport import Transport
from aot.errors import ConfigError, DeviceError, ProtocolError

pytestmark = pytest.mark.toolchain

Start = Callable[..., DeviceClient]
STACK = "-DAOT_APP_STACK_PAINT_BYTES=65536"


def _pipe(client: DeviceClient) -> PipeTransport:
    assert isinstance(client.transport, PipeTransport)
    return client.transport


def test_add_one_outputs_and_timing(start: Start) -> None:
    client = start("add_one_model", STACK)
    info = client.hello()
    assert (info.name, info.max_payload, info.ticks_per_second) == ("add_one", 512, 10**9)
    assert info.inputs[0].shape == (1, 4) and info.inputs[0].dtype == np.int8
    assert (info.io_arena_bytes, info.io_required_bytes) == (4096, 32)
    x = np.array([[-128, -1, 126, 127]], dtype=np.int8)
    result = client.run([x], repeats=100)
    np.testing.assert_array_equal(result.outputs[0], [[-127, 0, 127, 127]])
    assert result.status == 0 and result.runs == 100
    assert 0 < result.ticks_min <= result.ticks_max <= result.ticks
    assert result.ticks_per_second == 10**9


def test_float_two_inputs_larger_than_a_frame(start: Start) -> None:
    client = start("mul_add_model", "-DAOT_APP_MAX_PAYLOAD=128")
    info = client.hello()
    assert info.max_payload == 128 and info.inputs[0].size_bytes == 1200
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 300)).astype(np.float32)
    b = rng.standard_normal((1, 300)).astype(np.float32)
    result = client.run([a, b])
    np.testing.assert_array_equal(result.outputs[0], 2 * a + b)
    assert client.stats().frames_ok >= 2 * math.ceil(1200 / 123) + math.ceil(1200 / 126)


def test_model_error_status_reaches_the_host(start: Start) -> None:
    client = start("mul_add_model")
    a = np.full((1, 300), np.nan, dtype=np.float32)
    b = np.zeros((1, 300), dtype=np.float32)
    with pytest.raises(DeviceError, match="AOT_ERR_MODEL_KERNEL_FAILED"):
        client.run([a, b], repeats=5)
    assert client.run([a, b], repeats=5, check=False).runs == 1
    a[0, 0] = 1.0
    assert client.run([a, b]).outputs[0][0, 0] == 2.0


class _Corrupter(Transport):
    """Passes bytes through, rewriting the next write once."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.name = inner.name
        self.rewrite: Callable[[bytes], bytes] | None = None

    def read(self, n: int, timeout: float) -> bytes:
        return self.inner.read(n, timeout)

    def write(self, data: bytes) -> None:
        if self.rewrite is not None:
            data, self.rewrite = self.rewrite(data), None
        self.inner.write(data)


def _flip_crc(data: bytes) -> bytes:
    return data[:-3] + bytes([data[-3] ^ 0x01 or 0x01]) + data[-2:]


@pytest.mark.parametrize(
    ("rewrite", "error"),
    [
        (_flip_crc, "BAD_CRC"),
        (lambda d: d[:-4] + b"\x00", "BAD_ENCODING|FRAME_TOO_SHORT|BAD_LENGTH|BAD_CRC"),
        (lambda d: b"\x05\x01\x00" + d, "BAD_ENCODING"),
        (lambda d: b"\x02\x01\x00" + d, "FRAME_TOO_SHORT"),
        (lambda d: b"\x77" * 3000 + b"\x00" + d, "FRAME_TOO_LONG"),
    ],
    ids=["crc", "truncated", "cobs", "short", "too-long"],
)
def test_corrupt_frame_gets_an_error_reply_and_the_session_continues(
    start: Start, rewrite: Callable[[bytes], bytes], error: str
) -> None:
    client = start("add_one_model")
    client.hello()
    corrupter = _Corrupter(client.transport)
    client.transport = corrupter
    corrupter.rewrite = rewrite
    with pytest.raises(ProtocolError, match=error):
        client.stats()
    x = np.zeros((1, 4), dtype=np.int8)
    np.testing.assert_array_equal(client.run([x]).outputs[0], np.ones((1, 4)))
    assert client.stats().frames_bad == 1
    client.quit()
    assert _pipe_of(corrupter).wait(5.0) == 0


def _pipe_of(corrupter: _Corrupter) -> PipeTransport:
    assert isinstance(corrupter.inner, PipeTransport)
    return corrupter.inner


def test_bad_requests_get_named_errors(start: Start) -> None:
    client = start("add_one_model")
    client.hello()
    with pytest.raises(ProtocolError, match="UNKNOWN_COMMAND"):
        client.request(0x42)
    with pytest.raises(ProtocolError, match=r"OUT_OF_RANGE.*detail 4"):
        client.request(p.Command.SET_INPUT, p.SET_INPUT_HEAD.pack(0, 3) + b"\x01\x02")
    with pytest.raises(ProtocolError, match=r"BAD_INDEX.*detail 1"):
        client.request(p.Command.GET_OUTPUT, p.GET_OUTPUT_REQUEST.pack(1, 0, 1))
    with pytest.raises(ProtocolError, match="FRAME_TOO_LONG"):
        client.request(p.Command.SET_INPUT, b"\x01" * 513)
    with pytest.raises(ProtocolError, match="VERSION_MISMATCH"):
        client.request(p.Command.HELLO, p.HELLO_REQUEST.pack(0x0900))
    client.hello()


def test_stack_is_measured(start: Start) -> None:
    client = start("mul_add_model", STACK)
    client.run([np.ones((1, 300), np.float32)] * 2)
    stats = client.stats()
    assert stats.stack_painted_bytes == 65536
    assert 0 < stats.stack_at_run_bytes < stats.stack_peak_bytes < 65536
    assert stats.model_stack_bytes is not None and not stats.stack_exhausted
    assert stats.runs == 1 and stats.frames_bad == 0


def test_stack_not_measured_without_bounds(start: Start) -> None:
    stats = start("add_one_model").stats()
    assert stats.stack_painted_bytes == 0 and stats.model_stack_bytes is None


def test_io_arena_too_small_is_explained(start: Start) -> None:
    client = start("mul_add_model", "-DAOT_APP_IO_BYTES=1024")
    with pytest.raises(DeviceError, match="needs 3600: rebuild with -DAOT_APP_IO_BYTES=3600"):
        client.hello()
    with pytest.raises(DeviceError, match="AOT_ERR_APP_IO_ARENA_TOO_SMALL"):
        client.request(p.Command.RUN, p.RUN_REQUEST.pack(1))


def test_quit_exits_with_code_0(start: Start) -> None:
    client = start("add_one_model")
    client.hello()
    client.quit()
    assert _pipe(client).wait(5.0) == 0


def test_closed_stdin_exits_with_an_error(start: Start) -> None:
    client = start("add_one_model")
    client.hello()
    pipe = _pipe(client)
    assert pipe.process.stdin is not None
    pipe.process.stdin.close()
    assert pipe.wait(5.0) == 1
    assert pipe.process.stderr is not None
    assert b"closed without QUIT" in pipe.process.stderr.read()


def test_reader_gone_is_a_reported_write_error(start: Start) -> None:
    client = start("add_one_model")
    pipe = _pipe(client)
    assert pipe.process.stdout is not None and pipe.process.stderr is not None
    pipe.process.stdout.close()  # nobody reads the replies any more
    pipe.write(p.Frame(p.Command.STATS, 1, b"").encode())
    assert pipe.wait(5.0) == 1
    assert b"abort: error 0x0303" in pipe.process.stderr.read()


def test_quit_with_a_payload_is_refused_and_the_server_keeps_serving(start: Start) -> None:
    client = start("add_one_model")
    client.hello()
    with pytest.raises(ProtocolError, match=r"rejected QUIT: .*BAD_PAYLOAD.*detail 0"):
        client.request(p.Command.QUIT, b"\x00")
    x = np.zeros((1, 4), dtype=np.int8)
    np.testing.assert_array_equal(client.run([x]).outputs[0], np.ones((1, 4)))
    client.quit()
    assert _pipe(client).wait(5.0) == 0


def test_hello_announces_the_repeat_cap_and_run_holds_it(start: Start) -> None:
    assert start("add_one_model").hello().max_repeats == 10000  # the default
    client = start("add_one_model", "-DAOT_APP_MAX_REPEATS=3")
    assert client.hello().max_repeats == 3
    x = np.zeros((1, 4), dtype=np.int8)
    with pytest.raises(ConfigError, match=r"at most 3 times per request.*MAX_REPEATS=4"):
        client.run([x], repeats=4)
    # The server refuses on its own too, naming the cap in the detail.
    with pytest.raises(ProtocolError, match=r"rejected RUN: .*BAD_PAYLOAD.*detail 3"):
        client.request(p.Command.RUN, p.RUN_REQUEST.pack(4))
    assert client.run([x], repeats=3).runs == 3


def test_a_1_0_host_gets_the_1_0_hello_layout(start: Start) -> None:
    client = start("add_one_model")
    client.hello()
    body = client.request(p.Command.HELLO, p.HELLO_REQUEST.pack(0x0100))
    # 1.0 hosts read the name up to the end of the payload: nothing may follow it.
    at = p.HelloReply.FORMAT.size
    assert body[at + 1 :] == b"add_one"
    body = client.request(p.Command.HELLO, p.HELLO_REQUEST.pack(0x0101))
    assert body[at + 1 : at + 8] == b"add_one" and body[at + 8 :] == (10000).to_bytes(4, "little")
