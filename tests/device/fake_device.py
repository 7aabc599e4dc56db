"""An in-memory Python implementation of the device side of the aot protocol.

Used only in tests: it mirrors aot/runtime_c/src/server.c closely enough that the host
code (framing, client) can be tested without a toolchain, and corruption can be
injected at will in either direction. Which commands exist, their request sizes and the
feature bits come from the protocol's one table (aot/device/spec.py), as in the C server.
``version`` plays an older device (e.g. 0x0101: no features, no PROFILE).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from aot.device import protocol as p
from aot.device import spec
from aot.device.transport import Transport, TransportTimeout


@dataclass
class FakeTensor:
    name: str
    dtype: int
    shape: tuple[int, ...]

    @property
    def size_bytes(self) -> int:
        return int(np.prod(self.shape)) * p.DTYPES[self.dtype].itemsize


@dataclass
class FakeModel:
    name: str
    inputs: list[FakeTensor]
    outputs: list[FakeTensor]
    # Takes the input arrays, returns (status, output arrays).
    compute: Callable[[list[np.ndarray]], tuple[int, list[np.ndarray]]]


def add_one_model() -> FakeModel:
    """int8 [1, 4] -> int8 [1, 4], x + 1 saturating: the same as the C test fixture."""

    def compute(inputs: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
        out = np.minimum(inputs[0].astype(np.int16) + 1, 127).astype(np.int8)
        return 0, [out]

    t = FakeTensor("x", 0, (1, 4))
    return FakeModel("add_one", [t], [FakeTensor("y", 0, (1, 4))], compute)


@dataclass
class FakeDevice:
    model: FakeModel
    max_payload: int = 64
    max_repeats: int = 10000  # AOT_APP_MAX_REPEATS
    ticks_per_run: int = 1000
    ticks_per_second: int = 1_000_000
    version: int = p.PROTOCOL_VERSION
    # Ticks per executor step of every run, as a --profile build records them; None: not
    # profiled (no PROFILE feature).
    step_ticks: list[int] | None = None
    # Called by RESET for a model with operator state; None: stateless (no STATE feature).
    reset: Callable[[], None] | None = None
    # Where a failing run stops, as a model with accelerator steps records it; None: no
    # record (no FAULT feature).
    fault: p.RunFault | None = None
    # What each executor step writes for given inputs, as a --trace build returns it (one
    # list of tensors' bytes per step); None: not a trace build (no TRACE feature).
    steps: Callable[[list[np.ndarray]], list[list[bytes]]] | None = None
    _traced: list[bytes] | None = None
    _decoder: p.FrameDecoder = field(init=False)
    _inputs: list[bytearray] = field(init=False)
    _outputs: list[bytes] = field(init=False)
    frames_ok: int = 0
    frames_bad: int = 0
    runs: int = 0
    quit: bool = False

    def __post_init__(self) -> None:
        self._decoder = p.FrameDecoder(p.max_encoded_size(self.max_payload))
        self._inputs = [bytearray(t.size_bytes) for t in self.model.inputs]
        self._outputs = [bytes(t.size_bytes) for t in self.model.outputs]

    @property
    def features(self) -> frozenset[str]:
        """Like server.c: PROFILE for a profiled model, STACK (STATS measures it)."""
        if self.version & 0xFF < 2:
            return frozenset()
        return frozenset(
            {"STACK"}
            | ({"PROFILE"} if self.step_ticks else set())
            | ({"STATE"} if self.reset else set())
            | ({"FAULT"} if self.fault else set())
            | ({"TRACE"} if self.steps else set())
        )

    def feed(self, data: bytes) -> bytes:
        """Bytes from the host in, reply bytes out. After QUIT everything is ignored."""
        out = bytearray()
        if self.quit:
            return b""
        for item in self._decoder.feed(data):
            if isinstance(item, p.FrameError):
                self.frames_bad += 1
                detail = self.max_payload + p.FRAME_OVERHEAD if item.code == 0x0201 else 0
                reply = p.ErrorReply(item.code, detail).pack()
                out += p.Frame(p.FRAME_ERROR, item.seq, reply).encode()
                continue
            if len(item.payload) > self.max_payload:
                self.frames_bad += 1
                error = p.ErrorReply(0x0201, self.max_payload + p.FRAME_OVERHEAD).pack()
                out += p.Frame(p.FRAME_ERROR, item.seq, error).encode()
                continue
            self.frames_ok += 1
            out += p.Frame(item.type | p.REPLY_BIT, item.seq, self._handle(item)).encode()
            if self.quit:
                break
        return bytes(out)

    def _handle(self, frame: p.Frame) -> bytes:
        body = frame.payload
        entry = spec.BY_CODE.get(frame.type)
        if (
            entry is None
            or entry.since > self.version & 0xFF
            or (entry.feature is not None and entry.feature not in self.features)
        ):
            return p.ErrorReply(0x0206, frame.type).pack()
        if not spec.request_size_ok(entry, len(body)):
            limited = entry.name in ("GET_OUTPUT", "GET_TRACE")  # detail: the length limit
            detail = self.max_payload - 2 if limited else entry.request_bytes
            return p.ErrorReply(0x0207, detail).pack()
        command = p.Command(frame.type)
        if command is p.Command.HELLO:
            (version,) = p.HELLO_REQUEST.unpack(body)
            if version >> 8 != self.version >> 8:
                return p.ErrorReply(0x020A, self.version).pack()
            # Like server.c: a host gets the fields after the name its minor knows, and
            # this device only those of its own minor.
            minor = min(version & 0xFF, self.version & 0xFF)
            max_repeats = self.max_repeats if minor >= 1 else None
            features = spec.features_mask(self.features) if minor >= 2 else None
            required = sum(
                -(-t.size_bytes // 16) * 16 for t in self.model.inputs + self.model.outputs
            )
            return p.HelloReply(
                self.version,
                self.max_payload,
                0,
                self.ticks_per_second,
                required,
                required,
                128,
                64,
                len(self.model.inputs),
                len(self.model.outputs),
                self.model.name,
                max_repeats,
                features,
            ).pack()
        if command is p.Command.INFO:
            if body[0] > 1:
                return p.ErrorReply(0x0207, 2).pack()
            kind, index = p.INFO_REQUEST.unpack(body)
            tensors = self.model.inputs if kind == 0 else self.model.outputs
            if index >= len(tensors):
                return p.ErrorReply(0x0208, len(tensors)).pack()
            t = tensors[index]
            return p.TensorInfoReply(kind, index, t.dtype, t.size_bytes, t.shape, t.name).pack(
                self.max_payload
            )
        if command is p.Command.SET_INPUT:
            index, offset = p.SET_INPUT_HEAD.unpack_from(body)
            data = body[p.SET_INPUT_HEAD.size :]
            if index >= len(self._inputs):
                return p.ErrorReply(0x0208, len(self._inputs)).pack()
            size = len(self._inputs[index])
            if offset > size or len(data) > size - offset:
                return p.ErrorReply(0x0209, size).pack()
            self._inputs[index][offset : offset + len(data)] = data
            return p.ok()
        if command is p.Command.RUN:
            if p.RUN_REQUEST.unpack(body)[0] == 0:
                return p.ErrorReply(0x0207, 4).pack()
            (repeats,) = p.RUN_REQUEST.unpack(body)
            if repeats > self.max_repeats:
                return p.ErrorReply(0x0207, self.max_repeats).pack()
            arrays = self._arrays()
            status, outs = 0, []
            done = 0
            while done < repeats and status == 0:
                status, outs = self.model.compute(arrays)
                done += 1
            if status == 0:
                self._outputs = [np.ascontiguousarray(o).tobytes() for o in outs]
            self.runs += done
            t = self.ticks_per_run
            fault = self.fault if status != 0 else None
            return p.RunReply(status, done, t * done, t, t, self.ticks_per_second, fault).pack()
        if command is p.Command.GET_OUTPUT:
            if p.GET_OUTPUT_REQUEST.unpack(body)[2] > self.max_payload - 2:
                return p.ErrorReply(0x0207, self.max_payload - 2).pack()
            index, offset, length = p.GET_OUTPUT_REQUEST.unpack(body)
            if index >= len(self._outputs):
                return p.ErrorReply(0x0208, len(self._outputs)).pack()
            size = len(self._outputs[index])
            if offset > size or length > size - offset:
                return p.ErrorReply(0x0209, size).pack()
            return p.ok(self._outputs[index][offset : offset + length])
        if command is p.Command.STATS:
            return p.StatsReply(4096, 600, 200, self.runs, self.frames_ok, self.frames_bad).pack()
        if command is p.Command.PROFILE:
            assert self.step_ticks is not None
            (first,) = p.PROFILE_REQUEST.unpack(body)
            steps = len(self.step_ticks)
            if first > steps:
                return p.ErrorReply(0x0208, steps).pack()
            room = (self.max_payload - 2 - spec.PROFILE_REPLY_HEAD_BYTES) // 4
            chunk = tuple(self.step_ticks[first : first + room])
            return p.ProfileReply(steps, first, chunk).pack()
        if command is p.Command.TRACE:
            assert self.steps is not None
            (step,) = p.TRACE_REQUEST.unpack(body)
            written = self.steps(self._arrays())
            if step >= len(written):
                return p.ErrorReply(0x0208, len(written)).pack()
            self._traced = written[step]
            self.runs += 1
            return p.TraceReply(0, step, tuple(len(b) for b in self._traced)).pack()
        if command is p.Command.GET_TRACE:
            if p.GET_TRACE_REQUEST.unpack(body)[2] > self.max_payload - 2:
                return p.ErrorReply(0x0207, self.max_payload - 2).pack()
            index, offset, length = p.GET_TRACE_REQUEST.unpack(body)
            traced = self._traced or []
            if index >= len(traced):
                return p.ErrorReply(0x0208, len(traced)).pack()
            size = len(traced[index])
            if offset > size or length > size - offset:
                return p.ErrorReply(0x0209, size).pack()
            return p.ok(traced[index][offset : offset + length])
        if command is p.Command.RESET:
            assert self.reset is not None
            self.reset()
            return p.ok()
        self.quit = True
        return p.ok()

    def _arrays(self) -> list[np.ndarray]:
        return [
            np.frombuffer(bytes(b), p.DTYPES[t.dtype]).reshape(t.shape)
            for b, t in zip(self._inputs, self.model.inputs)
        ]


class FakeTransport(Transport):
    """Connects a DeviceClient to a FakeDevice in memory.

    ``to_device`` / ``to_host`` may rewrite the bytes of the next write in either
    direction (then reset to None), to inject corruption."""

    def __init__(self, device: FakeDevice) -> None:
        self.device = device
        self.name = "fake device"
        self._pending = bytearray()
        self.to_device: Callable[[bytes], bytes] | None = None
        self.to_host: Callable[[bytes], bytes] | None = None
        self.sent: list[bytes] = []

    def write(self, data: bytes) -> None:
        if self.to_device is not None:
            data, self.to_device = self.to_device(data), None
        self.sent.append(data)
        reply = self.device.feed(data)
        if reply and self.to_host is not None:
            reply, self.to_host = self.to_host(reply), None
        self._pending += reply

    def read(self, n: int, timeout: float) -> bytes:
        if not self._pending:
            raise self._timeout(timeout)  # nothing will ever arrive: fail at once
        data = bytes(self._pending[:n])
        del self._pending[:n]
        return data


__all__ = ["FakeDevice", "FakeModel", "FakeTensor", "FakeTransport", "TransportTimeout"]
