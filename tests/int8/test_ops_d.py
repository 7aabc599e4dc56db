"""Comparisons, logical operators, SELECT_V2 and REDUCE_MIN (issue 13, group D),
bit-exact with LiteRT.

Each test builds one model holding several random cases (shapes and broadcasting, zero
points at the extremes, scales that make distinct stored values compare equal after
TFLite's scaling), so one compile covers them all, and compares every output with LiteRT's
reference kernels (``BUILTIN_REF``) on random inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

from aot.errors import UnsupportedError
from aot.frontend.tflite_int8 import import_tflite_int8
from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.int8.harness import assert_bit_exact, random_input

pytestmark = pytest.mark.unit

COMPARISONS = ["EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL"]

INPUTS = 3  # random input sets per model
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


def _q(rng: np.random.Generator, lo: float = 1e-3, hi: float = 0.99) -> dict:
    scale = float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))
    return {"scale": scale, "zero_point": _zp(rng)}


class _Model:
    """A builder that records its inputs' shapes and dtypes, to make random inputs."""

    def __init__(self) -> None:
        self.b = TFLiteModelBuilder()
        self.inputs: list[tuple[tuple[int, ...], str]] = []

    def input(self, name: str, shape, dtype: str = "int8", **q) -> int:
        self.inputs.append((tuple(shape), dtype))
        return self.b.add_input(name, shape, dtype, **q)

    def random(self, rng: np.random.Generator) -> list[np.ndarray]:
        return [
            rng.random(s) < 0.5 if d == "bool" else random_input(rng, s, d) for s, d in self.inputs
        ]

    def check(self, rng: np.random.Generator) -> None:
        assert_bit_exact(self.b.build(), [self.random(rng) for _ in range(INPUTS)])


@pytest.mark.parametrize("op", COMPARISONS)
def test_int8_comparison(op: str) -> None:
    rng = np.random.default_rng(5000 + COMPARISONS.index(op))
    m = _Model()
    for k, (a_shape, b_shape) in enumerate(BROADCASTS):
        qa = _q(rng)
        # Case 0: one quantization for both (the scaling can still merge stored values:
        # a scale below 1/256 maps neighbours to one value); case 1: tiny scales.
        qb = qa if k == 0 else _q(rng, 1e-4, 4e-3) if k == 1 else _q(rng)
        if k == 1:
            qa = _q(rng, 1e-4, 4e-3)
        a, c = m.input(f"a{k}", a_shape, **qa), m.input(f"b{k}", b_shape, **qb)
        y = m.b.add_tensor(f"y{k}", tuple(np.broadcast_shapes(a_shape, b_shape)), "bool")
        m.b.add_operator(op, inputs=[a, c], outputs=[y])
        m.b.mark_output(y)
    m.check(rng)


def test_int32_comparisons() -> None:
    rng = np.random.default_rng(5100)
    m = _Model()
    for k, op in enumerate(COMPARISONS):
        a_shape, b_shape = BROADCASTS[k]
        a, c = m.input(f"a{k}", a_shape, "int32"), m.input(f"b{k}", b_shape, "int32")
        y = m.b.add_tensor(f"y{k}", tuple(np.broadcast_shapes(a_shape, b_shape)), "bool")
        m.b.add_operator(op, inputs=[a, c], outputs=[y])
        m.b.mark_output(y)
    # Small values, so that equal pairs occur.
    sets = [[(x % 3).astype(np.int32) for x in m.random(rng)] for _ in range(INPUTS)]
    assert_bit_exact(m.b.build(), sets)


def test_logical_operators() -> None:
    rng = np.random.default_rng(5200)
    m = _Model()
    for k, (a_shape, b_shape) in enumerate(BROADCASTS):
        a, c = m.input(f"a{k}", a_shape, "bool"), m.input(f"b{k}", b_shape, "bool")
        out_shape = tuple(np.broadcast_shapes(a_shape, b_shape))
        y = m.b.add_tensor(f"y{k}", out_shape, "bool")
        m.b.add_operator("LOGICAL_AND" if k % 2 else "LOGICAL_OR", inputs=[a, c], outputs=[y])
        z = m.b.add_tensor(f"z{k}", out_shape, "bool")
        m.b.add_operator("LOGICAL_NOT", inputs=[y], outputs=[z])
        m.b.mark_output(y)
        m.b.mark_output(z)
    m.check(rng)


