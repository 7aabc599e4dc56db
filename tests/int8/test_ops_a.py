"""Elementwise, selection and data-movement int8 operators, bit-exact with LiteRT.

Each test builds one model holding several independent random cases of an operator
(shapes, zero points at the extremes, scales, options), so one compile covers them all,
and compares every output with LiteRT's reference kernels (``BUILTIN_REF``) on random
inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.harness import assert_bit_exact, random_input

pytestmark = pytest.mark.unit

CASES = 6  # independent cases per model
INPUTS = 3  # random input sets per model
ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
BROADCASTS = [
    ((1, 5, 4, 3), (1, 5, 4, 3)),
    ((1, 5, 4, 3), (1, 1, 1, 3)),
    ((2, 1, 6), (1, 4, 1)),
    ((7,), (1,)),
    ((3, 4), (4,)),
    ((1, 1, 1, 1), (2, 3, 1, 2)),
]


def _zp(rng: np.random.Generator) -> int:
    return int(rng.choice([-128, 127, 0, int(rng.integers(-128, 128))]))


def _scale(rng: np.random.Generator, lo: float = 1e-3, hi: float = 0.5) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def _q(rng: np.random.Generator, lo: float = 1e-3, hi: float = 0.5) -> dict:
    return {"scale": _scale(rng, lo, hi), "zero_point": _zp(rng)}


class _Model:
    """A builder that records its inputs' shapes and dtypes, to make random inputs."""

    def __init__(self) -> None:
        self.b = TFLiteModelBuilder()
        self.inputs: list[tuple[tuple[int, ...], str]] = []

    def input(self, name: str, shape, dtype: str = "int8", **q) -> int:
        self.inputs.append((tuple(shape), dtype))
        return self.b.add_input(name, shape, dtype, **q)

    def check(self, rng: np.random.Generator, extra: list[list[np.ndarray]] = ()) -> None:
        sets = [[random_input(rng, s, d) for s, d in self.inputs] for _ in range(INPUTS)]
        assert_bit_exact(self.b.build(), [*sets, *extra])


def _binary_model(op: str, seed: int, same_quant: bool = False, options=None) -> None:
    rng = np.random.default_rng(seed)
    m = _Model()
    for k, (a_shape, b_shape) in enumerate(BROADCASTS[:CASES]):
        if rng.random() < 0.5:
            a_shape, b_shape = b_shape, a_shape
        out_shape = tuple(np.broadcast_shapes(a_shape, b_shape))
        qa = _q(rng, 0.005, 1.0)
        qb = qa if same_quant else _q(rng, 0.005, 1.0)
        qy = qa if same_quant else _q(rng, 0.005, 1.0)
        a = m.input(f"a{k}", a_shape, **qa)
        c = m.input(f"b{k}", b_shape, **qb)
        y = m.b.add_tensor(f"y{k}", out_shape, "int8", **qy)
        opts = options(k) if options else None
        m.b.add_operator(op, inputs=[a, c], outputs=[y], options=opts)
        m.b.mark_output(y)
    m.check(rng)


@pytest.mark.parametrize("seed", range(3))
def test_sub(seed: int) -> None:
    _binary_model(
        "SUB", 2000 + seed, options=lambda k: {"fused_activation_function": ACTIVATIONS[k % 4]}
    )


@pytest.mark.parametrize("op", ["MAXIMUM", "MINIMUM"])
def test_maximum_minimum(op: str) -> None:
    _binary_model(op, 2100 + len(op), same_quant=True)


@pytest.mark.parametrize("seed", range(2))
def test_squared_difference(seed: int) -> None:
    # Output scales large enough that TFLite's output multiplier stays below one.
    rng = np.random.default_rng(2200 + seed)
    m = _Model()
    for k, (a_shape, b_shape) in enumerate(BROADCASTS[:CASES]):
        out_shape = tuple(np.broadcast_shapes(a_shape, b_shape))
        qa, qb = _q(rng, 0.01, 0.2), _q(rng, 0.01, 0.2)
        biggest = max(qa["scale"], qb["scale"])
        qy = {"scale": float(np.float32(biggest**2 * rng.uniform(2, 300))), "zero_point": _zp(rng)}
        a, c = m.input(f"a{k}", a_shape, **qa), m.input(f"b{k}", b_shape, **qb)
        y = m.b.add_tensor(f"y{k}", out_shape, "int8", **qy)
        m.b.add_operator("SQUARED_DIFFERENCE", inputs=[a, c], outputs=[y])
        m.b.mark_output(y)
    m.check(rng)


