"""The bench stage: run a built model N times and report time per inference, the
per-operator profile (from a ``--profile`` build), stack, workspace and code size.

``bench_folder`` is the seam other commands call (``aot bench``, the board farm); its
``connect`` argument opens the device, so a remote board is just another ``connect``.
A :class:`BenchReport` round-trips through JSON (``to_json`` / ``from_json``).
"""

from __future__ import annotations

import contextlib
import hashlib
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aot.device.client import DeviceClient, check_repeats, check_timeout
from aot.errors import ConfigError, DeviceError

BENCH_FORMAT = 1  # BenchReport JSON layout version; bump on an incompatible change
# How far the per-operator sum may differ from the whole inference (issue 12: 2 %).
PROFILE_TOLERANCE = 0.02

# connect(folder, metadata, board, timeout) -> a context manager yielding a client whose
# session has not started (bench calls hello()). The default starts the host build or
# QEMU, or flashes a board (aot.runner.connect).
Connect = Callable[
    [Path, dict[str, Any], Any, float], contextlib.AbstractContextManager[DeviceClient]
]


@dataclass(frozen=True)
class OperatorProfile:
    """One executor step: what it computes in the source model's words and its time."""

    step: int
    kernel: str
    label: str  # e.g. "CONV_2D #3" (the source operators), else the fused function
    source_operators: list[dict[str, Any]]  # [{"index": 3, "type": "CONV_2D", ...}]
    time: int  # in the report's time_unit, from the last repeat
    share: float  # of the per-operator sum, 0..1
    macs: int  # multiply-accumulates, from metadata.json (0: none or unknown)

    @property
    def time_per_mac(self) -> float | None:
        return self.time / self.macs if self.macs else None


@dataclass(frozen=True)
class BenchReport:
    model: str
    board: str
    time_unit: str  # "instructions" (QEMU -icount), "cycles" (hardware) or "ns" (host)
    units_per_tick: int
    ticks_per_second: int
    repeats: int
    times: list[int]  # one inference per repeat, in time_unit
    profile: bool  # the firmware recorded per-step ticks (aot build --profile)
    operators: list[OperatorProfile] = field(default_factory=list)
    profiles_identical: bool | None = None  # every repeat gave the same per-step figures
    outputs_identical: bool = True  # every repeat gave the same output bytes
    outputs_sha256: str = ""  # of all output bytes of the last repeat, in order
    peak_stack_bytes: int | None = None
    model_stack_bytes: int | None = None
    workspace_bytes: int = 0
    pools: dict[str, int] = field(default_factory=dict)  # pool name -> bytes used
    constants_bytes: int = 0
    sections: dict[str, int] = field(default_factory=dict)  # text, rodata, data, bss
    outputs: list[np.ndarray] = field(default_factory=list, compare=False, repr=False)

    @property
    def time_min(self) -> int:
        return min(self.times)

    @property
    def time_max(self) -> int:
        return max(self.times)

    @property
    def time_median(self) -> float:
        return float(statistics.median(self.times))

    @property
    def operators_total(self) -> int:
        return sum(op.time for op in self.operators)

    @property
    def profile_error(self) -> float | None:
        """|per-operator sum - whole| / whole, for the last repeat (None: no profile)."""
        if not self.operators or not self.times[-1]:
            return None
        return abs(self.operators_total - self.times[-1]) / self.times[-1]

    @property
    def total_macs(self) -> int:
        return sum(op.macs for op in self.operators)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("outputs")
        data["format"] = BENCH_FORMAT
        data["time_min"] = self.time_min
        data["time_median"] = self.time_median
        data["time_max"] = self.time_max
        data["operators_total"] = self.operators_total
        data["profile_error"] = self.profile_error
        for op, entry in zip(self.operators, data["operators"], strict=True):
            entry["time_per_mac"] = op.time_per_mac
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BenchReport:
        if data.get("format") != BENCH_FORMAT:
            raise ConfigError(
                f"bench report format {data.get('format')!r} is not {BENCH_FORMAT}; "
                "rerun 'aot bench' with this aot"
            )
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["operators"] = [
            OperatorProfile(
                **{k: v for k, v in op.items() if k in OperatorProfile.__dataclass_fields__}
            )
            for op in data.get("operators", [])
        ]
        return cls(**fields)


