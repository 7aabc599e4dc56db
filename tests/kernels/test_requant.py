"""The kernels' C requantization (aot_kernels_requant.h) against the direct Python
transcriptions of gemmlowp/TFLite in tests/int8, in both rounding modes, on edge and
random accumulators, multipliers and shifts: compiled with the host's gcc (UBSan on) and
called through ctypes."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from aot.kernels import KERNELS_C
from tests.int8.test_fixedpoint import EDGES, ref_mbqm

pytestmark = pytest.mark.toolchain

SHIM = """
#include "aot_kernels_requant.h"
void requant_all(int n, const int32_t* acc, const int32_t* m, const int32_t* s, int32_t rounding,
                 int32_t zp, int32_t lo, int32_t hi, int32_t* scaled, int8_t* out) {
  for (int i = 0; i < n; ++i) {
    scaled[i] = aot_k_mbqm(acc[i], m[i], s[i], rounding);
    out[i] = aot_k_requant(acc[i], m[i], s[i], rounding, zp, lo, hi);
  }
}
void requant_right_all(int n, const int32_t* acc, const int32_t* m, const int32_t* right,
                       int32_t zp, int32_t lo, int32_t hi, int8_t* out) {
  for (int i = 0; i < n; ++i) out[i] = aot_k_requant_right(acc[i], m[i], right[i], zp, lo, hi);
}
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.fail("gcc is needed for the host kernel tests: apt-get install gcc")
    folder = tmp_path_factory.mktemp("requant")
    (folder / "shim.c").write_text(SHIM)
    so = folder / "shim.so"
    subprocess.run(
        [gcc, "-O2", "-shared", "-fPIC", "-fsanitize=undefined", "-fno-sanitize-recover=all",
         "-I", str(KERNELS_C / "include"), str(folder / "shim.c"), "-o", str(so)],
        check=True,
    )  # fmt: skip
    return ctypes.CDLL(str(so))


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(ctypes.c_void_p)


@pytest.mark.parametrize("mode", ["double", "single"])
def test_requantization_matches_tflite(mode: str, library: ctypes.CDLL) -> None:
    rng = np.random.default_rng(7)
    edges = np.array(EDGES, np.int64)
    acc = np.concatenate(
        [edges, rng.integers(-(2**31), 2**31, 300), rng.integers(-70000, 70000, 300)]
    )
    if mode == "single":  # TFLite's single-rounding kernel keeps |acc * m| within int64
        acc = np.clip(acc, -(2**31) + 1, 2**31 - 1)
    acc = acc.astype(np.int32)
    n = acc.size
    m = rng.integers(2**30, 2**31, n).astype(np.int32)
    m[: len(EDGES)] = 2**31 - 1
    # Right shifts to 31 (31 - shift up to 62), left shifts as QuantizeMultiplier gives.
    s = rng.integers(-31, 8 if mode == "double" else 1, n).astype(np.int32)
    if mode == "double":  # x * 2^left wraps: keep the products TFLite's tests make
        s = np.where(np.abs(acc.astype(np.int64)) < 2**20, s, np.minimum(s, 0)).astype(np.int32)
    zp, lo, hi = -7, -128, 100
    scaled = np.zeros(n, np.int32)
    out = np.zeros(n, np.int8)
    library.requant_all(
        n, _ptr(acc), _ptr(m), _ptr(s), int(mode == "single"), zp, lo, hi, _ptr(scaled), _ptr(out)
    )
    want = [ref_mbqm(int(a), int(b), int(c), mode) for a, b, c in zip(acc, m, s)]
    assert scaled.tolist() == want
    assert out.tolist() == [min(max(v + zp, lo), hi) for v in want]


def test_right_shift_form_matches_tflite(library: ctypes.CDLL) -> None:
    """aot_k_requant_right's one-SMLAL form (both roundings merged) on every right shift,
    near-tie accumulators included, with an output range wide enough to show the value."""
    rng = np.random.default_rng(11)
    right = np.repeat(np.arange(0, 32), 60).astype(np.int32)
    n = right.size
    m = rng.integers(2**30, 2**31, n).astype(np.int32)
    m[::7] = 2**31 - 1
    m[::13] = 0
    acc = rng.integers(-(2**31), 2**31, n)
    # Accumulators whose scaled value lands on or next to a rounding tie of the shift.
    tie = (2 * rng.integers(-60, 60, n) + 1) << np.maximum(right - 1, 0)
    near = np.rint(tie.astype(np.float64) * 2**31 / np.maximum(m, 1)) + rng.integers(-2, 3, n)
    acc = np.where(np.arange(n) % 2 == 0, acc, np.clip(near, -(2**31), 2**31 - 1))
    acc[: len(EDGES)] = EDGES
    acc = acc.astype(np.int32)
    zp, lo, hi = 3, -128, 127
    out = np.zeros(n, np.int8)
    library.requant_right_all(n, _ptr(acc), _ptr(m), _ptr(right), zp, lo, hi, _ptr(out))
    want = [
        min(max(ref_mbqm(int(a), int(b), -int(r), "double") + zp, lo), hi)
        for a, b, r in zip(acc, m, right)
    ]
    assert out.tolist() == want
