"""The aot serial protocol, host side: framing, CRC and message layouts.

Specified in ``docs/protocol.md``; the device side is ``aot/runtime_c/src/server.c`` (and,
for tests, ``tests/device/fake_device.py``). A frame is::

    type u8 | seq u8 | length u16 | payload[length] | crc32 u32      (little-endian)

COBS-encoded and followed by one ``0x00`` delimiter. Every reply payload starts with a
u16 status (an aot error code); a non-zero status is followed by exactly one u32 detail.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import astuple, dataclass
from enum import IntEnum
from typing import ClassVar

import numpy as np

from aot.device import spec
from aot.device.error_codes import describe_error
from aot.errors import ProtocolError

PROTOCOL_VERSION = spec.VERSION  # major << 8 | minor; a major mismatch is refused
DELIMITER = b"\x00"
HEADER_BYTES = 4
CRC_BYTES = 4
FRAME_OVERHEAD = HEADER_BYTES + CRC_BYTES
REPLY_BIT = spec.REPLY_BIT
FRAME_ERROR = spec.FRAME_ERROR  # reply type for a frame the device could not decode
MIN_MAX_PAYLOAD = 64  # the smallest payload limit a device may announce
MAX_MAX_PAYLOAD = 0xFFFF  # the length field is a u16
MAX_REPEATS = 0xFFFFFFFF  # RUN's repeats field is a u32; a 1.0 device announces no cap

_HEADER = struct.Struct("<BBH")
_CRC = struct.Struct("<I")
_STATUS = struct.Struct("<H")


# The command codes, from the one table (aot/device/spec.py).
Command = IntEnum("Command", {c.name: c.code for c in spec.COMMANDS})  # type: ignore[misc]


# Protocol dtype codes (aot/runtime_c/include/aot/model.h, aot_dtype_t) -> numpy, little-endian.
DTYPES: dict[int, np.dtype] = {
    0: np.dtype("int8"),
    1: np.dtype("uint8"),
    2: np.dtype("<i2"),
    3: np.dtype("<i4"),
    4: np.dtype("<f4"),
    5: np.dtype("<f8"),
}
DTYPE_CODES: dict[np.dtype, int] = {v: k for k, v in DTYPES.items()}


class FrameError(ProtocolError):
    """A frame that failed to decode; ``code`` is the aot error code naming the fault."""

    def __init__(self, message: str, code: int, seq: int = 0, raw: bytes = b"") -> None:
        super().__init__(message)
        self.code = code
        self.seq = seq
        self.raw = raw  # the bytes between delimiters, as received

    def text(self) -> str | None:
        """The block as text if it is printable: a port's abort message or a boot banner
        (ports print text between two delimiters so it reads as one bad frame)."""
        try:
            text = self.raw.decode("ascii").strip()
        except UnicodeDecodeError:
            return None
        return text if text and all(c.isprintable() or c in "\r\n\t" for c in text) else None


def crc32(data: bytes) -> int:
    """CRC-32/IEEE (zlib), the same as ``aot_crc32(0, data, len)`` on the device."""
    return zlib.crc32(data) & 0xFFFFFFFF


def cobs_encode(data: bytes) -> bytes:
    """COBS encoding without the delimiter (same block rules as aot/runtime_c/src/frame.c)."""
    out = bytearray(b"\x00")
    code_at = 0
    code = 1
    for byte in data:
        if byte == 0:
            out[code_at] = code
            code_at = len(out)
            out.append(0)
            code = 1
        else:
            out.append(byte)
            code += 1
            if code == 0xFF:
                out[code_at] = code
                code_at = len(out)
                out.append(0)
                code = 1
    out[code_at] = code
    return bytes(out)


def cobs_decode(data: bytes) -> bytes:
    """Inverse of :func:`cobs_encode`; raises :class:`FrameError` on a malformed block."""
    out = bytearray()
    i = 0
    while i < len(data):
        code = data[i]
        i += 1
        block = data[i : i + code - 1]
        if code == 0 or len(block) != code - 1 or 0 in block:
            raise FrameError(
                f"corrupt frame: bad COBS encoding at byte {i - 1} of {len(data)}", 0x0202
            )
        out += block
        i += code - 1
        if code != 0xFF and i < len(data):
            out.append(0)
    return bytes(out)


@dataclass(frozen=True)
class Frame:
    type: int
    seq: int
    payload: bytes

    def encode(self) -> bytes:
        """The bytes on the wire, delimiter included."""
        if not 0 <= len(self.payload) <= 0xFFFF:
            raise ValueError(f"payload of {len(self.payload)} bytes does not fit a frame")
        body = _HEADER.pack(self.type, self.seq, len(self.payload)) + self.payload
        return cobs_encode(body + _CRC.pack(crc32(body))) + DELIMITER


def decode_frame(encoded: bytes) -> Frame:
    """Decodes one frame (delimiter removed); the error names what was corrupt."""
    raw = cobs_decode(encoded)
    if len(raw) < FRAME_OVERHEAD:
        raise FrameError(
            f"corrupt frame: {len(raw)} bytes after decoding, expected at least "
            f"{FRAME_OVERHEAD} (header and CRC)",
            0x0203,
        )
    type_, seq, length = _HEADER.unpack_from(raw)
    if length + FRAME_OVERHEAD != len(raw):
        raise FrameError(
            f"corrupt frame: length field says {length} payload bytes, frame holds "
            f"{len(raw) - FRAME_OVERHEAD}",
            0x0204,
            seq,
        )
    (crc,) = _CRC.unpack_from(raw, len(raw) - CRC_BYTES)
    actual = crc32(raw[: len(raw) - CRC_BYTES])
    if crc != actual:
        raise FrameError(
            f"corrupt frame: CRC-32 is {crc:#010x}, computed {actual:#010x}", 0x0205, seq
        )
    return Frame(type_, seq, raw[HEADER_BYTES : HEADER_BYTES + length])


class FrameDecoder:
    """Splits a byte stream into frames at delimiters.

    ``feed`` returns, in order, a :class:`Frame` or a :class:`FrameError` for each
    delimiter-terminated block; empty blocks (resynchronising delimiters) are skipped and
    a block longer than ``max_encoded`` is reported once its delimiter arrives, so memory
    stays bounded and a corrupt stream never stalls the reader.
    """

    def __init__(self, max_encoded: int = 1 << 20) -> None:
        self.max_encoded = max_encoded
        self._buf = bytearray()
        self._overflow = False

    def feed(self, data: bytes) -> list[Frame | FrameError]:
        results: list[Frame | FrameError] = []
        start = 0
        while True:
            end = data.find(0, start)
            chunk = data[start:] if end < 0 else data[start:end]
            if len(self._buf) + len(chunk) > self.max_encoded:
                self._overflow = True
                self._buf.clear()
            else:
                self._buf += chunk
            if end < 0:
                return results
            start = end + 1
            if self._overflow:
                results.append(
                    FrameError(
                        f"corrupt frame: no delimiter within {self.max_encoded} bytes", 0x0201
                    )
                )
            elif self._buf:
                try:
                    results.append(decode_frame(bytes(self._buf)))
                except FrameError as exc:
                    exc.raw = bytes(self._buf)
                    results.append(exc)
            self._buf.clear()
            self._overflow = False

    @property
    def pending(self) -> int:
        """Bytes received after the last delimiter."""
        return len(self._buf)


def max_encoded_size(max_payload: int) -> int:
    """Largest COBS block (no delimiter) for a frame with ``max_payload`` payload bytes."""
    n = max_payload + FRAME_OVERHEAD
    return n + n // 254 + 1


# ---- messages ------------------------------------------------------------------------


def split_status(payload: bytes) -> tuple[int, bytes]:
    """(status, rest) of a reply payload."""
    if len(payload) < _STATUS.size:
        raise ProtocolError(f"reply payload of {len(payload)} bytes has no status field")
    return _STATUS.unpack_from(payload)[0], payload[_STATUS.size :]


def ok(body: bytes = b"") -> bytes:
    """A successful reply payload."""
    return _STATUS.pack(0) + body


def _unpack(fmt: struct.Struct, body: bytes, what: str) -> tuple:
    if len(body) < fmt.size:
        raise ProtocolError(
            f"{what} reply too short: {len(body)} bytes, expected at least {fmt.size}"
        )
    return fmt.unpack_from(body)


def _unpack_name(body: bytes, offset: int, what: str, tail: int | None = None) -> str:
    """The length-prefixed name at ``offset``: the last field, or (``tail``) followed by
    at least that many bytes."""
    end = offset + 1 + body[offset] if offset < len(body) else len(body) + 1
    if end > len(body) or (end != len(body) if tail is None else end + tail > len(body)):
        raise ProtocolError(f"{what} reply: name field does not match the payload size")
    return body[offset + 1 : end].decode("utf-8", errors="replace")


def _pack_name(name: str, room: int) -> bytes:
    data = name.encode("utf-8")[: min(room, 255)]
    return bytes([len(data)]) + data


@dataclass(frozen=True)
class ErrorReply:
    """A reply with a non-zero status: the aot error code and one detail word."""

    FORMAT: ClassVar[struct.Struct] = struct.Struct("<HI")
    status: int
    detail: int

    def pack(self) -> bytes:
        return self.FORMAT.pack(self.status, self.detail)

    @classmethod
    def unpack(cls, payload: bytes) -> ErrorReply:
        return cls(*_unpack(cls.FORMAT, payload, "error"))

    def describe(self) -> str:
        return f"{describe_error(self.status)} (detail {self.detail})"


@dataclass(frozen=True)
class HelloReply:
    """The HELLO reply. Fields after the name come in minor versions, and only in replies
    to a host whose version knows them (a 1.0 host reads the name up to the payload's
    end): ``max_repeats`` since 1.1, ``features`` (bit set of spec.FEATURES) since 1.2."""

    FORMAT: ClassVar[struct.Struct] = struct.Struct("<HHHIIIIIBB")
    TAIL: ClassVar[struct.Struct] = struct.Struct("<I")  # max_repeats
    FEATURES: ClassVar[struct.Struct] = struct.Struct("<I")
    protocol_version: int
    max_payload: int
    setup_status: int
    ticks_per_second: int
    io_arena_bytes: int
    io_required_bytes: int
    workspace_bytes: int
    constants_bytes: int
    num_inputs: int
    num_outputs: int
    name: str
    max_repeats: int | None = None  # None: a 1.0 layout, no cap announced
    features: int | None = None  # None: a 1.0 or 1.1 layout, no features announced

    def pack(self) -> bytes:
        fields = (
            self.protocol_version,
            self.max_payload,
            self.setup_status,
            self.ticks_per_second,
            self.io_arena_bytes,
            self.io_required_bytes,
            self.workspace_bytes,
            self.constants_bytes,
            self.num_inputs,
            self.num_outputs,
        )
        tail = b"" if self.max_repeats is None else self.TAIL.pack(self.max_repeats)
        if self.features is not None:
            tail += self.FEATURES.pack(self.features)
        room = self.max_payload - _STATUS.size - self.FORMAT.size - 1 - len(tail)
        return ok(self.FORMAT.pack(*fields) + _pack_name(self.name, room) + tail)

    @classmethod
    def unpack(cls, body: bytes, host_version: int = PROTOCOL_VERSION) -> HelloReply:
        """The reply as a host of ``host_version`` reads it: the device sent the fields
        both minors know (``host_version`` lets tests play an older host)."""
        fields = _unpack(cls.FORMAT, body, "HELLO")
        minor = min(fields[0] & 0xFF, host_version & 0xFF)
        if minor == 0:  # a 1.0 device or host: the name ends the payload
            return cls(*fields, _unpack_name(body, cls.FORMAT.size, "HELLO"))
        # Fields after the name; bytes after those are a later minor's additions.
        tail = cls.TAIL.size + (cls.FEATURES.size if minor >= 2 else 0)
        name = _unpack_name(body, cls.FORMAT.size, "HELLO", tail)
        at = cls.FORMAT.size + 1 + body[cls.FORMAT.size]
        (max_repeats,) = cls.TAIL.unpack_from(body, at)
        features = None
        if minor >= 2:
            (features,) = cls.FEATURES.unpack_from(body, at + cls.TAIL.size)
        return cls(*fields, name, max_repeats, features)


@dataclass(frozen=True)
class TensorInfoReply:
    FORMAT: ClassVar[struct.Struct] = struct.Struct("<BBBBI")
    kind: int  # 0 input, 1 output
    index: int
    dtype: int
    size_bytes: int
    shape: tuple[int, ...]
    name: str

    def pack(self, max_payload: int) -> bytes:
        head = self.FORMAT.pack(self.kind, self.index, self.dtype, len(self.shape), self.size_bytes)
        dims = struct.pack(f"<{len(self.shape)}i", *self.shape)
        room = max_payload - _STATUS.size - len(head) - len(dims) - 1
        return ok(head + dims + _pack_name(self.name, room))

    @classmethod
    def unpack(cls, body: bytes) -> TensorInfoReply:
        kind, index, dtype, ndim, size = _unpack(cls.FORMAT, body, "INFO")
        dims_at = cls.FORMAT.size
        if len(body) < dims_at + 4 * ndim:
            raise ProtocolError(f"INFO reply too short for {ndim} dimensions")
        shape = struct.unpack_from(f"<{ndim}i", body, dims_at)
        name = _unpack_name(body, dims_at + 4 * ndim, "INFO")
        return cls(kind, index, dtype, size, tuple(shape), name)


FAULT_NONE = 0xFFFFFFFF  # a fault record's step or descriptor is unknown (AOT_FAULT_NONE)


@dataclass(frozen=True)
class RunFault:
    """Where a failing run stopped (feature FAULT; ``struct aot_fault`` of aot/model.h):
    the executor step, the accelerator's descriptor in it, the operand whose address
    failed the region check (``aot_fault_operand_t``, 0 none), that address and the
    region the accelerator reaches."""

    FORMAT: ClassVar[struct.Struct] = struct.Struct("<IIIQQI")
    step: int
    descriptor: int
    operand: int
    address: int
    region_base: int
    region_size: int


@dataclass(frozen=True)
class RunReply:
    FORMAT: ClassVar[struct.Struct] = struct.Struct("<iIQIII")
    model_status: int
    runs: int
    ticks_total: int
    ticks_min: int
    ticks_max: int
    ticks_per_second: int
    fault: RunFault | None = None  # a failing run on a device with the FAULT feature

    def pack(self) -> bytes:
        body = self.FORMAT.pack(
            self.model_status,
            self.runs,
            self.ticks_total,
            self.ticks_min,
            self.ticks_max,
            self.ticks_per_second,
        )
        if self.fault is not None:
            body += RunFault.FORMAT.pack(*astuple(self.fault))
        return ok(body)

    @classmethod
    def unpack(cls, body: bytes, faults: bool = False) -> RunReply:
        """``faults``: the device announced FAULT, so a failing run's reply ends with the
        record (a device without it sends the fields before, which is all an older host
        reads)."""
        fields = _unpack(cls.FORMAT, body, "RUN")
        if not faults or fields[0] == 0:
            return cls(*fields)
        size = cls.FORMAT.size + RunFault.FORMAT.size
        if len(body) < size:
            raise ProtocolError(
                f"RUN reply of a failed run too short for its fault record: {len(body)} "
                f"bytes, expected at least {size}"
            )
        return cls(*fields, fault=RunFault(*RunFault.FORMAT.unpack_from(body, cls.FORMAT.size)))


@dataclass(frozen=True)
class StatsReply:
    FORMAT: ClassVar[struct.Struct] = struct.Struct("<IIIIII")
    stack_painted_bytes: int
    stack_peak_bytes: int
    stack_at_run_bytes: int
    runs: int
    frames_ok: int
    frames_bad: int

    def pack(self) -> bytes:
        return ok(
            self.FORMAT.pack(
                self.stack_painted_bytes,
                self.stack_peak_bytes,
                self.stack_at_run_bytes,
                self.runs,
                self.frames_ok,
                self.frames_bad,
            )
        )

    @classmethod
    def unpack(cls, body: bytes) -> StatsReply:
        return cls(*_unpack(cls.FORMAT, body, "STATS"))


@dataclass(frozen=True)
class ProfileReply:
    """PROFILE (since 1.2, feature PROFILE): ticks of executor steps ``first`` ..
    ``first + len(ticks)`` of the last run, out of ``steps``."""

    FORMAT: ClassVar[struct.Struct] = struct.Struct("<HHH")  # steps, first, count
    steps: int
    first: int
    ticks: tuple[int, ...]

    def pack(self) -> bytes:
        head = self.FORMAT.pack(self.steps, self.first, len(self.ticks))
        return ok(head + struct.pack(f"<{len(self.ticks)}I", *self.ticks))

    @classmethod
    def unpack(cls, body: bytes) -> ProfileReply:
        steps, first, count = _unpack(cls.FORMAT, body, "PROFILE")
        if len(body) != cls.FORMAT.size + 4 * count or first + count > steps:
            raise ProtocolError(
                f"PROFILE reply of {len(body)} bytes does not hold {count} step(s) from "
                f"{first} of {steps}"
            )
        return cls(steps, first, struct.unpack_from(f"<{count}I", body, cls.FORMAT.size))


@dataclass(frozen=True)
class TraceReply:
    """TRACE (feature TRACE): one run that stopped after executor step ``stopped``
    (``spec.TRACE_NOT_STOPPED``: it did not, e.g. the model failed first), and the size
    in bytes of each tensor that step wrote."""

    FORMAT: ClassVar[struct.Struct] = struct.Struct("<iHB")  # model_status, stopped, count
    model_status: int
    stopped: int
    sizes: tuple[int, ...]

    def pack(self) -> bytes:
        head = self.FORMAT.pack(self.model_status, self.stopped, len(self.sizes))
        return ok(head + struct.pack(f"<{len(self.sizes)}I", *self.sizes))

    @classmethod
    def unpack(cls, body: bytes) -> TraceReply:
        model_status, stopped, count = _unpack(cls.FORMAT, body, "TRACE")
        if len(body) != cls.FORMAT.size + 4 * count:
            raise ProtocolError(
                f"TRACE reply of {len(body)} bytes does not hold {count} output size(s)"
            )
        return cls(model_status, stopped, struct.unpack_from(f"<{count}I", body, cls.FORMAT.size))


# Request payloads (host -> device). The fake device parses them with the same formats.
HELLO_REQUEST = struct.Struct("<H")  # host protocol version
INFO_REQUEST = struct.Struct("<BB")  # kind (0 input, 1 output), index
SET_INPUT_HEAD = struct.Struct("<BI")  # index, offset; the data follows
RUN_REQUEST = struct.Struct("<I")  # repeats >= 1
GET_OUTPUT_REQUEST = struct.Struct("<BIH")  # index, offset, length
PROFILE_REQUEST = struct.Struct("<H")  # first step
TRACE_REQUEST = struct.Struct("<H")  # the step to stop after
GET_TRACE_REQUEST = struct.Struct("<BIH")  # output of the traced step, offset, length