def _every_value(shape=(1, 16, 16)) -> np.ndarray:
    return np.arange(-128, 128, dtype=np.int8).reshape(shape)


def _unary_model(op: str, seed: int, options=None, same_quant: bool = False) -> None:
    rng = np.random.default_rng(seed)
    m = _Model()
    for k in range(CASES):
        qx = _q(rng, 0.01, 0.2)
        qy = qx if same_quant or k == 0 else _q(rng, 0.01, 0.2)
        x = m.input(f"x{k}", (1, 16, 16), **qx)
        y = m.b.add_tensor(f"y{k}", (1, 16, 16), "int8", **qy)
        m.b.add_operator(op, inputs=[x], outputs=[y], options=options(k) if options else None)
        m.b.mark_output(y)
    m.check(rng, extra=[[_every_value()] * CASES])


def test_leaky_relu() -> None:
    alphas = [0.2, 0.01, 0.0, 0.5, 1.0, 0.3333]
    _unary_model("LEAKY_RELU", 2300, options=lambda k: {"alpha": alphas[k]})


def test_abs() -> None:
    _unary_model("ABS", 2400)  # case 0 keeps the scale (no rescale), the others rescale


def test_neg() -> None:
    _unary_model("NEG", 2500, same_quant=True)


def test_prelu() -> None:
    rng = np.random.default_rng(2600)
    m = _Model()
    for k, shape in enumerate([(1, 4, 5, 3), (1, 2, 2, 6), (2, 7), (1, 3, 3, 1)]):
        qx, qa, qy = _q(rng, 0.01, 0.2), _q(rng, 0.001, 0.05), _q(rng, 0.01, 0.2)
        alpha_shape = (shape[-1],) if k != 2 else shape
        x = m.input(f"x{k}", shape, **qx)
        alpha = m.b.add_constant(
            f"alpha{k}", rng.integers(-128, 128, alpha_shape, dtype=np.int8), **qa
        )
        y = m.b.add_tensor(f"y{k}", shape, "int8", **qy)
        m.b.add_operator("PRELU", inputs=[x, alpha], outputs=[y])
        m.b.mark_output(y)
    m.check(rng)


def test_concatenation_requantizes_inputs() -> None:
    """Inputs quantized unlike the output: aot's CONCATENATION must equal LiteRT running
    QUANTIZE (int8 -> int8) on each such input, then a same-scale CONCATENATION (LiteRT's
    own int8 CONCATENATION refuses differing scales)."""
    rng = np.random.default_rng(2700)
    shapes = [((1, 3, 4, 2), (1, 3, 4, 5), (1, 3, 4, 1)), ((2, 3), (2, 3), (2, 3))]
    axes = [3, 0]
    ours, reference = _Model(), _Model()
    for k, (group, axis) in enumerate(zip(shapes, axes)):
        qy = _q(rng, 0.01, 0.2)
        qs = [qy if i == 1 else _q(rng, 0.005, 0.5) for i in range(len(group))]
        out_shape = list(group[0])
        out_shape[axis] = sum(s[axis] for s in group)
        for m, requantize in ((ours, False), (reference, True)):
            parts = []
            for i, (shape, q) in enumerate(zip(group, qs)):
                t = m.input(f"x{k}_{i}", shape, **q)
                if requantize and q is not qy:
                    r = m.b.add_tensor(f"r{k}_{i}", shape, "int8", **qy)
                    m.b.add_operator("QUANTIZE", inputs=[t], outputs=[r])
                    t = r
                parts.append(t)
            y = m.b.add_tensor(f"y{k}", out_shape, "int8", **qy)
            m.b.add_operator("CONCATENATION", inputs=parts, outputs=[y], options={"axis": axis})
            m.b.mark_output(y)
    from tests.int8.harness import compile_vm, run_tflite_reference, run_vm

    _, vm = compile_vm(ours.b.build())
    model = reference.b.build()
    for _ in range(INPUTS):
        inputs = [random_input(rng, s, d) for s, d in ours.inputs]
        for got, want in zip(run_vm(vm, inputs), run_tflite_reference(model, inputs)):
            np.testing.assert_array_equal(got, want)


