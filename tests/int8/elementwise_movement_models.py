"""One small int8 model that uses every group-A operator of issue 13, for the C pipeline on
the host and on mps2_an386 (tests/int8/test_ops_a_pipeline.py,
tests/emulator/test_ops_a_on_board.py)."""

from __future__ import annotations

import numpy as np

from aot.testing.tflite_builder import TFLiteModelBuilder

OPERATORS = (
    "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "SUB",
    "LEAKY_RELU", "PRELU", "ABS", "NEG", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "SLICE",
    "SPLIT", "SPLIT_V", "CONCATENATION", "PACK", "UNPACK", "GATHER", "REDUCE_MAX", "ARG_MAX",
    "ARG_MIN", "SUM",
)  # fmt: skip


def multi_operator_model(reference: bool = False) -> bytes:
    """Inputs: x int8 (1, 8, 8, 4), ids int32 (3,) in [0, 6) and counts int8 (2, 5) in
    [0, 128); outputs: a requantizing concatenation (1, 6, 6, 8), a reduce-max (3, 4), two
    arg-reductions (int32) and a sum (2,). ``counts`` stays non-negative because LiteRT's
    reference SUM reads int8 as uint8 (see docs/int8.md).

    LiteRT's int8 CONCATENATION refuses inputs quantized unlike the output, so
    ``reference=True`` gives the same model as the converter would write it, with a
    QUANTIZE (int8 -> int8) before each such input: what aot's one kernel must equal."""
    b = TFLiteModelBuilder()

    def q(scale: float, zp: int) -> dict:
        return {"scale": scale, "zero_point": zp}

    def t(name: str, shape, quant: dict | None = None, dtype: str = "int8") -> int:
        return b.add_tensor(name, shape, dtype, **(quant or {}))

    def const(name: str, values, dtype=np.int32, **quant) -> int:
        return b.add_constant(name, np.array(values, dtype=dtype), **quant)

    q1, q2, q3, q4, q5, q6, q7 = (q(0.05, -3), q(0.08, 10), q(0.06, -20), q(0.07, 5),
                                  q(0.04, -128), q(0.5, -100), q(0.06, 0))  # fmt: skip
    x = b.add_input("x", (1, 8, 8, 4), "int8", **q1)
    ids = b.add_input("ids", (3,), "int32")
    counts = b.add_input("counts", (2, 5), "int8", **q(0.02, -10))

    big = t("big", (1, 12, 12, 4), q1)
    b.add_operator("RESIZE_BILINEAR", [x, const("size12", [12, 12])], [big],
                   {"half_pixel_centers": True})  # fmt: skip
    small = t("small", (1, 6, 6, 4), q1)
    b.add_operator("RESIZE_NEAREST_NEIGHBOR", [x, const("size6", [6, 6])], [small],
                   {"align_corners": True})  # fmt: skip
    deep = t("deep", (1, 6, 6, 16), q1)
    b.add_operator("SPACE_TO_DEPTH", [big], [deep], {"block_size": 2})
    back = t("back", (1, 12, 12, 4), q1)
    b.add_operator("DEPTH_TO_SPACE", [deep], [back], {"block_size": 2})
    diff = t("diff", (1, 12, 12, 4), q2)
    shifted = t("shifted", (1, 12, 12, 4), q1)
    b.add_operator("RESIZE_NEAREST_NEIGHBOR", [x, const("size12b", [12, 12])], [shifted])
    b.add_operator("SUB", [back, shifted], [diff], {"fused_activation_function": "RELU6"})
    leaky = t("leaky", (1, 12, 12, 4), q3)
    b.add_operator("LEAKY_RELU", [diff], [leaky], {"alpha": 0.1})
    alpha = const("alpha", [-40, 17, 90, 127], np.int8, **q(0.01, 0))
    prelu = t("prelu", (1, 12, 12, 4), q4)
    b.add_operator("PRELU", [leaky, alpha], [prelu])
    mag = t("mag", (1, 12, 12, 4), q5)
    b.add_operator("ABS", [prelu], [mag])
    neg = t("neg", (1, 12, 12, 4), q5)
    b.add_operator("NEG", [mag], [neg])
    hi, lo = t("hi", (1, 12, 12, 4), q5), t("lo", (1, 12, 12, 4), q5)
    b.add_operator("MAXIMUM", [mag, neg], [hi])
    b.add_operator("MINIMUM", [mag, neg], [lo])
    sq = t("sq", (1, 12, 12, 4), q6)
    b.add_operator("SQUARED_DIFFERENCE", [hi, lo], [sq])
    top = t("top", (1, 6, 12, 4), q6)
    b.add_operator("SLICE", [sq, const("begin", [0, 3, 0, 0]), const("sz", [1, 6, -1, 4])], [top])
    left, right = t("left", (1, 6, 6, 4), q6), t("right", (1, 6, 6, 4), q6)
    b.add_operator("SPLIT", [const("axis2", [2]), top], [left, right], {"num_splits": 2})
    one, three = t("one", (1, 6, 6, 1), q6), t("three", (1, 6, 6, 3), q6)
    b.add_operator("SPLIT_V", [left, const("parts", [1, -1]), const("axis3", [3])],
                   [one, three], {"num_splits": 2})  # fmt: skip
    joined = t("joined", (1, 6, 6, 8), q7)
    parts = [three, small, one]
    if reference:
        for k, part in enumerate(parts):
            shape = (1, 6, 6, 3) if k == 0 else (1, 6, 6, 4) if k == 1 else (1, 6, 6, 1)
            requantized = t(f"requantized{k}", shape, q7)
            b.add_operator("QUANTIZE", [part], [requantized])
            parts[k] = requantized
    b.add_operator("CONCATENATION", parts, [joined], {"axis": 3})
    stacked = t("stacked", (2, 1, 6, 6, 4), q6)
    b.add_operator("PACK", [left, right], [stacked], {"axis": 0, "values_count": 2})
    first, second = t("first", (1, 6, 6, 4), q6), t("second", (1, 6, 6, 4), q6)
    b.add_operator("UNPACK", [stacked], [first, second], {"axis": 0, "num": 2})
    rows = t("rows", (1, 3, 6, 4), q6)
    b.add_operator("GATHER", [first, ids], [rows], {"axis": 1})
    peak = t("peak", (3, 4), q6)
    flat_rows = t("flat_rows", (3, 6, 4), q6)
    b.add_operator("RESHAPE", [rows], [flat_rows], {"new_shape": [3, 6, 4]})
    b.add_operator("REDUCE_MAX", [flat_rows, const("axes", [1])], [peak], {"keep_dims": False})
    where = t("where", (1, 6, 6), dtype="int32")
    b.add_operator("ARG_MAX", [joined, const("am", [3])], [where], {"output_type": "INT32"})
    least = t("least", (1, 6, 6), dtype="int32")
    b.add_operator("ARG_MIN", [second, const("an", [-1])], [least], {"output_type": "INT32"})
    total = t("total", (2,), q(0.15, 0))  # 5 * 137 * 0.02 / 0.15 < 127: no saturation
    b.add_operator("SUM", [counts, const("sum_axis", [1])], [total], {"keep_dims": False})
    for out in (joined, peak, where, least, total):
        b.mark_output(out)
    return b.build()


