"""Framing, COBS and CRC of the serial protocol, and every kind of corrupt frame."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pytest

from aot.device import protocol as p
from aot.errors import ProtocolError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "encoded"),
    [
        (b"", b"\x01"),
        (b"\x00", b"\x01\x01"),
        (b"\x00\x00", b"\x01\x01\x01"),
        (b"\x11\x22\x00\x33", b"\x03\x11\x22\x02\x33"),
        (b"\x11\x00\x00\x00", b"\x02\x11\x01\x01\x01"),
        (bytes(range(1, 255)), b"\xff" + bytes(range(1, 255)) + b"\x01"),
        (bytes(range(1, 256)), b"\xff" + bytes(range(1, 255)) + b"\x02\xff"),
    ],
)
def test_cobs_known_vectors(raw: bytes, encoded: bytes) -> None:
    assert p.cobs_encode(raw) == encoded
    assert p.cobs_decode(encoded) == raw


def test_cobs_round_trip_random() -> None:
    rng = random.Random(1)
    for n in [0, 1, 253, 254, 255, 508, 1000]:
        for zero_rate in (0.0, 0.05, 0.5):
            data = bytes(0 if rng.random() < zero_rate else rng.randrange(1, 256) for _ in range(n))
            encoded = p.cobs_encode(data)
            assert 0 not in encoded
            assert len(encoded) <= n + n // 254 + 1
            assert p.cobs_decode(encoded) == data


def test_crc_is_zlib_crc32() -> None:
    assert p.crc32(b"123456789") == 0xCBF43926  # the CRC-32/IEEE check value
    assert p.crc32(b"abc") == zlib.crc32(b"abc")


def test_frame_round_trip() -> None:
    frame = p.Frame(0x04, 7, b"\x00\x01\x02\x00" * 100)
    wire = frame.encode()
    assert wire.endswith(b"\x00") and 0 not in wire[:-1]
    assert p.decode_frame(wire[:-1]) == frame


def test_frame_layout_is_the_documented_one() -> None:
    # type, seq, length LE, payload, CRC-32 LE over everything before it.
    raw = p.cobs_decode(p.Frame(0x83, 0x42, b"\xaa\xbb").encode()[:-1])
    assert raw[:6] == b"\x83\x42\x02\x00\xaa\xbb"
    assert raw[6:] == zlib.crc32(raw[:6]).to_bytes(4, "little")


def _decode(wire: bytes) -> list[p.Frame | p.FrameError]:
    return p.FrameDecoder(p.max_encoded_size(64)).feed(wire)


def test_every_single_byte_flip_is_detected() -> None:
    wire = p.Frame(0x03, 9, bytes(range(40))).encode()
    for i in range(len(wire) - 1):
        for bit in (0x01, 0x80):
            corrupt = bytearray(wire)
            corrupt[i] ^= bit
            results = _decode(bytes(corrupt))
            # A flipped byte may become a delimiter and split the frame: every piece
            # must still be reported as corrupt, none accepted.
            assert results, (i, bit)
            assert all(isinstance(r, p.FrameError) for r in results), (i, bit)


@pytest.mark.parametrize("cut", [1, 2, 5, 9, 20])
def test_truncated_frame_is_reported(cut: int) -> None:
    wire = p.Frame(0x01, 1, bytes(range(1, 30))).encode()
    truncated = wire[: len(wire) - 1 - cut] + b"\x00"
    (result,) = _decode(truncated)
    assert isinstance(result, p.FrameError)
    assert result.code in (0x0202, 0x0203, 0x0204, 0x0205)


@pytest.mark.parametrize(
    ("raw", "code", "words"),
    [
        (b"\x05\x01\x02", 0x0202, "COBS"),  # block claims more bytes than present
        (p.cobs_encode(b"\x01\x02\x03"), 0x0203, "at least 8"),
        (p.cobs_encode(b"\x01\x02\x09\x00" + b"\x00" * 4), 0x0204, "length field"),
        (p.cobs_encode(b"\x01\x02\x00\x00" + b"\xde\xad\xbe\xef"), 0x0205, "CRC"),
    ],
)
def test_corruption_is_named(raw: bytes, code: int, words: str) -> None:
    with pytest.raises(p.FrameError, match=words) as info:
        p.decode_frame(raw)
    assert info.value.code == code
    assert isinstance(info.value, ProtocolError)


def test_garbage_between_frames_does_not_lose_frames() -> None:
    a = p.Frame(0x01, 1, b"one").encode()
    b = p.Frame(0x02, 2, b"two").encode()
    results = _decode(b"\x00\x00" + a + b"\x13\x37garbage\x00" + b"\x00" + b)
    assert [type(r) for r in results] == [p.Frame, p.FrameError, p.Frame]
    assert results[0].payload == b"one" and results[2].payload == b"two"


def test_over_long_frame_is_reported_once_and_bounded() -> None:
    decoder = p.FrameDecoder(p.max_encoded_size(64))
    assert decoder.feed(b"\x55" * 10_000) == []
    assert decoder.pending <= decoder.max_encoded
    (result,) = decoder.feed(b"\x00")
    assert isinstance(result, p.FrameError) and result.code == 0x0201
    good = p.Frame(0x06, 3, b"").encode()
    assert decoder.feed(good) == [p.Frame(0x06, 3, b"")]


def test_frames_split_across_reads() -> None:
    wire = p.Frame(0x05, 200, bytes(range(256)) * 2).encode() * 3
    decoder = p.FrameDecoder()
    results = []
    for i in range(0, len(wire), 7):
        results += decoder.feed(wire[i : i + 7])
    assert len(results) == 3 and all(isinstance(r, p.Frame) for r in results)


def test_reply_structs_round_trip() -> None:
    hello = p.HelloReply(0x0100, 512, 0, 1000, 4096, 32, 100, 200, 2, 1, "model")
    status, body = p.split_status(hello.pack())
    assert status == 0 and p.HelloReply.unpack(body) == hello
    info = p.TensorInfoReply(1, 0, 4, 24, (1, 2, 3), "out")
    assert p.TensorInfoReply.unpack(p.split_status(info.pack(512))[1]) == info
    run = p.RunReply(0, 10, 2**40, 3, 9, 25_000_000)
    assert p.RunReply.unpack(p.split_status(run.pack())[1]) == run
    err = p.ErrorReply(0x0205, 7)
    assert p.ErrorReply.unpack(err.pack()) == err
    assert "AOT_ERR_PROTOCOL_BAD_CRC" in err.describe()


def test_long_names_are_truncated_to_fit_the_payload() -> None:
    hello = p.HelloReply(0x0100, 64, 0, 0, 0, 0, 0, 0, 1, 1, "n" * 300)
    assert len(hello.pack()) <= 64
    assert (
        p.HelloReply.unpack(p.split_status(hello.pack())[1]).name == "n" * 33
    )  # 64 - status 2 - fields 28 - length 1


def test_short_reply_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="RUN reply too short"):
        p.RunReply.unpack(b"\x00" * 5)


def test_the_example_in_docs_is_right() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    wire = p.Frame(p.Command.HELLO, 1, p.HELLO_REQUEST.pack(p.PROTOCOL_VERSION)).encode()
    assert f"`{wire.hex(' ')}`" in " ".join(doc.split())


def test_hello_max_repeats_follows_the_name_from_1_1_on() -> None:
    fields = (64, 0, 0, 0, 0, 0, 0, 1, 1)
    # A 1.0 device: the name ends the payload, no cap is announced.
    old = p.split_status(p.HelloReply(0x0100, *fields, "m").pack())[1]
    assert old.endswith(b"\x01m") and p.HelloReply.unpack(old).max_repeats is None
    # 1.1: max_repeats after the name, which is cut 4 bytes shorter to make room.
    new = p.HelloReply(0x0101, *fields, "n" * 300, max_repeats=7)
    assert len(new.pack()) == 64
    assert p.HelloReply.unpack(p.split_status(new.pack())[1]) == new.__class__(
        0x0101, *fields, "n" * 29, max_repeats=7
    )
    # A later minor may append more: a host reads its fields and ignores the rest.
    later = p.HelloReply(0x0103, *fields, "m", max_repeats=9, features=3).pack()
    reply = p.HelloReply.unpack(p.split_status(later)[1] + b"\xaa\xbb")
    assert (reply.max_repeats, reply.features) == (9, 3)
    with pytest.raises(ProtocolError, match="name field does not match"):
        p.HelloReply.unpack(p.split_status(p.HelloReply(0x0101, *fields, "m").pack())[1])
