"""EXP, BATCH_MATMUL and RSQRT (issue 13, group B) bit-exact with LiteRT's reference kernels on
seeded random one-operator models; the generated C on the host too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.errors import UnsupportedError
from aot.frontend.tflite_int8 import import_tflite_int8
from aot.testing.harness import build, run_many
from aot.testing.reference import run_tflite_reference
from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.harness import assert_bit_exact, random_input
from tests.int8.math_models import add_batch_matmul, f32, matmul_exp_rsqrt_model, zero_point

pytestmark = pytest.mark.unit

SEEDS = range(8)


@pytest.mark.parametrize("seed", SEEDS)
def test_exp_every_input_value(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    b = TFLiteModelBuilder()
    shape = (2, 128)
    x = b.add_input(
        "x", shape, "int8", scale=f32(rng.uniform(0.005, 0.1)), zero_point=zero_point(rng)
    )
    y = b.add_tensor(
        "y", shape, "int8", scale=f32(rng.uniform(0.01, 1.0)), zero_point=zero_point(rng)
    )
    b.add_operator("EXP", [x], [y])
    b.mark_output(y)
    every = np.arange(-128, 128, dtype=np.int8).reshape(shape)
    assert_bit_exact(b.build(), [[every], [random_input(rng, shape)]])


def test_exp_saturates_where_expf_overflows() -> None:
    """expf(q) overflows float32 above q = 88, where TFLite's float-to-int conversion is
    undefined: aot gives 127 there and LiteRT's value everywhere else."""
    from tests.int8.harness import compile_vm, run_vm

    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 256), "int8", scale=1.0, zero_point=0)
    y = b.add_tensor("y", (1, 256), "int8", scale=1e30, zero_point=-128)
    b.add_operator("EXP", [x], [y])
    b.mark_output(y)
    model = b.build()
    every = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    _, vm = compile_vm(model)
    actual = run_vm(vm, [every])[0].reshape(-1)
    expected = run_tflite_reference(model, [every])[0].reshape(-1)
    finite = np.arange(-128, 128) <= 88
    np.testing.assert_array_equal(actual[finite], expected[finite])
    assert (actual[~finite] == 127).all()


@pytest.mark.parametrize("seed", SEEDS)
def test_rsqrt_every_valid_input_value(seed: int) -> None:
    """Every input from the zero point up (LiteRT refuses the values below it)."""
    rng = np.random.default_rng(700 + seed)
    input_zp = int(rng.choice([-128, 0, 100, int(rng.integers(-128, 127))]))
    count = 128 - input_zp
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, count), "int8", scale=f32(rng.uniform(1e-3, 0.5)), zero_point=input_zp)
    y = b.add_tensor(
        "y", (1, count), "int8", scale=f32(rng.uniform(1e-3, 0.5)), zero_point=zero_point(rng)
    )
    b.add_operator("RSQRT", [x], [y])
    b.mark_output(y)
    every = np.arange(input_zp, 128).astype(np.int8).reshape(1, count)
    assert_bit_exact(b.build(), [[every]])


@pytest.mark.parametrize("seed", SEEDS)
def test_batch_matmul(seed: int) -> None:
    rng = np.random.default_rng(600 + seed)
    adj_x, adj_y = bool(seed & 1), bool(seed & 2)
    rows, depth, cols = (int(v) for v in rng.integers(1, 7, 3))
    lhs_batch = [(2,), (3, 1), (1,), ()][seed % 4]
    rhs_batch = [(1,), (1, 2), (4,), ()][seed % 4]
    lhs_shape = (*lhs_batch, *((depth, rows) if adj_x else (rows, depth)))
    rhs_shape = (*rhs_batch, *((cols, depth) if adj_y else (depth, cols)))
    b = TFLiteModelBuilder()
    lhs_scale, rhs_scale = f32(rng.uniform(0.01, 0.1)), f32(rng.uniform(0.01, 0.1))
    lhs = b.add_input("a", lhs_shape, "int8", scale=lhs_scale, zero_point=zero_point(rng))
    constant = seed >= 4
    if constant:  # weights, as a converter writes a MatMul with a constant operand
        data = rng.integers(-127, 128, rhs_shape, dtype=np.int8)
        rhs = b.add_constant("b", data, scale=rhs_scale, zero_point=int(rng.integers(-5, 5)))
    else:
        rhs = b.add_input("b", rhs_shape, "int8", scale=rhs_scale, zero_point=zero_point(rng))
    y, _, _ = add_batch_matmul(
        b, rng, lhs, lhs_shape, lhs_scale, rhs, rhs_shape, rhs_scale, adj_x, adj_y
    )
    b.mark_output(y)
    inputs = [
        [random_input(rng, lhs_shape)] + ([] if constant else [random_input(rng, rhs_shape)])
        for _ in range(3)
    ]
    assert_bit_exact(b.build(), inputs)


def test_batch_matmul_mismatched_depth_is_unsupported() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("a", (2, 3), "int8", scale=0.1, zero_point=0)
    w = b.add_input("b", (4, 5), "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (2, 5), "int8", scale=0.1, zero_point=0)
    b.add_operator("BATCH_MATMUL", [x, w], [y])
    b.mark_output(y)
    with pytest.raises(UnsupportedError, match=r"operator 0 \(BATCH_MATMUL\): inner dimensions"):
        import_tflite_int8(b.build())


@pytest.mark.toolchain
def test_matmul_exp_rsqrt_model_in_c_on_the_host(tmp_path: Path) -> None:
    path = tmp_path / "matmul_exp_rsqrt.tflite"
    path.write_bytes(matmul_exp_rsqrt_model())
    folder = build(path, tmp_path / "out", "host")
    rng = np.random.default_rng(8)
    batches = [[random_input(rng, (2, 3, 8))] for _ in range(6)]
    for inputs, outputs in zip(batches, run_many(folder, batches)):
        np.testing.assert_array_equal(outputs[0], run_tflite_reference(path, inputs)[0])
