"""DeviceClient: drives a device running the aot server (board, QEMU or host build)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from aot.device import protocol as p
from aot.device import spec
from aot.device.error_codes import describe_error
from aot.device.fault import FaultContext, describe_fault
from aot.device.transport import Transport, TransportTimeout
from aot.errors import ConfigError, DeviceError, ProtocolError

DEFAULT_TIMEOUT = 5.0
# Longest wait a user may ask for: beyond it select() and friends overflow, and nobody
# means a month.
MAX_TIMEOUT = 30 * 24 * 3600.0


def check_timeout(seconds: float, what: str = "timeout") -> float:
    """``seconds`` if it is a usable wait (finite, positive), else a ConfigError."""
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0:
        shown = f"{seconds:g}" if isinstance(seconds, (int, float)) else repr(seconds)
        raise ConfigError(f"{what} must be a positive number of seconds, got {shown}")
    if seconds > MAX_TIMEOUT:
        raise ConfigError(f"{what} must be at most {MAX_TIMEOUT:g} s (30 days), got {seconds:g}")
    return float(seconds)


def check_repeats(repeats: int, limit: int = p.MAX_REPEATS, what: str = "repeats") -> int:
    """``repeats`` if it is a whole number in 1..limit, else a ConfigError."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= limit:
        raise ConfigError(f"{what} must be a whole number from 1 to {limit}, got {repeats}")
    return repeats


class DevicePrintedError(DeviceError):
    """The device sent text (an abort message, a boot banner) instead of a reply."""

    def __init__(self, message: str, text: str) -> None:
        super().__init__(message)
        self.text = text


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    size_bytes: int

    def describe(self) -> str:
        return f"{self.dtype.name} array of shape {self.shape}"


@dataclass(frozen=True)
class ModelInfo:
    """What the device reported in HELLO and INFO."""

    name: str
    protocol_version: int
    max_payload: int
    ticks_per_second: int  # 0: the port has no timer
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    workspace_bytes: int
    constants_bytes: int
    io_arena_bytes: int
    io_required_bytes: int
    setup_status: int
    max_repeats: int = p.MAX_REPEATS  # runs one RUN may ask for (a 1.0 device: no cap)
    features: frozenset[str] = frozenset()  # spec.FEATURES names (a 1.0/1.1 device: none)


@dataclass(frozen=True)
class RunResult:
    outputs: list[np.ndarray]
    ticks: int  # summed over all runs
    ticks_per_second: int
    status: int  # the model's return code, 0 = AOT_OK
    runs: int = 1
    ticks_min: int = 0
    ticks_max: int = 0

    @property
    def seconds_per_run(self) -> float | None:
        """Mean time of one inference, or None if the device has no timer."""
        if not self.ticks_per_second or not self.runs:
            return None
        return self.ticks / self.ticks_per_second / self.runs


@dataclass(frozen=True)
class DeviceStats:
    stack_painted_bytes: int  # 0: the stack was not measured
    stack_peak_bytes: int  # deepest use below main's frame
    stack_at_run_bytes: int  # depth of the server when it calls the model
    runs: int
    frames_ok: int
    frames_bad: int

    @property
    def model_stack_bytes(self) -> int | None:
        """Stack used by the model itself (peak minus the server's depth at the call)."""
        if not self.stack_painted_bytes:
            return None
        return max(self.stack_peak_bytes - self.stack_at_run_bytes, 0)

    @property
    def stack_exhausted(self) -> bool:
        """The whole painted region was used: the real peak may be higher (overflow)."""
        return bool(self.stack_painted_bytes) and self.stack_peak_bytes >= self.stack_painted_bytes


