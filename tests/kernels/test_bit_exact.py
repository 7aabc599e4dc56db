"""Every kernel variant against LiteRT's reference kernels, on the emulated board of its
ISA: dozens of random operators in one model, one build, one QEMU session.

Parametrized over every ISA (aot.kernels.ISAS), so a new ISA's variants join by being
listed in its VARIANTS; an ISA with none yet has nothing to test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.kernels import ISAS, variants
from aot.library import read_metadata
from aot.testing.harness import build, random_inputs, run_many
from aot.testing.reference import run_tflite_reference
from tests.kernels import cases

pytestmark = [pytest.mark.toolchain, pytest.mark.emulator]

# The emulated board of each ISA: its core runs that ISA and nothing faster matters.
BOARDS = {"scalar": "mps2_an385", "dsp": "mps2_an386", "mve": "mps3_an547"}
# Further cores of an ISA, checked on the reference models (test_models.py).
KINDS = {
    "conv2d_int8": "CONV_2D",
    "depthwise_conv2d_int8": "DEPTHWISE_CONV_2D",
    "fully_connected_int8": "FULLY_CONNECTED",
    "add_int8": "ADD",
    "transpose_conv2d_int8": "TRANSPOSE_CONV",
}


def check_cases(
    isa: str,
    board: str,
    seed: int,
    tmp_path: Path,
    count: int = 10,
    shapes: tuple[cases.Shape, ...] = (),
    every_kernel: bool = True,
) -> None:
    # In KINDS order, so a kind added later leaves the earlier kinds' random cases as they were.
    have = {v.kind for v in variants(isa)}
    found = [k for k in KINDS if k in have]
    if shapes:
        found = [k for k in found if KINDS[k] in {s.kind for s in shapes}]
    if not found:
        pytest.skip(f"no {isa} kernels for {', '.join(KINDS)} yet")
    if shapes:
        model_bytes = cases.model_of(seed, shapes)
    else:
        model_bytes = cases.model(seed, tuple(KINDS[k] for k in found), count)
    model = tmp_path / "cases.tflite"
    model.write_bytes(model_bytes)
    folder = build(model, tmp_path / "out", board, "--kernels", isa)
    metadata = read_metadata(folder)
    ran = [op["implementation"] for op in metadata["operators"]]
    # The generator stays inside the DSP variants' limits, so each of them runs every
    # case; another ISA's may leave some to TVM, but each of its kinds must run some.
    if isa in ("dsp", "scalar") and every_kernel:
        assert all(name.endswith(f"_{isa}") for name in ran), ran
    types = [op["source_operators"][0]["type"] for op in metadata["operators"]]
    for kind in found:
        mine = [n for n, t in zip(ran, types, strict=True) if t == KINDS[kind] and n.endswith(isa)]
        assert mine, f"no {KINDS[kind]} case ran on a {isa} kernel: {ran}"
    batches = random_inputs(metadata["inputs"], 3, seed)
    for batch, outputs in zip(batches, run_many(folder, batches), strict=True):
        expected = run_tflite_reference(model_bytes, batch)
        for spec, got, want in zip(metadata["outputs"], outputs, expected, strict=True):
            if not np.array_equal(got, want):
                diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
                raise AssertionError(
                    f"{isa} on {board}, {spec['name']}: {int((diff > 0).sum())} of "
                    f"{diff.size} values differ, max {int(diff.max())} steps"
                )


@pytest.mark.parametrize("isa", ISAS)
def test_random_operators_match_litert(isa: str, tmp_path: Path) -> None:
    check_cases(isa, BOARDS[isa], 11, tmp_path)


# Depthwise border pixels: padded taps read the zero point from the scratch (through the
# tap pointers), with strides, dilations and padding on any side.
BORDER_SHAPES = tuple(
    cases.Shape("DEPTHWISE_CONV_2D", 1, h, w, c, c, k, stride, dilation)
    for h, w, c, k, stride, dilation in [
        (5, 6, 8, (3, 3), (1, 1), (2, 2)),
        (7, 5, 4, (3, 3), (2, 2), (1, 1)),
        (6, 6, 12, (5, 5), (1, 2), (1, 1)),
        (4, 9, 4, (2, 3), (1, 1), (2, 1)),
        (3, 3, 16, (3, 3), (1, 1), (1, 1)),
    ]
)


@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_depthwise_border_pixels_match_litert(isa: str, tmp_path: Path) -> None:
    check_cases(isa, BOARDS[isa], 5, tmp_path, shapes=BORDER_SHAPES)


# The requantization records' forms through each kernel path (aot.kernels.quant,
# conv_dsp.c): tiny weight scales give right shifts of 24-31 (records without the output
# zero point folded in), large ones left shifts (the general form); 1x1 and 3x3 over
# in_c % 4 == 0 (the interleaved LDRD loop), in_c % 4 != 0 (the in-place and plain im2col
# loops), fully connected over K % 8 == 0 (the LDRD loop) and not, batches 1 and 2.
REQUANT_FORM_SHAPES = tuple(
    cases.Shape(kind, batches, h, w, in_c, out_c, k, weight_scale=scale)
    for scale in (1e-7, 3.0)
    for kind, batches, h, w, in_c, out_c, k in [
        ("CONV_2D", 1, 5, 3, 16, 6, (1, 1)),
        ("CONV_2D", 1, 6, 5, 8, 16, (1, 1)),  # K = 8: per tensor too since the LDRD loop
        ("CONV_2D", 1, 4, 4, 17, 5, (1, 1)),
        ("CONV_2D", 2, 5, 4, 8, 7, (3, 3)),
        ("CONV_2D", 1, 4, 5, 5, 16, (3, 3)),
        ("FULLY_CONNECTED", 1, 1, 1, 24, 9, (1, 1)),
        ("FULLY_CONNECTED", 2, 1, 1, 13, 6, (1, 1)),
    ]
)


@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_requantization_forms_match_litert(isa: str, tmp_path: Path) -> None:
    check_cases(isa, BOARDS[isa], 7, tmp_path, shapes=REQUANT_FORM_SHAPES)


# aot_k_fc_wide (batch 1, int16 weights, conv_dsp.c): K % 8 == 0 (two groups a pass),
# K % 8 == 4 (an odd group first), K % 4 tails, K < 4 (no group at all), channels past the
# last quad, one 640-deep layer as ad01_int8's first; both requantization forms' scales.
WIDE_FC_SHAPES = tuple(
    cases.Shape("FULLY_CONNECTED", 1, 1, 1, depth, out_c, (1, 1), weight_scale=scale)
    for depth, out_c, scale in [
        (16, 8, None), (12, 4, None), (20, 9, None), (7, 5, None), (3, 6, None),
        (1, 3, None), (26, 13, None), (640, 12, None), (24, 8, 1e-7), (36, 7, 3.0),
    ]
)  # fmt: skip


@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_batch_one_fully_connected_with_wide_weights_matches_litert(
    isa: str, tmp_path: Path
) -> None:
    check_cases(isa, BOARDS[isa], 13, tmp_path, shapes=WIDE_FC_SHAPES)
    ran = [op["implementation"] for op in read_metadata(tmp_path / "out")["operators"]]
    # The plain C build takes the two-channels-per-multiply kernel first (below).
    expected = "aot_k_fc_wide_s8_dsp" if isa == "dsp" else "aot_k_fc_lanes_s8_scalar"
    assert ran and all(name == expected for name in ran), ran


# aot_k_conv_lanes / aot_k_fc_lanes (conv_lanes_scalar.c, two channels per SMLAL): pixel
# counts leaving 0-3 pixels past the last pass of four, odd channel counts (the last pair's
# second lane unused), K % 4 != 0 (zero-padded words), 1x1 and windows with padding on
# every side, strides, dilation, batches; fully connected layers over 1-13 channels (the
# three-pair loop and the pairs after it) and batches; both requantization forms' scales;
# every weight +-127 at K = 516 (127 * 516 = 65532, the largest sum of |w| a lane holds)
# and one past it at K = 517, which the plain C kernels of conv_dsp.c take instead;
# depthwise (aot_k_dwconv_lanes, two neighbouring pixels per SMLAL) below.
LANES_SHAPES = (
    cases.Shape("CONV_2D", 1, 1, 1, 16, 6),
    cases.Shape("CONV_2D", 1, 1, 2, 8, 3),
    cases.Shape("CONV_2D", 1, 3, 1, 5, 7),
    cases.Shape("CONV_2D", 1, 3, 3, 16, 9),
    cases.Shape("CONV_2D", 2, 3, 5, 12, 1),
    cases.Shape("CONV_2D", 1, 7, 6, 3, 8, (3, 3), (2, 2)),
    cases.Shape("CONV_2D", 1, 6, 7, 5, 11, (3, 3), (1, 1), (2, 2)),
    cases.Shape("CONV_2D", 1, 9, 5, 1, 16, (4, 2), (1, 2)),
    cases.Shape("CONV_2D", 2, 5, 6, 4, 5, (3, 3), (1, 1), (1, 1), False),
    cases.Shape("CONV_2D", 1, 5, 5, 8, 6, (3, 3), weight_scale=3.0),
    cases.Shape("CONV_2D", 1, 4, 5, 8, 7, (1, 1), weight_scale=1e-7),
    cases.Shape("CONV_2D", 1, 3, 3, 516, 5, extreme_weights=True),
    cases.Shape("CONV_2D", 1, 3, 3, 517, 4, extreme_weights=True),
    *(cases.Shape("FULLY_CONNECTED", 1, 1, 1, 37, c) for c in (1, 2, 5, 6, 7, 13)),
    # aot_k_dwconv_lanes: 3x3 at stride 1 (passes of four, then a pair, an odd last pixel),
    # padding or none, stride 2 down the columns, batches; other windows and dilation
    # through the column table; both requantization forms' scales
    cases.Shape("DEPTHWISE_CONV_2D", 1, 5, 4, 8, 8, (3, 3)),
    cases.Shape("DEPTHWISE_CONV_2D", 1, 6, 7, 5, 5, (3, 3)),
    cases.Shape("DEPTHWISE_CONV_2D", 2, 4, 9, 3, 3, (3, 3), same=False),
    cases.Shape("DEPTHWISE_CONV_2D", 1, 9, 6, 4, 4, (3, 3), (2, 1)),
    cases.Shape("DEPTHWISE_CONV_2D", 1, 7, 8, 6, 6, (5, 5)),
    cases.Shape("DEPTHWISE_CONV_2D", 1, 8, 9, 4, 4, (3, 3), (1, 1), (2, 2)),
    cases.Shape("DEPTHWISE_CONV_2D", 1, 6, 5, 2, 2, (2, 4)),
    cases.Shape("DEPTHWISE_CONV_2D", 1, 5, 6, 8, 8, (3, 3), weight_scale=3.0),
    cases.Shape("DEPTHWISE_CONV_2D", 1, 5, 6, 8, 8, (3, 3), weight_scale=1e-7),
    cases.Shape("FULLY_CONNECTED", 3, 1, 1, 20, 8),
    cases.Shape("FULLY_CONNECTED", 1, 1, 1, 48, 9, weight_scale=3.0),
    cases.Shape("FULLY_CONNECTED", 1, 1, 1, 516, 6, extreme_weights=True),
)


@pytest.mark.parametrize("board", ["mps2_an385", "mps2_an521"])
def test_two_channels_per_multiply_match_litert(board: str, tmp_path: Path) -> None:
    check_cases("scalar", board, 17, tmp_path, shapes=LANES_SHAPES)
    ran = [op["implementation"] for op in read_metadata(tmp_path / "out")["operators"]]
    over_the_bound = LANES_SHAPES.index(
        cases.Shape("CONV_2D", 1, 3, 3, 517, 4, extreme_weights=True)
    )
    assert ran[over_the_bound] == "aot_k_conv_s8_scalar", ran
    others = ran[:over_the_bound] + ran[over_the_bound + 1 :]
    lanes = (
        "aot_k_conv_lanes_s8_scalar",
        "aot_k_fc_lanes_s8_scalar",
        "aot_k_dwconv_lanes_s8_scalar",
    )
    assert all(name in lanes for name in others), ran
    assert ran.count("aot_k_dwconv_lanes_s8_scalar") == 9, ran


# aot_k_dwconv3x3: interior runs per channel group with the records (zero point folded
# into the nudge; each clamp kind by the drawn activations and zero points), border
# columns as runs down 4 rows or more (left, right, both, two of them with dilation 2),
# the other border pixels through the tap table, no border (no scratch), batches,
# stride 2, dilation 2;
# weight scales giving a left shift (the general records: every pixel through the tap
# table) and right shifts too large to fold the zero point into (the same).
DEPTHWISE_3X3_SHAPES = tuple(
    cases.Shape("DEPTHWISE_CONV_2D", batches, h, w, c, c, (3, 3), stride, dilation, same,
                weight_scale=scale)
    for batches, h, w, c, stride, dilation, same, scale in [
        (1, 9, 10, 8, (1, 1), (1, 1), True, None),
        (1, 8, 7, 12, (2, 2), (1, 1), True, None),
        (1, 7, 9, 4, (1, 1), (2, 2), True, None),
        (1, 6, 6, 8, (1, 1), (1, 1), False, None),
        (2, 5, 6, 16, (1, 1), (1, 1), True, None),
        (1, 6, 5, 8, (2, 1), (1, 1), True, None),
        (1, 7, 7, 4, (1, 1), (1, 1), True, None),
        (1, 4, 5, 20, (1, 2), (1, 1), True, None),
        (1, 10, 9, 8, (1, 2), (1, 1), True, None),
        (1, 9, 8, 4, (1, 2), (1, 1), True, None),
        (1, 10, 8, 4, (1, 1), (2, 2), True, None),
        (1, 6, 7, 8, (1, 1), (1, 1), True, 3.0),
        (1, 6, 7, 8, (1, 1), (1, 1), True, 1e-7),
    ]
)  # fmt: skip


@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_depthwise_3x3_paths_match_litert(isa: str, tmp_path: Path) -> None:
    check_cases(isa, BOARDS[isa], 7, tmp_path, shapes=DEPTHWISE_3X3_SHAPES)


# aot_k_dw3x3_passes (dwconv_dsp.c: two pixels per pass, an odd last pixel alone): runs
# along rows and down columns (tall images take column runs, as kws_ref_model's 25x5),
# odd and even run lengths, stride 2 along either axis or both, dilation across the runs
# only (along them the tap table takes over), the border columns and rows of SAME,
# VALID (no border), images of 2-4 pixels a side where most pixels are border pixels and
# the runs stop (under 8 interior pixels), batches; the activations and zero points are
# drawn per case, so every clamp kind runs. Channel counts off the multiple of 4 and
# depth multipliers take the general kernel beside them.
PASS_SHAPES = tuple(
    cases.Shape("DEPTHWISE_CONV_2D", batches, h, w, c, c * m, (3, 3), stride, dilation, same,
                multiplier=m)
    for batches, h, w, c, m, stride, dilation, same in [
        (1, 25, 5, 8, 1, (1, 1), (1, 1), True),
        (1, 5, 13, 4, 1, (1, 1), (1, 1), True),
        (1, 11, 12, 8, 1, (2, 2), (1, 1), True),
        (1, 12, 11, 4, 1, (2, 1), (1, 1), True),
        (1, 9, 14, 12, 1, (1, 2), (1, 1), True),
        (2, 7, 8, 4, 1, (1, 1), (1, 1), False),
        (1, 10, 9, 8, 1, (1, 1), (2, 1), True),
        (1, 9, 10, 4, 1, (1, 1), (1, 2), True),
        (1, 6, 6, 32, 1, (1, 1), (1, 1), True),
        (1, 6, 6, 16, 1, (2, 2), (1, 1), True),
        (1, 4, 4, 8, 1, (1, 1), (1, 1), True),
        (1, 3, 3, 8, 1, (1, 1), (1, 1), True),
        (1, 2, 5, 4, 1, (1, 1), (1, 1), True),
        (1, 4, 9, 4, 1, (1, 1), (1, 1), True),
        (1, 9, 4, 4, 1, (1, 1), (1, 1), True),
        (1, 7, 5, 6, 1, (1, 1), (1, 1), True),
        (1, 6, 7, 4, 2, (1, 1), (1, 1), True),
    ]
)  # fmt: skip


def random_pass_shapes(seed: int, count: int) -> tuple[cases.Shape, ...]:
    """``count`` random 3x3 depthwise shapes over the passes' branches (seeded)."""
    rng = np.random.default_rng(seed)
    shapes = []
    for _ in range(count):
        h, w = (int(v) for v in rng.integers(2, 15, 2))
        c = int(rng.choice([4, 8, 12, 16, 32]))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        dilation = [(1, 1), (1, 1), (1, 1), (2, 1), (1, 2)][int(rng.integers(0, 5))]
        same = bool(rng.random() < 0.75)
        if not same and (h < 1 + 2 * dilation[0] or w < 1 + 2 * dilation[1]):
            same = True
        batches = 2 if rng.random() < 0.15 else 1
        shapes.append(
            cases.Shape("DEPTHWISE_CONV_2D", batches, h, w, c, c, (3, 3), stride, dilation, same)
        )
    return tuple(shapes)