def test_select_v2() -> None:
    rng = np.random.default_rng(5300)
    m = _Model()
    shapes = [
        ((1, 5, 4, 3), (1, 5, 4, 3), (1, 5, 4, 3)),
        ((1, 1, 1, 3), (1, 5, 4, 3), (1,)),
        ((2, 1, 6), (1, 4, 1), (2, 4, 6)),
        ((1,), (3, 4), (4,)),
        ((2, 1, 3, 1, 2), (1, 2, 1, 4, 1), (2, 1, 1, 1, 2)),
    ]
    for k, (c_shape, x_shape, y_shape) in enumerate(shapes):
        dtype = "int32" if k == 3 else "int8"
        q = {} if dtype == "int32" else _q(rng)
        cond = m.input(f"c{k}", c_shape, "bool")
        x, y = m.input(f"x{k}", x_shape, dtype, **q), m.input(f"y{k}", y_shape, dtype, **q)
        out_shape = tuple(np.broadcast_shapes(c_shape, x_shape, y_shape))
        out = m.b.add_tensor(f"out{k}", out_shape, dtype, **q)
        m.b.add_operator("SELECT_V2", inputs=[cond, x, y], outputs=[out])
        m.b.mark_output(out)
    m.check(rng)


def test_compare_then_select() -> None:
    """A bool tensor between operators: GREATER feeds SELECT_V2 (a ReLU written out)."""
    rng = np.random.default_rng(5400)
    m = _Model()
    q = _q(rng)
    x = m.input("x", (1, 6, 6, 4), **q)
    zero = m.b.add_constant("zero", np.array([q["zero_point"]], dtype=np.int8), **q)
    positive = m.b.add_tensor("positive", (1, 6, 6, 4), "bool")
    m.b.add_operator("GREATER", inputs=[x, zero], outputs=[positive])
    y = m.b.add_tensor("y", (1, 6, 6, 4), "int8", **q)
    m.b.add_operator("SELECT_V2", inputs=[positive, x, zero], outputs=[y])
    m.b.mark_output(y)
    m.check(rng)


def test_reduce_min() -> None:
    rng = np.random.default_rng(5500)
    m = _Model()
    cases = [
        ((1, 4, 5, 3), [1, 2], True),
        ((1, 4, 5, 3), [-1], False),
        ((6, 7), [0], True),
        ((2, 3, 4), [0, 1, 2], False),
        ((3, 1, 5), [1], False),
    ]
    for k, (shape, axes, keep) in enumerate(cases):
        q = _q(rng)
        x = m.input(f"x{k}", shape, **q)
        norm = sorted(a % len(shape) for a in axes)
        out_shape = tuple(
            1 if i in norm else d for i, d in enumerate(shape) if keep or i not in norm
        )
        ax = m.b.add_constant(f"axes{k}", np.array(axes, dtype=np.int32))
        y = m.b.add_tensor(f"y{k}", out_shape, "int8", **q)
        m.b.add_operator("REDUCE_MIN", inputs=[x, ax], outputs=[y], options={"keep_dims": keep})
        m.b.mark_output(y)
    m.check(rng)


def _ints(b: TFLiteModelBuilder, name: str, values, dtype=np.int32) -> int:
    return b.add_constant(name, np.array(values, dtype=dtype))


