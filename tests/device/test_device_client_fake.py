"""DeviceClient against the in-memory fake device: the protocol without a toolchain."""

from __future__ import annotations

import time

import numpy as np
import pytest
from fake_device import FakeDevice, FakeModel, FakeTensor, FakeTransport, add_one_model

from aot.device import DeviceClient
from aot.device import protocol as p
from aot.device.transport import Transport
from aot.errors import ConfigError, DeviceError, ProtocolError

pytestmark = pytest.mark.unit


def _client(model: FakeModel | None = None, max_payload: int = 64) -> DeviceClient:
    device = FakeDevice(model or add_one_model(), max_payload=max_payload)
    return DeviceClient(FakeTransport(device), timeout=0.1)


def _transport(client: DeviceClient) -> FakeTransport:
    assert isinstance(client.transport, FakeTransport)
    return client.transport


def test_hello_reports_the_model() -> None:
    info = _client().hello()
    assert info.name == "add_one"
    assert info.protocol_version == p.PROTOCOL_VERSION
    assert [(t.name, t.dtype, t.shape, t.size_bytes) for t in info.inputs] == [
        ("x", np.dtype(np.int8), (1, 4), 4)
    ]
    assert info.outputs[0].name == "y"


def test_run_add_one() -> None:
    client = _client()
    x = np.array([[-128, 0, 126, 127]], dtype=np.int8)
    result = client.run([x], repeats=3)
    np.testing.assert_array_equal(result.outputs[0], [[-127, 1, 127, 127]])
    assert (result.status, result.runs, result.ticks, result.ticks_per_second) == (
        0,
        3,
        3000,
        1_000_000,
    )
    assert result.seconds_per_run == pytest.approx(0.001)


