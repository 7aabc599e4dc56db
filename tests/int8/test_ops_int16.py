"""16x8 operators (int16 activations, int8 weights; issue 13, group B) bit-exact with
LiteRT's reference kernels: randomized FULLY_CONNECTED, ADD, SUB, LOGISTIC, TANH and
SOFTMAX models in Relax (many cases per compile), and the generated C of small int16
models on the host."""

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
from tests.int8.int16_models import (
    add_fully_connected_16x8,
    binary_cases_model,
    f32,
    fc_16x8_model,
    int16_activations_model,
    int16_copies_model,
    int16_maximum_minimum_model,
    mixed_unary_model,
    unary_cases_model,
)

pytestmark = pytest.mark.unit

SEEDS = range(8)
ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


@pytest.mark.parametrize("seed", SEEDS)
def test_fully_connected_16x8(seed: int) -> None:
    rng = np.random.default_rng(800 + seed)
    depth, channels = int(rng.integers(1, 24)), int(rng.integers(1, 9))
    in_shape = [(3, depth), (1, 2, depth), (2, 1, 1, depth), (4, depth)][seed % 4]
    b = TFLiteModelBuilder()
    x_scale = f32(rng.uniform(1e-4, 1e-3))
    x = b.add_input("x", in_shape, "int16", scale=x_scale, zero_point=0)
    bias_dtype = [None, "int64", "int32", "int64"][seed % 4]
    # Without keep_num_dims the output is [batches, channels], as LiteRT resizes it.
    y, _ = add_fully_connected_16x8(
        b, rng, x, x_scale, depth, (int(np.prod(in_shape[:-1])), channels),
        per_channel=seed % 2 == 0,
        bias_dtype=bias_dtype, activation=ACTIVATIONS[seed // 2 % 4],
    )  # fmt: skip
    b.mark_output(y)
    inputs = [[random_input(rng, in_shape, "int16")] for _ in range(3)]
    assert_bit_exact(b.build(), inputs)


@pytest.mark.parametrize("seed", SEEDS)
def test_add_16x8(seed: int) -> None:
    rng = np.random.default_rng(900 + seed)
    shapes = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 5)), ((3,), (1,))]
    a_shape, b_shape = shapes[seed % 4]
    a_scale, b_scale = f32(rng.uniform(1e-4, 1e-2)), f32(rng.uniform(1e-4, 1e-2))
    b = TFLiteModelBuilder()
    lhs = b.add_input("a", a_shape, "int16", scale=a_scale, zero_point=0)
    rhs = b.add_input("b", b_shape, "int16", scale=b_scale, zero_point=0)
    out_shape = tuple(np.broadcast_shapes(a_shape, b_shape))
    out_scale = f32(max(a_scale, b_scale) * rng.uniform(0.5, 2.5))
    y = b.add_tensor("y", out_shape, "int16", scale=out_scale, zero_point=0)
    options = {"pot_scale_int16": False, "fused_activation_function": ACTIVATIONS[seed % 4]}
    b.add_operator("ADD", [lhs, rhs], [y], options)
    b.mark_output(y)
    inputs = [
        [random_input(rng, a_shape, "int16"), random_input(rng, b_shape, "int16")] for _ in range(3)
    ]
    assert_bit_exact(b.build(), inputs)


@pytest.mark.parametrize(
    ("op", "b_shape", "scales", "message"),
    [
        ("ADD", (1, 4), (2.0**-12,) * 3, r"the power-of-two int16 ADD needs equal shapes"),
        ("SUB", (2, 4), (2.0**-13, 2.0**-14, 2.0**-12), r"with power-of-two int16 scales one"),
        ("SUB", (2, 4), (1e-3, 1e-3, 1e-9), r"the output multiplier .* is not below 1"),
    ],
)
def test_add_sub_16x8_limits_are_one_line_errors(
    op: str, b_shape: tuple[int, ...], scales: tuple[float, float, float], message: str
) -> None:
    # pot_scale_int16 defaults to true; scales that are not powers of two take the
    # general path (the last case).
    model = binary_cases_model(op, [((2, 4), b_shape, *map(f32, scales), {})])
    with pytest.raises(UnsupportedError, match=rf"operator 0 \({op}\): {message}"):
        import_tflite_int8(model)