def random_inputs(rng: np.random.Generator, count: int) -> list[list[np.ndarray]]:
    return [
        [
            rng.integers(-128, 128, (1, 8, 8, 4), dtype=np.int8),
            rng.integers(0, 6, (3,), dtype=np.int32),
            rng.integers(0, 128, (2, 5), dtype=np.int8),
        ]
        for _ in range(count)
    ]


def npu_model() -> bytes:
    """CONV_2D -> SUB -> LEAKY_RELU -> RESIZE_BILINEAR -> MAXIMUM: Vela puts all of it on
    an Ethos-U55, so aot's regions must take the new operator kinds too."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 8, 8, 4), "int8", scale=0.05, zero_point=-3)
    weights = np.random.default_rng(0).integers(-127, 128, (4, 3, 3, 4), dtype=np.int8)
    w = b.add_constant("w", weights, scale=[0.02] * 4, zero_point=[0] * 4)
    bias = b.add_constant("bias", np.zeros(4, np.int32), scale=[0.001] * 4, zero_point=[0] * 4)
    c = b.add_tensor("c", (1, 8, 8, 4), "int8", scale=0.1, zero_point=2)
    b.add_operator("CONV_2D", [x, w, bias], [c], {"padding": "SAME"})
    s = b.add_tensor("s", (1, 8, 8, 4), "int8", scale=0.1, zero_point=0)
    b.add_operator("SUB", [c, x], [s])
    leaky = b.add_tensor("l", (1, 8, 8, 4), "int8", scale=0.1, zero_point=0)
    b.add_operator("LEAKY_RELU", [s], [leaky], {"alpha": 0.1})
    r = b.add_tensor("r", (1, 16, 16, 4), "int8", scale=0.1, zero_point=0)
    size = b.add_constant("size", np.array([16, 16], np.int32))
    b.add_operator("RESIZE_BILINEAR", [leaky, size], [r])
    m = b.add_tensor("m", (1, 16, 16, 4), "int8", scale=0.1, zero_point=0)
    b.add_operator("MAXIMUM", [r, r], [m])
    b.mark_output(m)
    return b.build()
