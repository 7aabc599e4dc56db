"""conv_dsp.c's interleaved loop (in_c % 4 == 0, 1x1 and im2col): four output pixels a
pass with the DSP extension (quad_q15, LDM-fed), two in the plain C build (pair_q15),
against LiteRT's reference kernels on the board of each ISA (M4, M3) and on the M7.

The shapes put every count of pixels left over for the last pass (0 to 3, the last pixel
then filling the other slots), odd and even channel counts (an odd last channel is a
plain weight row), batches (a pass spans two images), 1x1 and 3x3 with stride and
padding, and both output modes: the records' zero-point form with the full int8 range
(OUT_FAST) and tiny or large weight scales, whose records are another form (OUT_ANY)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kernels import cases
from tests.kernels.test_bit_exact import BOARDS, check_cases

pytestmark = [pytest.mark.toolchain, pytest.mark.emulator]

PASS_SHAPES = tuple(
    cases.Shape("CONV_2D", batches, h, w, in_c, out_c, k, stride, (1, 1), same,
                weight_scale=scale)
    for scale in (None, 1e-7, 3.0)
    for batches, h, w, in_c, out_c, k, stride, same in [
        (1, 4, 4, 8, 6, (1, 1), (1, 1), True),  # 16 pixels: whole passes
        (1, 3, 3, 12, 7, (1, 1), (1, 1), True),  # 9: one left over, an odd last channel
        (1, 2, 5, 16, 9, (1, 1), (1, 1), True),  # 10: two left over
        (2, 3, 5, 8, 16, (1, 1), (2, 2), True),  # 2 x 6: a pass across the images
        (1, 7, 5, 4, 5, (3, 3), (1, 1), True),  # 35: three left over, padding on every side
        (1, 6, 6, 8, 12, (3, 3), (2, 2), True),
        (1, 5, 4, 16, 3, (3, 3), (1, 1), False),  # VALID: 6 pixels
        (1, 1, 1, 8, 4, (1, 1), (1, 1), True),  # one pixel in every slot
    ]
)  # fmt: skip


@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_interleaved_passes_match_litert(isa: str, tmp_path: Path) -> None:
    check_cases(isa, BOARDS[isa], 13, tmp_path, shapes=PASS_SHAPES)


def test_interleaved_passes_on_the_m7(tmp_path: Path) -> None:
    check_cases("dsp", "mps2_an500", 17, tmp_path, shapes=PASS_SHAPES[:8])
