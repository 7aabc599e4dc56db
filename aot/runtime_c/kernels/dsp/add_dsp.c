/* int8 ADD (TFLite's AddFunc) with the DSP extension: per element two table loads, an
 * add and one SMMLAR for the whole output requantization.
 *
 * Each input's rescaling ((x + offset) << left_shift, then its multiplier and shift)
 * depends on the int8 value only, so it is a 256-entry int32 table built at build time
 * (aot/kernels/dsp.py), holding twice the rescaled value. For S = 2 * raw_sum the output
 * requantization is exact in one most-significant-word multiply-accumulate:
 *   double rounding, r >= 1: (SMMLAR(S, m, N - [S < 0])) >> r
 *   single rounding, r >= 1: (SMMLA(S, m, N)) >> r
 *   r == 0 (either mode):    SMMLAR(S, m, zp)
 * with N = 2^(r-1) + zp * 2^r (the output zero point folded in); see docs/kernels.md.
 * SRDHM(s, m) = (s * m + 2^30) >> 31 = SMMULR(2s, m), and RoundingDivideByPOT merges into
 * the same floor, since nested floors of power-of-two divisions merge.
 *
 * The rhs may repeat (broadcast) over the lhs with period rhs_size (a per-channel or scalar
 * operand; rhs_size == size for equal shapes). Each block of four loads both inputs before
 * it stores, so the output may overlay the lhs. */
#include "aot_kernels.h"
#ifdef AOT_K_SCALAR
#define AOT_K_FN(op) aot_k_##op##_s8_scalar
#else
#define AOT_K_FN(op) aot_k_##op##_s8_dsp
#endif
#include "aot_kernels_simd.h"

