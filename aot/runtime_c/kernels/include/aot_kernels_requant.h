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

/* -- Per-channel requantization records, built at build time (aot/kernels/quant.py,
 * requant_records). One record per output channel, six words, so a kernel keeps one
 * pointer for the bias and the whole requantization, loaded with LDRD/LDM. */
struct aot_k_rq {
  int32_t bias;
  int32_t multiplier;
  /* "high" form: the 64-bit rounding term nudge_hi:nudge_lo, the high word's right shift
   * and what a negative accumulator adds (times 1, by SMLAL) */
  uint32_t nudge_lo;
  int32_t nudge_hi;
  int32_t shift;
  int32_t sign_term;
};

/* The records' form, the same for every channel of a call (the params' requant_form). */
enum {
  /* multiplier and TFLite's shift (positive = left) in the record, aot_k_mbqm's rounding */
  AOT_K_RQ_GENERAL = 0,
  /* ((acc * m + nudge + [acc < 0] * sign_term) >> 32) >> shift: every total shift of 32 or
   * more, which is double rounding with a right shift (the merged form above, with
   * sign_term -2^31) and single rounding with a right shift (sign_term 0) */
  AOT_K_RQ_HIGH = 1,
  /* the high form with the output zero point folded into nudge_hi (zp << shift, built only
   * when that cannot overflow the high word: shifts up to 22), so the value is the
   * output before its clamp and SSAT alone gives an int8 one */
  AOT_K_RQ_HIGH_ZP = 2
};

/* lo:hi += a * b, signed 32 x 32 -> 64 (one SMLAL on Armv7-M and later). GCC 12 turns the
 * sign term's product into UMULL + MLA + ADDS + ADC (it knows one factor is 0 or 1), so on
 * the M-profile cores the instruction is written out. */
static inline __attribute__((always_inline)) void aot_k_smlal(uint32_t* lo, int32_t* hi,
                                                              int32_t a, int32_t b) {
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__)
  __asm__("smlal %0, %1, %2, %3" : "+r"(*lo), "+r"(*hi) : "r"(a), "r"(b));
#else
  const uint64_t sum = (((uint64_t)(uint32_t)*hi << 32) | *lo) + (uint64_t)((int64_t)a * b);
  *lo = (uint32_t)sum;
  *hi = (int32_t)(uint32_t)(sum >> 32);
#endif
}

/* The high form: two SMLALs and one ASR, no branch. The sum stays below 2^63 in
 * magnitude (|acc * m| < 2^62, the nudge below 2^62), so nothing wraps. */
static inline __attribute__((always_inline)) int32_t aot_k_rq_high(const struct aot_k_rq* r,
                                                                   int32_t acc) {
  uint32_t lo = r->nudge_lo;
  int32_t hi = r->nudge_hi;
  aot_k_smlal(&lo, &hi, (int32_t)((uint32_t)acc >> 31), r->sign_term);
  aot_k_smlal(&lo, &hi, acc, r->multiplier);
  return hi >> r->shift;
}

/* Either form; rounding is the params' (0 double, 1 single), used by the general one. */
static inline __attribute__((always_inline)) int32_t aot_k_rq_scale(const struct aot_k_rq* r,
                                                                    int32_t acc, int32_t form,
                                                                    int32_t rounding) {
  if (form != AOT_K_RQ_GENERAL) return aot_k_rq_high(r, acc); /* HIGH_ZP: zp included */
  return aot_k_mbqm(acc, r->multiplier, r->shift, rounding);
}

/* Saturate to int8: one SSAT where the core has it (every Armv7-M, so the M3 too). */
static inline __attribute__((always_inline)) int32_t aot_k_ssat8(int32_t v) {
#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
  return __builtin_arm_ssat(v, 8);
#else
  return v < -128 ? -128 : (v > 127 ? 127 : v);
#endif
}

/* The output of a high-form value: SSAT does the int8 range, and the activation's bounds
 * cost a compare each only when they are narrower (full says they are not). |value| is
 * at most 2^30 + 1, so value + zp cannot overflow. */
static inline __attribute__((always_inline)) int8_t aot_k_rq_out(int32_t value, int32_t zp,
                                                                 int32_t lo, int32_t hi,
                                                                 int32_t full) {
  int32_t v = aot_k_ssat8(value + zp);
  if (!full) {
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
  }
  return (int8_t)v;
}

/* One output from a record in any form (the general one clamps before adding zp). */
static inline __attribute__((always_inline)) int8_t aot_k_rq_apply(const struct aot_k_rq* r,
                                                                   int32_t acc, int32_t form,
                                                                   int32_t rounding, int32_t zp,
                                                                   int32_t lo, int32_t hi) {
  if (form == AOT_K_RQ_HIGH_ZP) return aot_k_rq_out(aot_k_rq_high(r, acc), 0, lo, hi, 0);
  if (form == AOT_K_RQ_HIGH) return aot_k_rq_out(aot_k_rq_high(r, acc), zp, lo, hi, 0);
  return aot_k_requant(acc, r->multiplier, r->shift, rounding, zp, lo, hi);
}

#endif /* AOT_KERNELS_REQUANT_H */