def _copies(op: str, seed: int, cases) -> None:
    """``cases``: (input shape, output shape, constant inputs as lists, options)."""
    rng = np.random.default_rng(seed)
    m = _Model()
    for k, (in_shape, out_shape, consts, options) in enumerate(cases):
        q = _q(rng)
        x = m.input(f"x{k}", in_shape, **q)
        extra = [_ints(m.b, f"c{k}_{i}", c) for i, c in enumerate(consts)]
        y = m.b.add_tensor(f"y{k}", out_shape, "int8", **q)
        # LiteRT registers BROADCAST_TO from version 2 (what the converter writes).
        version = 2 if op == "BROADCAST_TO" else 1
        m.b.add_operator(op, inputs=[x, *extra], outputs=[y], options=options, version=version)
        m.b.mark_output(y)
    m.check(rng)


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad(mode: str) -> None:
    most = 0 if mode == "SYMMETRIC" else 1  # REFLECT leaves the edge out: one value less
    cases = [
        ((1, 4, 5, 3), (1, 4 + 3 - most + 1, 5 + 2 * (5 - most), 3),
         [[[0, 0], [3 - most, 1], [5 - most, 5 - most], [0, 0]]]),
        ((6,), (6 + 2 + 0,), [[[2, 0]]]),
        ((3, 4), (3 + 2 * (3 - most), 4), [[[3 - most, 3 - most], [0, 0]]]),
        ((2, 3, 2), (2 + 1, 3 + 1 + 2 - most, 2 + 1), [[[1, 0], [1, 2 - most], [0, 1]]]),
    ]  # fmt: skip
    _copies("MIRROR_PAD", 5600 + most, [(*c, {"mode": mode}) for c in cases])


def test_reverse_v2() -> None:
    cases = [
        ((1, 4, 5, 3), (1, 4, 5, 3), [[1]], None),
        ((2, 3, 4), (2, 3, 4), [[-1]], None),
        ((7,), (7,), [[0]], None),
        ((3, 4, 2), (3, 4, 2), [[0, 1]], None),
    ]
    _copies("REVERSE_V2", 5700, cases)


def test_broadcast_to() -> None:
    cases = [
        ((1, 1, 3), (2, 4, 3), [[2, 4, 3]], None),
        ((3,), (2, 2, 3), [[2, 2, 3]], None),
        ((2, 1), (2, 5), [[2, 5]], None),
        ((1, 4, 1, 2), (3, 4, 5, 2), [[3, 4, 5, 2]], None),
    ]
    _copies("BROADCAST_TO", 5800, cases)


def test_space_to_batch_nd() -> None:
    cases = [
        ((1, 4, 4, 3), (4, 2, 2, 3), [[2, 2], [[0, 0], [0, 0]]], None),
        ((2, 5, 3, 2), (12, 3, 2, 2), [[3, 2], [[2, 2], [0, 1]]], None),
        ((1, 5, 4), (2, 3, 4), [[2], [[1, 0]]], None),
        ((1, 2, 2, 1), (4, 2, 2, 1), [[2, 2], [[1, 1], [2, 0]]], None),
    ]
    _copies("SPACE_TO_BATCH_ND", 5900, cases)


def test_batch_to_space_nd() -> None:
    cases = [
        ((4, 2, 2, 3), (1, 4, 4, 3), [[2, 2], [[0, 0], [0, 0]]], None),
        ((12, 3, 2, 2), (2, 5, 3, 2), [[3, 2], [[2, 2], [0, 1]]], None),
        ((2, 3, 4), (1, 5, 4), [[2], [[1, 0]]], None),
        ((8, 1, 3, 2), (4, 1, 5, 2), [[1, 2], [[0, 0], [0, 1]]], None),
    ]
    _copies("BATCH_TO_SPACE_ND", 6000, cases)


