"""The tiling arithmetic of patch-based execution (aot/planning/patches.py) against the
untiled result: random chains of convolutions, depthwise convolutions, pooling and
elementwise operators with odd sizes, strides, dilations and padding on every side, run
whole and tile by tile by a small integer model of the kernels' semantics."""

from __future__ import annotations

import numpy as np
import pytest

from aot.planning.patches import (
    CONV,
    DEPTHWISE,
    ELEMENTWISE,
    POOL,
    Interval,
    Region,
    Window,
    grids,
    plan_patches,
    split,
)

ZERO_POINT = 3  # what a padded tap of a convolution reads


def run_window(
    window: Window, x: np.ndarray, pad: tuple[int, int], out_hw: tuple[int, int],
    weights: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """What a kernel computes: ``x`` is an (h, w, c) buffer, ``pad`` the (top, left)
    padding of the call; a tap outside the buffer is padding."""
    h, w, _ = x.shape
    out = np.zeros((*out_hw, window.out_channels), dtype=np.int64)
    kh, kw = window.kernel
    for oy in range(out_hw[0]):
        for ox in range(out_hw[1]):
            taps, inside = [], []
            for ky in range(kh):
                for kx in range(kw):
                    y = oy * window.stride[0] - pad[0] + ky * window.dilation[0]
                    xx = ox * window.stride[1] - pad[1] + kx * window.dilation[1]
                    valid = 0 <= y < h and 0 <= xx < w
                    inside.append(valid)
                    taps.append(x[y, xx] if valid else np.full(x.shape[2], ZERO_POINT))
            taps = np.array(taps)  # (taps, channels)
            if window.kind == CONV:
                out[oy, ox] = np.einsum("tc,tco->o", taps - ZERO_POINT, weights)
            elif window.kind == DEPTHWISE:
                out[oy, ox] = ((taps - ZERO_POINT) * weights).sum(axis=0)
            elif window.kind == POOL:  # an average over the taps inside, TFLite's way
                valid = taps[np.array(inside)]
                count = len(valid)
                out[oy, ox] = (valid.sum(axis=0) + count // 2) // count + valid.max(axis=0)
            else:
                out[oy, ox] = taps[0] * 3 - 1
    return out


def random_window(rng: np.random.Generator, in_hw: tuple[int, int], channels: int) -> Window:
    kind = rng.choice([CONV, DEPTHWISE, POOL, ELEMENTWISE])
    if kind == ELEMENTWISE:
        return Window(ELEMENTWISE, in_hw, in_hw, channels, channels)
    kernel = tuple(int(k) for k in rng.integers(1, 5, size=2))
    stride = tuple(int(s) for s in rng.integers(1, 3, size=2))
    dilation = tuple(int(d) for d in rng.integers(1, 3, size=2))
    pads, out_hw = [], []
    for axis in range(2):
        reach = (kernel[axis] - 1) * dilation[axis] + 1
        before, after = (int(p) for p in rng.integers(0, reach, size=2))
        size = (in_hw[axis] + before + after - reach) // stride[axis] + 1
        if size < 1:
            before, after = reach - 1, reach - 1
            size = (in_hw[axis] + before + after - reach) // stride[axis] + 1
        pads.append(before)
        out_hw.append(size)
    out_channels = int(rng.integers(1, 5)) if kind == CONV else channels
    return Window(kind, in_hw, tuple(out_hw), channels, out_channels, kernel, stride,
                  dilation, pads[0], pads[1])  # fmt: skip


def weights_for(window: Window, rng: np.random.Generator) -> np.ndarray:
    taps = window.kernel[0] * window.kernel[1]
    if window.kind == CONV:
        return rng.integers(-4, 5, size=(taps, window.in_channels, window.out_channels))
    return rng.integers(-4, 5, size=(taps, window.in_channels))


def whole(window: Window, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return run_window(window, x, (window.pad_top, window.pad_left), window.out_hw, weights)


def tiled(plan, x: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    last = plan.chain[-1]
    out = np.full((*last.out_hw, last.out_channels), -999, dtype=np.int64)
    for tile in plan.tiles:
        buffer = None
        for k, call in enumerate(tile.calls):
            size = (call.computes.rows.size, call.computes.cols.size)
            if k == 0:  # over the whole stage input in place, and over a copy of the window
                result = run_window(call.window, x, call.pad_over_whole_input, size, weights[0])
                window_copy = x[call.reads.rows.start : call.reads.rows.stop,
                                call.reads.cols.start : call.reads.cols.stop]  # fmt: skip
                again = run_window(call.window, window_copy, call.local_pad, size, weights[0])
                np.testing.assert_array_equal(result, again)
            else:
                assert tile.calls[k - 1].computes == call.reads  # the buffer holds what it reads
                assert buffer.shape[:2] == (call.reads.rows.size, call.reads.cols.size)
                result = run_window(call.window, buffer, call.local_pad, size, weights[k])
            buffer = result
        rows, cols = tile.output.rows, tile.output.cols
        out[rows.start : rows.stop, cols.start : cols.stop] = buffer
    return out


@pytest.mark.parametrize("seed", range(40))
def test_tiles_give_the_untiled_result(seed: int) -> None:
    rng = np.random.default_rng(seed)
    in_hw = tuple(int(s) for s in rng.integers(5, 24, size=2))
    channels = int(rng.integers(1, 4))
    chain = []
    for _ in range(int(rng.integers(1, 5))):
        window = random_window(rng, in_hw if not chain else chain[-1].out_hw,
                               channels if not chain else chain[-1].out_channels)  # fmt: skip
        chain.append(window)
    x = rng.integers(-128, 128, size=(*in_hw, channels))
    weights = [weights_for(w, rng) for w in chain]
    expected = x
    for window, w in zip(chain, weights, strict=True):
        expected = whole(window, expected, w)
    out_hw = chain[-1].out_hw
    for grid in {(1, 1), out_hw, tuple(int(rng.integers(1, s + 1)) for s in out_hw)}:
        plan = plan_patches(chain, grid)
        assert len(plan.tiles) == grid[0] * grid[1]
        np.testing.assert_array_equal(tiled(plan, x, weights), expected, err_msg=str(grid))


def test_split_covers_the_axis_in_near_equal_parts() -> None:
    assert split(10, 3) == [Interval(0, 4), Interval(4, 7), Interval(7, 10)]
    assert split(5, 5)[-1] == Interval(4, 5)
    with pytest.raises(ValueError, match="cannot split 3 into 4"):
        split(3, 4)


def test_a_tile_pads_only_at_the_image_border() -> None:
    dw = Window(DEPTHWISE, (12, 12), (12, 12), 4, 4, (3, 3), pad_top=1, pad_left=1)
    plan = plan_patches([dw], (3, 3))
    pads = {(t.row, t.col): t.calls[0].local_pad for t in plan.tiles}
    assert pads[(0, 0)] == (1, 1) and pads[(1, 1)] == (0, 0) and pads[(2, 2)] == (0, 0)
    interior = plan.tiles[4].calls[0]
    assert interior.reads == Region(Interval(3, 9), Interval(3, 9))  # 4 rows + a halo of 1
    assert interior.pad_over_whole_input == (-3, -3)


def test_vww_first_stage_fits_below_the_fixed_order_bound() -> None:
    """vww_96_int8's first four operators: the fixed-order bound of the model is 55,296 B
    (pointwise #2: 18,432 in, 36,864 out); tiled, input and stage output stay whole."""
    chain = [
        Window(CONV, (96, 96), (48, 48), 3, 8, (3, 3), (2, 2)),
        Window(DEPTHWISE, (48, 48), (48, 48), 8, 8, (3, 3), pad_top=1, pad_left=1),
        Window(CONV, (48, 48), (48, 48), 8, 16),
        Window(DEPTHWISE, (48, 48), (24, 24), 16, 16, (3, 3), (2, 2)),
    ]
    whole_plan = plan_patches(chain, (1, 1))
    assert whole_plan.macs == whole_plan.untiled_macs == 1_041_408
    fitting = [plan_patches(chain, g) for g in grids((24, 24))]
    fitting = [p for p in fitting if p.stage_peak() <= 39_800]
    best = min(fitting, key=lambda p: p.macs)
    assert best.stage_peak() == 27_648 + 9_216 + best.scratch_peak()
    assert best.macs / best.untiled_macs < 1.4


@pytest.mark.parametrize("seed", range(10))
def test_the_summary_from_the_axes_equals_the_tiles(seed: int) -> None:
    from aot.planning.patches import summary

    rng = np.random.default_rng(100 + seed)
    chain = [random_window(rng, (int(rng.integers(6, 30)), int(rng.integers(6, 30))), 2)]
    for _ in range(3):
        chain.append(random_window(rng, chain[-1].out_hw, chain[-1].out_channels))
    grid = tuple(int(rng.integers(1, s + 1)) for s in chain[-1].out_hw)
    plan = plan_patches(chain, grid)
    buffers, macs = summary(chain, grid)
    assert buffers == list(plan.tile_buffers)
    assert macs == [sum(t.calls[k].macs for t in plan.tiles) for k in range(len(chain))]
