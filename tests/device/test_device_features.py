"""Protocol 1.2: the one table, HELLO's feature bits, PROFILE, and old and new ends
talking to each other in both directions (fake device and the C server)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fake_device import FakeDevice, FakeTransport, add_one_model

from aot.device import DeviceClient, spec
from aot.device import protocol as p
from aot.device.protocol_header import c_header
from aot.errors import DeviceError, ProtocolError

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "aot" / "runtime_c" / "include" / "aot" / "protocol.h"
Start = Callable[..., DeviceClient]
STACK = "-DAOT_APP_STACK_PAINT_BYTES=65536"


def _fake(**kwargs: object) -> DeviceClient:
    return DeviceClient(FakeTransport(FakeDevice(add_one_model(), **kwargs)), timeout=0.1)


# ---- the one table ----------------------------------------------------------------------


@pytest.mark.unit
def test_checked_in_c_header_is_generated_from_the_table() -> None:
    assert HEADER.read_text() == c_header(), (
        "aot/runtime_c/include/aot/protocol.h is stale: regenerate it with "
        "python3 -m aot.device.protocol_header > aot/runtime_c/include/aot/protocol.h"
    )


@pytest.mark.unit
def test_python_layouts_match_the_table() -> None:
    assert p.PROTOCOL_VERSION == spec.VERSION
    assert {c.name: c.value for c in p.Command} == {c.name: c.code for c in spec.COMMANDS}
    sizes = {
        "HELLO": p.HELLO_REQUEST.size,
        "INFO": p.INFO_REQUEST.size,
        "SET_INPUT": p.SET_INPUT_HEAD.size,
        "RUN": p.RUN_REQUEST.size,
        "GET_OUTPUT": p.GET_OUTPUT_REQUEST.size,
        "STATS": 0,
        "QUIT": 0,
        "PROFILE": p.PROFILE_REQUEST.size,
        "RESET": 0,
        "TRACE": p.TRACE_REQUEST.size,
        "GET_TRACE": p.GET_TRACE_REQUEST.size,
    }
    assert sizes == {c.name: c.request_bytes for c in spec.COMMANDS}
    assert p.ProfileReply.FORMAT.size == spec.PROFILE_REPLY_HEAD_BYTES
    assert p.TraceReply.FORMAT.size == spec.TRACE_REPLY_HEAD_BYTES
    assert len({f.bit for f in spec.FEATURES}) == len(spec.FEATURES)


@pytest.mark.unit
@pytest.mark.parametrize("command", spec.COMMANDS, ids=lambda c: c.name)
def test_fake_device_checks_request_sizes_from_the_table(command: spec.CommandSpec) -> None:
    client = _fake(step_ticks=[1, 2], reset=lambda: None, steps=lambda arrays: [[b"\0"]])
    client.hello()
    wrong = command.request_bytes - 1 if command.request_bytes else 1
    with pytest.raises(ProtocolError, match="BAD_PAYLOAD"):
        client.request(command.code, bytes(wrong))


# ---- feature bits and PROFILE, fake device --------------------------------------------


@pytest.mark.unit
def test_features_announced_and_profile_read_in_chunks() -> None:
    ticks = list(range(100, 200))  # 100 steps: 400 bytes, several 64-byte replies
    client = _fake(step_ticks=ticks, max_payload=64)
    info = client.hello()
    assert info.features == {"PROFILE", "STACK"} and client.supports_profile
    assert client.profile() == ticks
    sent = p.FrameDecoder().feed(b"".join(client.transport.sent))  # type: ignore[attr-defined]
    per_reply = (64 - 2 - spec.PROFILE_REPLY_HEAD_BYTES) // 4
    profile_requests = [f for f in sent if isinstance(f, p.Frame) and f.type == p.Command.PROFILE]
    assert len(profile_requests) == -(-len(ticks) // per_reply)


@pytest.mark.unit
def test_reset_reaches_a_stateful_model_only() -> None:
    resets: list[int] = []
    client = _fake(reset=lambda: resets.append(1))
    assert "STATE" in client.hello().features and client.supports_reset
    client.reset()
    assert resets == [1]
    stateless = _fake()
    assert not stateless.hello().features & {"STATE"} and not stateless.supports_reset
    with pytest.raises(DeviceError, match="nothing to reset"):
        stateless.reset()
    with pytest.raises(ProtocolError, match="UNKNOWN_COMMAND"):
        stateless.request(p.Command.RESET)


@pytest.mark.unit
def test_unprofiled_device_answers_profile_as_unknown() -> None:
    client = _fake()
    assert "PROFILE" not in client.hello().features and not client.supports_profile
    with pytest.raises(DeviceError, match="aot build --profile"):
        client.profile()
    with pytest.raises(ProtocolError, match="UNKNOWN_COMMAND"):
        client.request(p.Command.PROFILE, p.PROFILE_REQUEST.pack(0))


@pytest.mark.unit
def test_new_host_with_a_1_1_device() -> None:
    """A 1.1 device sends max_repeats but no features and knows no PROFILE: this host
    runs it as before and sees no optional commands."""
    client = _fake(version=0x0101, step_ticks=[5, 6], max_repeats=77)
    info = client.hello()
    assert (info.protocol_version, info.max_repeats, info.features) == (0x0101, 77, frozenset())
    assert client.run([np.zeros((1, 4), np.int8)]).outputs[0].tolist() == [[1, 1, 1, 1]]
    assert not client.supports_profile
    with pytest.raises(ProtocolError, match="UNKNOWN_COMMAND"):
        client.request(p.Command.PROFILE, p.PROFILE_REQUEST.pack(0))


@pytest.mark.unit
@pytest.mark.parametrize("version", [0x0100, 0x0101])
def test_older_host_with_this_fake_device(version: int) -> None:
    """An older host says its version in HELLO and gets exactly its layout: the name
    last (1.0), or the name then max_repeats and nothing after (1.1)."""
    transport = FakeTransport(FakeDevice(add_one_model(), step_ticks=[1]))
    client = DeviceClient(transport, timeout=0.1)
    body = client.request(p.Command.HELLO, p.HELLO_REQUEST.pack(version))
    tail = 4 if version == 0x0101 else 0
    assert len(body) == p.HelloReply.FORMAT.size + 1 + len("add_one") + tail
    reply = p.HelloReply.unpack(body, host_version=version)
    assert (reply.name, reply.features) == ("add_one", None)
    assert reply.max_repeats == (10000 if tail else None)


def _old_session(client: DeviceClient, x: np.ndarray) -> bytes:
    """SET_INPUT, RUN and GET_OUTPUT as every 1.x host sends them."""
    client.request(p.Command.SET_INPUT, p.SET_INPUT_HEAD.pack(0, 0) + x.tobytes())
    run = p.RunReply.unpack(client.request(p.Command.RUN, p.RUN_REQUEST.pack(1)))
    assert run.model_status == 0 and run.runs == 1
    return client.request(p.Command.GET_OUTPUT, p.GET_OUTPUT_REQUEST.pack(0, 0, x.nbytes))


# ---- the C server -------------------------------------------------------------------------


@pytest.mark.toolchain
def test_c_server_profile_of_a_profiled_model(start: Start) -> None:
    client = start("profiled_model", STACK)
    info = client.hello()
    assert info.features == {"PROFILE", "STACK"}
    result = client.run([np.array([[1, 2, 3, 126]], np.int8)])
    assert result.outputs[0].tolist() == [[4, 5, 6, 127]]
    ticks = client.profile()
    assert len(ticks) == 3 and sum(ticks) <= result.ticks
    # The first step may be at most the step count (then no ticks come back).
    with pytest.raises(ProtocolError, match="BAD_INDEX"):
        client.request(p.Command.PROFILE, p.PROFILE_REQUEST.pack(4))
    body = client.request(p.Command.PROFILE, struct.pack("<H", 3))
    assert p.ProfileReply.unpack(body) == p.ProfileReply(3, 3, ())


@pytest.mark.toolchain
def test_c_server_without_profile_or_stack_announces_neither(start: Start) -> None:
    client = start("add_one_model")
    assert client.hello().features == frozenset()
    with pytest.raises(ProtocolError, match="UNKNOWN_COMMAND"):
        client.request(p.Command.PROFILE, p.PROFILE_REQUEST.pack(0))
    assert client.run([np.zeros((1, 4), np.int8)]).outputs[0].tolist() == [[1, 1, 1, 1]]


@pytest.mark.toolchain
@pytest.mark.parametrize("version", [0x0100, 0x0101])
def test_older_hosts_get_their_layout_from_the_c_server(start: Start, version: int) -> None:
    client = start("profiled_model", STACK)
    body = client.request(p.Command.HELLO, p.HELLO_REQUEST.pack(version))
    tail = 4 if version == 0x0101 else 0
    assert len(body) == p.HelloReply.FORMAT.size + 1 + len("profiled") + tail
    reply = p.HelloReply.unpack(body, host_version=version)
    assert (reply.protocol_version, reply.name, reply.features) == (spec.VERSION, "profiled", None)
    assert reply.max_repeats == (10000 if tail else None)
    x = np.array([[0, 1, 2, 3]], np.int8)
    assert _old_session(client, x) == bytes([3, 4, 5, 6])