@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_depthwise_3x3_pass_shapes_match_litert(isa: str, tmp_path: Path) -> None:
    check_cases(isa, BOARDS[isa], 13, tmp_path, shapes=PASS_SHAPES)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_depthwise_3x3_random_passes_match_litert(isa: str, seed: int, tmp_path: Path) -> None:
    check_cases(isa, BOARDS[isa], seed, tmp_path, shapes=random_pass_shapes(seed, 20))


# ADD: equal shapes with and without a tail of the four-element blocks, a per-channel rhs, a
# per-channel lhs (swapped to the kernel's rhs), a scalar rhs, one element.
ADD_SHAPES = tuple(
    cases.Shape("ADD", batches, h, w, c, c, broadcast=broadcast)
    for batches, h, w, c, broadcast in [
        (1, 4, 4, 16, "equal"),
        (2, 3, 5, 7, "equal"),
        (1, 5, 3, 12, "channel"),
        (1, 2, 7, 5, "lhs_channel"),
        (1, 3, 3, 9, "scalar"),
        (1, 1, 1, 1, "equal"),
    ]
)


@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_add_shapes_match_litert(isa: str, tmp_path: Path) -> None:
    check_cases(isa, BOARDS[isa], 3, tmp_path, shapes=ADD_SHAPES)


