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
from aot.kernels.quant import RECORD_WORDS, RQ_GENERAL, RQ_HIGH, RQ_HIGH_ZP, requant_records
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
/* records: n struct aot_k_rq; full: the SSAT-only clamp of aot_k_rq_out */
void records_all(int n, const int32_t* acc, const struct aot_k_rq* records, int32_t form,
                 int32_t rounding, int32_t zp, int32_t lo, int32_t hi, int32_t full,
                 int32_t* scaled, int8_t* out, int8_t* out_full) {
  for (int i = 0; i < n; ++i) {
    scaled[i] = aot_k_rq_scale(&records[i], acc[i], form, rounding);
    out[i] = aot_k_rq_apply(&records[i], acc[i], form, rounding, zp, lo, hi);
    if (form != AOT_K_RQ_GENERAL) {
      const int32_t offset = form == AOT_K_RQ_HIGH_ZP ? 0 : zp;
      out_full[i] = aot_k_rq_out(scaled[i], offset, lo, hi, full);
    }
  }
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


def _tie_accumulators(rng: np.random.Generator, m: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Accumulators whose product with ``m`` lands on or next to a rounding tie of a total
    shift ``total`` (the product's bit total - 1 set, the ones below it clear)."""
    tie = (2 * rng.integers(-60, 60, m.size) + 1).astype(np.float64) * 2.0 ** (total - 1)
    near = np.rint(tie / np.maximum(m, 1)) + rng.integers(-2, 3, m.size)
    return np.clip(near, -(2**31), 2**31 - 1).astype(np.int64)


def _run_records(
    library: ctypes.CDLL, acc: np.ndarray, records: np.ndarray, form: int, mode: str,
    zp: int, lo: int, hi: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    n = acc.size
    scaled, out, out_full = np.zeros(n, np.int32), np.zeros(n, np.int8), np.zeros(n, np.int8)
    records = np.ascontiguousarray(records, np.int32)
    full = int(lo == -128 and hi == 127)
    library.records_all(
        n, _ptr(acc), _ptr(records), form, int(mode == "single"), zp, lo, hi, full,
        _ptr(scaled), _ptr(out), _ptr(out_full),
    )  # fmt: skip
    return scaled, out, out_full


@pytest.mark.parametrize(
    ("mode", "shifts", "form"),
    [
        ("double", range(-31, 0), RQ_HIGH),  # every right shift: the merged form
        ("single", range(-31, 0), RQ_HIGH),  # FULLY_CONNECTED's, every right shift
        ("double", range(-31, 8), RQ_GENERAL),  # right shift 0 and left shifts too
        ("single", range(-31, 8), RQ_GENERAL),
        ("double", range(-23, 0), RQ_HIGH_ZP),  # the zero point fits every high word
        ("single", range(-23, 0), RQ_HIGH_ZP),
    ],
)
def test_records_match_tflite(mode: str, shifts: range, form: int, library: ctypes.CDLL) -> None:
    """aot_k_rq_apply on records from quant.requant_records against the transcription of
    TFLite: every shift, accumulators on and next to rounding ties, the int32 edges, zero
    multipliers (dead channels, whatever their shift), both clamps of aot_k_rq_out."""
    rng = np.random.default_rng(31 + len(shifts) + (mode == "single"))
    s = np.repeat(np.array(shifts, np.int64), 80)
    n = s.size
    m = rng.integers(2**30, 2**31, n)
    m[::7] = 2**31 - 1
    m[::11] = 2**30
    m[::13] = 0
    # The total shift of the final rounding (double: the right shift's, after the 31).
    total = np.where(s < 0, 31 - s, 31) if mode == "double" else 31 - s
    acc = np.where(np.arange(n) % 2 == 0, rng.integers(-(2**31), 2**31, n),
                   _tie_accumulators(rng, m, total))  # fmt: skip
    acc[: len(EDGES)] = EDGES
    if mode == "single":  # TFLite's single-rounding kernel keeps |acc * m| within int64
        acc = np.clip(acc, -(2**31) + 1, 2**31 - 1)
    # x * 2^left wraps in int32: keep the products TFLite's tests make
    acc = np.where((s > 0) & (np.abs(acc) >= 2**20), acc >> 12, acc).astype(np.int32)
    bias = rng.integers(-(2**31), 2**31, n)
    want = [ref_mbqm(int(a), int(b), int(c), mode) for a, b, c in zip(acc, m, s)]
    for zp, lo, hi in [(-7, -128, 100), (-128, -128, 127), (127, -20, 20)]:
        folded = zp if form == RQ_HIGH_ZP else None
        records, got_form = requant_records(bias, m, s, mode, folded)
        assert got_form == form
        assert records.shape == (n, RECORD_WORDS) and records[:, 0].tolist() == bias.tolist()
        scaled, out, out_full = _run_records(library, acc, records, form, mode, zp, lo, hi)
        # the zero-point form's value has the zero point in it; aot_k_rq_out adds none
        assert scaled.tolist() == [v + (folded or 0) for v in want]
        clamped = [min(max(v + zp, lo), hi) for v in want]
        assert out.tolist() == clamped
        if form != RQ_GENERAL:
            assert out_full.tolist() == clamped


def test_records_take_the_high_form_only_when_every_channel_has_it() -> None:
    bias = np.zeros(3, np.int64)
    m = np.array([2**30, 0, 2**31 - 1])
    assert requant_records(bias, m, np.array([-1, 0, -31]), "double")[1] == RQ_HIGH
    assert requant_records(bias, m, np.array([-1, 0, 0]), "double")[1] == RQ_GENERAL
    assert requant_records(bias, m, np.array([-5, 3, 2]), "single")[1] == RQ_GENERAL
    records, form = requant_records(bias, m, np.array([-3, -3, -3]), "single")
    # single rounding, right shift 3: nudge 2^33, high word shifted by 2, no sign term
    assert form == RQ_HIGH and records[0].tolist() == [0, 2**30, 0, 2, 2, 0]
    assert records[1].tolist() == [0, 0, 0, 0, 0, 0]
    # the zero point folds in as zp << shift, a dead channel's is zp itself
    records, form = requant_records(bias, m, np.array([-3, -3, -3]), "single", -100)
    assert form == RQ_HIGH_ZP and records[0, 3] == 2 - (100 << 2) and records[1, 3] == -100
    # a high-word shift of 23 could overflow with the zero point in: it stays out
    assert requant_records(bias, m, np.array([-24, -1, -1]), "double", 5)[1] == RQ_HIGH
