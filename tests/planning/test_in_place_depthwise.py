"""In-place depthwise convolution (issue 21, aot.planning.in_place_depthwise).

The arithmetic: a depthwise convolution run band by band in one buffer, its output
``in_place_shift`` bytes before its input, gives what it gives with two buffers, whatever
order a kernel reads and writes within a band (randomized: odd sizes, stride 2, dilation,
padding on every side, depth multiplier 2, any band count); one byte less shift and some
band writes a byte it or a later band reads. The plan: with --in-place-depthwise a
converter-made MobileNetV2 needs less RAM than whole operators, the planner's buffers
hold both tensors as one, and models it cannot help keep whole operators.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.artifacts import read_manifest
from aot.planning.patches import DEPTHWISE, Window, in_place_shift, plan_patches, split
from aot.testing.harness import build

REPO = Path(__file__).resolve().parents[2]
MOBILENET_V2 = (
    REPO / "tests" / "fixtures" / "converters" / "tflite" / "mobilenet_v2_035_96_int8_fixed.tflite"
)
ZERO_POINT = -3  # what a padded tap reads


def _window(rng: np.random.Generator) -> Window:
    kernel = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    if kernel == (1, 1):
        kernel = (3, 3)
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dilation = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    reach = [(kernel[a] - 1) * dilation[a] + 1 for a in range(2)]
    in_hw = (int(rng.integers(reach[0], 20)), int(rng.integers(reach[1], 14)))
    channels = int(rng.integers(1, 6))
    multiplier = int(rng.choice([1, 1, 2]))
    pads, out_hw = [], []
    for axis in range(2):
        reach = (kernel[axis] - 1) * dilation[axis] + 1
        before = int(rng.integers(0, reach))
        after = int(rng.integers(0, reach))
        pads.append(before)
        out_hw.append((in_hw[axis] + before + after - reach) // stride[axis] + 1)
    return Window(
        DEPTHWISE, in_hw, (out_hw[0], out_hw[1]), channels, channels * multiplier, kernel,
        stride, dilation, pads[0], pads[1],
    )  # fmt: skip


def _output_element(
    memory: np.ndarray, base: int, window: Window, pad: tuple[int, int], y: int, x: int, o: int
) -> int:
    """One output of a depthwise call that reads its input at ``memory[base:]`` (the whole
    image, padding ``pad`` moved to the call's origin), at the moment it is computed."""
    (in_h, in_w), c = window.in_hw, window.in_channels
    multiplier = window.out_channels // c
    total = 0
    for ky in range(window.kernel[0]):
        for kx in range(window.kernel[1]):
            iy = y * window.stride[0] - pad[0] + ky * window.dilation[0]
            ix = x * window.stride[1] - pad[1] + kx * window.dilation[1]
            inside = 0 <= iy < in_h and 0 <= ix < in_w
            value = (
                int(memory[base + (iy * in_w + ix) * c + o // multiplier]) if inside else ZERO_POINT
            )
            total += value * (1 + (ky * 7 + kx * 3 + o) % 5)
    return (total + 128) % 256 - 128


def _whole(window: Window, image: np.ndarray) -> np.ndarray:
    out_h, out_w = window.out_hw
    out = np.zeros(out_h * out_w * window.out_channels, np.int64)
    pad = (window.pad_top, window.pad_left)
    for y in range(out_h):
        for x in range(out_w):
            for o in range(window.out_channels):
                out[(y * out_w + x) * window.out_channels + o] = _output_element(
                    image, 0, window, pad, y, x, o
                )
    return out


def _in_place(
    window: Window, image: np.ndarray, bands: int, shift: int, rng: np.random.Generator
) -> np.ndarray:
    """The bands in one buffer, each band's outputs computed and written one by one in a
    random order, each reading the buffer as it is then."""
    out_bytes = window.whole_output_bytes
    memory = np.zeros(max(shift + image.size, out_bytes), np.int64)
    memory[shift : shift + image.size] = image
    out_w, channels = window.out_hw[1], window.out_channels
    plan = plan_patches([window], (bands, 1))
    for tile in plan.tiles:
        call = tile.calls[0]
        rows = call.computes.rows
        pad = call.pad_over_whole_input
        first_byte = rows.start * out_w * channels
        elements = [
            (y, x, o) for y in range(rows.size) for x in range(out_w) for o in range(channels)
        ]
        for k in rng.permutation(len(elements)):
            y, x, o = elements[k]
            value = _output_element(memory, shift, window, pad, y, x, o)
            memory[first_byte + (y * out_w + x) * channels + o] = value
    return memory[:out_bytes]


@pytest.mark.parametrize("seed", range(40))
def test_bands_in_one_buffer_equal_the_whole_operator(seed: int) -> None:
    rng = np.random.default_rng(seed)
    window = _window(rng)
    bands = int(rng.integers(1, window.out_hw[0] + 1))
    image = rng.integers(-128, 128, window.whole_input_bytes)
    shift = in_place_shift(window, bands)
    expected = _whole(window, image)
    got = _in_place(window, image, bands, shift, rng)
    assert np.array_equal(got, expected), (window, bands, shift)


def _band_bytes(window: Window, bands: int, shift: int) -> list[tuple[set[int], set[int]]]:
    """Per band, the buffer bytes it reads (its input from ``shift`` on) and writes."""
    (in_h, in_w), c = window.in_hw, window.in_channels
    out_w, channels = window.out_hw[1], window.out_channels
    multiplier = channels // c
    found = []
    for tile in plan_patches([window], (bands, 1)).tiles:
        call = tile.calls[0]
        rows, pad = call.computes.rows, call.pad_over_whole_input
        reads, writes = set(), set()
        for y in range(rows.size):
            for x in range(out_w):
                for o in range(channels):
                    writes.add(((rows.start + y) * out_w + x) * channels + o)
                    for ky in range(window.kernel[0]):
                        for kx in range(window.kernel[1]):
                            iy = y * window.stride[0] - pad[0] + ky * window.dilation[0]
                            ix = x * window.stride[1] - pad[1] + kx * window.dilation[1]
                            if 0 <= iy < in_h and 0 <= ix < in_w:
                                reads.add(shift + (iy * in_w + ix) * c + o // multiplier)
        found.append((reads, writes))
    return found


def _clobbers(bands: list[tuple[set[int], set[int]]]) -> bool:
    """Whether some band writes a byte that it or a later band reads."""
    still_read: set[int] = set()
    for reads, writes in reversed(bands):
        still_read |= reads
        if writes & still_read:
            return True
    return False


@pytest.mark.parametrize("seed", range(40))
def test_the_shift_is_the_least_that_overwrites_nothing_still_read(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    window = _window(rng)
    bands = int(rng.integers(1, window.out_hw[0] + 1))
    shift = in_place_shift(window, bands)
    assert not _clobbers(_band_bytes(window, bands, shift))
    tighter = _band_bytes(window, bands, shift - 1)
    if _clobbers(tighter):
        return
    # Safe with one byte less only if the band that sets the shift never reads the first
    # byte of its first input row (a tap pattern that skips column 0).
    row_in = window.in_hw[1] * window.in_channels
    row_out = window.out_hw[1] * window.out_channels
    parts = split(window.out_hw[0], bands)
    gaps = [r.stop * row_out - window._reads(r, 0, window.pad_top).start * row_in for r in parts]
    k = gaps.index(shift)
    first = shift - 1 + window._reads(parts[k], 0, window.pad_top).start * row_in
    assert all(first not in reads for reads, _ in tighter[k:])


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
                   "--in-place-depthwise", "--no-build")  # fmt: skip
    manifest = read_manifest(folder)
    schedule = manifest.schedule
    assert schedule is not None and schedule.stages == () and schedule.in_place
    assert manifest.memory.workspace_bytes == schedule.ram_bytes
    assert schedule.ram_bytes < schedule.whole_ram_bytes == whole.memory.workspace_bytes
    step = schedule.in_place[0]
    window = step.window
    input_bytes = window.in_hw[0] * window.in_hw[1] * window.in_channels
    output_bytes = window.out_hw[0] * window.out_hw[1] * window.out_channels
    # The buffer the planner sees holds both tensors in max(shift + input, output) bytes;
    # the model's peak falls by that much at most (the next step's peak then sets it).
    saved = schedule.whole_ram_bytes - schedule.ram_bytes
    at_the_step = input_bytes + output_bytes - max(step.shift_bytes + input_bytes, output_bytes)
    assert 0 < saved <= at_the_step
    buffers = {b.buffer: b.size for b in manifest.memory.buffers}
    assert max(step.shift_bytes + input_bytes, output_bytes) in buffers.values()
    assert f"{len(schedule.in_place)} depthwise in place" in schedule.label


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


def test_generated_depthwise_steps_are_candidates(kws_generated) -> None:
    from aot.planning.in_place_depthwise import InPlace, apply_in_place, candidates

    found = candidates(kws_generated, io_in_pool=True)
    assert len(found) == 4 and all(c.whole_shift == 704 for c in found)
    first = found[0]
    model = apply_in_place(kws_generated, [InPlace(first.step.outputs[0], 0)])
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