def _movement(op: str, cases, seed: int) -> None:
    """``cases`` yields (input shapes, output shapes, constant inputs builder, options)."""
    rng = np.random.default_rng(seed)
    m = _Model()
    for k, (in_shapes, out_shapes, consts, options) in enumerate(cases):
        q = _q(rng)
        ins = [m.input(f"x{k}_{i}", s, **q) for i, s in enumerate(in_shapes)]
        ins = consts(m.b, k, ins)
        outs = []
        for i, shape in enumerate(out_shapes):
            outs.append(m.b.add_tensor(f"y{k}_{i}", shape, "int8", **q))
        m.b.add_operator(op, inputs=ins, outputs=outs, options=options)
        for o in outs:
            m.b.mark_output(o)
    m.check(rng)


def _const(name: str, values, dtype=np.int32):
    return lambda b, k, ins: [*ins, b.add_constant(f"{name}{k}", np.array(values, dtype=dtype))]


def _begin_size(begin, size, dtype=np.int32):
    return lambda b, k, ins: [*ins, *_pair(b, k, begin, size, dtype)]


def test_slice() -> None:
    cases = [
        ([(1, 5, 6, 3)], [(1, 2, 4, 3)], _begin_size([0, 1, 2, 0], [1, 2, -1, 3]), None),
        ([(4, 7)], [(3, 1)], _begin_size([1, 6], [-1, 1], np.int64), None),
        ([(2, 3, 4)], [(2, 3, 4)], _begin_size([0, 0, 0], [2, 3, 4]), None),
    ]
    _movement("SLICE", cases, 2800)


def _pair(b, k, begin, size, dtype=np.int32):
    return [
        b.add_constant(f"begin{k}", np.array(begin, dtype=dtype)),
        b.add_constant(f"size{k}", np.array(size, dtype=dtype)),
    ]


def test_split_and_split_v() -> None:
    rng = np.random.default_rng(2900)
    m = _Model()
    q = _q(rng)
    x = m.input("x", (2, 6, 4), **q)
    axis = m.b.add_constant("axis", np.array([1], dtype=np.int32))
    parts = [m.b.add_tensor(f"s{i}", (2, 2, 4), "int8", **q) for i in range(3)]
    m.b.add_operator("SPLIT", inputs=[axis, x], outputs=parts, options={"num_splits": 3})
    sizes = m.b.add_constant("sizes", np.array([1, -1, 2], dtype=np.int32))
    axis_v = m.b.add_constant("axis_v", np.array([-1], dtype=np.int32))
    parts_v = [m.b.add_tensor(f"v{i}", (2, 6, n), "int8", **q) for i, n in enumerate((1, 1, 2))]
    m.b.add_operator(
        "SPLIT_V", inputs=[x, sizes, axis_v], outputs=parts_v, options={"num_splits": 3}
    )
    for t in (*parts, *parts_v):
        m.b.mark_output(t)
    m.check(rng)


def test_pack_unpack() -> None:
    rng = np.random.default_rng(3000)
    m = _Model()
    q = _q(rng)
    xs = [m.input(f"x{i}", (3, 4), **q) for i in range(3)]
    packed = m.b.add_tensor("packed", (3, 3, 4), "int8", **q)
    m.b.add_operator("PACK", inputs=xs, outputs=[packed], options={"axis": 1, "values_count": 3})
    pieces = [m.b.add_tensor(f"u{i}", (3, 3), "int8", **q) for i in range(4)]
    m.b.add_operator("UNPACK", inputs=[packed], outputs=pieces, options={"axis": -1, "num": 4})
    first = [m.b.add_tensor(f"f{i}", (3, 4), "int8", **q) for i in range(3)]
    m.b.add_operator("UNPACK", inputs=[packed], outputs=first, options={"axis": 0, "num": 3})
    for t in (packed, *pieces, *first):
        m.b.mark_output(t)
    m.check(rng)