def test_gather_nd() -> None:
    rng = np.random.default_rng(6100)
    m = _Model()
    cases = [((4, 5, 3), (6, 2)), ((4, 5, 3), (2, 3, 3)), ((6, 2), (5, 1)), ((3, 4), (2,))]
    for k, (shape, index_shape) in enumerate(cases):
        q = _q(rng)
        x = m.input(f"x{k}", shape, **q)
        depth = index_shape[-1]
        limits = np.array(shape[:depth])
        values = (rng.random(index_shape) * limits).astype(np.int32)
        # Odd cases: constant indices; even: computed ones (random valid sets below).
        indices = _ints(m.b, f"i{k}", values) if k % 2 else m.input(f"i{k}", index_shape, "int32")
        y = m.b.add_tensor(f"y{k}", (*index_shape[:-1], *shape[depth:]), "int8", **q)
        m.b.add_operator("GATHER_ND", inputs=[x, indices], outputs=[y])
        m.b.mark_output(y)
    sets = []
    for _ in range(INPUTS):
        inputs = m.random(rng)
        for k in (0, 2):  # keep computed indices in range (TFLite fails the inference)
            position = [i for i, (s, d) in enumerate(m.inputs) if d == "int32"][k // 2]
            shape = cases[k][0][: cases[k][1][-1]]
            inputs[position] = (rng.random(cases[k][1]) * np.array(shape)).astype(np.int32)
        sets.append(inputs)
    assert_bit_exact(m.b.build(), sets)


def _one_operator(op: str, inputs, out: tuple[tuple[int, ...], str, dict]) -> bytes:
    b = TFLiteModelBuilder()
    ins = [b.add_input(f"in{i}", s, d, **q) for i, (s, d, q) in enumerate(inputs)]
    y = b.add_tensor("y", out[0], out[1], **out[2])
    b.add_operator(op, inputs=ins, outputs=[y])
    b.mark_output(y)
    return b.build()


Q = {"scale": 0.05, "zero_point": 0}


@pytest.mark.parametrize(
    "op, inputs, out, match",
    [
        ("LESS", [((4,), "int8", {"scale": 1.5, "zero_point": 0}), ((4,), "int8", Q)],
         ((4,), "bool", {}), r"scale 1\.5; TFLite's int8 comparison needs a scale in \(0, 1\)"),
        ("EQUAL", [((4,), "int8", Q), ((4,), "int32", {})], ((4,), "bool", {}),
         "input 2 'in1' is int32, expected int8"),
        ("GREATER", [((4,), "int8", Q), ((4,), "int8", Q)], ((4,), "int8", Q),
         "output 'y' is int8, expected bool"),
        ("SELECT_V2", [((4,), "bool", {}), ((4,), "int8", Q),
                       ((4,), "int8", {"scale": 0.1, "zero_point": 0})], ((4,), "int8", Q),
         "input y 'in2' is quantized differently from the output"),
        ("LOGICAL_AND", [((4,), "int8", Q), ((4,), "bool", {})], ((4,), "bool", {}),
         "input 1 'in0' is int8, expected bool"),
    ],
)  # fmt: skip
def test_unsupported_cases_are_one_line_errors(op, inputs, out, match) -> None:
    with pytest.raises(UnsupportedError, match=match) as info:
        import_tflite_int8(_one_operator(op, inputs, out))
    message = str(info.value)
    assert "\n" not in message
    assert f"operator 0 ({op})" in message and "docs/operators.md" in message


@pytest.mark.parametrize(
    "op", ["CEIL", "COS", "FLOOR", "L2_POOL_2D", "LOG", "ROUND", "SIN", "SQUARE"]
)
def test_float_only_operators_name_the_float_frontend(op: str) -> None:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4, 4, 1), "int8", **Q)
    y = b.add_tensor("y", (1, 2, 2, 1) if op == "L2_POOL_2D" else (1, 4, 4, 1), "int8", **Q)
    options = {"filter_width": 2, "filter_height": 2, "stride_w": 2, "stride_h": 2}
    b.add_operator(op, [x], [y], options if op == "L2_POOL_2D" else None)
    b.mark_output(y)
    with pytest.raises(UnsupportedError) as info:
        import_tflite_int8(b.build())
    message = str(info.value)
    assert "\n" not in message and f"operator 0 ({op}): a float operator" in message
    assert "--frontend relax-tflite" in message and "docs/operators.md" in message


def test_operator_page_lists_float_only_apart_from_not_yet() -> None:
    from aot.frontend import operators

    table = operators.int8_table()
    assert "FLOOR" in table.float_only
    assert not set(table.float_only) & set(table.not_yet_supported)
    page = operators.render_markdown([table])
    float_section = page.split("### Float only (use the float frontend)")[1].split("\n## ")[0]
    assert all(f"`{op}`" in float_section for op in table.float_only)
    assert not any(f"`{op}`" in float_section for op in table.not_yet_supported)