# First layers over few input channels (conv_shallow_dsp.c): vww's 3x3 stride 2 from RGB,
# pretrainedResnet's 3x3 from RGB, a tall 9x3 window over one channel, kws's 10x4 stride 2
# over one channel and others whose K is a multiple of 4 (4x2 over two channels, 2x2 over
# one), rows of odd and even length, an odd channel count, VALID, one and two input
# channels, batches, a single output pixel (no second slot).
FIRST_LAYER_SHAPES = tuple(
    cases.Shape("CONV_2D", batches, h, w, in_c, out_c, k, stride, (1, 1), same)
    for batches, h, w, in_c, out_c, k, stride, same in [
        (1, 12, 12, 3, 8, (3, 3), (2, 2), True),
        (1, 9, 7, 3, 16, (3, 3), (1, 1), True),
        (1, 13, 10, 1, 17, (9, 3), (2, 2), True),
        (2, 6, 5, 3, 5, (3, 3), (1, 2), False),
        (1, 7, 6, 2, 6, (3, 3), (2, 1), True),
        (1, 5, 8, 1, 3, (3, 1), (1, 1), True),
        (1, 3, 3, 3, 4, (3, 3), (1, 1), False),
        (1, 49, 10, 1, 64, (10, 4), (2, 2), True),
        (1, 9, 8, 2, 12, (4, 2), (1, 2), True),
        (1, 6, 7, 1, 9, (2, 2), (1, 1), False),
    ]
)


