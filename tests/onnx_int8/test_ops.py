"""Each int8 ONNX operator against onnxruntime, randomized over shapes, zero points,
per-channel scales and saturation. Many independent cases share one graph (one input and
one output each), so one compile checks them all."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.onnx_int8.helpers import assert_matches_onnxruntime, make_model, random_int

pytestmark = pytest.mark.unit

CASES = 8  # per graph
INPUT_SETS = 4


class Graph:
    """Accumulates independent one-operator cases into one model."""

    def __init__(self) -> None:
        self.nodes, self.inputs, self.outputs, self.inits = [], [], [], {}
        self.count = 0

    def name(self, stem: str) -> str:
        return f"{stem}{self.count}"

    def const(self, stem: str, value) -> str:
        name = self.name(stem)
        self.inits[name] = np.asarray(value)
        return name

    def qparams(self, rng, stem: str, dtype: str, scale: float | None = None):
        zp = int(rng.integers(-20, 21)) if dtype == "int8" else int(rng.integers(100, 156))
        s = np.float32(scale if scale is not None else rng.uniform(0.005, 0.1))
        return self.const(f"{stem}_s", s), self.const(f"{stem}_z", np.array(zp, dtype=dtype))

    def add(self, node, inputs, output) -> None:
        self.nodes.append(node)
        self.inputs.extend(inputs)
        self.outputs.append(output)
        self.count += 1

    def save(self, path):
        return make_model(self.nodes, self.inputs, self.outputs, self.inits, path)

    def random_inputs(self, rng):
        return [
            [random_int(rng, s, d) if d != "float32" else rng.normal(0, 4, s).astype(np.float32)
             for _, d, s in self.inputs]
            for _ in range(INPUT_SETS)
        ]  # fmt: skip


def _out_scale(rng, acc_scale: float, depth: int) -> float:
    """An output scale that makes some results saturate and most not."""
    typical = acc_scale * 60.0 * np.sqrt(depth) * 40.0
    return float(typical / rng.uniform(40, 200))


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_qlinear_conv_matches_onnxruntime(act, tmp_path) -> None:
    rng = np.random.default_rng(11 if act == "int8" else 12)
    g = Graph()
    for _ in range(CASES):
        group = 1
        c_in = int(rng.integers(1, 6))
        if rng.random() < 0.3:
            group = c_in  # depthwise
        c_out = group * int(rng.integers(1, 4)) if group > 1 else int(rng.integers(1, 7))
        k = (int(rng.choice([1, 3])), int(rng.choice([1, 3])))
        h, w = int(rng.integers(k[0], 9)), int(rng.integers(k[1], 9))
        strides = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        dil = [1, 1] if rng.random() < 0.7 else [2, 1]
        if (h - 1) < dil[0] * (k[0] - 1):
            dil = [1, 1]
        pads = [int(p) for p in rng.integers(0, 2, size=4)]
        # int8 weights with 7 significant bits: onnxruntime's AVX2 u8s8 kernels add
        # products pairwise in int16 with saturation, which a full-range pair can reach.
        weight = rng.integers(-63, 64, size=(c_out, c_in // group, *k), dtype=np.int8)
        per_channel = rng.random() < 0.6
        w_scale = rng.uniform(0.002, 0.05, c_out) if per_channel else rng.uniform(0.002, 0.05)
        x_s, x_z = g.qparams(rng, "xs", act)
        depth = c_in // group * k[0] * k[1]
        y_scale = _out_scale(rng, float(g.inits[x_s]) * float(np.mean(w_scale)), depth)
        y_s, y_z = g.qparams(rng, "ys", act, y_scale)
        bias = rng.integers(-3000, 3000, size=c_out, dtype=np.int32)
        names = [
            g.name("x"), x_s, x_z, g.const("w", weight),
            g.const("ws", np.asarray(w_scale, np.float32)),
            g.const("wz", np.zeros(c_out if per_channel else (), np.int8)), y_s, y_z,
            g.const("b", bias),
        ]  # fmt: skip
        node = helper.make_node(
            "QLinearConv", names, [g.name("y")], group=group, strides=strides, pads=pads,
            dilations=dil, kernel_shape=list(k),
        )  # fmt: skip
        out_h = (h + pads[0] + pads[2] - dil[0] * (k[0] - 1) - 1) // strides[0] + 1
        out_w = (w + pads[1] + pads[3] - dil[1] * (k[1] - 1) - 1) // strides[1] + 1
        g.add(node, [(g.name("x"), act, [1, c_in, h, w])],
              (g.name("y"), act, [1, c_out, out_h, out_w]))  # fmt: skip
    assert_matches_onnxruntime(g.save(tmp_path / "conv.onnx"), g.random_inputs(rng))


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_qlinear_matmul_and_qgemm_match_onnxruntime(act, tmp_path) -> None:
    rng = np.random.default_rng(21 if act == "int8" else 22)
    g = Graph()
    for case in range(CASES):
        m, k, n = int(rng.integers(1, 5)), int(rng.integers(1, 40)), int(rng.integers(1, 9))
        weight_zp = int(rng.integers(-5, 6))
        x_s, x_z = g.qparams(rng, "xs", act)
        gemm = case % 2 == 1
        per_channel = gemm and rng.random() < 0.6
        w_scale = rng.uniform(0.002, 0.05, n) if per_channel else rng.uniform(0.002, 0.05)
        alpha = float(np.float32(rng.uniform(0.5, 2.0))) if gemm else 1.0
        y_scale = alpha * _out_scale(rng, float(g.inits[x_s]) * float(np.mean(w_scale)), k)
        y_s, y_z = g.qparams(rng, "ys", act, y_scale)
        transpose = gemm and rng.random() < 0.5
        shape = (n, k) if transpose else (k, n)
        weight = rng.integers(-63, 64, size=shape, dtype=np.int8)
        wz = np.full(n if per_channel else (), weight_zp if not gemm else 0, np.int8)
        w_names = [g.const("w", weight), g.const("ws", np.asarray(w_scale, np.float32)),
                   g.const("wz", wz)]  # fmt: skip
        batch = [] if gemm or rng.random() < 0.5 else [int(rng.integers(1, 3))]
        if gemm:
            bias = g.const("b", rng.integers(-2000, 2000, size=n, dtype=np.int32))
            node = helper.make_node(
                "QGemm", [g.name("x"), x_s, x_z, *w_names, bias, y_s, y_z], [g.name("y")],
                domain="com.microsoft", alpha=alpha, transB=int(transpose),
            )  # fmt: skip
        else:
            node = helper.make_node(
                "QLinearMatMul", [g.name("x"), x_s, x_z, *w_names, y_s, y_z], [g.name("y")]
            )
        g.add(node, [(g.name("x"), act, [*batch, m, k])], (g.name("y"), act, [*batch, m, n]))
    assert_matches_onnxruntime(g.save(tmp_path / "matmul.onnx"), g.random_inputs(rng))


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_qlinear_add_matches_onnxruntime(act, tmp_path) -> None:
    rng = np.random.default_rng(31 if act == "int8" else 32)
    g = Graph()
    for _ in range(CASES):
        shape = [1, int(rng.integers(1, 5)), int(rng.integers(1, 7)), int(rng.integers(1, 40))]
        a_s, a_z = g.qparams(rng, "as", act)
        b_s, b_z = g.qparams(rng, "bs", act)
        # Output scales below the inputs' saturate the sum.
        y_s, y_z = g.qparams(rng, "ys", act, float(g.inits[a_s]) * rng.uniform(0.5, 3.0))
        node = helper.make_node(
            "QLinearAdd", [g.name("a"), a_s, a_z, g.name("b"), b_s, b_z, y_s, y_z],
            [g.name("y")], domain="com.microsoft",
        )  # fmt: skip
        g.add(node, [(g.name("a"), act, shape), (g.name("b"), act, shape)],
              (g.name("y"), act, shape))  # fmt: skip
    assert_matches_onnxruntime(g.save(tmp_path / "add.onnx"), g.random_inputs(rng))


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_qlinear_global_average_pool_and_max_pool_match_onnxruntime(act, tmp_path) -> None:
    rng = np.random.default_rng(41 if act == "int8" else 42)
    g = Graph()
    for case in range(CASES):
        shape = [int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 9)),
                 int(rng.integers(1, 9))]  # fmt: skip
        if case % 2 == 0:
            x_s, x_z = g.qparams(rng, "xs", act)
            y_s, y_z = g.qparams(rng, "ys", act, float(g.inits[x_s]) * rng.uniform(0.3, 2.0))
            node = helper.make_node(
                "QLinearGlobalAveragePool", [g.name("x"), x_s, x_z, y_s, y_z], [g.name("y")],
                domain="com.microsoft", channels_last=0,
            )  # fmt: skip
            g.add(node, [(g.name("x"), act, shape)], (g.name("y"), act, [*shape[:2], 1, 1]))
        else:
            k = [
                int(rng.integers(1, min(shape[2], 3) + 1)),
                int(rng.integers(1, min(shape[3], 3) + 1)),
            ]
            strides = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
            pads = [int(rng.integers(0, k[0])), int(rng.integers(0, k[1]))] * 2
            node = helper.make_node(
                "MaxPool", [g.name("x")], [g.name("y")], kernel_shape=k, strides=strides,
                pads=pads,
            )  # fmt: skip
            out = [(shape[2] + 2 * pads[0] - k[0]) // strides[0] + 1,
                   (shape[3] + 2 * pads[1] - k[1]) // strides[1] + 1]  # fmt: skip
            g.add(node, [(g.name("x"), act, shape)], (g.name("y"), act, [*shape[:2], *out]))
    assert_matches_onnxruntime(g.save(tmp_path / "pool.onnx"), g.random_inputs(rng))


def test_conv_integer_and_matmul_integer_match_onnxruntime(tmp_path) -> None:
    rng = np.random.default_rng(51)
    g = Graph()
    for case in range(CASES):
        x_zp = g.const("xz", np.array(int(rng.integers(0, 256)), np.uint8))
        w_zp = g.const("wz", np.array(int(rng.integers(0, 256)), np.uint8))
        if case % 2 == 0:
            c_in, c_out = int(rng.integers(1, 5)), int(rng.integers(1, 5))
            h, w = int(rng.integers(3, 8)), int(rng.integers(3, 8))
            weight = g.const("w", random_int(rng, (c_out, c_in, 3, 3), "uint8"))
            node = helper.make_node(
                "ConvInteger", [g.name("x"), weight, x_zp, w_zp], [g.name("y")],
                pads=[1, 1, 1, 1], kernel_shape=[3, 3],
            )  # fmt: skip
            g.add(node, [(g.name("x"), "uint8", [1, c_in, h, w])],
                  (g.name("y"), "int32", [1, c_out, h, w]))  # fmt: skip
        else:
            m, k, n = int(rng.integers(1, 5)), int(rng.integers(1, 30)), int(rng.integers(1, 7))
            weight = g.const("w", random_int(rng, (k, n), "uint8"))
            node = helper.make_node(
                "MatMulInteger", [g.name("x"), weight, x_zp, w_zp], [g.name("y")]
            )
            g.add(node, [(g.name("x"), "uint8", [m, k])], (g.name("y"), "int32", [m, n]))
    assert_matches_onnxruntime(g.save(tmp_path / "integer.onnx"), g.random_inputs(rng))


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_quantize_and_dequantize_linear_match_onnxruntime(act, tmp_path) -> None:
    """float -> QuantizeLinear -> DequantizeLinear -> float: ties round to even, values
    beyond the range saturate."""
    rng = np.random.default_rng(61 if act == "int8" else 62)
    g = Graph()
    for _ in range(CASES):
        shape = [int(rng.integers(1, 4)), int(rng.integers(1, 30))]
        s, z = g.qparams(rng, "s", act, float(rng.choice([0.5, 0.25, rng.uniform(0.01, 0.1)])))
        q = helper.make_node("QuantizeLinear", [g.name("x"), s, z], [g.name("q")])
        g.nodes.append(q)
        node = helper.make_node("DequantizeLinear", [g.name("q"), s, z], [g.name("y")])
        g.add(node, [(g.name("x"), "float32", shape)], (g.name("y"), "float32", shape))
    inputs = g.random_inputs(rng)
    # Exact halves of the scale: the ties that nearest-even and half-away rounding split.
    for batch in inputs:
        for k, x in enumerate(batch):
            scale = float(g.inits[f"s_s{k}"])
            x[..., ::3] = (np.round(x[..., ::3] / scale) + 0.5) * scale
    assert_matches_onnxruntime(g.save(tmp_path / "quantize.onnx"), inputs)


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_qlinear_mul_matches_onnxruntime(act, tmp_path) -> None:
    """numpy broadcasting included: the kernel's rounding does not depend on it."""
    rng = np.random.default_rng(71 if act == "int8" else 72)
    g = Graph()
    for _ in range(CASES):
        shape = [1, int(rng.integers(1, 5)), int(rng.integers(1, 6)), int(rng.integers(1, 20))]
        other = [d if rng.random() < 0.6 else 1 for d in shape]
        a_s, a_z = g.qparams(rng, "as", act)
        b_s, b_z = g.qparams(rng, "bs", act)
        product = float(g.inits[a_s]) * float(g.inits[b_s])
        y_s, y_z = g.qparams(rng, "ys", act, product * rng.uniform(20, 400))
        node = helper.make_node(
            "QLinearMul", [g.name("a"), a_s, a_z, g.name("b"), b_s, b_z, y_s, y_z],
            [g.name("y")], domain="com.microsoft",
        )  # fmt: skip
        g.add(node, [(g.name("a"), act, shape), (g.name("b"), act, other)],
              (g.name("y"), act, shape))  # fmt: skip
    assert_matches_onnxruntime(g.save(tmp_path / "mul.onnx"), g.random_inputs(rng))


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_qlinear_average_pool_matches_onnxruntime(act, tmp_path) -> None:
    rng = np.random.default_rng(81 if act == "int8" else 82)
    g = Graph()
    for case in range(CASES):
        shape = [1, int(rng.integers(1, 5)), int(rng.integers(2, 9)), int(rng.integers(2, 9))]
        k = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        k = [min(k[0], shape[2]), min(k[1], shape[3])]
        strides = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pads = [int(rng.integers(0, k[0])), int(rng.integers(0, k[1]))] * 2
        x_s, x_z = g.qparams(rng, "xs", act)
        y_s, y_z = g.qparams(rng, "ys", act, float(g.inits[x_s]) * rng.uniform(0.3, 2.0))
        node = helper.make_node(
            "QLinearAveragePool", [g.name("x"), x_s, x_z, y_s, y_z], [g.name("y")],
            domain="com.microsoft", kernel_shape=k, strides=strides, pads=pads,
            count_include_pad=case % 2,
        )  # fmt: skip
        out = [(shape[2] + 2 * pads[0] - k[0]) // strides[0] + 1,
               (shape[3] + 2 * pads[1] - k[1]) // strides[1] + 1]  # fmt: skip
        g.add(node, [(g.name("x"), act, shape)], (g.name("y"), act, [*shape[:2], *out]))
    assert_matches_onnxruntime(g.save(tmp_path / "avgpool.onnx"), g.random_inputs(rng))


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_qlinear_concat_matches_onnxruntime(act, tmp_path) -> None:
    """Inputs with the output's parameters are copied, the others requantized."""
    rng = np.random.default_rng(91 if act == "int8" else 92)
    g = Graph()
    for _ in range(CASES):
        rank = int(rng.integers(2, 5))
        base = [int(rng.integers(1, 5)) for _ in range(rank)]
        axis = int(rng.integers(0, rank))
        y_s, y_z = g.qparams(rng, "ys", act)
        names, inputs = [y_s, y_z], []
        for part in range(int(rng.integers(2, 4))):
            shape = list(base)
            shape[axis] = int(rng.integers(1, 4))
            if part == 0:
                s, z = y_s, y_z
            else:
                s, z = g.qparams(rng, f"s{part}_", act)
            x = g.name(f"x{part}_")
            names += [x, s, z]
            inputs.append((x, act, shape))
        out = list(base)
        out[axis] = sum(shape[axis] for _, _, shape in inputs)
        node = helper.make_node(
            "QLinearConcat", names, [g.name("y")], domain="com.microsoft", axis=axis
        )
        g.add(node, inputs, (g.name("y"), act, out))
    assert_matches_onnxruntime(g.save(tmp_path / "concat.onnx"), g.random_inputs(rng))


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_qlinear_sigmoid_leaky_relu_and_softmax_match_onnxruntime(act, tmp_path) -> None:
    rng = np.random.default_rng(101 if act == "int8" else 102)
    g = Graph()
    for case in range(CASES):
        shape = [int(rng.integers(1, 4)), int(rng.integers(1, 40))]
        x_s, x_z = g.qparams(rng, "xs", act, float(rng.uniform(0.01, 0.2)))
        op = ("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "QLinearSoftmax")[case % 4]
        attrs = {}
        if op == "QLinearSoftmax":
            y_scale = 1.0 / 256.0 if rng.random() < 0.5 else float(rng.uniform(0.002, 0.01))
            attrs = {"opset": 13, "axis": -1}
        elif op == "QLinearSigmoid":
            y_scale = 1.0 / 256.0
        else:
            y_scale = float(g.inits[x_s]) * rng.uniform(0.5, 2.0)
            attrs = {"alpha": float(rng.uniform(0.01, 0.3))}
        y_s, y_z = g.qparams(rng, "ys", act, y_scale)
        node = helper.make_node(
            op, [g.name("x"), x_s, x_z, y_s, y_z], [g.name("y")], domain="com.microsoft",
            **attrs,
        )  # fmt: skip
        g.add(node, [(g.name("x"), act, shape)], (g.name("y"), act, shape))
    assert_matches_onnxruntime(g.save(tmp_path / "lut.onnx"), g.random_inputs(rng))


def test_data_movement_on_integer_tensors_matches_onnxruntime(tmp_path) -> None:
    """Transpose, Reshape and Flatten move QOperator int8/uint8 tensors as they are."""
    rng = np.random.default_rng(111)
    g = Graph()
    for case in range(CASES):
        act = ("int8", "uint8")[case % 2]
        shape = [int(rng.integers(1, 4)) for _ in range(4)]
        if case % 3 == 0:
            perm = [int(p) for p in rng.permutation(4)]
            node = helper.make_node("Transpose", [g.name("x")], [g.name("y")], perm=perm)
            out = [shape[p] for p in perm]
        elif case % 3 == 1:
            node = helper.make_node(
                "Reshape", [g.name("x"), g.const("shape", np.array([0, -1], np.int64))],
                [g.name("y")],
            )  # fmt: skip
            out = [shape[0], int(np.prod(shape[1:]))]
        else:
            node = helper.make_node("Flatten", [g.name("x")], [g.name("y")], axis=2)
            out = [shape[0] * shape[1], shape[2] * shape[3]]
        g.add(node, [(g.name("x"), act, shape)], (g.name("y"), act, out))
    assert_matches_onnxruntime(g.save(tmp_path / "move.onnx"), g.random_inputs(rng))


# Scales for which onnxruntime's fixed part of QLinearAdd is the fused multiply-add of its
# AVX2 build, not two rounded products (one pair of inputs out of 65536 tells them apart).
_FMA_SENSITIVE_ADD = (0.062241777777671814, 19, 0.0801384374499321, 3, 0.12537355720996857, -18)


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_qlinear_add_over_every_pair_of_values(act, tmp_path) -> None:
    rng = np.random.default_rng(121 if act == "int8" else 122)
    info = np.iinfo(act)
    values = np.arange(info.min, info.max + 1, dtype=act)
    g = Graph()
    params = [_FMA_SENSITIVE_ADD] if act == "int8" else []
    while len(params) < 3:
        a_s, b_s = rng.uniform(0.005, 0.1, 2)
        zps = rng.integers(-20, 21, 3) if act == "int8" else rng.integers(100, 156, 3)
        params.append((a_s, int(zps[0]), b_s, int(zps[1]), a_s * rng.uniform(0.5, 3), int(zps[2])))
    for a_s, a_z, b_s, b_z, y_s, y_z in params:
        names = [g.const(n, np.float32(v)) if n.endswith("s") else g.const(n, np.array(v, act))
                 for n, v in (("as", a_s), ("az", a_z), ("bs", b_s), ("bz", b_z), ("ys", y_s),
                              ("yz", y_z))]  # fmt: skip
        node = helper.make_node(
            "QLinearAdd", [g.name("a"), *names[:2], g.name("b"), *names[2:]], [g.name("y")],
            domain="com.microsoft",
        )  # fmt: skip
        g.add(node, [(g.name("a"), act, [65536]), (g.name("b"), act, [65536])],
              (g.name("y"), act, [65536]))  # fmt: skip
    inputs = [[np.repeat(values, 256), np.tile(values, 256)] * len(params)]
    assert_matches_onnxruntime(g.save(tmp_path / "add_all.onnx"), inputs)


@pytest.mark.parametrize(
    ("lhs", "rhs"),
    [((256, 256), (256, 1)), ((256, 1), (256, 256)), ((1,), (256, 256)), ((1, 256), (256, 1))],
    ids=["second-scalar-per-row", "first-scalar-per-row", "first-scalar", "outer-product"],
)
def test_broadcast_qlinear_add_over_every_pair_of_values(lhs, rhs, tmp_path) -> None:
    """onnxruntime swaps the operands when the first is the scalar of its spans, which
    changes the order of the two fused multiply-adds (exhaustive over all value pairs)."""
    act = "int8"
    a_s, a_z, b_s, b_z, y_s, y_z = _FMA_SENSITIVE_ADD
    names = {"as": np.float32(a_s), "az": np.array(a_z, act), "bs": np.float32(b_s),
             "bz": np.array(b_z, act), "ys": np.float32(y_s), "yz": np.array(y_z, act)}  # fmt: skip
    node = helper.make_node(
        "QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"],
        domain="com.microsoft",
    )  # fmt: skip
    out = list(np.broadcast_shapes(lhs, rhs))
    path = make_model([node], [("a", act, list(lhs)), ("b", act, list(rhs))],
                      [("y", act, out)], names, tmp_path / "add.onnx")  # fmt: skip
    values = np.arange(-128, 128, dtype=np.int8)

    def fill(shape, k):
        if int(np.prod(shape)) == 1:
            return np.array([values[37 * k % 256]], np.int8).reshape(shape)
        # Along the longer axis every value once; a 256 x 256 tensor holds every value in
        # each row, so with the other operand's one value per row every pair occurs.
        return np.broadcast_to(values.reshape([-1 if d == 256 else 1 for d in shape][-2:])
                               if shape[-1] == 1 else values, shape).copy()  # fmt: skip

    assert_matches_onnxruntime(path, [[fill(lhs, k), fill(rhs, k)] for k in range(4)])


@pytest.mark.parametrize("act", ["int8", "uint8"])
def test_qdq_relu_and_clip_tables_match_onnxruntime(act, tmp_path) -> None:
    """DequantizeLinear -> Relu | Clip -> QuantizeLinear with other parameters, on every
    input byte: onnxruntime drops the Relu or runs it in float, the result is a table."""
    rng = np.random.default_rng(131 if act == "int8" else 132)
    g = Graph()
    firsts = []
    for case in range(6):
        s1, z1 = g.qparams(rng, "s1_", act)
        firsts.append((s1, z1))
        s2, z2 = g.qparams(rng, "s2_", act, float(g.inits[s1]) * rng.uniform(0.3, 3.0))
        q, dq, mid = g.name("q"), g.name("dq"), g.name("mid")
        g.nodes += [helper.make_node("QuantizeLinear", [g.name("x"), s1, z1], [q]),
                    helper.make_node("DequantizeLinear", [q, s1, z1], [dq])]  # fmt: skip
        if case % 2 == 0:
            g.nodes.append(helper.make_node("Relu", [dq], [mid]))
        else:
            lo, hi = g.const("lo", np.float32(-0.3)), g.const("hi", np.float32(0.8))
            g.nodes.append(helper.make_node("Clip", [dq, lo, hi], [mid]))
        q2 = g.name("q2")
        g.nodes.append(helper.make_node("QuantizeLinear", [mid, s2, z2], [q2]))
        node = helper.make_node("DequantizeLinear", [q2, s2, z2], [g.name("y")])
        g.add(node, [(g.name("x"), "float32", [256])], (g.name("y"), "float32", [256]))
    info = np.iinfo(act)
    batch = []
    for s1, z1 in firsts:
        scale, zp = float(g.inits[s1]), int(g.inits[z1])
        values = np.arange(info.min, info.max + 1, dtype=np.float32)
        batch.append(((values - zp) * np.float32(scale)).astype(np.float32))
    assert_matches_onnxruntime(g.save(tmp_path / "tables.onnx"), [batch])
