"""``metadata.json``'s ``schedule``: the patch stages and in-place convolutions a build
runs (aot build --ram-budget, --in-place) and the frontier of RAM against
instructions it chose from (also with --frontier). Absent from a build that asked for
none of them (docs/memory_planning.md, "Below the fixed-order bound")."""

from __future__ import annotations

from dataclasses import dataclass

from aot.artifacts.record import Record


@dataclass(frozen=True, kw_only=True)
class WindowInfo(Record):
    """One operator of a stage along its spatial axes (aot.planning.patches.Window)."""

    label: str
    kind: str
    in_hw: tuple[int, ...]
    out_hw: tuple[int, ...]
    in_channels: int
    out_channels: int
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    pad_top: int
    pad_left: int


@dataclass(frozen=True, kw_only=True)
class StageInfo(Record):
    """A patch stage: chain operators ``first`` to ``first + len(windows) - 1`` run tile
    by tile on ``grid`` (rows, columns) of the last one's output, as the step whose kernel
    is ``symbol``."""

    first: int
    grid: tuple[int, ...]
    symbol: str
    windows: tuple[WindowInfo, ...]
    scratch_bytes: int
    macs: int
    untiled_macs: int


@dataclass(frozen=True, kw_only=True)
class InPlaceInfo(Record):
    """A convolution run in place in ``bands`` bands of output rows (0: its generated
    kernel, one call), its output starting ``shift_bytes`` before its input in one buffer
    (aot.planning.in_place_rows)."""

    label: str
    window: WindowInfo
    bands: int
    shift_bytes: int
    reverse: bool = False  # the bands run from the last; the output starts after the input


@dataclass(frozen=True, kw_only=True)
class FrontierPoint(Record):
    """A schedule no other beats on both RAM and instructions."""

    label: str
    ram_bytes: int
    extra_instructions: int  # estimated
    extra_macs: int


@dataclass(frozen=True, kw_only=True)
class ScheduleInfo(Record):
    """The schedule a build runs and the frontier it was chosen from; ``ram_bytes`` and
    ``whole_ram_bytes`` are fixed-order peaks, with ``io_in_pool`` saying whether the
    inputs and outputs count."""

    label: str
    ram_budget: int | None = None
    io_in_pool: bool = False
    ram_bytes: int
    whole_ram_bytes: int
    extra_instructions: int
    stages: tuple[StageInfo, ...] = ()
    in_place: tuple[InPlaceInfo, ...] = ()
    frontier: tuple[FrontierPoint, ...] = ()
