"""The fixed-point helpers against a direct Python transcription of gemmlowp/TFLite.

The TIR expressions are compiled for LLVM and run on edge values (INT32_MIN, INT32_MAX,
0, +-1, powers of two) plus random ones; the Python side is written from the reference
definitions (nudge, truncating division, mask/threshold), not from our shortcuts.
"""

from __future__ import annotations

import numpy as np
import pytest

from aot.ops import fixedpoint as fp

pytestmark = pytest.mark.unit

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def ref_srdhm(a: int, b: int) -> int:
    if a == b == I32_MIN:
        return I32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    total = ab + nudge
    quotient = abs(total) // (1 << 31)  # C division truncates toward zero
    return quotient if total >= 0 else -quotient


def ref_rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def ref_mbqm(x: int, multiplier: int, shift: int, mode: str) -> int:
    if mode == "single":
        total = 31 - shift
        return (x * multiplier + (1 << (total - 1))) >> total
    left, right = max(shift, 0), max(-shift, 0)
    return ref_rdbpot(ref_srdhm(wrap32(x * (1 << left)), multiplier), right)


EDGES = [I32_MIN, I32_MIN + 1, -(2**30), -65536, -3, -2, -1, 0, 1, 2, 3, 65535, 2**30, I32_MAX]


def _values(seed: int, count: int = 200) -> np.ndarray:
    rng = np.random.default_rng(seed)
    random = rng.integers(I32_MIN, I32_MAX, size=count, dtype=np.int64)
    small = rng.integers(-5000, 5000, size=count, dtype=np.int64)
    return np.concatenate([np.array(EDGES, dtype=np.int64), random, small]).astype(np.int32)


def _run(fn, *arrays: np.ndarray) -> np.ndarray:
    """Compile ``fn(*elements)`` as an elementwise int32 kernel and run it."""
    import tvm
    from tvm import te

    n = arrays[0].size
    placeholders = [te.placeholder((n,), "int32", name=f"in{i}") for i in range(len(arrays))]
    out = te.compute((n,), lambda i: fn(*[p[i] for p in placeholders]), name="out")
    mod = tvm.IRModule({"main": te.create_prim_func([*placeholders, out])})
    lib = tvm.compile(mod, target="llvm")
    result = tvm.runtime.tensor(np.zeros(n, dtype="int32"))
    lib["main"](*[tvm.runtime.tensor(a) for a in arrays], result)
    return result.numpy()


def test_quantize_multiplier_matches_frexp_rounding() -> None:
    assert fp.quantize_multiplier(0.0) == (0, 0)
    assert fp.quantize_multiplier(0.5) == (1 << 30, 0)
    assert fp.quantize_multiplier(1.0) == (1 << 30, 1)
    assert fp.quantize_multiplier(0.75) == (3 << 29, 0)
    assert fp.quantize_multiplier(1e-12) == (0, 0)  # shift < -31: flushed to zero
    # q * 2**31 rounds up to 2**31: TFLite halves it and bumps the shift.
    assert fp.quantize_multiplier(1.0 - 2.0**-40) == (1 << 30, 1)
    # A tie in q * 2**31 rounds away from zero (std::round), not to even.
    assert fp.quantize_multiplier((2**30 + 0.5) / 2**31) == (2**30 + 1, 0)
    with fp.rounding_mode("single"):
        assert fp.quantize_multiplier(2.0**40) == (I32_MAX, 30)
    with fp.rounding_mode("double"):
        assert fp.quantize_multiplier(2.0**40) == (1 << 30, 41)


def test_tflite_round_is_half_away_from_zero() -> None:
    assert [fp.tflite_round(v) for v in (0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994)] == [
        1, 2, 3, -1, -3, 0,
    ]  # fmt: skip


def test_activation_range() -> None:
    assert fp.activation_range("NONE", 0.1, 3) == (-128, 127)
    assert fp.activation_range("RELU", 0.1, -128) == (-128, 127)
    assert fp.activation_range("RELU6", 0.05, -128) == (-128, -8)
    assert fp.activation_range("RELU_N1_TO_1", 0.01, 0) == (-100, 100)


def test_srdhm_constant_and_dynamic() -> None:
    a = _values(1)
    for b in (1073741824, 1518500250, I32_MAX, 12345):
        got = _run(lambda x, b=b: fp.srdhm_expr(x, b), a)
        assert got.tolist() == [ref_srdhm(int(v), b) for v in a]
    b = _values(2)
    b[: len(EDGES)] = EDGES[::-1]
    b[0] = I32_MIN  # INT32_MIN * INT32_MIN saturates: both dynamic operands
    a[0] = I32_MIN
    got = _run(fp.srdhm_expr, a, b)
    assert got.tolist() == [ref_srdhm(int(x), int(y)) for x, y in zip(a, b)]
    assert got[0] == I32_MAX


@pytest.mark.parametrize("exponent", [0, 1, 2, 7, 19, 30, 31])
def test_rounding_divide_by_pot_constant_exponent(exponent: int) -> None:
    a = _values(3 + exponent)
    got = _run(lambda x: fp.rounding_divide_by_pot_expr(x, exponent), a)
    assert got.tolist() == [ref_rdbpot(int(v), exponent) for v in a]


def test_rounding_divide_by_pot_per_channel_exponent() -> None:
    a = _values(4)
    exps = np.resize(np.arange(0, 32, dtype=np.int32), a.size)
    got = _run(fp.rounding_divide_by_pot_expr, a, exps)
    assert got.tolist() == [ref_rdbpot(int(v), int(e)) for v, e in zip(a, exps)]


@pytest.mark.parametrize("mode", ["single", "double"])
def test_multiply_by_quantized_multiplier(mode: str) -> None:
    rng = np.random.default_rng(5)
    x = np.clip(_values(6).astype(np.int64), -(2**24), 2**24).astype(np.int32)
    mult = rng.integers(2**30, 2**31, size=x.size, dtype=np.int64).astype(np.int32)
    shift = rng.integers(-31, 2, size=x.size, dtype=np.int64).astype(np.int32)
    with fp.rounding_mode(mode):
        got = _run(fp.multiply_by_quantized_multiplier_expr, x, mult, shift)
        for s in (-31, -7, 0, 1):
            const = _run(
                lambda v, s=s: fp.multiply_by_quantized_multiplier_expr(v, 1518500250, s), x
            )
            assert const.tolist() == [ref_mbqm(int(v), 1518500250, s, mode) for v in x]
    expected = [ref_mbqm(int(a), int(m), int(s), mode) for a, m, s in zip(x, mult, shift)]
    assert got.tolist() == expected


def test_count_leading_zeros() -> None:
    values = np.array([0, 1, 2, 3, 255, 256, 2**19, 2**30, I32_MAX], dtype=np.int32)
    got = _run(fp.count_leading_zeros_expr, values)
    assert got.tolist() == [32 - int(v).bit_length() for v in values]
