"""16x8 test models (int16 activations, zero point 0; int8 weights; int64 or int32
biases) written with aot.testing.tflite_builder, with output scales chosen so the
products spread over the int16 range and saturate at the tails."""

from __future__ import annotations

import numpy as np

from aot.testing.tflite_builder import TFLiteModelBuilder


def f32(value: float) -> float:
    return float(np.float32(value))


def add_fully_connected_16x8(
    b: TFLiteModelBuilder,
    rng: np.random.Generator,
    x: int,
    x_scale: float,
    depth: int,
    out_shape: tuple[int, ...],
    per_channel: bool,
    bias_dtype: str | None,
    activation: str = "NONE",
    name: str = "fc",
) -> tuple[int, float]:
    """Append a 16x8 FULLY_CONNECTED; returns its output tensor and scale."""
    channels = out_shape[-1]
    scales = [f32(rng.uniform(1e-3, 2e-2)) for _ in range(channels if per_channel else 1)]
    weights = rng.integers(-127, 128, (channels, depth), dtype=np.int8)
    w = b.add_constant(f"{name}_w", weights, scale=scales, zero_point=[0] * len(scales))
    bias = -1
    options: dict = {"fused_activation_function": activation}
    if bias_dtype is not None:
        values = rng.integers(-(1 << 17), 1 << 17, channels).astype(bias_dtype)
        bias = b.add_constant(
            f"{name}_b", values, scale=[f32(x_scale * s) for s in scales],
            zero_point=[0] * len(scales),
        )  # fmt: skip
        if bias_dtype == "int32":
            options["quantized_bias_type"] = "INT32"  # else LiteRT reads int64
    out_scale = f32(x_scale * max(scales) * 32768 * 128 * np.sqrt(depth) * 0.4 / 32767)
    y = b.add_tensor(f"{name}_out", out_shape, "int16", scale=out_scale, zero_point=0)
    b.add_operator("FULLY_CONNECTED", [x, w, bias], [y], options)
    return y, out_scale


def fc_16x8_model(seed: int = 4) -> bytes:
    """Two 16x8 FULLY_CONNECTED layers (per-channel with an int64 bias, then per-tensor
    with an int32 bias and RELU), then a broadcast int16 ADD of a constant: int16 between
    operators and at the model boundary."""
    rng = np.random.default_rng(seed)
    b = TFLiteModelBuilder()
    x_scale = f32(2e-4)
    x = b.add_input("x", (2, 16), "int16", scale=x_scale, zero_point=0)
    h, h_scale = add_fully_connected_16x8(
        b, rng, x, x_scale, 16, (2, 12), True, "int64", name="fc1"
    )
    y, y_scale = add_fully_connected_16x8(
        b, rng, h, h_scale, 12, (2, 5), False, "int32", "RELU", name="fc2"
    )
    offset_scale = f32(y_scale * 0.7)
    offsets = b.add_constant(
        "offsets", rng.integers(-32768, 32768, 5, dtype=np.int16), scale=offset_scale,
        zero_point=0,
    )  # fmt: skip
    z = b.add_tensor("z", (2, 5), "int16", scale=f32(y_scale * 1.3), zero_point=0)
    b.add_operator("ADD", [y, offsets], [z], {"pot_scale_int16": False})
    b.mark_output(z)
    return b.build()


Quantization = tuple[str, float | None, int | None]  # dtype, scale, zero point


def mixed_unary_model(
    cases: list[tuple[str, tuple[int, ...], Quantization, Quantization, dict]],
) -> bytes:
    """One model holding one single-input operator per case (operator, shape, input and
    output dtype/scale/zero point, options), each on its own model input and output."""
    b = TFLiteModelBuilder()
    for i, (
        op,
        shape,
        (in_dtype, in_scale, in_zp),
        (out_dtype, out_scale, out_zp),
        options,
    ) in enumerate(cases):
        in_q = {} if in_scale is None else {"scale": in_scale, "zero_point": in_zp}
        out_q = {} if out_scale is None else {"scale": out_scale, "zero_point": out_zp}
        x = b.add_input(f"x{i}", shape, in_dtype, **in_q)
        y = b.add_tensor(f"y{i}", shape, out_dtype, **out_q)
        b.add_operator(op, [x], [y], options)
        b.mark_output(y)
    return b.build()


def unary_cases_model(op: str, cases: list[tuple[tuple[int, ...], float, float, dict]]) -> bytes:
    """One model holding one int16 ``op`` per case (shape, input scale, output scale,
    options), zero points 0: many cases for one compile."""
    return mixed_unary_model(
        [(op, shape, ("int16", s_in, 0), ("int16", s_out, 0), opts)
         for shape, s_in, s_out, opts in cases]
    )  # fmt: skip