def _big_model() -> FakeModel:
    def compute(inputs: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
        return 0, [(inputs[0] * 2 + inputs[1]).astype(np.float32)]

    ins = [FakeTensor("a", 4, (10, 30)), FakeTensor("b", 4, (10, 30))]
    return FakeModel("big", ins, [FakeTensor("c", 4, (10, 30))], compute)


def test_inputs_and_outputs_larger_than_a_frame_move_in_chunks() -> None:
    client = _client(_big_model(), max_payload=64)
    a = np.arange(300, dtype=np.float32).reshape(10, 30)
    b = np.full((10, 30), 0.5, dtype=np.float32)
    result = client.run([a, b])
    np.testing.assert_array_equal(result.outputs[0], a * 2 + b)
    set_inputs = [w for w in _transport(client).sent if len(w) > 30]
    assert len(set_inputs) >= 2 * 1200 // 59  # 1200 bytes per input, 59 per chunk


@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        ([], "has 1 input"),
        ([np.zeros((1, 4), np.float32)], "expected int8 array of shape \\(1, 4\\), got float32"),
        ([np.zeros((4,), np.int8)], "got int8 array of shape \\(4,\\)"),
    ],
)
def test_inputs_are_checked_against_the_device_info(inputs: list, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        _client().run(inputs)


def test_corrupt_request_gets_an_error_reply_and_the_session_continues() -> None:
    client = _client()
    client.hello()
    transport = _transport(client)

    def flip(data: bytes) -> bytes:
        corrupt = bytearray(data)
        corrupt[len(corrupt) // 2] ^= 0x10
        return bytes(corrupt)

    transport.to_device = flip
    with pytest.raises(ProtocolError, match="could not decode the RUN request: AOT_ERR_PROTOCOL"):
        client.request(p.Command.RUN, p.RUN_REQUEST.pack(1))
    assert transport.device.frames_bad == 1
    x = np.zeros((1, 4), np.int8)
    np.testing.assert_array_equal(client.run([x]).outputs[0], np.ones((1, 4)))


def test_corrupt_reply_is_named_and_the_session_continues() -> None:
    client = _client()
    client.hello()
    transport = _transport(client)
    transport.to_host = lambda data: data[:3] + bytes([data[3] ^ 0x04]) + data[4:]
    with pytest.raises(ProtocolError, match="corrupt reply from fake device to STATS: corrupt"):
        client.stats()
    assert client.stats().frames_ok >= 4


def test_garbage_before_a_request_is_reported_then_ignored() -> None:
    client = _client()
    client.hello()
    transport = _transport(client)
    transport.to_device = lambda data: b"\x03\x42\x42\x00" + data
    with pytest.raises(ProtocolError, match="AOT_ERR_PROTOCOL_FRAME_TOO_SHORT"):
        client.stats()
    # The real STATS reply arrived after the error; it is stale now and skipped.
    assert client.stats().frames_bad == 1


def test_over_long_frame_is_rejected_by_the_device() -> None:
    client = _client()
    client.hello()
    with pytest.raises(ProtocolError, match="FRAME_TOO_LONG"):
        client.request(p.Command.SET_INPUT, b"\x00" * 200)
    client.stats()


@pytest.mark.parametrize(
    ("command", "payload", "error"),
    [
        (0x55, b"", "AOT_ERR_PROTOCOL_UNKNOWN_COMMAND"),
        (p.Command.SET_INPUT, p.SET_INPUT_HEAD.pack(3, 0) + b"\x01", "BAD_INDEX"),
        (p.Command.SET_INPUT, p.SET_INPUT_HEAD.pack(0, 2) + b"\x01" * 3, "OUT_OF_RANGE"),
        (p.Command.GET_OUTPUT, p.GET_OUTPUT_REQUEST.pack(0, 0, 63), "BAD_PAYLOAD"),
        (p.Command.RUN, p.RUN_REQUEST.pack(0), "BAD_PAYLOAD"),
        (p.Command.HELLO, p.HELLO_REQUEST.pack(0x0200), "VERSION_MISMATCH"),
    ],
)
def test_bad_requests_get_named_errors(command: int, payload: bytes, error: str) -> None:
    client = _client()
    client.hello()
    with pytest.raises(ProtocolError, match=error):
        client.request(command, payload)


def test_silent_device_times_out_with_a_clear_message() -> None:
    client = _client()
    client.hello()
    _transport(client).device.quit = True  # stops answering
    with pytest.raises(DeviceError, match=r"no answer from fake device within 0.1 s: .* STATS"):
        client.stats()


def test_model_failure_is_reported() -> None:
    def fail(inputs: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
        return 0x0102, []

    model = add_one_model()
    model.compute = fail
    client = _client(model)
    x = np.zeros((1, 4), np.int8)
    with pytest.raises(DeviceError, match="AOT_ERR_MODEL_KERNEL_FAILED"):
        client.run([x])
    result = client.run([x], check=False)
    assert (result.status, result.outputs, result.runs) == (0x0102, [], 1)


def test_stats_and_quit() -> None:
    client = _client()
    client.run([np.zeros((1, 4), np.int8)], repeats=5)
    stats = client.stats()
    assert stats.runs == 5 and stats.model_stack_bytes == 400 and not stats.stack_exhausted
    client.quit()
    assert _transport(client).device.quit


def test_text_printed_by_the_device_is_shown() -> None:
    # Ports print abort messages between two delimiters (aot/runtime_c/ports/cmsdk/port.c).
    client = _client()
    client.hello()
    _transport(client).to_host = lambda data: b"\x00aot: abort 0x0304\n\x00" + data
    with pytest.raises(DeviceError, match="printed instead of replying to STATS: aot: abort"):
        client.stats()


def test_hello_survives_noise_at_connect() -> None:
    client = _client()
    transport = _transport(client)
    transport.to_host = lambda data: b"\x13\x37noise\x00" + data
    assert client.hello().name == "add_one"
    client = _client()
    _transport(client).to_host = lambda data: b"booting...\r\n\x00" + data
    assert client.hello().name == "add_one"


def test_payload_over_the_limit_is_refused_even_if_it_fits_the_buffer() -> None:
    client = _client()
    client.hello()
    with pytest.raises(ProtocolError, match="FRAME_TOO_LONG"):
        client.request(p.Command.SET_INPUT, b"\x01" * 65)


def test_quit_with_a_payload_is_refused_and_the_device_keeps_serving() -> None:
    client = _client()
    client.hello()
    with pytest.raises(ProtocolError, match=r"rejected QUIT: .*BAD_PAYLOAD.*detail 0"):
        client.request(p.Command.QUIT, b"\x01")
    assert not _transport(client).device.quit
    client.stats()


def test_repeats_over_the_announced_cap_are_refused_before_sending() -> None:
    device = FakeDevice(add_one_model(), max_repeats=5)
    client = DeviceClient(FakeTransport(device), timeout=0.1)
    assert client.hello().max_repeats == 5
    x = np.zeros((1, 4), np.int8)
    with pytest.raises(ConfigError, match=r"at most 5 times per request \(AOT_APP_MAX_REPEATS\)"):
        client.run([x], repeats=6)
    assert device.runs == 0
    with pytest.raises(ProtocolError, match=r"BAD_PAYLOAD.*detail 5"):
        client.request(p.Command.RUN, p.RUN_REQUEST.pack(6))
    assert client.run([x], repeats=5).runs == 5


@pytest.mark.parametrize("repeats", [0, -1, 2**32, 1.5, True])
def test_invalid_repeats_are_a_config_error(repeats: object) -> None:
    with pytest.raises(ConfigError, match="repeats must be a whole number from 1 to 4294967295"):
        _client().run([np.zeros((1, 4), np.int8)], repeats=repeats)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -1.0, 0.0, 1e12])
def test_invalid_timeouts_are_a_config_error(timeout: float) -> None:
    with pytest.raises(ConfigError, match="timeout must be"):
        DeviceClient(FakeTransport(FakeDevice(add_one_model())), timeout=timeout)
    with pytest.raises(ConfigError, match="timeout must be"):
        _client().run([np.zeros((1, 4), np.int8)], timeout=timeout)


class _Babbler(Transport):
    """A device that never answers but keeps sending: ``chunk`` on every read, after
    ``pause`` seconds (bounded by the read's timeout, as a real transport's is)."""

    def __init__(self, chunk: bytes, pause: float = 0.0) -> None:
        self.name = "babbler"
        self.chunk = chunk
        self.pause = pause

    def read(self, n: int, timeout: float) -> bytes:
        if self.pause > timeout:
            time.sleep(timeout)
            raise self._timeout(timeout)
        time.sleep(self.pause)
        return self.chunk[:n]

    def write(self, data: bytes) -> None:
        pass

    def discard_input(self) -> bytes:
        return b""


_STALE = p.Frame(p.Command.HELLO | p.REPLY_BIT, 200, p.ok()).encode()


@pytest.mark.parametrize(
    ("chunk", "pause", "words"),
    [
        (_STALE * 50, 0.0, r"no reply to HELLO from babbler within 0.3 s: \d+ frame\(s\) arrived"),
        (b"\x55" * 4096, 0.0, r"\d+ byte\(s\) arrived without completing a frame"),
        (b"\x55", 0.1, r"[1-3] byte\(s\) arrived without completing a frame"),
    ],
    ids=["stale-replies", "no-delimiter", "trickle"],
)
def test_the_deadline_holds_whatever_the_device_sends(
    chunk: bytes, pause: float, words: str
) -> None:
    client = DeviceClient(_Babbler(chunk, pause), timeout=0.3)
    start = time.monotonic()
    with pytest.raises(DeviceError, match=words):
        client.hello()
    assert time.monotonic() - start < 0.6
