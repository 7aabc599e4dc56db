"""What the reference kernels refuse when they prepare, aot refuses with the reason.

A fully connected layer whose weight scale is 1e38 builds a bias that no longer means what
its values say; LiteRT and TensorFlow Lite Micro fail it at prepare time (the bias scale
must equal input scale x weights scale within 2% of the output scale), so aot must not
build arbitrary firmware from it (issue: hardening, point 17).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.errors import UnsupportedError
from aot.testing import run_tflite_reference
from aot.testing.harness import build
from aot.testing.tflite_builder import TFLiteModelBuilder

pytestmark = pytest.mark.toolchain


def fully_connected(weight_scale: float, bias_scale: float | None) -> bytes:
    """x int8[1, 8] (scale 0.05) -> FULLY_CONNECTED (4 outputs, scale 0.1), with or without
    an int32 bias of the given scale."""
    rng = np.random.default_rng(1)
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 8), "int8", scale=0.05, zero_point=0)
    weights = rng.integers(-127, 128, (4, 8), dtype=np.int8)
    w = b.add_constant("w", weights, scale=weight_scale, zero_point=0)
    bias = -1
    if bias_scale is not None:
        values = rng.integers(-100, 100, 4).astype(np.int32)
        bias = b.add_constant("b", values, scale=bias_scale, zero_point=0)
    y = b.add_tensor("y", (1, 4), "int8", scale=0.1, zero_point=0)
    b.add_operator("FULLY_CONNECTED", [x, w, bias], [y])
    b.mark_output(y)
    return b.build()


@pytest.mark.parametrize(
    ("weight_scale", "bias_scale", "words"),
    [
        (1e38, 0.05 * 1e38, "the difference 5.23e+28 exceeds 0.02 x the output scale 0.1"),
        (0.01, 0.5, "bias 'b' has scale 0.5 where input scale x weights scale is 0.000499999996"),
    ],
    ids=["weight_scale_1e38", "bias_scale_off"],
)
def test_a_bias_scale_the_kernels_refuse_is_refused(
    tmp_path: Path, weight_scale: float, bias_scale: float, words: str
) -> None:
    model = tmp_path / "fc.tflite"
    model.write_bytes(fully_connected(weight_scale, bias_scale))
    with pytest.raises(Exception, match="failed to prepare"):
        run_tflite_reference(model, [np.zeros((1, 8), np.int8)])  # LiteRT refuses it too
    with pytest.raises(UnsupportedError) as refused:
        build(model, tmp_path / "out")
    message = str(refused.value)
    assert message.startswith(f"{model}: operator 0 (FULLY_CONNECTED): bias 'b' has scale ")
    assert words in message and "LiteRT and TensorFlow Lite Micro cannot run" in message
    assert not (tmp_path / "out").exists()


def test_the_same_layer_with_a_consistent_bias_builds_and_matches(tmp_path: Path) -> None:
    model = tmp_path / "fc.tflite"
    model.write_bytes(fully_connected(0.01, float(np.float32(0.05) * np.float32(0.01))))
    from aot.testing.harness import run_many

    folder = build(model, tmp_path / "out")
    x = np.random.default_rng(3).integers(-128, 128, (1, 8), dtype=np.int8)
    (got,) = run_many(folder, [[x]])[0]
    np.testing.assert_array_equal(got, run_tflite_reference(model, [x])[0])