BinaryCase = tuple[tuple[int, ...], tuple[int, ...], float, float, float, dict]


def binary_cases_model(op: str, cases: list[BinaryCase]) -> bytes:
    """One model holding one int16 ``op`` per case (shape 1, shape 2, scale 1, scale 2,
    output scale, options); the output shape is the broadcast one."""
    b = TFLiteModelBuilder()
    for i, (a_shape, b_shape, a_scale, b_scale, out_scale, options) in enumerate(cases):
        lhs = b.add_input(f"a{i}", a_shape, "int16", scale=a_scale, zero_point=0)
        rhs = b.add_input(f"b{i}", b_shape, "int16", scale=b_scale, zero_point=0)
        out_shape = tuple(np.broadcast_shapes(a_shape, b_shape))
        y = b.add_tensor(f"y{i}", out_shape, "int16", scale=out_scale, zero_point=0)
        b.add_operator(op, [lhs, rhs], [y], options)
        b.mark_output(y)
    return b.build()


def int16_activations_model() -> bytes:
    """int16 between operators: QUANTIZE of a float32 input to int16, LOGISTIC of it (a
    scale that is not a power of two: the general path), TANH of the int16 input
    ``x_pot`` (2**-12: the power-of-two path), their power-of-two ADD, a general SUB of
    the first, RELU6, SOFTMAX, and a DEQUANTIZE of the sum as the second output."""
    b = TFLiteModelBuilder()
    shape = (2, 3, 8)
    real = b.add_input("real", shape, "float32")
    x = b.add_tensor("x", shape, "int16", scale=f32(3.1e-4), zero_point=0)
    b.add_operator("QUANTIZE", [real], [x])
    sig = b.add_tensor("sig", shape, "int16", scale=2.0**-15, zero_point=0)
    b.add_operator("LOGISTIC", [x], [sig])
    x_pot = b.add_input("x_pot", shape, "int16", scale=2.0**-12, zero_point=0)
    th = b.add_tensor("tanh", shape, "int16", scale=2.0**-15, zero_point=0)
    b.add_operator("TANH", [x_pot], [th])
    total = b.add_tensor("sum", shape, "int16", scale=2.0**-15, zero_point=0)
    b.add_operator("ADD", [sig, th], [total])  # pot_scale_int16 defaults to true
    diff = b.add_tensor("diff", shape, "int16", scale=f32(4.7e-4), zero_point=0)
    b.add_operator("SUB", [total, x], [diff], {"fused_activation_function": "RELU"})
    clipped = b.add_tensor("clipped", shape, "int16", scale=f32(1.3e-4), zero_point=0)
    b.add_operator("RELU6", [diff], [clipped])
    probs = b.add_tensor("probs", shape, "int16", scale=2.0**-15, zero_point=0)
    b.add_operator("SOFTMAX", [clipped], [probs], {"beta": 1.0})
    b.mark_output(probs)
    total_real = b.add_tensor("sum_real", shape, "float32")
    b.add_operator("DEQUANTIZE", [total], [total_real])
    b.mark_output(total_real)
    return b.build()