def _full_range(shape: tuple[int, ...]) -> np.ndarray:
    """Every int16 value once (shape holds 65536 elements)."""
    return np.arange(-32768, 32768, dtype=np.int16).reshape(shape)


def _table_scales(rng: np.random.Generator, op: str) -> list[float]:
    """Input scales for LOGISTIC/TANH: the power-of-two ones TFLite scales by 3 << shift,
    others (not powers of two, or powers outside that set) through the general path."""
    pot = [2.0**-12] + ([2.0**-11] if op == "TANH" else [])
    return pot + [2.0**-10, 2.0**-14] + [f32(rng.uniform(2e-5, 2e-3)) for _ in range(5)]


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_logistic_tanh_int16(op: str) -> None:
    rng = np.random.default_rng(1300 + len(op))
    shapes = [(64, 1024), (3, 5), (2, 3, 7), (17,), (1, 2, 2, 3)]
    cases = [
        ((64, 1024) if i < 2 else shapes[1 + i % 4], scale, 2.0**-15, {})
        for i, scale in enumerate(_table_scales(rng, op))
    ]
    model = unary_cases_model(op, cases)
    inputs = []
    for _ in range(2):
        batch = [random_input(rng, shape, "int16") for shape, *_ in cases]
        batch[0], batch[1] = _full_range((64, 1024)), _full_range((64, 1024))[::-1].copy()
        inputs.append(batch)
    assert_bit_exact(model, inputs)


def test_softmax_int16() -> None:
    rng = np.random.default_rng(1400)
    cases = []
    for i in range(8):
        shape = [(4, 10), (2, 3, 7), (33,), (1, 2, 2, 5), (3, 1), (2, 64), (5, 3), (1, 9)][i]
        scale = [2.0**-10, f32(rng.uniform(1e-5, 3e-3))][i % 2]
        beta = [1.0, f32(rng.uniform(0.3, 2.0))][i // 4]
        cases.append((shape, scale, f32(1 / 32768), {"beta": beta}))
    model = unary_cases_model("SOFTMAX", cases)
    inputs = []
    for k in range(3):
        batch = [random_input(rng, shape, "int16") for shape, *_ in cases]
        if k == 2:  # narrow rows: all exponentials near 1, the sum's other end
            batch = [(b // 512).astype(np.int16) for b in batch]
        inputs.append(batch)
    assert_bit_exact(model, inputs)


def _power_of_two_cases(rng: np.random.Generator) -> list:
    """ADD/SUB with power-of-two scales: both at the output's scale, or one input 2**k
    finer; fused activations; for SUB broadcasting too."""
    cases = []
    for i in range(8):
        out_exp = int(rng.integers(-14, -9))
        k = int(rng.integers(1, 8))
        a_exp, b_exp = [(out_exp, out_exp), (out_exp - k, out_exp), (out_exp, out_exp - k)][i % 3]
        options = {"fused_activation_function": ACTIVATIONS[i % 4]}
        cases.append(((2, 3, 4), (2, 3, 4), 2.0**a_exp, 2.0**b_exp, 2.0**out_exp, options))
    return cases


@pytest.mark.parametrize("op", ["ADD", "SUB"])
def test_add_sub_int16_power_of_two(op: str) -> None:
    rng = np.random.default_rng(1500 + len(op))
    cases = _power_of_two_cases(rng)
    if op == "SUB":  # sub.cc broadcasts on this path, add.cc does not
        cases += [((2, 3, 4), (4,), 2.0**-12, 2.0**-13, 2.0**-12, {}),
                  ((3, 1), (1, 5), 2.0**-15, 2.0**-11, 2.0**-11, {})]  # fmt: skip
    model = binary_cases_model(op, cases)
    inputs = [
        [random_input(rng, shape, "int16") for case in cases for shape in case[:2]]
        for _ in range(3)
    ]
    assert_bit_exact(model, inputs)


def test_sub_16x8_general() -> None:
    rng = np.random.default_rng(1600)
    shapes = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 5)), ((3,), (1,))]
    cases = []
    for i in range(8):
        a_scale, b_scale = f32(rng.uniform(1e-4, 1e-2)), f32(rng.uniform(1e-4, 1e-2))
        out_scale = f32(max(a_scale, b_scale) * rng.uniform(0.5, 2.5))
        # pot_scale_int16 true with scales that are not powers of two takes this path too.
        options = {"pot_scale_int16": i % 2 == 0, "fused_activation_function": ACTIVATIONS[i % 4]}
        cases.append((*shapes[i % 4], a_scale, b_scale, out_scale, options))
    model = binary_cases_model("SUB", cases)
    inputs = [
        [random_input(rng, shape, "int16") for case in cases for shape in case[:2]]
        for _ in range(3)
    ]
    assert_bit_exact(model, inputs)


