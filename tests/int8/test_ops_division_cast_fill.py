"""ADD_N, DIV, ELU, CAST, ZEROS_LIKE, FILL and REDUCE_ALL (issue 13) bit-exact with LiteRT's
kernels on seeded random models (int8 ADD_N and ZEROS_LIKE, which LiteRT lacks, against
TensorFlow Lite Micro's interpreter); the refusals of SQRT, FLOOR_DIV, FLOOR_MOD and of
what the kernels do not take; the generated C on the host."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from aot.errors import UnsupportedError
from aot.frontend.tflite_int8 import import_tflite_int8
from aot.testing.reference import TFLMReference, run_tflite_reference, run_tflm_reference
from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.division_cast_fill_models import (
    MODEL_NAMES,
    assert_model_bit_exact,
    divisors_avoiding,
    run_litert_builtin,
)
from tests.int8.harness import assert_bit_exact, compile_vm, random_input, run_vm
from tests.int8.math_models import f32, zero_point

pytestmark = pytest.mark.unit

SEEDS = range(4)
EVERY_INT8 = np.arange(-128, 128, dtype=np.int8)


def _div_model(rng: np.random.Generator) -> tuple[bytes, list[np.ndarray]]:
    """Two DIVs in one model: every (numerator, divisor) pair of stored values on a
    256 x 256 grid, and a random broadcast with a fused activation."""
    b = TFLiteModelBuilder()
    s1, s2 = f32(rng.uniform(0.005, 0.5)), f32(rng.uniform(0.005, 0.5))
    zp1, zp2 = zero_point(rng), zero_point(rng)
    x = b.add_input("x", (256, 256), "int8", scale=s1, zero_point=zp1)
    y = b.add_input("y", (1, 256), "int8", scale=s2, zero_point=zp2)
    # Output scales from coarse (saturating quotients) to fine.
    out_scale = f32(s1 / s2 * rng.uniform(0.003, 0.3))
    q = b.add_tensor("q", (256, 256), "int8", scale=out_scale, zero_point=zero_point(rng))
    b.add_operator("DIV", [x, y], [q])
    lhs_shape, rhs_shape = (3, 1, 5), (1, 4, 5)
    u = b.add_input("u", lhs_shape, "int8", scale=s1, zero_point=zp1)
    v = b.add_input("v", rhs_shape, "int8", scale=s2, zero_point=zp2)
    activation = str(rng.choice(["RELU", "RELU6", "RELU_N1_TO_1"]))
    r = b.add_tensor("r", (3, 4, 5), "int8", scale=out_scale, zero_point=zero_point(rng))
    b.add_operator("DIV", [u, v], [r], {"fused_activation_function": activation})
    b.mark_output(q)
    b.mark_output(r)
    grid_x = np.tile(EVERY_INT8[:, None], (1, 256))
    grid_y = divisors_avoiding(EVERY_INT8, zp2).reshape(1, 256)
    u_values = random_input(rng, lhs_shape)
    v_values = divisors_avoiding(random_input(rng, rhs_shape), zp2)
    return b.build(), [grid_x, grid_y, u_values, v_values]


@pytest.mark.parametrize("seed", SEEDS)
def test_div_int8_every_pair_of_values(seed: int) -> None:
    model, inputs = _div_model(np.random.default_rng(900 + seed))
    assert_bit_exact(model, [inputs])
    # LiteRT's builtin DIV agrees with its reference one (the multi-operator model, which
    # needs the builtin kernels for ELU, relies on that).
    for builtin, reference in zip(
        run_litert_builtin(model, inputs), run_tflite_reference(model, inputs), strict=True
    ):
        np.testing.assert_array_equal(builtin, reference)


def test_div_int8_compiles_in_seconds() -> None:
    """The kernel's stages stay separate: one DIV over 64K values imports and builds fast."""
    model, _ = _div_model(np.random.default_rng(7))
    start = time.monotonic()
    compile_vm(model)
    assert time.monotonic() - start < 10


def test_div_int32_and_fused_activations() -> None:
    rng = np.random.default_rng(950)
    b = TFLiteModelBuilder()
    shape = (4, 64)
    x = b.add_input("x", shape, "int32")
    y = b.add_input("y", (1, 64), "int32")
    outputs = []
    for activation in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"):
        out = b.add_tensor(f"q_{activation}", shape, "int32")
        b.add_operator("DIV", [x, y], [out], {"fused_activation_function": activation})
        outputs.append(out)
    for out in outputs:
        b.mark_output(out)
    big = rng.integers(-(1 << 31), 1 << 31, shape, dtype=np.int64).astype(np.int32)
    small = rng.integers(-20, 21, shape, dtype=np.int32)
    divisors = rng.integers(-9, 10, (1, 64), dtype=np.int32)
    divisors[divisors == 0] = 3
    divisors[0, :3] = [-(1 << 31), (1 << 31) - 1, -1]
    assert_bit_exact(b.build(), [[big, divisors], [small, divisors]])


