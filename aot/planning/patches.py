"""Patch-based execution: the first operators of a CNN run tile by tile over their output.

The large early activations of a CNN set its peak RAM. Run as whole operators, a chain
``conv -> depthwise -> pointwise -> depthwise(stride 2)`` keeps two full activations live at
each step. Run tile by tile over the last operator's output, only one tile's worth of
each intermediate activation is live at a time: every tile computes its receptive field
back through the chain (the halo included, so neighbouring tiles recompute the overlap)
and writes its slice of the stage output. MCUNetV2 calls this patch-based inference.

This module is the arithmetic, with no model and no TVM: a chain of spatial operators
(``Window``: kernel, stride, dilation, padding, sizes), a grid over the last output, and
for every tile and operator the region it computes and the region of its input it reads
(``TileCall``). A tile's buffers hold exactly the regions computed, clipped to the image,
so a kernel runs over a tile as over a small image: the call's padding is the original
padding where the tile touches the border and zero inside. The first operator reads the
stage's input in place (its padding shifted to the tile's origin, possibly negative); the
last writes a tile buffer that is copied into the stage output. ``PatchPlan`` adds up what
the schedule costs: multiply-accumulates and the bytes live at its peak.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

CONV, DEPTHWISE, POOL, ELEMENTWISE = "conv", "depthwise", "pool", "elementwise"
KINDS = (CONV, DEPTHWISE, POOL, ELEMENTWISE)


@dataclass(frozen=True)
class Interval:
    """Rows or columns ``[start, stop)``."""

    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


@dataclass(frozen=True)
class Region:
    rows: Interval
    cols: Interval

    @property
    def area(self) -> int:
        return self.rows.size * self.cols.size


@dataclass(frozen=True)
class Window:
    """One operator of a patch stage along its two spatial axes, NHWC, batch 1.

    ``pad_top``/``pad_left`` are the padding before the first row and column (TFLite's
    SAME padding puts the odd one after); the padding after follows from the sizes. A
    padded tap reads the input zero point (conv, depthwise) or is left out (pooling)."""

    kind: str
    in_hw: tuple[int, int]
    out_hw: tuple[int, int]
    in_channels: int
    out_channels: int
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    pad_top: int = 0
    pad_left: int = 0
    label: str = ""
    element_bytes: int = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown operator kind {self.kind!r}; one of {KINDS}")

    @property
    def macs_per_output(self) -> int:
        """Multiply-accumulates per output element (pooling: taps summed or compared)."""
        taps = self.kernel[0] * self.kernel[1]
        if self.kind == CONV:
            return taps * self.in_channels
        return taps if self.kind in (DEPTHWISE, POOL) else 1

    @property
    def whole_output(self) -> Region:
        return Region(Interval(0, self.out_hw[0]), Interval(0, self.out_hw[1]))

    @property
    def whole_input_bytes(self) -> int:
        return self.in_hw[0] * self.in_hw[1] * self.in_channels * self.element_bytes

    @property
    def whole_output_bytes(self) -> int:
        return self.output_bytes(self.whole_output)

    def output_bytes(self, region: Region) -> int:
        return region.area * self.out_channels * self.element_bytes

    def input_bytes(self, region: Region) -> int:
        return region.area * self.in_channels * self.element_bytes

    def macs(self, region: Region) -> int:
        return region.area * self.out_channels * self.macs_per_output

    def reads(self, out: Region) -> Region:
        """The input region that output region ``out`` reads, clipped to the image."""
        return Region(
            self._reads(out.rows, 0, self.pad_top),
            self._reads(out.cols, 1, self.pad_left),
        )

    def _reads(self, out: Interval, axis: int, pad: int) -> Interval:
        stride, dilation, kernel = self.stride[axis], self.dilation[axis], self.kernel[axis]
        first = out.start * stride - pad
        last = (out.stop - 1) * stride - pad + (kernel - 1) * dilation
        return Interval(max(first, 0), min(last + 1, self.in_hw[axis]))


@dataclass(frozen=True)
class TileCall:
    """One operator over one tile: the output region it computes and the input region it
    reads, in the coordinates of the whole activations."""

    window: Window
    computes: Region
    reads: Region

    @property
    def local_pad(self) -> tuple[int, int]:
        """(top, left) padding of the call over a buffer that holds exactly ``reads``."""
        w = self.window
        return (
            w.pad_top + self.reads.rows.start - self.computes.rows.start * w.stride[0],
            w.pad_left + self.reads.cols.start - self.computes.cols.start * w.stride[1],
        )

    @property
    def pad_over_whole_input(self) -> tuple[int, int]:
        """(top, left) padding of the call over the whole input image (the first operator
        of a stage reads the stage input in place): negative inside the image."""
        w = self.window
        return (
            w.pad_top - self.computes.rows.start * w.stride[0],
            w.pad_left - self.computes.cols.start * w.stride[1],
        )

    @property
    def macs(self) -> int:
        return self.window.macs(self.computes)


@dataclass(frozen=True)
class Tile:
    """One tile of the stage output and, per operator in chain order, its call."""

    row: int
    col: int
    calls: tuple[TileCall, ...]

    @property
    def output(self) -> Region:
        return self.calls[-1].computes


def split(size: int, parts: int) -> list[Interval]:
    """``[0, size)`` in ``parts`` intervals whose sizes differ by one at most, the larger
    first."""
    if not 1 <= parts <= size:
        raise ValueError(f"cannot split {size} into {parts} parts")
    base, extra = divmod(size, parts)
    intervals, start = [], 0
    for k in range(parts):
        stop = start + base + (1 if k < extra else 0)
        intervals.append(Interval(start, stop))
        start = stop
    return intervals


def check_chain(chain: Sequence[Window]) -> None:
    """Each operator reads what the one before writes."""
    if not chain:
        raise ValueError("a patch stage needs at least one operator")
    for before, after in itertools.pairwise(chain):
        if before.out_hw != after.in_hw or before.out_channels != after.in_channels:
            raise ValueError(
                f"{after.label or after.kind} reads {after.in_hw}x{after.in_channels}, "
                f"but {before.label or before.kind} writes {before.out_hw}x{before.out_channels}"
            )


@dataclass(frozen=True)
class PatchPlan:
    """A chain run tile by tile over a ``grid`` (rows, columns) of its last output."""

    chain: tuple[Window, ...]
    grid: tuple[int, int]
    tiles: tuple[Tile, ...]

    @property
    def macs(self) -> int:
        return sum(call.macs for tile in self.tiles for call in tile.calls)

    @property
    def untiled_macs(self) -> int:
        return sum(w.macs(w.whole_output) for w in self.chain)

    def buffer_bytes(self, position: int) -> int:
        """Bytes of the tile buffer that operator ``position`` writes: its largest tile."""
        window = self.chain[position]
        return max(window.output_bytes(t.calls[position].computes) for t in self.tiles)

    @property
    def tile_buffers(self) -> tuple[int, ...]:
        return tuple(self.buffer_bytes(k) for k in range(len(self.chain)))

    def scratch_peak(self) -> int:
        """The most tile-buffer bytes live at once: operator k's input and output tiles
        (the first reads the stage input itself; the last writes a tile that is then
        copied into the stage output)."""
        return two_ended_peak(self.tile_buffers)

    def stage_peak(self, input_in_ram: bool = True) -> int:
        """Bytes live at the stage's peak: the stage input (when it sits in RAM), the
        whole stage output, and the tile buffers at their peak."""
        whole_in = self.chain[0].whole_input_bytes if input_in_ram else 0
        return whole_in + self.chain[-1].whole_output_bytes + self.scratch_peak()


def two_ended_peak(sizes: Sequence[int]) -> int:
    """The most bytes of tile buffers live at once when operator k reads the tile of
    operator k - 1 and writes its own: the largest neighbouring pair."""
    return max(sizes[k] + (sizes[k - 1] if k else 0) for k in range(len(sizes)))


def plan_patches(chain: Sequence[Window], grid: tuple[int, int]) -> PatchPlan:
    """The tiles of ``chain`` over a ``grid`` of its last output, each operator's region
    found back from the one after it."""
    chain = tuple(chain)
    check_chain(chain)
    out_h, out_w = chain[-1].out_hw
    tiles = []
    for r, rows in enumerate(split(out_h, grid[0])):
        for c, cols in enumerate(split(out_w, grid[1])):
            region, calls = Region(rows, cols), []
            for window in reversed(chain):
                call = TileCall(window, region, window.reads(region))
                calls.append(call)
                region = call.reads
            tiles.append(Tile(r, c, tuple(reversed(calls))))
    return PatchPlan(chain, grid, tuple(tiles))


def grids(out_hw: tuple[int, int], most: int = 8) -> Iterator[tuple[int, int]]:
    """Every grid with up to ``most`` tiles per axis that the output's size allows."""
    for rows in range(1, min(most, out_hw[0]) + 1):
        for cols in range(1, min(most, out_hw[1]) + 1):
            yield rows, cols