def test_quantize_dequantize_relu_int16() -> None:
    """QUANTIZE float32/int8/int16 -> int16 and int16 -> int8, DEQUANTIZE int16, RELU and
    RELU6 int16: every int16 value (or a float sweep over the int16 grid) per case."""
    rng = np.random.default_rng(1700)
    full = (64, 1024)
    cases = [
        ("QUANTIZE", full, ("float32", None, None), ("int16", f32(1e-4), 0), {}),
        ("QUANTIZE", full, ("float32", None, None), ("int16", f32(3e-4), 7), {}),
        ("QUANTIZE", full, ("int16", f32(3e-4), 0), ("int16", f32(7e-4), 0), {}),
        ("QUANTIZE", full, ("int16", f32(3e-4), 0), ("int16", f32(1e-4), 0), {}),
        ("QUANTIZE", full, ("int16", f32(3e-4), 0), ("int8", f32(0.05), 3), {}),
        ("QUANTIZE", (4, 64), ("int8", f32(0.05), 3), ("int16", f32(3e-4), 0), {}),
        ("DEQUANTIZE", full, ("int16", f32(3.3e-4), 0), ("float32", None, None), {}),
        ("RELU", full, ("int16", f32(3e-4), 0), ("int16", f32(2e-4), 0), {}),
        ("RELU", full, ("int16", f32(3e-4), 0), ("int16", f32(7e-4), 0), {}),
        ("RELU6", full, ("int16", f32(3e-4), 0), ("int16", f32(2e-4), 0), {}),
        ("RELU6", full, ("int16", f32(3e-4), 0), ("int16", f32(5e-4), 0), {}),
    ]
    model = mixed_unary_model(cases)
    grid = np.arange(-32768, 32768, dtype=np.float32).reshape(full)
    inputs = []
    for k in range(2):
        batch = []
        for _, shape, (dtype, *_), (_, out_scale, _), _ in cases:
            if dtype == "float32":  # the int16 grid and its midpoints (ties), and beyond
                batch.append((grid + np.float32(0.5 * k)) * np.float32(out_scale * 1.1))
            elif dtype == "int16":
                batch.append(_full_range(shape)[:: 1 - 2 * k].copy())
            else:
                batch.append(random_input(rng, shape, dtype))
        inputs.append(batch)
    assert_bit_exact(model, inputs)


