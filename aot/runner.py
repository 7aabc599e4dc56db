"""The run stage: connect to the built model (host process, QEMU or a board) and run it."""

from __future__ import annotations

import contextlib
import math
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from aot.artifacts import LibraryManifest, read_manifest
from aot.artifacts.manifest import IOTensor
from aot.boards import Board, load_build_board
from aot.device.client import DeviceClient, RunResult
from aot.device.process import sigterm_unwinds
from aot.errors import ConfigError, InternalError


@dataclass(frozen=True)
class RunReport:
    outputs: list[np.ndarray]
    result: RunResult
    stats: dict[str, Any]
    board: str
    time_unit: str  # what one count of time_per_run is: ns, cycles or instructions
    units_per_tick: int  # e.g. 40 instructions per FPGAIO tick under QEMU -icount
    per_run_ticks: tuple[int, ...] = ()  # each inference's ticks (--repeat N)
    server: str | None = None  # the board server that ran it (a farm result)

    @property
    def time_per_run(self) -> int:
        return self.result.ticks * self.units_per_tick // max(self.result.runs, 1)

    @property
    def time_median(self) -> float:
        """The median inference's time (the mean of the middle two for an even count,
        as aot bench's)."""
        each = self.per_run_ticks or (self.result.ticks // max(self.result.runs, 1),)
        return float(statistics.median(t * self.units_per_tick for t in each))

    def clock(self, manifest: LibraryManifest) -> Any:
        """The clock the port timed with and one tick of it (aot/timing.py)."""
        from aot.timing import run_clock

        return run_clock(manifest, self.result.ticks_per_second, self.units_per_tick)

    def to_json(self, manifest: LibraryManifest) -> dict[str, Any]:
        from aot.reports import report_identity

        result = self.result
        return {
            **report_identity(manifest.name, self.board, self.server),
            "runs": result.runs,
            "status": result.status,
            "time_per_run": self.time_per_run,
            "time_unit": self.time_unit,
            "time_min": result.ticks_min * self.units_per_tick,
            "time_median": self.time_median,
            "time_max": result.ticks_max * self.units_per_tick,
            # Each inference's time, in time_unit (one RUN request each).
            "time_each": [t * self.units_per_tick for t in self.per_run_ticks],
            "ticks_per_run": result.ticks // max(result.runs, 1),
            "ticks_per_second": result.ticks_per_second,
            # Which clock the port timed with and one tick of it (aot/timing.py).
            **self.clock(manifest).to_json(),
            **self.stats,
            "sections": dict(manifest.sections),
            "constants_bytes": manifest.constants.bytes,
            "workspace_bytes": manifest.memory.workspace_bytes,
            "pools": [pool.to_json() for pool in manifest.memory.pools],
            "outputs": [{"shape": list(o.shape), "dtype": str(o.dtype)} for o in self.outputs],
        }


def check_emulator_runs(output: Path, manifest: LibraryManifest, board: Board) -> None:
    """Refuse at once, from the manifest, a build whose steps the emulator cannot run (an
    Ethos-U build under QEMU would start and fail with AOT_ERR_MODEL_KERNEL_FAILED)."""
    for backend in manifest.backends:
        if backend.emulator_note and backend.steps:
            raise ConfigError(
                f"{output} runs operators on {backend.name} and {board.name} is emulated: "
                + backend.emulator_note.replace("{folder}", str(output))
            )


@contextlib.contextmanager
def connect(
    output: Path,
    manifest: LibraryManifest,
    board: Board,
    timeout: float,
    port: str | None = None,
    baud: int | None = None,
    runner: str | None = None,
) -> Iterator[DeviceClient]:
    """Start or open the device the folder was built for and yield a protocol client.

    ``port``/``baud``: the serial port of a physical board (required for those);
    ``runner``: its flash runner, instead of the board's own."""
    from aot.device.fault import FaultContext

    with _open_device(output, manifest, board, timeout, port, baud, runner) as client:
        # A fault names the step by its label and the region by the board's name.
        client.fault_context = FaultContext.of_build(manifest, board)
        yield client


@contextlib.contextmanager
def _open_device(
    output: Path,
    manifest: LibraryManifest,
    board: Board,
    timeout: float,
    port: str | None,
    baud: int | None,
    runner: str | None,
) -> Iterator[DeviceClient]:
    from aot.flash import firmware_from_metadata
    from aot.flash.core import missing_firmware_message

    # The firmware is where the project's build puts it, whether 'aot build' ran the
    # build or the user did (make -C DIR/project, cmake, west build -d ...).
    if board.emulated:
        check_emulator_runs(output, manifest, board)
    firmware = firmware_from_metadata(output, manifest)
    if not board.is_host and not board.emulated:
        # A physical board: flash it with its runner, then talk over its serial port.
        from aot.flash import open_board

        with open_board(board, firmware, port, baud, timeout, runner=runner) as client:
            yield client
        return
    if not firmware.elf.is_file():
        raise ConfigError(missing_firmware_message(firmware))
    executable = firmware.elf
    if board.is_host:
        from aot.device.transport import PipeTransport

        transport = PipeTransport.spawn([str(executable)])
        with DeviceClient(transport, timeout=timeout) as client:
            yield client
        return
    if board.emulated:
        from aot.device.transport import SerialTransport
        from aot.emulator.qemu import QemuInstance

        with QemuInstance(board, executable) as qemu:
            transport = SerialTransport(qemu.url)
            with DeviceClient(transport, timeout=timeout) as client:
                yield client
        return
    raise InternalError(f"board '{board.name}' is neither host, emulated nor physical")


NPY_MAGIC = b"\x93NUMPY"
SAVE_HINT = "write it with numpy.save(path, array)"


def _read_npy(path: Path) -> np.ndarray:
    """One input array; each way a file can fail to be a numeric .npy gets its own line."""
    if path.is_dir():
        raise ConfigError(f"input {path} is a directory, not a .npy file")
    try:
        with path.open("rb") as f:
            head = f.read(len(NPY_MAGIC))
    except FileNotFoundError:
        raise ConfigError(f"input file {path} does not exist") from None
    except OSError as err:
        raise ConfigError(f"cannot open input {path}: {err.strerror}") from None
    if not head:
        raise ConfigError(f"input {path} is an empty file, not a .npy array; {SAVE_HINT}")
    if head.startswith(b"PK"):  # a zip: numpy.savez writes these
        raise ConfigError(f"input {path} is a .npz archive; give one .npy file per -i option")
    if head != NPY_MAGIC:
        kind = "a text file" if _looks_like_text(path) else "a binary file"
        raise ConfigError(f"input {path} is {kind}, not a .npy array; {SAVE_HINT}")
    try:
        with path.open("rb") as f:
            major, _ = np.lib.format.read_magic(f)
            read_header = (
                np.lib.format.read_array_header_1_0
                if major == 1
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(f)
            data_offset = f.tell()
    except (ValueError, EOFError):
        raise ConfigError(f"input {path} has a corrupt .npy header; {SAVE_HINT}") from None
    # Checked before numpy allocates what the header claims (10^11 elements, say).
    claimed = math.prod(shape) * dtype.itemsize
    held = path.stat().st_size - data_offset
    if not dtype.hasobject and claimed > held:
        raise ConfigError(
            f"input {path} is a truncated .npy file: its header claims a {dtype} array of "
            f"shape {tuple(shape)} ({claimed} bytes) but it holds {max(held, 0)} bytes of "
            f"data; {SAVE_HINT}"
        )
    if dtype.hasobject:
        raise ConfigError(
            f"input {path} holds Python objects (dtype {dtype}), not numbers; save a numeric "
            "array with numpy.save"
        )
    try:
        # Never unpickle: an input file must not be able to run code.
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        raise ConfigError(f"input {path} is a truncated .npy file; {SAVE_HINT}") from None
    return array


def _looks_like_text(path: Path) -> bool:
    with path.open("rb") as f:
        sample = f.read(512)
    # Text (CSV, JSON, a pasted list) has no control bytes besides whitespace.
    return all(byte >= 0x20 or byte in b"\t\n\r" for byte in sample)


def read_input(path: str | Path, spec: IOTensor) -> np.ndarray:
    """One .npy file for the input ``spec`` (the manifest's dtype and shape), checked."""
    array = _read_npy(Path(path))
    expected_shape = tuple(spec.shape)
    if array.dtype != np.dtype(spec.dtype) or array.shape != expected_shape:
        raise ConfigError(
            f"input {path} is a {array.dtype} array of shape {array.shape}; input "
            f"'{spec.name}' needs {spec.dtype} of shape {expected_shape}"
        )
    return array


# --fill spread: seed S draws from spread S % 4, around the input's zero point. Full-range
# inputs drive a classifier's softmax into saturation (a handful of distinct outputs, so a
# wrong weight can hide); values near the zero point keep it in its linear part.
SPREAD_STEPS = (None, 32, 8, 2)  # integers: half-width around the zero point (None: all)
SPREAD_SIGMAS = (1.0, 0.25, 0.05, 0.01)  # floats: N(0, sigma)


def fill_inputs(specs: Sequence[IOTensor], mode: str, seed: int) -> list[np.ndarray]:
    """Inputs made up from the manifest's shapes and types: all zeros; seeded random
    values over an integer type's whole range, N(0, 1) for floats ("random"); or, with
    "spread", from one of four spreads chosen by the seed (``describe_spread``). One
    definition, so 'aot run --fill spread --seed S' reproduces any input 'aot validate'
    drew with seed S."""
    rng = np.random.default_rng(seed)
    level = seed % len(SPREAD_STEPS) if mode == "spread" else 0
    arrays = []
    for spec in specs:
        dtype, shape = np.dtype(spec.dtype), tuple(spec.shape)
        if mode == "zeros":
            arrays.append(np.zeros(shape, dtype))
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            low, high = int(info.min), int(info.max)
            half = SPREAD_STEPS[level]
            if half is not None:
                zero = _zero_point(spec)
                low, high = max(low, zero - half), min(high, zero + half)
            arrays.append(rng.integers(low, high, size=shape, dtype=dtype, endpoint=True))
        else:
            sigma = SPREAD_SIGMAS[level]
            arrays.append((rng.standard_normal(shape) * sigma).astype(dtype))
    return arrays


def describe_spread(seed: int) -> str:
    """What 'spread' draws for ``seed``, for reports."""
    level = seed % len(SPREAD_STEPS)
    half = SPREAD_STEPS[level]
    integers = "the whole integer range" if half is None else f"zero point +-{half}"
    return f"{integers} (floats N(0, {SPREAD_SIGMAS[level]:g}))"


def _zero_point(spec: IOTensor) -> int:
    zero_points = spec.quantization.zero_point if spec.quantization else ()
    return int(zero_points[0]) if zero_points else 0


def load_inputs(paths: list[str], manifest: LibraryManifest) -> list[np.ndarray]:
    specs = manifest.inputs
    if len(paths) != len(specs):
        names = ", ".join(s.name for s in specs)
        raise ConfigError(
            f"the model takes {len(specs)} input(s) ({names}); got {len(paths)} -i option(s)"
        )
    return [read_input(path, spec) for path, spec in zip(paths, specs, strict=True)]


def run_model(
    output: str | Path,
    inputs: list[np.ndarray],
    repeats: int = 1,
    timeout: float = 60.0,
    port: str | None = None,
    baud: int | None = None,
    runner: str | None = None,
) -> RunReport:
    output = Path(output)
    manifest = read_manifest(output)
    board = load_build_board(manifest)
    # SIGTERM unwinds the session like an error, so the device is stopped on the way out.
    with (
        sigterm_unwinds(),
        connect(output, manifest, board, timeout, port, baud, runner) as client,
    ):
        client.check_repeat_cap(repeats)  # the firmware's AOT_APP_MAX_REPEATS, as before
        result = client.run(inputs, repeats=1, timeout=timeout)
        # Each further inference is a request of its own, so each is timed (min / median /
        # max and every run's figure), on the inputs already set.
        each = [result.ticks, *(client.run_timed(timeout) for _ in range(repeats - 1))]
        result = replace(
            result, ticks=sum(each), runs=len(each), ticks_min=min(each), ticks_max=max(each)
        )
        stats = client.stats()
        client.quit()
    stats_json = {
        "peak_stack_bytes": stats.stack_peak_bytes if stats.stack_painted_bytes else None,
        "model_stack_bytes": stats.model_stack_bytes,
        "stack_exhausted": stats.stack_exhausted,
    }
    from aot.timing import time_unit

    unit = time_unit(board, result.ticks_per_second)
    per_tick = (board.ticks.instructions_per_tick if board.ticks else None) or 1
    return RunReport(result.outputs, result, stats_json, board.name, unit, per_tick, tuple(each))


@contextlib.contextmanager
def open_session(
    output: str | Path,
    timeout: float = 60.0,
    port: str | None = None,
    baud: int | None = None,
) -> Iterator[DeviceClient]:
    """One device session for the folder's board, for many runs (one QEMU or host process
    start, one flash). Ends the server with QUIT when the block finishes normally."""
    output = Path(output)
    manifest = read_manifest(output)
    board = load_build_board(manifest)
    with sigterm_unwinds(), connect(output, manifest, board, timeout, port, baud) as client:
        yield client
        client.quit()