def _axis(chain: Sequence[Window], axis: int, parts: int) -> list[list[Interval]]:
    """Per part of the last output's axis, the interval each operator computes along it,
    in chain order (rows and columns of a tile are found back independently)."""
    found = []
    for interval in split(chain[-1].out_hw[axis], parts):
        computes = []
        for window in reversed(chain):
            computes.append(interval)
            pad = window.pad_top if axis == 0 else window.pad_left
            interval = window._reads(interval, axis, pad)
        found.append(list(reversed(computes)))
    return found


def summary(chain: Sequence[Window], grid: tuple[int, int]) -> tuple[list[int], list[int]]:
    """What ``plan_patches(chain, grid)`` would give, from the two axes alone: each
    operator's tile buffer bytes and its multiply-accumulates over all tiles."""
    rows, cols = _axis(chain, 0, grid[0]), _axis(chain, 1, grid[1])
    buffers, macs = [], []
    for k, window in enumerate(chain):
        tallest = max(part[k].size for part in rows)
        widest = max(part[k].size for part in cols)
        buffers.append(tallest * widest * window.out_channels * window.element_bytes)
        area = sum(part[k].size for part in rows) * sum(part[k].size for part in cols)
        macs.append(area * window.out_channels * window.macs_per_output)
    return buffers, macs


def in_place_shift(window: Window, bands: int, reverse: bool = False) -> int:
    """How many bytes before its input an operator's output must start so that, run in
    ``bands`` bands of whole output rows from the first, no band writes a byte that it or
    a later band still reads (aot.planning.in_place_rows); with ``reverse``, how many
    bytes after its input it must start for the bands run from the last.

    From the first: band k writes output rows up to its last and reads input rows from
    its first window row on, and the first rows read only grow from band to band, so the
    shift is the most any band's written end passes its read start. From the last: the
    most any band's read end passes its written start."""
    row_in = window.in_hw[1] * window.in_channels * window.element_bytes
    row_out = window.out_hw[1] * window.out_channels * window.element_bytes
    shift = 0
    for rows in split(window.out_hw[0], bands):
        read = window._reads(rows, 0, window.pad_top)
        if reverse:
            shift = max(shift, read.stop * row_in - rows.start * row_out)
        else:
            shift = max(shift, rows.stop * row_out - read.start * row_in)
    return shift