@pytest.mark.parametrize("seed", SEEDS)
def test_add_n_int8_follows_tflite_micro(seed: int) -> None:
    """LiteRT's ADD_N takes float32 and int32 only: int8 is checked against TFLite Micro's
    interpreter (whose sum starts at the scaled input offset, not at 0: docs/int8.md)."""
    rng = np.random.default_rng(960 + seed)
    count = int(rng.integers(2, 7))
    shape = tuple(int(d) for d in rng.integers(1, 6, int(rng.integers(1, 4))))
    scale, zp = f32(rng.uniform(0.005, 0.2)), zero_point(rng)
    # From sums that saturate to sums that use a fraction of the range.
    out_scale, out_zp = f32(scale * rng.uniform(0.3, 3.0)), zero_point(rng)
    b = TFLiteModelBuilder()
    ins = [b.add_input(f"x{k}", shape, "int8", scale=scale, zero_point=zp) for k in range(count)]
    y = b.add_tensor("y", shape, "int8", scale=out_scale, zero_point=out_zp)
    b.add_operator("ADD_N", ins, [y])
    b.mark_output(y)
    model = b.build()
    _, vm = compile_vm(model)
    reference = TFLMReference(model)
    for _ in range(3):
        inputs = [random_input(rng, shape) for _ in range(count)]
        np.testing.assert_array_equal(run_vm(vm, inputs)[0], reference.run(inputs)[0])


def test_add_n_int8_fifteen_inputs_at_the_extremes_and_sixteen_refused() -> None:
    """15 terms of 255 * 2**19 and the start term of 127 * 2**19 still fit TFLite Micro's
    int32 sum; a 16th input is refused (it would overflow the sum)."""

    def model(count: int) -> bytes:
        b = TFLiteModelBuilder()
        ins = [b.add_input(f"x{k}", (2,), "int8", scale=0.01, zero_point=127) for k in range(count)]
        y = b.add_tensor("y", (2,), "int8", scale=f32(0.5), zero_point=0)
        b.add_operator("ADD_N", ins, [y])
        b.mark_output(y)
        return b.build()

    _, vm = compile_vm(model(15))
    inputs = [np.array([-128, 127], np.int8)] * 15
    (expected,) = run_tflm_reference(model(15), inputs)
    np.testing.assert_array_equal(run_vm(vm, inputs)[0], expected)
    assert expected[0] == -79  # (15 * -255 - 127) * 0.01 / 0.5, not wrapped
    with pytest.raises(UnsupportedError, match=r"operator 0 \(ADD_N\): 16 inputs; at most 15"):
        import_tflite_int8(model(16))


def test_add_n_int32_and_zeros_like_int32() -> None:
    rng = np.random.default_rng(970)
    shape = (3, 7)
    b = TFLiteModelBuilder()
    ins = [b.add_input(f"x{k}", shape, "int32") for k in range(3)]
    zeros = b.add_tensor("zeros", shape, "int32")
    b.add_operator("ZEROS_LIKE", [ins[0]], [zeros])
    y = b.add_tensor("y", shape, "int32")
    b.add_operator("ADD_N", [*ins, zeros], [y])
    b.mark_output(y)
    b.mark_output(zeros)
    # Full-range values: the sum wraps as int32 arithmetic does.
    inputs = [
        rng.integers(-(1 << 31), 1 << 31, shape, dtype=np.int64).astype(np.int32) for _ in ins
    ]
    assert_bit_exact(b.build(), [inputs])


@pytest.mark.parametrize("seed", SEEDS)
def test_elu_every_input_value(seed: int) -> None:
    """LiteRT registers ELU in its builtin kernels only (not BUILTIN_REF): compared there,
    without the XNNPACK delegate."""
    rng = np.random.default_rng(980 + seed)
    b = TFLiteModelBuilder()
    x_scale, y_scale = f32(rng.uniform(0.005, 0.2)), f32(rng.uniform(0.005, 0.1))
    x = b.add_input("x", (1, 256), "int8", scale=x_scale, zero_point=zero_point(rng))
    y = b.add_tensor("y", (1, 256), "int8", scale=y_scale, zero_point=zero_point(rng))
    b.add_operator("ELU", [x], [y])
    b.mark_output(y)
    model = b.build()
    every = EVERY_INT8.reshape(1, 256)
    _, vm = compile_vm(model)
    np.testing.assert_array_equal(run_vm(vm, [every])[0], run_litert_builtin(model, [every])[0])


def test_cast_between_integer_types_and_from_bool() -> None:
    rng = np.random.default_rng(990)
    shape = (2, 50)
    b = TFLiteModelBuilder()
    sources = {
        dtype: b.add_input(dtype, shape, dtype) for dtype in ("int8", "int16", "int32", "bool")
    }
    inputs = [random_input(rng, shape, d) for d in ("int8", "int16", "int32")]
    inputs.append(rng.random(shape) < 0.5)
    for source_dtype, source in sources.items():
        for target in ("int8", "int16", "int32"):
            out = b.add_tensor(f"{source_dtype}_to_{target}", shape, target)
            b.add_operator(
                "CAST", [source], [out],
                {"in_data_type": source_dtype.upper(), "out_data_type": target.upper()},
            )  # fmt: skip
            b.mark_output(out)
    assert_bit_exact(b.build(), [inputs])