#if AOT_K_HAVE_DSP
/* (acc * 2^32 + a * b + 2^31) >> 32 */
static inline int32_t mul_high_rounded(int32_t a, int32_t b, int32_t acc) {
  int32_t r;
  __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
  return r;
}
/* (acc * 2^32 + a * b) >> 32 */
static inline int32_t mul_high(int32_t a, int32_t b, int32_t acc) {
  int32_t r;
  __asm__("smmla %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
  return r;
}
static inline int32_t sat8(int32_t v) { return __ssat(v, 8); }
/* word with its byte at bit `at` replaced by v's low byte (one BFI; GCC 12 builds it from
 * masks and ORs otherwise). */
#define insert_byte(word, v, at)                                                        \
  __extension__({                                                                       \
    uint32_t w_ = (word);                                                               \
    __asm__("bfi %0, %1, #" #at ", #8" : "+r"(w_) : "r"(v));                            \
    w_;                                                                                 \
  })
/* max(min(x, hi), lo) on four int8 lanes: SSUB8 sets a GE bit per lane, SEL picks. */
static inline uint32_t clamp_lanes(uint32_t x, uint32_t lo, uint32_t hi) {
  uint32_t r, t;
  __asm__("ssub8 %1, %2, %3\n\tsel %0, %2, %3\n\tssub8 %1, %4, %0\n\tsel %0, %0, %4"
          : "=&r"(r), "=&r"(t)
          : "r"(x), "r"(lo), "r"(hi)
          : "cc");
  return r;
}
#else
static inline int32_t mul_high_rounded(int32_t a, int32_t b, int32_t acc) {
  return (int32_t)((acc * 4294967296LL + (int64_t)a * b + 2147483648LL) >> 32);
}
static inline int32_t mul_high(int32_t a, int32_t b, int32_t acc) {
  return (int32_t)((acc * 4294967296LL + (int64_t)a * b) >> 32);
}
static inline int32_t sat8(int32_t v) { return v < -128 ? -128 : v > 127 ? 127 : v; }
#endif

/* Which of the three exact forms above a call uses (constant in each instantiation). */
enum add_form { ADD_TIES_AWAY = 0, ADD_FLOOR = 1, ADD_NO_SHIFT = 2 };

struct add_out {
  int32_t multiplier, nudge, right, lo, hi;
  uint32_t lo_lanes, hi_lanes; /* lo and hi in each byte */
};

/* The output value (zero point added, clamped) of one sum; clamped == 0 when the
 * activation range is all of int8, so SSAT alone clamps. */
static inline __attribute__((always_inline)) int32_t add_one(int32_t sum,
                                                             const struct add_out* q,
                                                             enum add_form form, int clamped) {
  int32_t v;
  if (form == ADD_TIES_AWAY) {
    v = mul_high_rounded(sum, q->multiplier, q->nudge - (int32_t)((uint32_t)sum >> 31));
  } else if (form == ADD_FLOOR) {
    v = mul_high(sum, q->multiplier, q->nudge);
  } else {
    v = mul_high_rounded(sum, q->multiplier, q->nudge);
  }
  v = sat8(v >> q->right);
  if (clamped) {
    v = v < q->lo ? q->lo : v;
    v = v > q->hi ? q->hi : v;
  }
  return v;
}

/* n elements; the tables point at entry 0 of 256 (index -128 .. 127). */
static inline __attribute__((always_inline)) void add_run(
    const int8_t* lhs, const int8_t* rhs, int8_t* out, int32_t n, const int32_t* lhs_table,
    const int32_t* rhs_table, const struct add_out* q, enum add_form form, int clamped) {
  const int8_t* const end = lhs + (n & ~3);
  while (lhs != end) {
    const int32_t a = aot_k_load32(lhs), b = aot_k_load32(rhs);
    lhs += 4;
    rhs += 4;
    const int32_t s0 = lhs_table[(int8_t)a] + rhs_table[(int8_t)b];
    const int32_t s1 = lhs_table[(int8_t)(a >> 8)] + rhs_table[(int8_t)(b >> 8)];
    const int32_t s2 = lhs_table[(int8_t)(a >> 16)] + rhs_table[(int8_t)(b >> 16)];
    const int32_t s3 = lhs_table[a >> 24] + rhs_table[b >> 24];
#if AOT_K_HAVE_DSP
    if (clamped) {
      /* The four results in one word, clamped lane-wise: 2 instructions per bound. */
      uint32_t packed = (uint32_t)add_one(s0, q, form, 0);
      packed = insert_byte(packed, add_one(s1, q, form, 0), 8);
      packed = insert_byte(packed, add_one(s2, q, form, 0), 16);
      packed = insert_byte(packed, add_one(s3, q, form, 0), 24);
      aot_k_store32(out, (int32_t)clamp_lanes(packed, q->lo_lanes, q->hi_lanes));
      out += 4;
      continue;
    }
#endif
    out[0] = (int8_t)add_one(s0, q, form, clamped);
    out[1] = (int8_t)add_one(s1, q, form, clamped);
    out[2] = (int8_t)add_one(s2, q, form, clamped);
    out[3] = (int8_t)add_one(s3, q, form, clamped);
    out += 4;
  }
  for (int32_t i = 0; i < (n & 3); ++i) {
    out[i] = (int8_t)add_one(lhs_table[lhs[i]] + rhs_table[rhs[i]], q, form, clamped);
  }
}

static inline __attribute__((always_inline)) void add_form_clamped(
    const struct aot_k_add_params* p, const int8_t* lhs, const int8_t* rhs, int8_t* out,
    const int32_t* lhs_table, const int32_t* rhs_table, const struct add_out* q,
    enum add_form form, int clamped) {
  const int32_t size = p->size, period = p->rhs_size;
  if (period == 1) {
    /* A scalar rhs: its table entry is one constant, so the lhs runs against itself. */
    const int32_t b = rhs_table[rhs[0]];
    for (int32_t i = 0; i < size; ++i) {
      out[i] = (int8_t)add_one(lhs_table[lhs[i]] + b, q, form, clamped);
    }
    return;
  }
  for (int32_t o = 0; o < size; o += period) {
    add_run(lhs + o, rhs, out + o, period, lhs_table, rhs_table, q, form, clamped);
  }
}

static inline __attribute__((always_inline)) void add_with_form(
    const struct aot_k_add_params* p, const int8_t* lhs, const int8_t* rhs, int8_t* out,
    const int32_t* lhs_table, const int32_t* rhs_table, const struct add_out* q,
    enum add_form form) {
  if (q->lo == -128 && q->hi == 127) {
    add_form_clamped(p, lhs, rhs, out, lhs_table, rhs_table, q, form, 0);
  } else {
    add_form_clamped(p, lhs, rhs, out, lhs_table, rhs_table, q, form, 1);
  }
}

void AOT_K_FN(add)(const struct aot_k_add_params* p, const int8_t* lhs, const int8_t* rhs,
                   const int32_t* lhs_table, const int32_t* rhs_table, int8_t* output,
                   int8_t* scratch) {
  (void)scratch;
  const int32_t right = -p->output_shift; /* >= 0: the variant takes no left shift */
  struct add_out q = {p->output_multiplier, p->output_offset, 0, p->act_min, p->act_max,
                      (uint8_t)p->act_min * 0x01010101u, (uint8_t)p->act_max * 0x01010101u};
  lhs_table += 128;
  rhs_table += 128;
  if (right == 0) {
    add_with_form(p, lhs, rhs, output, lhs_table, rhs_table, &q, ADD_NO_SHIFT);
    return;
  }
  /* 2^(r-1) + zp * 2^r, in range: the build checks |S * m / 2^32| + |N| < 2^31. */
  q.nudge = (int32_t)((1u << (right - 1)) + ((uint32_t)p->output_offset << right));
  q.right = right;
  if (p->rounding) {
    add_with_form(p, lhs, rhs, output, lhs_table, rhs_table, &q, ADD_FLOOR);
  } else {
    add_with_form(p, lhs, rhs, output, lhs_table, rhs_table, &q, ADD_TIES_AWAY);
  }
}