@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_first_layer_convolutions_match_litert(isa: str, tmp_path: Path) -> None:
    from aot.kernels.scalar import MIN_SHALLOW_CHANNELS

    # The scalar variant leaves fewer output channels to TVM (aot/kernels/scalar.py).
    shapes = tuple(s for s in FIRST_LAYER_SHAPES if isa == "dsp" or s.out_c >= MIN_SHALLOW_CHANNELS)
    check_cases(isa, BOARDS[isa], 7, tmp_path, shapes=shapes)


@pytest.mark.parametrize("board", ["mps2_an500"])
def test_dsp_kernels_on_other_cores(board: str, tmp_path: Path) -> None:
    check_cases("dsp", board, 23, tmp_path, count=4)


def test_an521_cpu0_has_no_dsp_extension(tmp_path: Path) -> None:
    """Why mps2_an521 says dsp: false: QEMU's AN521 boots the SSE-200's CPU0, a Cortex-M33
    without the DSP extension, and SXTB16 there is an undefined instruction (UsageFault,
    CFSR.UNDEFINSTR = 0x00010000). Built with a copy of its board file claiming DSP."""
    from aot.errors import AotError

    board_file = tmp_path / "mps2_an521.yaml"
    text = (Path(__file__).resolve().parents[2] / "aot/boards/mps2_an521.yaml").read_text()
    assert "dsp: false" in text
    board_file.write_text(text.replace("dsp: false", "dsp: true"))
    model = tmp_path / "fc.tflite"
    model.write_bytes(cases.model(5, ("FULLY_CONNECTED",), 1))
    folder = build(model, tmp_path / "out", str(board_file), "--kernels", "dsp")
    inputs = random_inputs(read_metadata(folder)["inputs"], 1, 0)
    with pytest.raises(AotError, match="cfsr 0x00010000"):
        run_many(folder, inputs, timeout=60)