def int16_pooling_model() -> bytes:
    """int16 through PAD, MAX_POOL_2D (SAME, stride 2), AVERAGE_POOL_2D (VALID, RELU6),
    the RESHAPE, EXPAND_DIMS and SQUEEZE copies, then ABS (rescaled), LEAKY_RELU, a
    CONCATENATION of the last two and a STRIDED_SLICE of it; a second output is the
    TRANSPOSE of the max pool's result and its MEAN over the spatial axes."""
    b = TFLiteModelBuilder()
    scale = f32(2.3e-4)

    def tensor(name: str, shape: tuple[int, ...]) -> int:
        return b.add_tensor(name, shape, "int16", scale=scale, zero_point=0)

    x = b.add_input("x", (1, 6, 5, 3), "int16", scale=scale, zero_point=0)
    padded = tensor("padded", (1, 7, 6, 3))
    paddings = b.add_constant("paddings", np.asarray([[0, 0], [1, 0], [0, 1], [0, 0]], np.int32))
    b.add_operator("PAD", [x, paddings], [padded])
    peak = tensor("peak", (1, 4, 3, 3))
    b.add_operator("MAX_POOL_2D", [padded], [peak], {"padding": "SAME", "stride_h": 2,
                   "stride_w": 2, "filter_height": 3, "filter_width": 2})  # fmt: skip
    mean = tensor("mean", (1, 3, 2, 3))
    b.add_operator("AVERAGE_POOL_2D", [peak], [mean], {"filter_height": 2, "filter_width": 2,
                   "fused_activation_function": "RELU6"})  # fmt: skip
    flat = tensor("flat", (18,))
    b.add_operator("RESHAPE", [mean], [flat], {"new_shape": [18]})
    column = tensor("column", (18, 1))
    b.add_operator("EXPAND_DIMS", [flat, b.add_constant("axis", np.asarray([1], np.int32))],
                   [column])  # fmt: skip
    row = tensor("row", (1, 18))
    b.add_operator("RESHAPE", [column], [row], {"new_shape": [1, 18]})
    squeezed = tensor("squeezed", (18,))
    b.add_operator("SQUEEZE", [row], [squeezed], {"squeeze_dims": [0]})
    magnitude = b.add_tensor("magnitude", (18,), "int16", scale=f32(1.7e-4), zero_point=0)
    b.add_operator("ABS", [squeezed], [magnitude])
    leaky = b.add_tensor("leaky", (18,), "int16", scale=f32(3.1e-4), zero_point=0)
    b.add_operator("LEAKY_RELU", [squeezed], [leaky], {"alpha": 0.3})
    joined = b.add_tensor("joined", (36,), "int16", scale=f32(3.1e-4), zero_point=0)
    b.add_operator("CONCATENATION", [magnitude, leaky], [joined], {"axis": 0})
    every_third = tensor("every_third", (10,))
    bounds = [b.add_constant(n, np.asarray([v], np.int32)) for n, v in
              (("begin", 2), ("end", 30), ("stride", 3))]  # fmt: skip
    b.add_operator("STRIDED_SLICE", [joined, *bounds], [every_third])
    b.mark_output(every_third)
    swapped = tensor("swapped", (1, 3, 4, 3))
    b.add_operator("TRANSPOSE", [peak, b.add_constant("perm", np.asarray([0, 3, 1, 2], np.int32))],
                   [swapped])  # fmt: skip
    spatial = b.add_constant("spatial", np.asarray([2, 3], np.int32))
    averages = b.add_tensor("averages", (1, 3), "int16", scale=f32(1.1e-4), zero_point=0)
    b.add_operator("MEAN", [swapped, spatial], [averages], {"keep_dims": False})
    b.mark_output(averages)
    return b.build()


def int16_copies_model() -> bytes:
    """int16 through the copying operators: SLICE, SPLIT, SPLIT_V, PACK and UNPACK."""
    b = TFLiteModelBuilder()
    scale = f32(2.9e-4)

    def tensor(name: str, shape: tuple[int, ...]) -> int:
        return b.add_tensor(name, shape, "int16", scale=scale, zero_point=0)

    def ints(name: str, values: list[int]) -> int:
        return b.add_constant(name, np.asarray(values, np.int32))

    x = b.add_input("x", (2, 6, 4), "int16", scale=scale, zero_point=0)
    window = tensor("window", (2, 4, 4))
    b.add_operator("SLICE", [x, ints("begin", [0, 1, 0]), ints("size", [-1, 4, 4])], [window])
    top, bottom = tensor("top", (2, 2, 4)), tensor("bottom", (2, 2, 4))
    b.add_operator("SPLIT", [ints("axis", [1]), window], [top, bottom], {"num_splits": 2})
    first, rest = tensor("first", (2, 2, 1)), tensor("rest", (2, 2, 3))
    b.add_operator("SPLIT_V", [top, ints("parts", [1, -1]), ints("last", [2])], [first, rest],
                   {"num_splits": 2})  # fmt: skip
    stacked = tensor("stacked", (2, 2, 2, 4))
    b.add_operator("PACK", [top, bottom], [stacked], {"axis": 1, "values_count": 2})
    left, right = tensor("left", (2, 2, 4)), tensor("right", (2, 2, 4))
    b.add_operator("UNPACK", [stacked], [left, right], {"axis": 2, "num": 2})
    b.mark_output(rest)
    b.mark_output(right)
    return b.build()


def int16_maximum_minimum_model() -> bytes:
    """MAXIMUM and MINIMUM of an int16 [2, 3, 5] and a broadcast int16 [3, 1], one scale and
    zero point for all (TFLite compares the stored values); both are outputs."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", (2, 3, 5), "int16", scale=2.0**-10, zero_point=0)
    y = b.add_input("y", (3, 1), "int16", scale=2.0**-10, zero_point=0)
    for op in ("MAXIMUM", "MINIMUM"):
        out = b.add_tensor(op.lower(), (2, 3, 5), "int16", scale=2.0**-10, zero_point=0)
        b.add_operator(op, [x, y], [out])
        b.mark_output(out)
    return b.build()