def test_gather() -> None:
    rng = np.random.default_rng(3100)
    m = _Model()
    q = _q(rng)
    table = m.input("table", (10, 4), **q)
    ids = m.input("ids", (1, 5), "int32")
    out = m.b.add_tensor("rows", (1, 5, 4), "int8", **q)
    m.b.add_operator("GATHER", inputs=[table, ids], outputs=[out], options={"axis": 0})
    x = m.input("x", (2, 6, 3), **q)
    const_ids = m.b.add_constant("cids", np.array([5, 0, 0, 3], dtype=np.int64))
    out2 = m.b.add_tensor("cols", (2, 4, 3), "int8", **q)
    m.b.add_operator("GATHER", inputs=[x, const_ids], outputs=[out2], options={"axis": 1})
    scalar = m.b.add_constant("one", np.array(2, dtype=np.int32))
    out3 = m.b.add_tensor("last", (2, 6), "int8", **q)
    m.b.add_operator("GATHER", inputs=[x, scalar], outputs=[out3], options={"axis": -1})
    for t in (out, out2, out3):
        m.b.mark_output(t)
    sets = []
    for _ in range(INPUTS):
        sets.append(
            [
                random_input(rng, (10, 4)),
                rng.integers(0, 10, (1, 5), dtype=np.int32),
                random_input(rng, (2, 6, 3)),
            ]
        )
    assert_bit_exact(m.b.build(), sets)


def test_depth_to_space_space_to_depth() -> None:
    cases = [
        ([(1, 2, 3, 8)], [(1, 4, 6, 2)], lambda b, k, i: i, {"block_size": 2}),
        ([(2, 1, 2, 9)], [(2, 3, 6, 1)], lambda b, k, i: i, {"block_size": 3}),
    ]
    _movement("DEPTH_TO_SPACE", cases, 3200)
    cases = [
        ([(1, 4, 6, 2)], [(1, 2, 3, 8)], lambda b, k, i: i, {"block_size": 2}),
        ([(2, 3, 6, 1)], [(2, 1, 2, 9)], lambda b, k, i: i, {"block_size": 3}),
    ]
    _movement("SPACE_TO_DEPTH", cases, 3300)


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
def test_arg_max_min(op: str) -> None:
    rng = np.random.default_rng(3400 + len(op))
    m = _Model()
    shapes = [((1, 10), 1, "INT32"), ((2, 5, 3), 1, "INT64"), ((2, 5, 3), -1, "INT32"),
              ((4, 3), 0, "INT64")]  # fmt: skip
    for k, (shape, axis, out_type) in enumerate(shapes):
        x = m.input(f"x{k}", shape, **_q(rng))
        ax = m.b.add_constant(f"axis{k}", np.array([axis], dtype=np.int32))
        out_shape = tuple(d for i, d in enumerate(shape) if i != axis % len(shape))
        y = m.b.add_tensor(f"y{k}", out_shape, out_type.lower())
        m.b.add_operator(op, inputs=[x, ax], outputs=[y], options={"output_type": out_type})
        m.b.mark_output(y)
    # Few distinct values, so ties (first index wins) are common.
    ties = [rng.integers(-2, 2, s, dtype=np.int8) for s, _ in m.inputs]
    m.check(rng, extra=[ties])


def test_reduce_max() -> None:
    cases = [
        ([(1, 5, 7, 3)], [(1, 1, 1, 3)], _const("axes", [1, 2]), {"keep_dims": True}),
        ([(1, 5, 7, 3)], [(1, 5, 3)], _const("axes", [-2]), {"keep_dims": False}),
        ([(4, 6)], [()], _const("axes", [0, 1]), {"keep_dims": False}),
    ]
    _movement("REDUCE_MAX", cases, 3500)