def test_fill_and_zeros_like_int8() -> None:
    """FILL copies the stored scalar (int8 and int32); ZEROS_LIKE int8 (TFLite Micro only)
    stores 0, not the zero point."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", (3, 1, 4), "int32")
    value = b.add_constant("value", np.array(-123456, np.int32))
    dims = b.add_constant("dims", np.array([3, 1, 4], np.int32))
    filled = b.add_tensor("filled", (3, 1, 4), "int32")
    b.add_operator("FILL", [dims, value], [filled])
    total = b.add_tensor("total", (3, 1, 4), "int32")
    b.add_operator("ADD_N", [x, filled], [total])
    q = b.add_constant("q", np.array(-101, np.int8), scale=f32(0.1), zero_point=-5)
    dims2 = b.add_constant("dims2", np.array([5], np.int64))
    filled8 = b.add_tensor("filled8", (5,), "int8", scale=f32(0.1), zero_point=-5)
    b.add_operator("FILL", [dims2, q], [filled8])
    b.mark_output(total)
    b.mark_output(filled8)
    assert_bit_exact(b.build(), [[np.arange(12, dtype=np.int32).reshape(3, 1, 4)]])

    b = TFLiteModelBuilder()
    x = b.add_input("x", (2, 3), "int8", scale=f32(0.1), zero_point=-5)
    z = b.add_tensor("z", (2, 3), "int8", scale=f32(0.1), zero_point=-5)
    b.add_operator("ZEROS_LIKE", [x], [z])
    b.mark_output(z)
    _, vm = compile_vm(b.build())
    np.testing.assert_array_equal(run_vm(vm, [np.full((2, 3), 7, np.int8)])[0], 0)


@pytest.mark.parametrize("seed", SEEDS)
def test_reduce_all(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    rank = int(rng.integers(1, 5))
    shape = tuple(int(d) for d in rng.integers(1, 5, rank))
    axes = sorted(rng.choice(rank, int(rng.integers(1, rank + 1)), replace=False).tolist())
    keep_dims = bool(rng.integers(0, 2))
    out_shape = tuple(
        1 if a in axes else d for a, d in enumerate(shape) if keep_dims or a not in axes
    )
    b = TFLiteModelBuilder()
    x = b.add_input("x", shape, "bool")
    written = [a - rank if rng.integers(0, 2) else a for a in axes]  # negative axes too
    axis = b.add_constant("axes", np.array(written, np.int32))
    y = b.add_tensor("y", out_shape, "bool")
    b.add_operator("REDUCE_ALL", [x, axis], [y], {"keep_dims": keep_dims})
    b.mark_output(y)
    batches = [[rng.random(shape) < p] for p in (0.5, 0.95, 1.0)]
    assert_bit_exact(b.build(), batches)


# -- refusals ---------------------------------------------------------------------------


def _one_operator(op: str, dtype: str, quant: dict, options: dict | None = None) -> bytes:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), dtype, **quant)
    w = b.add_input("w", (1, 4), dtype, **quant)
    y = b.add_tensor("y", (1, 4), dtype, **quant)
    b.add_operator(op, [x, w], [y], options)
    b.mark_output(y)
    return b.build()


@pytest.mark.parametrize("op", ["FLOOR_DIV", "FLOOR_MOD"])
def test_float_only_operators_are_refused_naming_the_float_frontend(op: str) -> None:
    with pytest.raises(UnsupportedError) as info:
        import_tflite_int8(_one_operator(op, "int32", {}))
    message = str(info.value)
    assert f"operator 0 ({op})" in message and "float32 only" in message
    assert "--frontend relax-tflite" in message and "docs/operators.md" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("op", "dtype", "expected"),
    [
        ("DIV", "int16", "expected int8 or int32"),
        ("ADD_N", "int16", "expected int8 or int32"),
    ],
)
def test_unsupported_dtypes_name_the_operator(op: str, dtype: str, expected: str) -> None:
    with pytest.raises(UnsupportedError) as info:
        import_tflite_int8(_one_operator(op, dtype, {"scale": 0.1, "zero_point": 0}))
    message = str(info.value)
    assert f"operator 0 ({op})" in message and expected in message
    assert "docs/operators.md" in message and "\n" not in message


def test_add_n_refuses_inputs_quantized_differently() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (4,), "int8", scale=0.1, zero_point=0)
    w = b.add_input("w", (4,), "int8", scale=0.2, zero_point=0)
    y = b.add_tensor("y", (4,), "int8", scale=0.3, zero_point=0)
    b.add_operator("ADD_N", [x, w], [y])
    b.mark_output(y)
    with pytest.raises(UnsupportedError, match=r"operator 0 \(ADD_N\): input 2 'w' is quantized"):
        import_tflite_int8(b.build())


# -- the generated C ----------------------------------------------------------------------


@pytest.mark.toolchain
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_division_cast_fill_models_in_c_on_the_host(name: str, tmp_path: Path) -> None:
    assert_model_bit_exact(name, "host", tmp_path, count=3, seed=1100)