class DeviceClient:
    """One session with a device. Call :meth:`hello` first (``run`` does it if needed)."""

    def __init__(self, transport: Transport, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.transport = transport
        self.timeout = check_timeout(timeout)
        self.info: ModelInfo | None = None
        # Step labels and memory names for a fault (aot.runner.connect sets them).
        self.fault_context: FaultContext | None = None
        self._seq = 0
        self._decoder = p.FrameDecoder()
        self._frames: list[p.Frame | p.FrameError] = []

    # ---- session ------------------------------------------------------------------

    def hello(self) -> ModelInfo:
        """Starts the session: checks versions, reads the model's tensors."""
        # Drop what an earlier session left on the line, then send a lone delimiter to
        # end any partial frame the device holds.
        self.transport.discard_input()
        self._decoder = p.FrameDecoder()
        self._frames.clear()
        self.transport.write(p.DELIMITER)
        request = p.HELLO_REQUEST.pack(p.PROTOCOL_VERSION)
        deadline = time.monotonic() + self.timeout
        try:
            body = self.request(p.Command.HELLO, request)
        except (ProtocolError, DevicePrintedError):
            # Line noise at connect time (a half-sent frame, a boot message) costs one
            # retry within the same deadline; a second failure is real and reported.
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise
            body = self.request(p.Command.HELLO, request, timeout=remaining)
        hello = p.HelloReply.unpack(body)
        if hello.protocol_version >> 8 != p.PROTOCOL_VERSION >> 8:
            raise ProtocolError(
                f"{self.transport.name} speaks protocol {_version(hello.protocol_version)}, "
                f"this aot speaks {_version(p.PROTOCOL_VERSION)}; rebuild the firmware"
            )
        if hello.max_payload < p.MIN_MAX_PAYLOAD:
            raise ProtocolError(
                f"{self.transport.name} announced a maximum payload of {hello.max_payload} "
                f"bytes, expected at least {p.MIN_MAX_PAYLOAD}"
            )
        self._decoder.max_encoded = p.max_encoded_size(hello.max_payload)
        inputs = tuple(self._tensor_info(0, i) for i in range(hello.num_inputs))
        outputs = tuple(self._tensor_info(1, i) for i in range(hello.num_outputs))
        self.info = ModelInfo(
            name=hello.name,
            protocol_version=hello.protocol_version,
            max_payload=hello.max_payload,
            ticks_per_second=hello.ticks_per_second,
            inputs=inputs,
            outputs=outputs,
            workspace_bytes=hello.workspace_bytes,
            constants_bytes=hello.constants_bytes,
            io_arena_bytes=hello.io_arena_bytes,
            io_required_bytes=hello.io_required_bytes,
            setup_status=hello.setup_status,
            max_repeats=p.MAX_REPEATS if hello.max_repeats is None else hello.max_repeats,
            features=spec.feature_names(hello.features or 0),
        )
        if hello.setup_status:
            hint = ""
            if hello.io_required_bytes > hello.io_arena_bytes:
                hint = (
                    f"; its I/O arena is {hello.io_arena_bytes} bytes but model "
                    f"'{hello.name}' needs {hello.io_required_bytes}: rebuild with "
                    f"-DAOT_APP_IO_BYTES={hello.io_required_bytes}"
                )
            raise DeviceError(
                f"{self.transport.name} cannot run its model: "
                f"{describe_error(hello.setup_status)}{hint}"
            )
        return self.info

    def run(
        self,
        inputs: list[np.ndarray],
        repeats: int = 1,
        timeout: float | None = None,
        check: bool = True,
    ) -> RunResult:
        """Sends the inputs, runs the model ``repeats`` times, fetches the outputs.

        With ``check`` a non-zero model status raises DeviceError; without, the result
        carries the status (and no outputs)."""
        check_repeats(repeats)
        if timeout is not None:
            check_timeout(timeout)
        info = self.check_repeat_cap(repeats)
        data = self._check_inputs(info, inputs)
        for index, blob in enumerate(data):
            self.set_input(index, blob)
        reply = p.RunReply.unpack(
            self.request(p.Command.RUN, p.RUN_REQUEST.pack(repeats), timeout=timeout),
            faults="FAULT" in info.features,
        )
        outputs: list[np.ndarray] = []
        if reply.model_status == 0:
            outputs = [self.get_output(i) for i in range(len(info.outputs))]
        elif check:
            raise DeviceError(self._failure(info, reply, f"in run {reply.runs} of {repeats}"))
        return RunResult(
            outputs=outputs,
            ticks=reply.ticks_total,
            ticks_per_second=reply.ticks_per_second,
            status=reply.model_status,
            runs=reply.runs,
            ticks_min=reply.ticks_min,
            ticks_max=reply.ticks_max,
        )

    def check_repeat_cap(self, repeats: int) -> ModelInfo:
        """The device's INFO, once ``repeats`` is checked against its AOT_APP_MAX_REPEATS."""
        info = self.info or self.hello()
        if repeats > info.max_repeats:
            raise ConfigError(
                f"{self.transport.name} runs model '{info.name}' at most {info.max_repeats} "
                f"times per request (AOT_APP_MAX_REPEATS), {repeats} asked; ask for at most "
                f"{info.max_repeats} or rebuild the firmware with "
                f"-DAOT_APP_MAX_REPEATS={repeats}"
            )
        return info

    def run_timed(self, timeout: float | None = None) -> int:
        """One more inference on the inputs already set, for its time: the ticks it took
        (outputs are not fetched; a failure raises DeviceError)."""
        info = self._require_info()
        reply = p.RunReply.unpack(
            self.request(p.Command.RUN, p.RUN_REQUEST.pack(1), timeout=timeout),
            faults="FAULT" in info.features,
        )
        if reply.model_status != 0:
            raise DeviceError(self._failure(info, reply, "in a repeated run"))
        return int(reply.ticks_total)

    def _failure(self, info: ModelInfo, reply: p.RunReply, when: str) -> str:
        """The line for a failed run; with a fault record it says where the model stopped
        (the device, the step and the operand name the failure without the port)."""
        if reply.fault is None:
            return (
                f"model '{info.name}' on {self.transport.name} failed {when}: "
                f"{describe_error(reply.model_status)}"
            )
        where = describe_fault(reply.model_status, reply.fault, self.fault_context)
        joint = ": " if reply.fault.step == p.FAULT_NONE else " "  # "at step N ...: ..."
        return f"model '{info.name}' failed {when}{joint}{where}"

    def set_input(self, index: int, data: bytes) -> None:
        """Writes raw input bytes in chunks that fit a frame."""
        info = self._require_info()
        chunk = info.max_payload - p.SET_INPUT_HEAD.size
        for offset in range(0, max(len(data), 1), chunk):
            head = p.SET_INPUT_HEAD.pack(index, offset)
            self.request(p.Command.SET_INPUT, head + data[offset : offset + chunk])

    def get_output(self, index: int) -> np.ndarray:
        """Reads output ``index`` in chunks and returns it with its dtype and shape."""
        info = self._require_info()
        tensor = info.outputs[index]
        data = self._read_chunks(
            p.Command.GET_OUTPUT, p.GET_OUTPUT_REQUEST, index, tensor.size_bytes
        )
        array = np.frombuffer(data, dtype=tensor.dtype)
        if array.size == math.prod(tensor.shape):
            array = array.reshape(tensor.shape)
        return array

    @property
    def supports_profile(self) -> bool:
        """The firmware records per-step ticks (built with ``aot build --profile``)."""
        return "PROFILE" in self._require_info().features

    def profile(self) -> list[int]:
        """Ticks of each executor step in the last run, in step order."""
        info = self._require_info()
        if "PROFILE" not in info.features:
            raise DeviceError(
                f"{self.transport.name} does not record per-operator ticks: rebuild the "
                "folder with 'aot build --profile'"
            )
        ticks: list[int] = []
        while True:
            reply = p.ProfileReply.unpack(
                self.request(p.Command.PROFILE, p.PROFILE_REQUEST.pack(len(ticks)))
            )
            if reply.first != len(ticks):
                raise ProtocolError(
                    f"PROFILE reply from {self.transport.name} starts at step {reply.first}, "
                    f"asked for {len(ticks)}"
                )
            ticks += reply.ticks
            if len(ticks) >= reply.steps:
                return ticks
            if not reply.ticks:
                raise ProtocolError(
                    f"PROFILE reply from {self.transport.name} holds no steps at {len(ticks)} "
                    f"of {reply.steps}"
                )

    @property
    def supports_trace(self) -> bool:
        """The firmware can stop after any step (built with ``aot build --trace``)."""
        return "TRACE" in self._require_info().features

    def trace(
        self, inputs: list[np.ndarray], step: int, timeout: float | None = None
    ) -> list[bytes]:
        """Runs the model on ``inputs`` up to and including executor step ``step`` and
        returns the raw bytes of each tensor that step wrote (metadata.json's
        ``trace``). The run changes no operator state."""
        info = self.info or self.hello()
        if "TRACE" not in info.features:
            raise DeviceError(
                f"{self.transport.name} cannot stop its model after a step: rebuild the "
                "folder with 'aot build --trace'"
            )
        if timeout is not None:
            check_timeout(timeout)
        for index, blob in enumerate(self._check_inputs(info, inputs)):
            self.set_input(index, blob)
        reply = p.TraceReply.unpack(
            self.request(p.Command.TRACE, p.TRACE_REQUEST.pack(step), timeout=timeout)
        )
        if reply.model_status != 0:
            raise DeviceError(
                f"model '{info.name}' on {self.transport.name} failed before step {step} "
                f"ended: {describe_error(reply.model_status)}"
            )
        if reply.stopped != step:
            raise ProtocolError(
                f"TRACE reply from {self.transport.name} says the run did not stop after "
                f"step {step}"
            )
        return [
            self._read_chunks(p.Command.GET_TRACE, p.GET_TRACE_REQUEST, index, size)
            for index, size in enumerate(reply.sizes)
        ]

    def _read_chunks(self, command: int, request: Any, index: int, size: int) -> bytes:
        """``size`` bytes of tensor ``index`` by GET_OUTPUT or GET_TRACE requests (index,
        offset, length), each as long as one reply holds."""
        chunk = self._require_info().max_payload - 2  # the reply payload also holds the status
        data = bytearray()
        while len(data) < size:
            length = min(chunk, size - len(data))
            body = self.request(command, request.pack(index, len(data), length))
            if len(body) != length:
                raise ProtocolError(
                    f"{_command_name(command)} reply from {self.transport.name} holds "
                    f"{len(body)} bytes, asked for {length}"
                )
            data += body
        return bytes(data)

    @property
    def supports_reset(self) -> bool:
        """The model keeps operator state between runs, which RESET restores."""
        return "STATE" in self._require_info().features

    def reset(self) -> None:
        """Sets the model's state (SVDF's memory) to its initial value."""
        if not self.supports_reset:
            raise DeviceError(
                f"the model on {self.transport.name} keeps no state between runs: "
                "there is nothing to reset"
            )
        self.request(p.Command.RESET)

    def stats(self) -> DeviceStats:
        stats = p.StatsReply.unpack(self.request(p.Command.STATS))
        return DeviceStats(**stats.__dict__)

    def quit(self) -> None:
        """Ends the server loop; a host build then exits with code 0."""
        self.request(p.Command.QUIT)

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> DeviceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- requests -----------------------------------------------------------------

    def request(self, command: int, payload: bytes = b"", timeout: float | None = None) -> bytes:
        """Sends one command and returns the body of its reply (after the status).

        A non-zero status raises ProtocolError (protocol faults) or DeviceError."""
        self._seq = self._seq % 255 + 1  # 1..255; 0 marks replies to undecodable frames
        seq = self._seq
        name = _command_name(command)
        self.transport.write(p.Frame(command, seq, payload).encode())
        frame = self._read_reply(command, seq, name, self.timeout if timeout is None else timeout)
        if frame.type == p.FRAME_ERROR:
            error = p.ErrorReply.unpack(frame.payload)
            raise ProtocolError(
                f"{self.transport.name} could not decode the {name} request: {error.describe()}"
            )
        status, body = p.split_status(frame.payload)
        if status:
            error = p.ErrorReply.unpack(frame.payload)
            cls = ProtocolError if (status >> 8) == 0x02 else DeviceError
            raise cls(f"{self.transport.name} rejected {name}: {error.describe()}")
        return body

    def _read_reply(self, command: int, seq: int, name: str, timeout: float) -> p.Frame:
        # The deadline is checked after every read, not only when one times out: a device
        # that keeps sending (stale replies, bytes without a delimiter, a byte a second)
        # must not keep the host waiting past it.
        deadline = time.monotonic() + timeout
        stale = 0
        received = 0
        while True:
            while self._frames:
                item = self._frames.pop(0)
                if isinstance(item, p.FrameError):
                    text = item.text()
                    if text is not None:
                        raise DevicePrintedError(
                            f"{self.transport.name} printed instead of replying to {name}: "
                            f"{text[-300:]}",
                            text,
                        )
                    raise ProtocolError(
                        f"corrupt reply from {self.transport.name} to {name}: {item}"
                    )
                if item.type == p.FRAME_ERROR and item.seq in (0, seq):
                    return item
                if item.type == (command | p.REPLY_BIT) and item.seq == seq:
                    return item
                # Anything else is a stale reply to an earlier, abandoned request.
                stale += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._no_reply(name, timeout, received, stale)
            try:
                data = self.transport.read(4096, remaining)
            except TransportTimeout:
                raise self._no_reply(name, timeout, received, stale) from None
            received += len(data)
            self._frames += self._decoder.feed(data)

    def _no_reply(self, name: str, timeout: float, received: int, stale: int) -> DeviceError:
        """The timeout error, saying what (if anything) arrived instead of the reply."""
        where = f"{self.transport.name} within {timeout:g} s"
        if not received:
            return DeviceError(
                f"no answer from {where}: waiting for the reply to {name}; is the aot "
                f"server running there (same baud rate)?"
            )
        if stale:
            return DeviceError(
                f"no reply to {name} from {where}: {stale} frame(s) arrived, none with this "
                f"request's sequence number; is something else talking to the device?"
            )
        return DeviceError(
            f"no reply to {name} from {where}: {received} byte(s) arrived without "
            f"completing a frame; check the baud rate and that the device runs the aot server"
        )

    # ---- helpers ------------------------------------------------------------------

    def _tensor_info(self, kind: int, index: int) -> TensorInfo:
        reply = p.TensorInfoReply.unpack(
            self.request(p.Command.INFO, p.INFO_REQUEST.pack(kind, index))
        )
        what = "input" if kind == 0 else "output"
        dtype = p.DTYPES.get(reply.dtype)
        if dtype is None:
            raise ProtocolError(
                f"{self.transport.name} reported {what} {index} with unknown dtype code "
                f"{reply.dtype}; known: {sorted(p.DTYPES)}"
            )
        return TensorInfo(reply.name, dtype, reply.shape, reply.size_bytes)

    def _require_info(self) -> ModelInfo:
        if self.info is None:
            raise DeviceError("call hello() before moving tensors")
        return self.info

    @staticmethod
    def _check_inputs(info: ModelInfo, inputs: list[np.ndarray]) -> list[bytes]:
        if len(inputs) != len(info.inputs):
            raise ConfigError(
                f"model '{info.name}' has {len(info.inputs)} input(s), got {len(inputs)}"
            )
        blobs = []
        for index, (array, tensor) in enumerate(zip(inputs, info.inputs)):
            array = np.asarray(array)
            if array.dtype != tensor.dtype or tuple(array.shape) != tensor.shape:
                raise ConfigError(
                    f"input {index} '{tensor.name}' of model '{info.name}': expected "
                    f"{tensor.describe()}, got {array.dtype.name} array of shape "
                    f"{tuple(array.shape)}"
                )
            blob = np.ascontiguousarray(array).tobytes()
            if len(blob) != tensor.size_bytes:
                raise ProtocolError(
                    f"input {index} '{tensor.name}' is {len(blob)} bytes but the device "
                    f"expects {tensor.size_bytes}"
                )
            blobs.append(blob)
        return blobs


def _command_name(command: int) -> str:
    try:
        return p.Command(command).name
    except ValueError:
        return f"command {command:#04x}"


def _version(version: int) -> str:
    return f"{version >> 8}.{version & 0xFF}"