@pytest.mark.parametrize("op", ["RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"])
def test_resize(op: str) -> None:
    modes = [{}, {"align_corners": True}, {"half_pixel_centers": True}]
    sizes = [((3, 4), (6, 8)), ((5, 7), (3, 4)), ((2, 3), (7, 5)), ((4, 4), (4, 4)),
             ((1, 3), (1, 9)), ((6, 5), (9, 10))]  # fmt: skip
    cases = []
    for (h, w), (oh, ow) in sizes:
        for mode in modes:
            cases.append(([(1, h, w, 2)], [(1, oh, ow, 2)], _const("size", [oh, ow]), dict(mode)))
    _movement(op, cases, 3600 + len(op))


def test_a_still_unsupported_operator_fails_the_build_naming_it(tmp_path, capsys) -> None:
    """Issue 13, acceptance 4: `aot build` stops with one line naming the operator, its
    index and docs/operators.md, and writes nothing."""
    from aot.cli import main

    m = _Model()
    q = {"scale": 0.1, "zero_point": 0}
    x = m.input("x", (1, 4), **q)
    a = m.b.add_tensor("a", (1, 4), "int8", **q)
    m.b.add_operator("SUB", inputs=[x, x], outputs=[a])
    y = m.b.add_tensor("y", (1, 4), "int8", **q)
    m.b.add_operator("GELU", inputs=[a], outputs=[y])
    m.b.mark_output(y)
    model = tmp_path / "div.tflite"
    model.write_bytes(m.b.build())
    out = tmp_path / "out"
    code = main(["build", str(model), "--board", "host", "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code != 0 and not out.exists()
    assert err.startswith("error: ") and "operator 1 (GELU)" in err and "docs/operators.md" in err


def _refused(build, match: str) -> None:
    from aot.errors import UnsupportedError
    from aot.frontend.tflite_int8 import import_tflite_int8

    m = _Model()
    build(m)
    with pytest.raises(UnsupportedError, match=match) as info:
        import_tflite_int8(m.b.build())
    assert "\n" not in str(info.value) and "docs/operators.md" in str(info.value)


def test_unsupported_options_are_one_line_errors() -> None:
    def maximum_mixed_scales(m: _Model) -> None:
        a = m.input("a", (4,), scale=0.1, zero_point=0)
        c = m.input("b", (4,), scale=0.2, zero_point=0)
        y = m.b.add_tensor("y", (4,), "int8", scale=0.1, zero_point=0)
        m.b.add_operator("MAXIMUM", inputs=[a, c], outputs=[y])
        m.b.mark_output(y)

    def resize_both_modes(m: _Model) -> None:
        x = m.input("x", (1, 2, 2, 1), scale=0.1, zero_point=0)
        size = m.b.add_constant("size", np.array([4, 4], dtype=np.int32))
        y = m.b.add_tensor("y", (1, 4, 4, 1), "int8", scale=0.1, zero_point=0)
        opts = {"align_corners": True, "half_pixel_centers": True}
        m.b.add_operator("RESIZE_BILINEAR", inputs=[x, size], outputs=[y], options=opts)
        m.b.mark_output(y)

    def gather_batch_dims(m: _Model) -> None:
        x = m.input("x", (2, 3), scale=0.1, zero_point=0)
        ids = m.b.add_constant("ids", np.array([[0], [1]], dtype=np.int32))
        y = m.b.add_tensor("y", (2, 1), "int8", scale=0.1, zero_point=0)
        opts = {"axis": 1, "batch_dims": 1}
        m.b.add_operator("GATHER", inputs=[x, ids], outputs=[y], options=opts)
        m.b.mark_output(y)

    def squared_difference_small_output(m: _Model) -> None:
        a = m.input("a", (4,), scale=0.5, zero_point=0)
        y = m.b.add_tensor("y", (4,), "int8", scale=1e-6, zero_point=0)
        m.b.add_operator("SQUARED_DIFFERENCE", inputs=[a, a], outputs=[y])
        m.b.mark_output(y)

    _refused(maximum_mixed_scales, r"operator 0 \(MAXIMUM\): input 2 'b' is quantized")
    _refused(resize_both_modes, r"operator 0 \(RESIZE_BILINEAR\): align_corners and half")
    _refused(gather_batch_dims, r"operator 0 \(GATHER\): batch_dims")
    _refused(squared_difference_small_output, r"operator 0 \(SQUARED_DIFFERENCE\): the output")


def test_sum() -> None:
    """LiteRT 2.3.0's reference SUM reads int8 data as uint8 (reduce.cc passes
    ``GetTensorData<uint8_t>`` to QuantizedMeanOrSum), which agrees with the int8 rule
    only for inputs in [0, 127] and results in [0, 127]; the cases keep to that range
    (zero points <= 0, output scales wide enough). MEAN shares the rest of the formula
    and is compared on full-range inputs in test_ops.py."""
    rng = np.random.default_rng(3700)
    m = _Model()
    shapes = [((1, 5, 7, 3), [1, 2], True), ((1, 5, 7, 3), [-1], False), ((4, 6), [0, 1], False)]
    for k, (shape, axes, keep) in enumerate(shapes):
        s_in, zp_in = _scale(rng, 0.01, 0.1), int(rng.integers(-128, 1))
        count = int(np.prod([shape[a] for a in axes]))
        s_out = float(np.float32(s_in * count * (127 - zp_in) / rng.uniform(60, 120)))
        x = m.input(f"x{k}", shape, scale=s_in, zero_point=zp_in)
        ax = m.b.add_constant(f"axes{k}", np.array(axes, dtype=np.int32))
        norm = [a % len(shape) for a in axes]
        out_shape = tuple(
            1 if i in norm else d for i, d in enumerate(shape) if keep or i not in norm
        )
        y = m.b.add_tensor(f"y{k}", out_shape, "int8", scale=s_out, zero_point=0)
        m.b.add_operator("SUM", inputs=[x, ax], outputs=[y], options={"keep_dims": keep})
        m.b.mark_output(y)
    sets = [[rng.integers(0, 128, s, dtype=np.int8) for s, _ in m.inputs] for _ in range(INPUTS)]
    assert_bit_exact(m.b.build(), sets)


def _shape(rng: np.random.Generator, rank: int, hi: int = 5) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(1, hi + 1, size=rank))


@pytest.mark.parametrize("seed", range(2))
def test_random_slices_splits_packs(seed: int) -> None:
    """Random ranks, axes (negative too), begins and sizes in one model per seed."""
    rng = np.random.default_rng(3800 + seed)
    m = _Model()
    outputs = []
    for k in range(CASES):
        rank = int(rng.integers(1, 5))
        shape = _shape(rng, rank)
        q = _q(rng)
        x = m.input(f"x{k}", shape, **q)
        begin = [int(rng.integers(0, d)) for d in shape]
        size = [int(rng.integers(1, d - b + 1)) if rng.random() < 0.7 else -1
                for b, d in zip(begin, shape)]  # fmt: skip
        sliced = tuple(d - b if s == -1 else s for b, s, d in zip(begin, size, shape))
        y = m.b.add_tensor(f"slice{k}", sliced, "int8", **q)
        m.b.add_operator("SLICE", [x, *_pair(m.b, k, begin, size)], [y])
        outputs.append(y)
        axis = int(rng.integers(-rank, rank))
        n = shape[axis]
        cut = []
        if n > 1:
            cut = sorted(int(c) for c in rng.choice(np.arange(1, n), min(n - 1, 2), False))
        parts = [b - a for a, b in zip([0, *cut], [*cut, n])]
        pieces = []
        for i, p in enumerate(parts):
            piece = list(shape)
            piece[axis] = p
            pieces.append(m.b.add_tensor(f"v{k}_{i}", piece, "int8", **q))
        sizes = m.b.add_constant(f"sizes{k}", np.array(parts, dtype=np.int32))
        ax = m.b.add_constant(f"ax{k}", np.array([axis], dtype=np.int32))
        m.b.add_operator("SPLIT_V", [x, sizes, ax], pieces, {"num_splits": len(parts)})
        outputs += pieces
        count = int(rng.integers(1, 4))
        pack_axis = int(rng.integers(-rank - 1, rank + 1))
        packed_shape = list(shape)
        packed_shape.insert(pack_axis % (rank + 1), count)
        packed = m.b.add_tensor(f"pack{k}", packed_shape, "int8", **q)
        m.b.add_operator("PACK", [x] * count, [packed], {"axis": pack_axis, "values_count": count})
        unpacked = [m.b.add_tensor(f"u{k}_{i}", shape, "int8", **q) for i in range(count)]
        m.b.add_operator("UNPACK", [packed], unpacked, {"axis": pack_axis, "num": count})
        outputs += [packed, *unpacked]
    for t in outputs:
        m.b.mark_output(t)
    m.check(rng)


@pytest.mark.parametrize("seed", range(2))
def test_random_gathers_and_reductions(seed: int) -> None:
    rng = np.random.default_rng(3900 + seed)
    m = _Model()
    outputs = []
    for k in range(CASES):
        rank = int(rng.integers(1, 5))
        shape = _shape(rng, rank)
        q = _q(rng)
        x = m.input(f"x{k}", shape, **q)
        axis = int(rng.integers(-rank, rank))
        ids_shape = _shape(rng, int(rng.integers(0, 3)), 3)
        ids = rng.integers(0, shape[axis], ids_shape).astype(rng.choice(["int32", "int64"]))
        a = axis % rank
        gathered = (*shape[:a], *ids_shape, *shape[a + 1 :])
        y = m.b.add_tensor(f"g{k}", gathered, "int8", **q)
        m.b.add_operator("GATHER", [x, m.b.add_constant(f"ids{k}", ids)], [y], {"axis": axis})
        axes = sorted({int(v) for v in rng.choice(np.arange(rank), int(rng.integers(1, rank + 1)))})
        keep = bool(rng.random() < 0.5)
        reduced = tuple(1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)
        r = m.b.add_tensor(f"max{k}", reduced, "int8", **q)
        ax = m.b.add_constant(f"axes{k}", np.array([v - rank for v in axes], dtype=np.int32))
        m.b.add_operator("REDUCE_MAX", [x, ax], [r], {"keep_dims": keep})
        arg_shape = tuple(d for i, d in enumerate(shape) if i != a)
        op = "ARG_MAX" if k % 2 else "ARG_MIN"
        idx = m.b.add_tensor(f"arg{k}", arg_shape, "int32")
        arg_axis = m.b.add_constant(f"argax{k}", np.array([axis], dtype=np.int32))
        m.b.add_operator(op, [x, arg_axis], [idx], {"output_type": "INT32"})
        outputs += [y, r, idx]
    for t in outputs:
        m.b.mark_output(t)
    m.check(rng)


@pytest.mark.parametrize("seed", range(2))
def test_random_depth_space(seed: int) -> None:
    rng = np.random.default_rng(4000 + seed)
    m = _Model()
    for k in range(CASES):
        block = int(rng.integers(1, 4))
        n, h, w, c = int(rng.integers(1, 3)), *(int(v) for v in rng.integers(1, 4, 3))
        q = _q(rng)
        x = m.input(f"x{k}", (n, h * block, w * block, c), **q)
        deep = m.b.add_tensor(f"deep{k}", (n, h, w, c * block * block), "int8", **q)
        m.b.add_operator("SPACE_TO_DEPTH", [x], [deep], {"block_size": block})
        y = m.input(f"y{k}", (n, h, w, c * block * block), **q)
        wide = m.b.add_tensor(f"wide{k}", (n, h * block, w * block, c), "int8", **q)
        m.b.add_operator("DEPTH_TO_SPACE", [y], [wide], {"block_size": block})
        m.b.mark_output(deep)
        m.b.mark_output(wide)
    m.check(rng)


@pytest.mark.parametrize(
    "first", ["aot.frontend.tflite_int8.elementwise", "aot.frontend.tflite_int8.movement"]
)
def test_every_handler_registers_whichever_module_is_imported_first(first: str) -> None:
    import subprocess
    import sys
    from pathlib import Path

    code = (
        f"import {first}\n"
        "from aot.frontend import tflite_int8 as t\n"
        "print(sorted(t._HANDLERS) == list(t.SUPPORTED_OPERATORS), 'SUB' in t.SUPPORTED_OPERATORS,"
        " 'GATHER' in t.SUPPORTED_OPERATORS)\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, timeout=120, check=False,
    )  # fmt: skip
    assert result.stdout.split() == ["True", "True", "True"], result.stderr