def bench_folder(
    folder: str | Path,
    repeats: int = 10,
    timeout: float = 120.0,
    connect: Connect | None = None,
    inputs: Sequence[np.ndarray] | None = None,
) -> BenchReport:
    """Runs the model in ``folder`` (made by ``aot build``) ``repeats`` times.

    ``inputs``: one array per model input; default all zeros. Each repeat is its own RUN
    request so every inference is timed (min / median / max) and, in a ``--profile``
    build, its per-step ticks are read back and compared across repeats."""
    from aot.boards import load_board
    from aot.library import read_metadata

    folder = Path(folder)
    check_repeats(repeats, what="bench repeats")
    check_timeout(timeout)
    metadata = read_metadata(folder)
    board = load_board(metadata["board"])
    if connect is None:
        from aot.runner import connect as default_connect

        connect = default_connect
    arrays = list(inputs) if inputs is not None else _zero_inputs(metadata)
    unit = board.ticks.unit if board.ticks else "ticks"
    per_tick = (board.ticks.instructions_per_tick if board.ticks else None) or 1

    times: list[int] = []
    profiles: list[list[int]] = []
    digests: list[str] = []
    from aot.device.process import sigterm_unwinds

    with sigterm_unwinds(), connect(folder, metadata, board, timeout) as client:
        info = client.hello()
        if not info.ticks_per_second:
            raise DeviceError(
                f"{client.transport.name} has no timer (ticks per second is 0); "
                "aot bench needs a port with aot_platform_ticks"
            )
        profiled = client.supports_profile
        result = None
        for _ in range(repeats):
            result = client.run(arrays, repeats=1, timeout=timeout)
            times.append(result.ticks * per_tick)
            digests.append(_digest(result.outputs))
            if profiled:
                profiles.append([t * per_tick for t in client.profile()])
        stats = client.stats()
        with contextlib.suppress(DeviceError):
            client.quit()
    assert result is not None

    operators = _operators(metadata, profiles[-1]) if profiles else []
    sections = metadata.get("build", {}).get("sections", {})
    return BenchReport(
        model=metadata["model"]["name"],
        board=board.name,
        time_unit=unit,
        units_per_tick=per_tick,
        ticks_per_second=result.ticks_per_second,
        repeats=repeats,
        times=times,
        profile=profiled,
        operators=operators,
        profiles_identical=all(p == profiles[0] for p in profiles) if profiles else None,
        outputs_identical=all(d == digests[0] for d in digests),
        outputs_sha256=digests[-1],
        peak_stack_bytes=stats.stack_peak_bytes if stats.stack_painted_bytes else None,
        model_stack_bytes=stats.model_stack_bytes,
        workspace_bytes=metadata["memory"]["workspace_bytes"],
        pools={p["name"]: p["used_bytes"] for p in metadata["memory"]["pools"]},
        constants_bytes=metadata["constants"]["bytes"],
        sections=dict(sections),
        outputs=result.outputs,
    )


def _zero_inputs(metadata: dict[str, Any]) -> list[np.ndarray]:
    return [np.zeros(s["shape"], dtype=np.dtype(s["dtype"])) for s in metadata["inputs"]]


def _digest(outputs: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for array in outputs:
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def _operators(metadata: dict[str, Any], times: list[int]) -> list[OperatorProfile]:
    steps = metadata["operators"]
    if len(steps) != len(times):
        raise DeviceError(
            f"the device profiled {len(times)} steps but metadata.json lists {len(steps)} "
            "operators; the firmware is not the one this folder was built for (rebuild it)"
        )
    total = sum(times) or 1
    return [
        OperatorProfile(
            step=step["index"],
            kernel=step["kernel"],
            label=step.get("label", step["name"]),
            source_operators=step.get("source_operators", []),
            time=ticks,
            share=ticks / total,
            macs=int(step.get("macs", 0)),
        )
        for step, ticks in zip(steps, times, strict=True)
    ]