def _pool_cases(rng: np.random.Generator) -> list:
    """AVERAGE_POOL_2D / MAX_POOL_2D cases: SAME and VALID, filters and strides, the
    activations (a nonzero output zero point once: pooling.cc allows it for int16)."""
    cases = []
    for i in range(8):
        op = ["AVERAGE_POOL_2D", "MAX_POOL_2D"][i % 2]
        h, w, c = int(rng.integers(3, 9)), int(rng.integers(3, 9)), int(rng.integers(1, 5))
        fh, fw = int(rng.integers(1, min(h, 4) + 1)), int(rng.integers(1, min(w, 4) + 1))
        sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        padding = ["SAME", "VALID"][i // 2 % 2]
        if padding == "SAME":
            oh, ow = -(-h // sh), -(-w // sw)
        else:
            oh, ow = (h - fh) // sh + 1, (w - fw) // sw + 1
        scale, zp = f32(rng.uniform(1e-4, 1e-3)), 0 if i != 5 else 11
        options = {"padding": padding, "stride_h": sh, "stride_w": sw, "filter_height": fh}
        options |= {"filter_width": fw, "fused_activation_function": ACTIVATIONS[i // 2]}
        cases.append((op, (2, h, w, c), (2, oh, ow, c), ("int16", scale, zp), options))
    return cases


def test_pool_and_reshape_int16() -> None:
    """AVERAGE_POOL_2D and MAX_POOL_2D over geometries and activations, and the RESHAPE,
    SQUEEZE and EXPAND_DIMS copies, in one model."""
    rng = np.random.default_rng(1800)
    b = TFLiteModelBuilder()
    shapes = []
    for i, (op, in_shape, out_shape, (dtype, scale, zp), options) in enumerate(_pool_cases(rng)):
        x = b.add_input(f"p{i}", in_shape, dtype, scale=scale, zero_point=zp)
        y = b.add_tensor(f"q{i}", out_shape, dtype, scale=scale, zero_point=zp)
        b.add_operator(op, [x], [y], options)
        b.mark_output(y)
        shapes.append(in_shape)
    copies = [
        ("RESHAPE", (2, 3, 4), (4, 6), {"new_shape": [4, 6]}),
        ("SQUEEZE", (1, 5, 1, 3), (5, 3), {"squeeze_dims": [0, 2]}),
        ("EXPAND_DIMS", (3, 4), (3, 1, 4), None),
    ]
    for i, (op, in_shape, out_shape, options) in enumerate(copies):
        x = b.add_input(f"c{i}", in_shape, "int16", scale=f32(3e-4), zero_point=0)
        y = b.add_tensor(f"d{i}", out_shape, "int16", scale=f32(3e-4), zero_point=0)
        if op == "EXPAND_DIMS":
            axis = b.add_constant(f"axis{i}", np.asarray([1], np.int32))
            b.add_operator(op, [x, axis], [y])
        else:
            b.add_operator(op, [x], [y], options)
        b.mark_output(y)
        shapes.append(in_shape)
    inputs = [[random_input(rng, shape, "int16") for shape in shapes] for _ in range(3)]
    assert_bit_exact(b.build(), inputs)


def test_leaky_relu_abs_concatenation_int16() -> None:
    """LEAKY_RELU (alphas, scales up and down), ABS (same scale: no rescale, and rescaled)
    over every int16 value, and CONCATENATION of inputs with different scales (copied)."""
    full = (64, 1024)
    cases = [
        ("LEAKY_RELU", full, ("int16", f32(3e-4), 0), ("int16", f32(2e-4), 0), {"alpha": 0.1}),
        ("LEAKY_RELU", full, ("int16", f32(3e-4), 0), ("int16", f32(7e-4), 0), {"alpha": 0.7}),
        ("LEAKY_RELU", full, ("int16", f32(3e-4), 0), ("int16", f32(3e-4), 0), {"alpha": 0.0}),
        ("ABS", full, ("int16", f32(3e-4), 0), ("int16", f32(3e-4), 0), {}),
        ("ABS", full, ("int16", f32(3e-4), 0), ("int16", f32(5e-4), 0), {}),
        ("ABS", full, ("int16", f32(3e-4), 0), ("int16", f32(1e-4), 0), {}),
    ]
    b = TFLiteModelBuilder()
    for i, (op, shape, (_, s_in, _), (_, s_out, _), options) in enumerate(cases):
        x = b.add_input(f"x{i}", shape, "int16", scale=s_in, zero_point=0)
        y = b.add_tensor(f"y{i}", shape, "int16", scale=s_out, zero_point=0)
        b.add_operator(op, [x], [y], options)
        b.mark_output(y)
    parts = [((2, 3, 4), 3e-4), ((2, 1, 4), 5e-4), ((2, 5, 4), 3e-4)]
    pieces = [
        b.add_input(f"part{i}", shape, "int16", scale=f32(s), zero_point=0)
        for i, (shape, s) in enumerate(parts)
    ]
    joined = b.add_tensor("joined", (2, 9, 4), "int16", scale=f32(3e-4), zero_point=0)
    b.add_operator("CONCATENATION", pieces, [joined], {"axis": -2})
    b.mark_output(joined)
    rng = np.random.default_rng(1900)
    inputs = [
        [_full_range(full)[:: 1 - 2 * k].copy() for _ in cases]
        + [random_input(rng, shape, "int16") for shape, _ in parts]
        for k in range(2)
    ]
    assert_bit_exact(b.build(), inputs)


def test_pad_transpose_mean_int16() -> None:
    """PAD and PADV2 (the output zero point or a given value), TRANSPOSE, STRIDED_SLICE
    (masks, a negative stride) and MEAN over several axes with and without keep_dims and
    rescaling, on int16, in one model."""
    rng = np.random.default_rng(2000)
    b = TFLiteModelBuilder()
    shapes: list[tuple[int, ...]] = []

    def operand(shape: tuple[int, ...], scale: float, zero_point: int = 0) -> int:
        shapes.append(shape)
        return b.add_input(
            f"x{len(shapes)}", shape, "int16", scale=f32(scale), zero_point=zero_point
        )

    def result(
        op: str, inputs: list[int], shape: tuple[int, ...], scale: float, options=None, zp=0
    ) -> None:
        y = b.add_tensor(f"y{len(shapes)}", shape, "int16", scale=f32(scale), zero_point=zp)
        b.add_operator(op, inputs, [y], options)
        b.mark_output(y)

    paddings = b.add_constant("paddings", np.asarray([[0, 1], [2, 0], [1, 1]], np.int32))
    result("PAD", [operand((2, 3, 4), 3e-4, 5), paddings], (3, 5, 6), 3e-4, zp=5)
    value = b.add_constant("value", np.asarray([-1234], np.int16), scale=f32(3e-4), zero_point=0)
    result("PADV2", [operand((2, 3, 4), 3e-4), paddings, value], (3, 5, 6), 3e-4)
    perm = b.add_constant("perm", np.asarray([2, 0, 3, 1], np.int32))
    result("TRANSPOSE", [operand((2, 3, 4, 5), 3e-4), perm], (4, 2, 5, 3), 3e-4)
    bounds = [b.add_constant(n, np.asarray(v, np.int32)) for n, v in
              (("begin", [1, 0, 5]), ("end", [3, 3, 0]), ("strides", [1, 2, -2]))]  # fmt: skip
    sliced = [operand((3, 4, 6), 3e-4), *bounds]
    result("STRIDED_SLICE", sliced, (2, 2, 3), 3e-4, {"begin_mask": 2})
    for axes, keep, in_shape, out_shape, out_scale in [
        ([1, 2], True, (2, 5, 7, 3), (2, 1, 1, 3), 3e-4),
        ([1, 2], False, (2, 5, 7, 3), (2, 3), 1.1e-4),
        ([-1], False, (3, 9), (3,), 7e-4),
        ([0, 2], True, (4, 3, 6), (1, 3, 1), 2e-4),
    ]:
        axis = b.add_constant(f"axes{len(shapes)}", np.asarray(axes, np.int32))
        result("MEAN", [operand(in_shape, 3e-4), axis], out_shape, out_scale, {"keep_dims": keep})
    inputs = [[random_input(rng, shape, "int16") for shape in shapes] for _ in range(3)]
    assert_bit_exact(b.build(), inputs)


def test_slice_split_pack_unpack_int16() -> None:
    rng = np.random.default_rng(2100)
    assert_bit_exact(
        int16_copies_model(), [[random_input(rng, (2, 6, 4), "int16")] for _ in range(3)]
    )


@pytest.mark.parametrize(
    ("op", "out_scale", "message"),
    [
        ("LOGISTIC", 2.0**-14, r"operator 0 \(LOGISTIC\): the int16 output scale must be 1/32768"),
        ("TANH", 1e-4, r"operator 0 \(TANH\): the int16 output scale must be 2\*\*-15"),
        ("SOFTMAX", 2.0**-14, r"operator 0 \(SOFTMAX\): the int16 output scale must be"),
        ("HARD_SWISH", 2.0**-12, r"operator 0 \(HARD_SWISH\): int16 HARD_SWISH has no TFLite"),
        ("RELU_N1_TO_1", 2.0**-12, r"operator 0 \(RELU_N1_TO_1\): int16 RELU_N1_TO_1 has no"),
    ],
)
def test_int16_activation_limits_are_one_line_errors(
    op: str, out_scale: float, message: str
) -> None:
    model = unary_cases_model(op, [((2, 4), 2.0**-12, out_scale, {})])
    with pytest.raises(UnsupportedError, match=message + r".*docs/operators.md"):
        import_tflite_int8(model)


def test_fully_connected_16x8_needs_symmetric_activations() -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "int16", scale=1e-3, zero_point=5)
    w = b.add_constant("w", np.ones((2, 4), np.int8), scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 2), "int16", scale=1e-3, zero_point=0)
    b.add_operator("FULLY_CONNECTED", [x, w, -1], [y])
    b.mark_output(y)
    with pytest.raises(
        UnsupportedError, match=r"operator 0 \(FULLY_CONNECTED\): input 'x' has zero point 5"
    ):
        import_tflite_int8(b.build())


@pytest.mark.toolchain
def test_fc_16x8_model_in_c_on_the_host(tmp_path: Path) -> None:
    path = tmp_path / "fc16.tflite"
    path.write_bytes(fc_16x8_model())
    folder = build(path, tmp_path / "out", "host")
    rng = np.random.default_rng(12)
    batches = [[random_input(rng, (2, 16), "int16")] for _ in range(6)]
    for inputs, outputs in zip(batches, run_many(folder, batches)):
        np.testing.assert_array_equal(outputs[0], run_tflite_reference(path, inputs)[0])


@pytest.mark.toolchain
def test_int16_activations_model_in_c_on_the_host(tmp_path: Path) -> None:
    path = tmp_path / "act16.tflite"
    path.write_bytes(int16_activations_model())
    # float32 at the boundary (QUANTIZE/DEQUANTIZE): --frontend auto takes the int8 importer.
    folder = build(path, tmp_path / "out", "host")
    rng = np.random.default_rng(13)
    batches = [[random_input(rng, (2, 3, 8), t) for t in ("float32", "int16")] for _ in range(6)]
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        expected = run_tflite_reference(path, inputs)
        assert len(outputs) == len(expected) == 2
        for actual, reference in zip(outputs, expected, strict=True):
            np.testing.assert_array_equal(actual, reference)


def test_maximum_minimum_int16() -> None:
    # TFLite compares the stored values, so int16 takes the int8 handler's rule: one scale
    # and zero point for both inputs and the output; numpy broadcasting.
    rng = np.random.default_rng(2200)
    sets = [[random_input(rng, (2, 3, 5), "int16"), random_input(rng, (3, 1), "int16")]
            for _ in range(4)]  # fmt: skip
    assert_bit_exact(int16_maximum_minimum_model(), sets)
