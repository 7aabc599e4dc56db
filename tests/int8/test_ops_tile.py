"""TILE (Keras 3's UpSampling2D exports EXPAND_DIMS -> TILE -> RESHAPE) bit-exact with LiteRT's
reference kernels over random ranks, shapes and multiples, int8 and int16; and the
converter's TILE version 3, which LiteRT 2.3's reference resolver only runs read as 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.testing.tflite_builder import TFLiteModelBuilder
from aot.validate.reference import TFLiteReference, _tile_as_version_2
from tests.int8.harness import assert_bit_exact

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "converters" / "tflite"


def tile_model(shape: tuple[int, ...], multiples: tuple[int, ...], dtype: str) -> bytes:
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, dtype, scale=0.05, zero_point=3 if dtype == "int8" else 0)
    m = b.add_constant("multiples", np.array(multiples, np.int32))
    out = tuple(s * k for s, k in zip(shape, multiples, strict=True))
    y = b.add_tensor("y", out, dtype, scale=0.05, zero_point=3 if dtype == "int8" else 0)
    b.add_operator("TILE", [x, m], [y])
    b.mark_output(y)
    return b.build()


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_tile_matches_litert(dtype: str) -> None:
    rng = np.random.default_rng(77 + (dtype == "int16"))
    info = np.iinfo(dtype)
    for _ in range(4):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
        multiples = tuple(int(k) for k in rng.integers(1, 4, size=rank))
        inputs = [
            [rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)] for _ in range(3)
        ]
        assert_bit_exact(tile_model(shape, multiples, dtype), inputs)


def test_a_converter_tile_version_3_is_read_as_version_2() -> None:
    content = (FIXTURES / "unet_int8_fixed.tflite").read_bytes()
    patched = _tile_as_version_2(content)
    assert patched is not None and len(patched) == len(content)
    assert sum(a != b for a, b in zip(content, patched, strict=True)) == 1  # one int32 field
    assert _tile_as_version_2(patched) is None  # nothing left to change
    reference = TFLiteReference(FIXTURES / "unet_int8_fixed.tflite")
    assert reference.runtime.endswith("(TILE version 3 read as version 2)")