# aot_k_transpose_conv (conv_dsp.c, one convolution per output phase): 2x2 at stride 2
# (one tap a phase, the U-Net upsampling), 3x3 and 4x4 at stride 2 (phases of 1, 2 and 4
# taps), SAME and VALID, strides (2, 1) and (1, 1), batches, odd channel counts; both
# requantization forms' scales; and two it leaves to TVM: in_c % 4 != 0, a kernel below
# its stride.
TRANSPOSE_SHAPES = (
    cases.Shape("TRANSPOSE_CONV", 1, 4, 5, 8, 6, (2, 2), (2, 2)),
    cases.Shape("TRANSPOSE_CONV", 1, 3, 3, 4, 5, (3, 3), (2, 2)),
    cases.Shape("TRANSPOSE_CONV", 2, 3, 4, 12, 7, (3, 3), (2, 2), same=False),
    cases.Shape("TRANSPOSE_CONV", 1, 4, 3, 4, 3, (4, 4), (2, 2)),
    cases.Shape("TRANSPOSE_CONV", 1, 3, 5, 8, 4, (3, 2), (2, 1), same=False),
    cases.Shape("TRANSPOSE_CONV", 1, 5, 4, 4, 9, (3, 3), (1, 1)),
    cases.Shape("TRANSPOSE_CONV", 1, 3, 3, 8, 4, (2, 2), (2, 2), weight_scale=3.0),
    cases.Shape("TRANSPOSE_CONV", 1, 3, 3, 8, 4, (2, 2), (2, 2), weight_scale=1e-7),
    cases.Shape("TRANSPOSE_CONV", 1, 3, 3, 3, 4, (2, 2), (2, 2)),
    cases.Shape("TRANSPOSE_CONV", 1, 3, 3, 4, 4, (1, 1), (2, 2)),
)


@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_transpose_convolutions_match_litert(isa: str, tmp_path: Path) -> None:
    check_cases(isa, BOARDS[isa], 19, tmp_path, shapes=TRANSPOSE_SHAPES, every_kernel=False)
    ran = [op["implementation"] for op in read_metadata(tmp_path / "out")["operators"]]
    assert ran == [f"aot_k_transpose_conv_s8_{isa}"] * 8 + ["tvm", "tvm"], ran
