"""Which MultiplyByQuantizedMultiplier build LiteRT's reference kernels use, per operator.

ai-edge-litert 2.3.0 rounds FULLY_CONNECTED once (TFLITE_SINGLE_ROUNDING) and CONV_2D
twice (gemmlowp). ``LITERT_ROUNDING`` encodes that; these tests fail if a LiteRT upgrade
changes it, and show that the wrong mode is not bit-exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from aot.testing.reference import run_tflite_reference
from aot.testing.shared import mlperf_tiny, shared_dir
from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.harness import compile_vm, random_input, run_vm

AD01 = shared_dir() / "models" / "mlperf_tiny" / "ad01_int8.tflite"


def _model(op: str, seed: int) -> tuple[bytes, tuple[int, ...]]:
    rng = np.random.default_rng(seed)
    b = TFLiteModelBuilder()
    in_scale = float(np.float32(rng.uniform(0.01, 0.2)))
    if op == "FULLY_CONNECTED":
        shape, w_shape, out_shape = (4, 64), (32, 64), (4, 32)
    else:
        shape, w_shape, out_shape = (1, 8, 8, 8), (16, 3, 3, 8), (1, 8, 8, 16)
    x = b.add_input("x", shape, "int8", scale=in_scale, zero_point=int(rng.integers(-128, 128)))
    w_scale = float(np.float32(rng.uniform(0.001, 0.02)))
    weights = rng.integers(-127, 128, w_shape, dtype=np.int8)
    w = b.add_constant("w", weights, scale=w_scale, zero_point=0)
    bias = b.add_constant(
        "b", rng.integers(-5000, 5000, w_shape[0], dtype=np.int32),
        scale=float(np.float32(in_scale) * np.float32(w_scale)), zero_point=0,
    )  # fmt: skip
    y = b.add_tensor("y", out_shape, "int8", scale=float(rng.uniform(0.05, 0.3)), zero_point=0)
    b.add_operator(op, inputs=[x, w, bias], outputs=[y], options={})
    b.mark_output(y)
    return b.build(), shape


@pytest.mark.slow
@pytest.mark.parametrize(("op", "right", "wrong"), [
    ("FULLY_CONNECTED", "single", "double"),
    ("CONV_2D", "double", "single"),
])  # fmt: skip
def test_litert_rounding_per_operator(op: str, right: str, wrong: str) -> None:
    wrong_count = 0
    for seed in range(4):
        model, shape = _model(op, seed)
        _, vm_right = compile_vm(model, rounding=right)
        _, vm_wrong = compile_vm(model, rounding=wrong)
        rng = np.random.default_rng(seed)
        for _ in range(10):
            x = random_input(rng, shape)
            (expected,) = run_tflite_reference(model, [x])
            np.testing.assert_array_equal(run_vm(vm_right, [x])[0], expected)
            wrong_count += int((run_vm(vm_wrong, [x])[0] != expected).sum())
    assert wrong_count > 0, f"{wrong} rounding was never distinguishable for {op}"


@pytest.mark.unit
def test_double_rounding_everywhere_misses_litert_on_ad01() -> None:
    mlperf_tiny("ad01_int8")  # missing shared data fails here, loudly
    x = np.load(AD01.with_suffix(".input.npy"))
    expected = np.load(AD01.with_suffix(".output.npy"))
    _, vm = compile_vm(str(AD01), rounding="double")
    assert not np.array_equal(run_vm(vm, [x])[0], expected)
