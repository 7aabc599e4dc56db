"""A depthwise convolution over one input channel (person_detect's first layer: 96x96x1
to 8 channels, depth multiplier 8) runs on the first-layer convolution kernel
(aot.kernels.dsp.as_convolution), against LiteRT's reference kernels on the board of
each ISA: depth multipliers 3 to 16, 3x3 and 5x3 windows, stride 1 and 2, SAME and VALID,
batches. The plain C build takes it from 16 output channels (below, TVM's code is
faster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aot.artifacts import read_manifest
from tests.kernels import cases
from tests.kernels.test_bit_exact import BOARDS, check_cases

pytestmark = [pytest.mark.toolchain, pytest.mark.emulator]


def _shapes(multipliers: tuple[int, ...]) -> tuple[cases.Shape, ...]:
    return tuple(
        cases.Shape("DEPTHWISE_CONV_2D", batches, h, w, 1, m, k, stride, (1, 1), same,
                    multiplier=m)
        for m in multipliers
        for batches, h, w, k, stride, same in [
            (1, 12, 12, (3, 3), (2, 2), True),
            (1, 9, 7, (3, 3), (1, 1), True),
            (2, 8, 9, (5, 3), (1, 2), False),
            (1, 5, 6, (3, 3), (2, 1), False),
        ]
    )  # fmt: skip


@pytest.mark.parametrize(("isa", "multipliers"), [("dsp", (8, 3, 16)), ("scalar", (16, 17))])
def test_single_channel_depthwise_matches_litert(
    isa: str, multipliers: tuple[int, ...], tmp_path: Path
) -> None:
    check_cases(isa, BOARDS[isa], 23, tmp_path, shapes=_shapes(multipliers))
    # A drawn weight scale that needs a left shift leaves a case to the general kernel.
    ran = [op.implementation for op in read_manifest(tmp_path / "out").operators]
    assert ran.count(f"aot_k_conv_shallow_s8_{isa}") >= len(ran) - 2, ran
