"""Which clock a run was timed with, and how fine it is.

The ports time with the best counter the board has (aot/runtime_c/ports/*/port.c): the
MPS boards' FPGAIO counter, which under QEMU -icount counts instructions; on hardware the
core's DWT cycle counter (M3/M4/M7/M33/M55) when it runs, else Zephyr's system timer
(the CPU clock on SysTick boards, 32768 Hz on nRF's RTC). The firmware announces only its
ticks per second; with the board data and the template that says which clock it was. A
per-operator figure of fewer than ``RESOLVED_TICKS`` ticks is not a measurement: one
tick is more than 1% of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from aot.artifacts import LibraryManifest
from aot.boards import Board

# An operator's time is resolved when one tick is at most 1% of it.
RESOLVED_TICKS = 100
# Cores with a DWT cycle counter (ARMv7-M and ARMv8-M Mainline); M0/M0+/M23 have none.
DWT_CORES = ("cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "cortex-m85")
TICK_SOURCES = {"fpgaio_counter": "the FPGAIO counter", "zephyr_cycles": "Zephyr's cycle counter"}


@dataclass(frozen=True)
class Clock:
    name: str  # what the port timed with
    resolution: str  # one tick, in words: "40 instructions", "1 cycle", "30.5 us"

    def to_json(self) -> dict[str, str]:
        return {"clock": self.name, "clock_resolution": self.resolution}


def _seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def describe_clock(
    board: Board, template: str | None, ticks_per_second: int, units_per_tick: float
) -> Clock:
    """The clock behind a run's figures (``ticks_per_second`` as the firmware announced)."""
    if board.is_host:
        return Clock("the host's monotonic clock", "1 ns")
    if not ticks_per_second:
        return Clock("none (the port has no timer)", "-")
    ticks = board.ticks
    if board.emulated:
        if ticks is not None and ticks.address is not None and ticks_per_second == ticks.hz:
            return Clock(
                f"{TICK_SOURCES.get(ticks.source, ticks.source)} under QEMU -icount",
                f"{units_per_tick:g} instructions",
            )
        return Clock(
            f"the system timer at {ticks_per_second} Hz under QEMU",
            _seconds(1 / ticks_per_second),
        )
    if board.core in DWT_CORES and ticks_per_second == board.clock_hz:
        what = "the DWT cycle counter" if template == "zephyr" else "a counter at the CPU clock"
        return Clock(f"{what} ({ticks_per_second} Hz)", "1 cycle")
    return Clock(
        f"the system timer at {ticks_per_second} Hz (no cycle counter running)",
        _seconds(1 / ticks_per_second),
    )


def run_clock(manifest: LibraryManifest, ticks_per_second: int, units_per_tick: float) -> Clock:
    """describe_clock for the board and template of a build folder's manifest."""
    from aot.boards import load_build_board

    board = load_build_board(manifest)
    return describe_clock(board, manifest.template, ticks_per_second, units_per_tick)


def resolved(time: float, units_per_tick: float) -> bool:
    """Whether a figure of ``time`` (in the report's unit) is at least RESOLVED_TICKS ticks."""
    return time >= RESOLVED_TICKS * units_per_tick


def time_unit(board: Board, ticks_per_second: int) -> str:
    """The unit of a run's figures: the board data's, except where the data names a system
    timer (unit "time", such as Zephyr's 32768 Hz RTC on the nRF5340) and the firmware
    announces the CPU clock instead (a running DWT): then its figures are cycles."""
    unit = board.ticks.unit if board.ticks else "ticks"
    if board.is_host or board.emulated or board.ticks is None or not ticks_per_second:
        return unit
    if unit == "time" and ticks_per_second != board.ticks.hz and ticks_per_second == board.clock_hz:
        return "cycles"
    return unit
