"""In-place depthwise convolution (issue 21, aot.planning.in_place_rows).

The arithmetic: a depthwise convolution run band by band in one buffer, its output
``in_place_shift`` bytes before its input, gives what it gives with two buffers, whatever
order a kernel reads and writes within a band (randomized: odd sizes, stride 2, dilation,
padding on every side, depth multiplier 2, any band count); one byte less shift and some
band writes a byte it or a later band reads. The plan: with --in-place a
converter-made MobileNetV2 needs less RAM than whole operators, the planner's buffers
hold both tensors as one, and models it cannot help keep whole operators.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.artifacts import read_manifest
from aot.planning.patches import CONV, DEPTHWISE, Window, in_place_shift, plan_patches
from aot.testing.harness import build

REPO = Path(__file__).resolve().parents[2]
MOBILENET_V2 = (
    REPO / "tests" / "fixtures" / "converters" / "tflite" / "mobilenet_v2_035_96_int8_fixed.tflite"
)
ZERO_POINT = -3  # what a padded tap reads


def _window(rng: np.random.Generator) -> Window:
    kind = CONV if rng.integers(0, 3) == 0 else DEPTHWISE
    kernel = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dilation = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    reach = [(kernel[a] - 1) * dilation[a] + 1 for a in range(2)]
    in_hw = (int(rng.integers(reach[0], 20)), int(rng.integers(reach[1], 14)))
    channels = int(rng.integers(1, 6))
    out_channels = (
        int(rng.integers(1, 9)) if kind == CONV else channels * int(rng.choice([1, 1, 2]))
    )
    pads, out_hw = [], []
    for axis in range(2):
        before = int(rng.integers(0, reach[axis]))
        after = int(rng.integers(0, reach[axis]))
        pads.append(before)
        out_hw.append((in_hw[axis] + before + after - reach[axis]) // stride[axis] + 1)
    return Window(
        kind, in_hw, (out_hw[0], out_hw[1]), channels, out_channels, kernel, stride,
        dilation, pads[0], pads[1],
    )  # fmt: skip


def _taps(window: Window, pad: tuple[int, int], y: int, x: int, o: int):
    """(weight, input index or None for a padded tap) of output (y, x, o) of a call that
    reads the whole image with padding ``pad``."""
    (in_h, in_w), c = window.in_hw, window.in_channels
    channels = range(c) if window.kind == CONV else [o // (window.out_channels // c)]
    for ky in range(window.kernel[0]):
        for kx in range(window.kernel[1]):
            iy = y * window.stride[0] - pad[0] + ky * window.dilation[0]
            ix = x * window.stride[1] - pad[1] + kx * window.dilation[1]
            for ic in channels:
                weight = 1 + (ky * 7 + kx * 3 + ic * 5 + o) % 5
                inside = 0 <= iy < in_h and 0 <= ix < in_w
                yield weight, (iy * in_w + ix) * c + ic if inside else None


def _element(memory: np.ndarray, base: int, window: Window, pad, y: int, x: int, o: int) -> int:
    """One output, reading the input at ``memory[base:]`` as it is at that moment."""
    total = sum(
        w * (ZERO_POINT if i is None else int(memory[base + i]))
        for w, i in _taps(window, pad, y, x, o)
    )
    return (total + 128) % 256 - 128


def _whole(window: Window, image: np.ndarray) -> np.ndarray:
    out_h, out_w = window.out_hw
    channels = window.out_channels
    out = np.zeros(out_h * out_w * channels, np.int64)
    pad = (window.pad_top, window.pad_left)
    for y in range(out_h):
        for x in range(out_w):
            for o in range(channels):
                out[(y * out_w + x) * channels + o] = _element(image, 0, window, pad, y, x, o)
    return out


def _bases(window: Window, shift: int, reverse: bool) -> tuple[int, int, int]:
    """(input start, output start, buffer bytes): the output ``shift`` before the input,
    or after it from the last band."""
    size_in, size_out = window.whole_input_bytes, window.whole_output_bytes
    if reverse:
        return 0, shift, max(size_in, shift + size_out)
    return shift, 0, max(shift + size_in, size_out)


def _in_place(
    window: Window, image: np.ndarray, bands: int, reverse: bool, rng: np.random.Generator
) -> np.ndarray:
    """The bands in one buffer, each band's outputs computed and written one by one in a
    random order, each reading the buffer as it is then."""
    shift = in_place_shift(window, bands, reverse)
    at_in, at_out, size = _bases(window, shift, reverse)
    memory = np.zeros(size, np.int64)
    memory[at_in : at_in + image.size] = image
    out_w, channels = window.out_hw[1], window.out_channels
    tiles = plan_patches([window], (bands, 1)).tiles
    for tile in reversed(tiles) if reverse else tiles:
        call = tile.calls[0]
        rows, pad = call.computes.rows, call.pad_over_whole_input
        first = at_out + rows.start * out_w * channels
        elements = [
            (y, x, o) for y in range(rows.size) for x in range(out_w) for o in range(channels)
        ]
        for k in rng.permutation(len(elements)):
            y, x, o = elements[k]
            memory[first + (y * out_w + x) * channels + o] = _element(
                memory, at_in, window, pad, y, x, o
            )
    return memory[at_out : at_out + window.whole_output_bytes]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_bands_in_one_buffer_equal_the_whole_operator(seed: int, reverse: bool) -> None:
    rng = np.random.default_rng(seed)
    window = _window(rng)
    bands = int(rng.integers(1, window.out_hw[0] + 1))
    image = rng.integers(-128, 128, window.whole_input_bytes)
    got = _in_place(window, image, bands, reverse, rng)
    assert np.array_equal(got, _whole(window, image)), (window, bands, reverse)


def _band_bytes(
    window: Window, bands: int, shift: int, reverse: bool
) -> list[tuple[set[int], set[int]]]:
    """Per band, in the order they run, the buffer bytes it reads and writes."""
    at_in, at_out, _ = _bases(window, shift, reverse)
    out_w, channels = window.out_hw[1], window.out_channels
    found = []
    for tile in plan_patches([window], (bands, 1)).tiles:
        call = tile.calls[0]
        rows, pad = call.computes.rows, call.pad_over_whole_input
        reads, writes = set(), set()
        for y in range(rows.size):
            for x in range(out_w):
                for o in range(channels):
                    writes.add(at_out + ((rows.start + y) * out_w + x) * channels + o)
                    reads |= {at_in + i for _, i in _taps(window, pad, y, x, o) if i is not None}
        found.append((reads, writes))
    return found[::-1] if reverse else found


def _clobbers(bands: list[tuple[set[int], set[int]]]) -> bool:
    """Whether some band writes a byte that it or a later band reads."""
    still_read: set[int] = set()
    for reads, writes in reversed(bands):
        still_read |= reads
        if writes & still_read:
            return True
    return False


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_the_shift_overwrites_nothing_still_read_and_is_near_the_least(
    seed: int, reverse: bool
) -> None:
    """The shift is worked out from whole rows of the rows a band's window spans, so it
    is within a few rows of the least: that much less clobbers."""
    rng = np.random.default_rng(100 + seed)
    window = _window(rng)
    bands = int(rng.integers(1, window.out_hw[0] + 1))
    shift = in_place_shift(window, bands, reverse)
    assert not _clobbers(_band_bytes(window, bands, shift, reverse))
    row = max(window.in_hw[1] * window.in_channels, window.out_hw[1] * window.out_channels)
    # Rows a window skips (stride, dilation) are counted as read; a short band's writes
    # may fall in them.
    slack = row * (window.stride[0] + window.dilation[0])
    if shift > slack:
        assert _clobbers(_band_bytes(window, bands, shift - slack, reverse))


def test_shift_of_a_mobilenet_block() -> None:
    """Stride 1, 3x3, padding 1, 24x24x48 in rows of one: two output rows ahead (the
    row being written and the padding row above it); stride 2 from 48x48: one row."""
    block = Window(DEPTHWISE, (24, 24), (24, 24), 48, 48, (3, 3), (1, 1), (1, 1), 1, 1)
    assert in_place_shift(block, 24) == 2 * 24 * 48
    assert in_place_shift(block, 3) == (8 + 1) * 24 * 48
    assert in_place_shift(block, 1) == 24 * 24 * 48  # one band: the whole output
    down = Window(DEPTHWISE, (48, 48), (24, 24), 48, 48, (3, 3), (2, 2), (1, 1), 0, 0)
    assert in_place_shift(down, 24) == 24 * 48


@pytest.mark.toolchain
def test_mobilenet_v2_needs_less_ram_in_place(tmp_path: Path) -> None:
    whole = read_manifest(build(MOBILENET_V2, tmp_path / "whole", "mps2_an386", "--io-in-pool",
                                "--no-build"))  # fmt: skip
    folder = build(MOBILENET_V2, tmp_path / "in_place", "mps2_an386", "--io-in-pool",
                   "--in-place", "--no-build")  # fmt: skip
    manifest = read_manifest(folder)
    schedule = manifest.schedule
    assert schedule is not None and schedule.stages == () and schedule.in_place
    assert manifest.memory.workspace_bytes == schedule.ram_bytes
    assert schedule.ram_bytes < schedule.whole_ram_bytes == whole.memory.workspace_bytes
    for step in schedule.in_place:
        window = step.window
        larger = max(
            window.in_hw[0] * window.in_hw[1] * window.in_channels,
            window.out_hw[0] * window.out_hw[1] * window.out_channels,
        )
        assert 0 < step.shift_bytes < larger  # else in place would save nothing
    assert f"{len(schedule.in_place)} in place" in schedule.label


@pytest.fixture(scope="module")
def kws_generated():
    """kws lowered with TVM's generated kernels (the host's default)."""
    from aot.boards import load_board
    from aot.compiler import CompileOptions, choose_backends
    from aot.frontend import import_model
    from aot.lowering import lower
    from aot.partition import partition_for_build
    from aot.testing.shared import mlperf_tiny

    board = load_board("host")
    chosen = choose_backends(CompileOptions(name="kws"), board)
    imported = import_model(mlperf_tiny("kws_ref_model"), "auto")
    return lower(partition_for_build(imported, chosen.backends, board), "kws")


def test_a_generated_depthwise_kernel_is_shown_safe_with_its_shift(kws_generated) -> None:
    """25x5x64, 3x3, stride 1, padding 1, one loop nest over output rows: row y writes up
    to index 320 y + 319 and reads from 320 y - 384 (the top-left tap, guarded, counted),
    so the output may start 704 bytes before the input."""
    from aot.tir_to_c.analysis import raster_in_place_shift

    depthwise = [a for a in kws_generated.artifacts if "depthwise" in a.symbol]
    assert depthwise
    for artifact in depthwise:
        last = len(artifact.tir.params) - 1
        assert raster_in_place_shift(artifact.tir, 0, last) == 704
        # Every row reads all the weights from index 0: sharing them would take the
        # whole output's 8000 bytes of shift, nothing saved.
        assert raster_in_place_shift(artifact.tir, 1, last) == 8000


def test_kernels_of_other_shapes_are_not_shown(kws_generated) -> None:
    from aot.tir_to_c.analysis import raster_in_place_shift

    for artifact in kws_generated.artifacts:
        if "softmax" in artifact.symbol or "pool" in artifact.symbol:
            last = len(artifact.tir.params) - 1
            assert raster_in_place_shift(artifact.tir, 0, last) is None, artifact.symbol


def test_generated_convolutions_are_candidates(kws_generated) -> None:
    from aot.planning.in_place_rows import apply_in_place, candidates

    found = candidates(kws_generated, io_in_pool=True)
    shifts = {c.step.label: c.whole_shift for c in found}
    depthwise = [c for c in found if c.window.kind == DEPTHWISE]
    assert len(depthwise) == 4 and all(c.whole_shift == 704 for c in depthwise)
    # The pointwise convolutions (25x5x64 to 25x5x64): one output row, 320 bytes.
    assert sorted(v for k, v in shifts.items() if k.startswith("CONV_2D"))[:4] == [320] * 4
    first = depthwise[0]
    model = apply_in_place(kws_generated, [first.choice(0)], io_in_pool=True)
    source, output = first.step.args[0], first.step.outputs[0]
    offsets = model.buffer_offsets
    assert offsets[output] == 0 and offsets[source] == 704
    assert model.memory_root(output) == source
    assert model.buffer_sizes[source] == 704 + 8000
    step = next(s for s in model.steps if output in s.outputs)
    artifact = next(a for a in model.artifacts if a.symbol == step.kernel)
    assert artifact.aliased and step.kernel.endswith("_in_place")
    # The other three steps still call the kernel they shared, which stays restrict.
    assert any(a.symbol == first.step.kernel and not a.aliased for a in model.artifacts)


@pytest.mark.toolchain
def test_kws_in_place_below_two_thirds_of_whole_operators(tmp_path: Path) -> None:
    """kws's depthwise and pointwise convolutions alternate, each pair holding two 8000 B
    tensors: in place as one chain (directions alternating), about one tensor."""
    from aot.testing.shared import mlperf_tiny

    folder = build(mlperf_tiny("kws_ref_model"), tmp_path / "kws", "mps2_an386",
                   "--io-in-pool", "--in-place", "--no-build")  # fmt: skip
    schedule = read_manifest(folder).schedule
    assert schedule is not None and schedule.in_place
    assert schedule.ram_bytes <= 0.65 * schedule.whole_ram_bytes
    assert {s.reverse for s in schedule.in_place} == {False, True}
    assert read_manifest(folder).memory.workspace_bytes == schedule.ram_bytes
