/* TFLite's integer requantization, shared by every kernel source (not a public header).
 * Bit-exact with aot/ops/fixedpoint.py: MultiplyByQuantizedMultiplier in double rounding
 * (gemmlowp SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT) or single
 * rounding (one 64-bit multiply and rounding shift), then the output offset and clamp. */
#ifndef AOT_KERNELS_REQUANT_H
#define AOT_KERNELS_REQUANT_H

#include <stdint.h>

/* (high + 2^n) >> (n + 1) for |high| < 2^31 - 1, n >= 0. */
static inline __attribute__((always_inline)) int32_t aot_k_round_high(int32_t high, int32_t n) {
  return ((high >> n) + 1) >> 1;
}

/* The multiplier is TFLite's normalized one, in [2^30, 2^31) (or 0): never INT32_MIN, so
 * SaturatingRoundingDoublingHighMul's one saturating case cannot occur. */
static inline __attribute__((always_inline)) int32_t aot_k_mbqm(int32_t acc, int32_t multiplier,
                                                                int32_t shift,
                                                                int32_t rounding) {
  if (rounding) {
    const int32_t total = 31 - shift;
    const int64_t product = (int64_t)acc * multiplier;
    if (total > 32) {
      /* The rounding term 2^(total-1) only touches the high word, and the low word cannot
       * carry into the quotient: (p + 2^(t-1)) >> t == (hi + 2^(t-33)) >> (t-32), all in
       * int32, with no variable 64-bit shift; nested floors merge, so that is
       * ((hi >> (t-33)) + 1) >> 1, with no run-time 1 << n (|hi| < 2^30: no overflow). */
      return aot_k_round_high((int32_t)(product >> 32), total - 33);
    }
    return (int32_t)((product + ((int64_t)1 << (total - 1))) >> total);
  }
  /* x * 2^left wraps in int32, as TFLite's does; an unsigned shift has no UB. */
  const int32_t x = shift > 0 ? (int32_t)((uint32_t)acc << shift) : acc;
  /* One SMLAL: (x * m + 2^30) >> 31. */
  const int32_t high = (int32_t)(((int64_t)x * multiplier + ((int64_t)1 << 30)) >> 31);
  if (shift >= 0) return high;
  /* RoundingDivideByPOT: halves away from zero. */
  const int32_t right = -shift;
  const int32_t mask = (int32_t)((1u << right) - 1u);
  const int32_t threshold = (mask >> 1) + (high < 0);
  return (high >> right) + ((high & mask) > threshold);
}

/* clamp(value + zp, lo, hi), computed as clamp(value, lo - zp, hi - zp) + zp so that no
 * int32 sum can overflow. */
static inline __attribute__((always_inline)) int8_t aot_k_out(int32_t value, int32_t zp, int32_t lo, int32_t hi) {
  if (value < lo - zp) value = lo - zp;
  if (value > hi - zp) value = hi - zp;
  return (int8_t)(value + zp);
}

static inline __attribute__((always_inline)) int8_t aot_k_requant(int32_t acc, int32_t multiplier, int32_t shift,
                                   int32_t rounding, int32_t zp, int32_t lo, int32_t hi) {
  return aot_k_out(aot_k_mbqm(acc, multiplier, shift, rounding), zp, lo, hi);
}

/* The common case on its own, without a branch on the mode or the shift's sign: double
 * rounding and a right shift (shift <= 0), as in convolutions whose scales make the
 * multiplier below one. Same result as aot_k_mbqm(acc, m, -right, 0). */
static inline __attribute__((always_inline)) int8_t aot_k_requant_right(int32_t acc,
                                                                      int32_t multiplier,
                                                                      int32_t right, int32_t zp,
                                                                      int32_t lo, int32_t hi) {
  if (right == 0) {
    return aot_k_out((int32_t)(((int64_t)acc * multiplier + ((int64_t)1 << 30)) >> 31), zp, lo,
                     hi);
  }
  /* Both roundings in one SMLAL. With x = (p + 2^30) >> 31 (p = acc * m), RoundingDivideByPOT
   * is (x + 2^(r-1) - [x < 0]) >> r, and nested floors of power-of-two divisions merge, so
   * the result is (p + 2^30 + 2^(30+r) - [x < 0] * 2^31) >> (31 + r). [acc < 0] may stand
   * for [x < 0]: they differ only for -2^30 <= p < 0, where x is 0 and both give 0. The
   * shift is at least 32, so only the high word is shifted (by r - 1). */
  const uint32_t bit = 1u << right;
  const int64_t nudge = (int64_t)(((uint64_t)(bit >> 2) << 32) | (0x40000000u + (bit << 30)));
  const int64_t v = (int64_t)acc * multiplier + nudge - ((int64_t)((uint32_t)acc >> 31) << 31);
  return aot_k_out((int32_t)(v >> 32) >> (right - 1), zp, lo, hi);
}

/* Whether every channel can take aot_k_requant_right: double rounding, no left shift. */
static inline int32_t aot_k_right_shifts_only(const int32_t* shift, int32_t n, int32_t rounding) {
  if (rounding) return 0;
  for (int32_t i = 0; i < n; ++i) {
    if (shift[i] > 0) return 0;
  }
  return 1;
}

#endif /* AOT_KERNELS_REQUANT_H */
