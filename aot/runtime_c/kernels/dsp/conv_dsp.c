/* int8 conv2d and fully connected with the DSP extension (SMLAD on SXTB16 pairs).
 *
 * Both are a matrix product: each output pixel (or batch row) is a row of K inputs, each
 * output channel a row of K weights (TFLite's OHWI / [out, depth] layout, unchanged).
 * Output blocking: two rows x two channels per inner loop, so every loaded input word
 * serves two channels and every weight word two pixels; the weights are re-laid out in
 * channel pairs at build time so one pointer walks both channels.
 *
 * - 1x1 convolutions without padding and fully connected layers read the input in place
 *   as int8 (the input zero-point term is folded into the bias at build time).
 * - Other convolutions copy two pixels' receptive fields (im2col) into the planned
 *   scratch as int16 with the input offset added and zeros for padded taps, in the order
 *   SXTB16 unpacks the weights (x0 x2 | x1 x3), so each weight word costs one load and
 *   two SXTB16 for two pixels. Scratch: 2 * K int16. */
#include "aot_kernels.h"
#ifdef AOT_K_SCALAR
#define AOT_K_FN(op) aot_k_##op##_s8_scalar
#else
#define AOT_K_FN(op) aot_k_##op##_s8_dsp
#endif
#include "aot_kernels_out.h"
#include "aot_kernels_requant.h"
#include "aot_kernels_simd.h"

/* SMLAL, LDRD and SSAT are in every Armv7-M and later core (so the M3's scalar build too). */
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__)
#define AOT_K_ARM_ASM 1
#else
#define AOT_K_ARM_ASM 0
#endif

/* Two outputs of one channel (two pixels' accumulators, replaced by their int8 values)
 * from its record in the zero-point form: aot_k_rq_high then SSAT. Written out for the
 * M-profile cores: GCC 12 loads every record word of a 2x2 block up front and spills
 * them, about 24 instructions an output; this is 7 (two LDRD, one LDR per channel). */
static inline __attribute__((always_inline)) void fast_pair(const struct aot_k_rq* r,
                                                            int32_t* a, int32_t* b) {
#if AOT_K_ARM_ASM
  int32_t lo, hi, sh, sg, m;
  __asm__(
      "ldrd %[lo], %[hi], [%[r], #8]\n\t"
      "ldrd %[sh], %[sg], [%[r], #16]\n\t"
      "lsr %[m], %[a], #31\n\t"
      "smlal %[lo], %[hi], %[m], %[sg]\n\t"
      "ldr %[m], [%[r], #4]\n\t"
      "smlal %[lo], %[hi], %[a], %[m]\n\t"
      "asr %[a], %[hi], %[sh]\n\t"
      "ssat %[a], #8, %[a]\n\t"
      "ldrd %[lo], %[hi], [%[r], #8]\n\t"
      "smlal %[lo], %[hi], %[b], %[m]\n\t"
      "lsr %[m], %[b], #31\n\t"
      "smlal %[lo], %[hi], %[m], %[sg]\n\t"
      "asr %[b], %[hi], %[sh]\n\t"
      "ssat %[b], #8, %[b]"
      : [lo] "=&r"(lo), [hi] "=&r"(hi), [sh] "=&r"(sh), [sg] "=&r"(sg), [m] "=&r"(m),
        [a] "+r"(*a), [b] "+r"(*b)
      : [r] "r"(r), "m"(*r));
#else
  *a = aot_k_ssat8(aot_k_rq_high(r, *a));
  *b = aot_k_ssat8(aot_k_rq_high(r, *b));
#endif
}

/* A 2x2 block's outputs: channels r[0], r[1] of pixels out0, out1. All four are computed
 * before any store: an int8 store may alias the records, which would be reloaded. */
static inline __attribute__((always_inline)) void store_block(
    const struct aot_k_out_q* q, const struct aot_k_rq* r, int32_t acc00, int32_t acc10,
    int32_t acc01, int32_t acc11, int8_t* out0, int8_t* out1, const int32_t mode) {
  if (mode == AOT_K_OUT_FAST) {
    fast_pair(&r[0], &acc00, &acc10);
    fast_pair(&r[1], &acc01, &acc11);
  } else {
    acc00 = aot_k_out_q(q, &r[0], acc00, mode);
    acc10 = aot_k_out_q(q, &r[0], acc10, mode);
    acc01 = aot_k_out_q(q, &r[1], acc01, mode);
    acc11 = aot_k_out_q(q, &r[1], acc11, mode);
  }
  out0[0] = (int8_t)acc00;
  out0[1] = (int8_t)acc01;
  out1[0] = (int8_t)acc10;
  out1[1] = (int8_t)acc11;
}


/* bias + one int8 row . one plain weight row (an odd last channel). */
static int32_t dot_s8(const int8_t* a, const int8_t* w, int32_t k, int32_t acc) {
  const int32_t k4 = k >> 2;
  for (int32_t j = 0; j < k4; ++j) {
    const int32_t av = aot_k_load32(a + 4 * j), wv = aot_k_load32(w + 4 * j);
    acc = aot_k_smlad(aot_k_sxtb16(av), aot_k_sxtb16(wv), acc);
    acc = aot_k_smlad(aot_k_sxtb16_odd(av), aot_k_sxtb16_odd(wv), acc);
  }
  for (int32_t j = 4 * k4; j < k; ++j) acc += a[j] * w[j];
  return acc;
}

/* bias + one int16 im2col row (x0 x2 x1 x3 groups) . one plain weight row. */
static int32_t dot_q15(const int16_t* b, const int8_t* w, int32_t k, int32_t acc) {
  const int32_t k4 = k >> 2;
  for (int32_t j = 0; j < k4; ++j) {
    const int32_t v = aot_k_load32(w + 4 * j);
    acc = aot_k_smlad(aot_k_load32(b + 4 * j), aot_k_sxtb16(v), acc);
    acc = aot_k_smlad(aot_k_load32(b + 4 * j + 2), aot_k_sxtb16_odd(v), acc);
  }
  for (int32_t j = 4 * k4; j < k; ++j) acc += b[j] * w[j];
  return acc;
}

/* The weights come in channel pairs (re-laid out at build time, aot/kernels/dsp.py):
 * for channels 2p and 2p+1, each group of four weights of the one then of the other
 * (8 bytes per step, one pointer walks both), then the K % 4 tail of each; an odd last
 * channel is a plain row. A pair occupies 2 * K bytes, so pair p starts at 2 * p * K. */

/* One int8 row times every weight row, two channels at a time. */
static inline __attribute__((always_inline)) void row1_s8_body(
    const int8_t* a, int32_t k, const int8_t* w, int32_t out_c, const struct aot_k_out_q* q_in,
    int8_t* out, const int32_t mode) {
  /* A local copy: the int8 output stores could alias *q_in, this they cannot. */
  const struct aot_k_out_q local = *q_in;
  const struct aot_k_out_q* const q = &local;
  const int32_t k4 = k >> 2, tail = k - 4 * k4;
  int32_t c = 0;
  for (; c + 2 <= out_c; c += 2) {
    const struct aot_k_rq* const r = q->rq + c;
    const int8_t* pw = w + c * k;
    const int8_t* pa = a;
    const int8_t* const end = a + 4 * k4;
    int32_t acc0 = r[0].bias, acc1 = r[1].bias;
    while (pa != end) {
      const int32_t av = aot_k_load32(pa);
      pa += 4;
      const int32_t ae = aot_k_sxtb16(av), ao = aot_k_sxtb16_odd(av);
      int32_t wv = aot_k_load32(pw);
      acc0 = aot_k_smlad(ae, aot_k_sxtb16(wv), acc0);
      acc0 = aot_k_smlad(ao, aot_k_sxtb16_odd(wv), acc0);
      wv = aot_k_load32(pw + 4);
      pw += 8;
      acc1 = aot_k_smlad(ae, aot_k_sxtb16(wv), acc1);
      acc1 = aot_k_smlad(ao, aot_k_sxtb16_odd(wv), acc1);
    }
    for (int32_t j = 0; j < tail; ++j) {
      acc0 += pa[j] * pw[j];
      acc1 += pa[j] * pw[tail + j];
    }
    const int8_t o0 = aot_k_out_q(q, &r[0], acc0, mode), o1 = aot_k_out_q(q, &r[1], acc1, mode);
    out[c] = o0;
    out[c + 1] = o1;
  }
  if (c < out_c) out[c] = aot_k_out_q(q, q->rq + c, dot_s8(a, w + c * k, k, q->rq[c].bias), mode);
}

static void row1_s8(const int8_t* a, int32_t k, const int8_t* w, int32_t out_c,
                    const struct aot_k_out_q* q, int8_t* out) {
  AOT_K_ROW_DISPATCH(row1_s8_body, q, a, k, w, out_c, q, out);
}

/* row1_q4's MAC loop for K % 8 == 0 and 4-byte aligned rows, with the DSP extension: per
 * eight depths one LDRD of the input, four of the channel quad's weights, 20 SXTB16 and
 * 16 SMLAD, 43 instructions for 32 MACs (GCC 12's loop of the C below is 27 for 16). pa
 * runs to end, pw moves on past the quad's weights. */
static inline __attribute__((always_inline)) void mac_q4(const int8_t* pa, const int8_t* end,
                                                         const int8_t** pw, int32_t* a0,
                                                         int32_t* a1, int32_t* a2,
                                                         int32_t* a3) {
#if AOT_K_HAVE_DSP
  int32_t x0, x1, xe, w0, w1, we;
  /* channels c0, c1 then c2, c3 of one group of four depths of input x (xe: its even
   * bytes, x its odd ones after the first SXTB16) */
#define AOT_K_Q4_GROUP(x)                          \
  "sxtb16 %[xe], %[" #x "]\n\t"                    \
  "sxtb16 %[" #x "], %[" #x "], ror #8\n\t"        \
  "ldrd %[w0], %[w1], [%[pw]], #8\n\t"             \
  "sxtb16 %[we], %[w0]\n\t"                        \
  "sxtb16 %[w0], %[w0], ror #8\n\t"                \
  "smlad %[a0], %[xe], %[we], %[a0]\n\t"           \
  "smlad %[a0], %[" #x "], %[w0], %[a0]\n\t"       \
  "sxtb16 %[we], %[w1]\n\t"                        \
  "sxtb16 %[w1], %[w1], ror #8\n\t"                \
  "smlad %[a1], %[xe], %[we], %[a1]\n\t"           \
  "smlad %[a1], %[" #x "], %[w1], %[a1]\n\t"       \
  "ldrd %[w0], %[w1], [%[pw]], #8\n\t"             \
  "sxtb16 %[we], %[w0]\n\t"                        \
  "sxtb16 %[w0], %[w0], ror #8\n\t"                \
  "smlad %[a2], %[xe], %[we], %[a2]\n\t"           \
  "smlad %[a2], %[" #x "], %[w0], %[a2]\n\t"       \
  "sxtb16 %[we], %[w1]\n\t"                        \
  "sxtb16 %[w1], %[w1], ror #8\n\t"                \
  "smlad %[a3], %[xe], %[we], %[a3]\n\t"           \
  "smlad %[a3], %[" #x "], %[w1], %[a3]\n\t"
  __asm__(
      "1:\n\t"
      "ldrd %[x0], %[x1], [%[pa]], #8\n\t"
      AOT_K_Q4_GROUP(x0) AOT_K_Q4_GROUP(x1)
      "cmp %[pa], %[end]\n\t"
      "bne 1b"
      : [x0] "=&r"(x0), [x1] "=&r"(x1), [xe] "=&r"(xe), [w0] "=&r"(w0), [w1] "=&r"(w1),
        [we] "=&r"(we), [a0] "+r"(*a0), [a1] "+r"(*a1), [a2] "+r"(*a2), [a3] "+r"(*a3),
        [pa] "+r"(pa), [pw] "+r"(*pw)
      : [end] "r"(end)
      : "memory", "cc");
#undef AOT_K_Q4_GROUP
#else
  (void)pa, (void)end, (void)pw, (void)a0, (void)a1, (void)a2, (void)a3;
#endif
}

/* A channel quad's K % 4 tails, after its groups of four: the input's last `tail` depths
 * at x times each of the four channels' `tail` weights in turn at pw. A macro, as the
 * weights are int8 (row1_q4_body) or int16 (row1_w4_body). */
#define QUAD_TAILS(x, pw, tail, acc0, acc1, acc2, acc3) \
  for (int32_t j = 0; j < (tail); ++j) {                \
    const int32_t xj = (x)[j];                          \
    (acc0) += xj * (pw)[j];                             \
    (acc1) += xj * (pw)[(tail) + j];                    \
    (acc2) += xj * (pw)[2 * (tail) + j];                \
    (acc3) += xj * (pw)[3 * (tail) + j];                \
  }

/* Four channels' accumulators requantized and stored (the fully connected quads). */
static inline __attribute__((always_inline)) void store_quad(
    const struct aot_k_out_q* q, const struct aot_k_rq* r, int32_t acc0, int32_t acc1,
    int32_t acc2, int32_t acc3, int8_t* out, const int32_t mode) {
  const int8_t o0 = aot_k_out_q(q, &r[0], acc0, mode), o1 = aot_k_out_q(q, &r[1], acc1, mode);
  const int8_t o2 = aot_k_out_q(q, &r[2], acc2, mode), o3 = aot_k_out_q(q, &r[3], acc3, mode);
  out[0] = o0;
  out[1] = o1;
  out[2] = o2;
  out[3] = o3;
}

/* A single int8 row (a batch-1 fully connected layer) times every weight row, four
 * channels at a time: each input word unpacked once serves four channels. The weights
 * come in channel quads (aot/kernels/dsp.py): per quad, each group of four weights of
 * its four channels in turn (16 bytes per step), then the four K % 4 tails; channels
 * past the last quad are plain rows. A quad occupies 4 * K bytes. */
static inline __attribute__((always_inline)) void row1_q4_body(
    const int8_t* a, int32_t k, const int8_t* w, int32_t out_c, const struct aot_k_out_q* q_in,
    int8_t* out, const int32_t mode) {
  const struct aot_k_out_q local = *q_in; /* int8 stores cannot alias a local copy */
  const struct aot_k_out_q* const q = &local;
  const int32_t k4 = k >> 2, tail = k - 4 * k4;
  /* K % 8 == 0 and both rows 4-byte aligned: the LDRD-fed loop (mac_q4) */
  const int32_t words = AOT_K_HAVE_DSP && (k & 7) == 0 && (((uintptr_t)a | (uintptr_t)w) & 3) == 0;
  int32_t c = 0;
  for (; c + 4 <= out_c; c += 4) {
    const struct aot_k_rq* const r = q->rq + c;
    const int8_t* pw = w + c * k;
    const int8_t* pa = a;
    const int8_t* const end = a + 4 * k4;
    int32_t acc0 = r[0].bias, acc1 = r[1].bias, acc2 = r[2].bias, acc3 = r[3].bias;
    if (words) {
      mac_q4(pa, end, &pw, &acc0, &acc1, &acc2, &acc3);
      pa = end;
    }
    while (pa != end) {
      const int32_t av = aot_k_load32(pa);
      pa += 4;
      const int32_t ae = aot_k_sxtb16(av), ao = aot_k_sxtb16_odd(av);
      int32_t v = aot_k_load32(pw);
      acc0 = aot_k_smlad(ae, aot_k_sxtb16(v), acc0);
      acc0 = aot_k_smlad(ao, aot_k_sxtb16_odd(v), acc0);
      v = aot_k_load32(pw + 4);
      acc1 = aot_k_smlad(ae, aot_k_sxtb16(v), acc1);
      acc1 = aot_k_smlad(ao, aot_k_sxtb16_odd(v), acc1);
      v = aot_k_load32(pw + 8);
      acc2 = aot_k_smlad(ae, aot_k_sxtb16(v), acc2);
      acc2 = aot_k_smlad(ao, aot_k_sxtb16_odd(v), acc2);
      v = aot_k_load32(pw + 12);
      pw += 16;
      acc3 = aot_k_smlad(ae, aot_k_sxtb16(v), acc3);
      acc3 = aot_k_smlad(ao, aot_k_sxtb16_odd(v), acc3);
    }
    QUAD_TAILS(pa, pw, tail, acc0, acc1, acc2, acc3);
    store_quad(q, r, acc0, acc1, acc2, acc3, out + c, mode);
  }
  for (; c < out_c; ++c) {
    out[c] = aot_k_out_q(q, q->rq + c, dot_s8(a, w + c * k, k, q->rq[c].bias), mode);
  }
}

static void row1_q4(const int8_t* a, int32_t k, const int8_t* w, int32_t out_c,
                    const struct aot_k_out_q* q, int8_t* out) {
  AOT_K_ROW_DISPATCH(row1_q4_body, q, a, k, w, out_c, q, out);
}

/* One step of the 2x2 block: four depths of two pixels (their SXTB16 halves, or int16
 * im2col words in the same order) times the channel pair's 8 weight bytes at pw. */
static inline __attribute__((always_inline)) void mac_2x2(int32_t x0e, int32_t x0o, int32_t x1e,
                                                          int32_t x1o, const int8_t* pw,
                                                          int32_t* acc00, int32_t* acc10,
                                                          int32_t* acc01, int32_t* acc11) {
  int32_t v = aot_k_load32(pw);
  int32_t we = aot_k_sxtb16(v), wo = aot_k_sxtb16_odd(v);
  *acc00 = aot_k_smlad(x0o, wo, aot_k_smlad(x0e, we, *acc00));
  *acc10 = aot_k_smlad(x1o, wo, aot_k_smlad(x1e, we, *acc10));
  v = aot_k_load32(pw + 4);
  we = aot_k_sxtb16(v);
  wo = aot_k_sxtb16_odd(v);
  *acc01 = aot_k_smlad(x0o, wo, aot_k_smlad(x0e, we, *acc01));
  *acc11 = aot_k_smlad(x1o, wo, aot_k_smlad(x1e, we, *acc11));
}

/* Two int8 rows times every weight row, two channels at a time (a1 may be a0). */
static inline __attribute__((always_inline)) void row2_s8_body(
    const int8_t* a0, const int8_t* a1, int32_t k, const int8_t* w, int32_t out_c,
    const struct aot_k_out_q* q_in, int8_t* out0, int8_t* out1, const int32_t mode) {
  /* A local copy: the int8 output stores could alias *q_in, this they cannot. */
  const struct aot_k_out_q local = *q_in;
  const struct aot_k_out_q* const q = &local;
  const int32_t k4 = k >> 2, tail = k - 4 * k4;
  const int32_t rows = (int32_t)(a1 - a0); /* the second row at a fixed offset */
  int32_t c = 0;
  for (; c + 2 <= out_c; c += 2) {
    const struct aot_k_rq* const r = q->rq + c;
    const int8_t* pw = w + c * k;
    const int8_t* p0 = a0;
    const int8_t* const end = a0 + 4 * k4;
    int32_t acc00 = r[0].bias, acc10 = acc00; /* acc<pixel><channel> */
    int32_t acc01 = r[1].bias, acc11 = acc01;
    while (p0 != end) {
      int32_t v = aot_k_load32(p0);
      const int32_t x0e = aot_k_sxtb16(v), x0o = aot_k_sxtb16_odd(v);
      v = aot_k_load32(p0 + rows);
      p0 += 4;
      const int32_t x1e = aot_k_sxtb16(v), x1o = aot_k_sxtb16_odd(v);
      mac_2x2(x0e, x0o, x1e, x1o, pw, &acc00, &acc10, &acc01, &acc11);
      pw += 8;
    }
    for (int32_t j = 0; j < tail; ++j) {
      const int32_t x0 = p0[j], x1 = p0[rows + j], u0 = pw[j], u1 = pw[tail + j];
      acc00 += x0 * u0;
      acc10 += x1 * u0;
      acc01 += x0 * u1;
      acc11 += x1 * u1;
    }
    store_block(q, r, acc00, acc10, acc01, acc11, out0 + c, out1 + c, mode);
  }
  if (c < out_c) {
    const struct aot_k_rq* const r = q->rq + c;
    out0[c] = aot_k_out_q(q, r, dot_s8(a0, w + c * k, k, r->bias), mode);
    out1[c] = aot_k_out_q(q, r, dot_s8(a1, w + c * k, k, r->bias), mode);
  }
}

static void row2_s8(const int8_t* a0, const int8_t* a1, int32_t k, const int8_t* w,
                    int32_t out_c, const struct aot_k_out_q* q, int8_t* out0, int8_t* out1) {
  AOT_K_ROW_DISPATCH(row2_s8_body, q, a0, a1, k, w, out_c, q, out0, out1);
}

/* Two rows of int16 im2col (groups of four stored x0 x2 x1 x3; b1 may be b0) times the
 * weight rows, two channels at a time. */
static inline __attribute__((always_inline)) void rows_q15_body(
    const int16_t* b0, const int16_t* b1, int32_t k, const int8_t* w, int32_t out_c,
    const struct aot_k_out_q* q_in, int8_t* out0, int8_t* out1, const int32_t mode) {
  /* A local copy: the int8 output stores could alias *q_in, this they cannot. */
  const struct aot_k_out_q local = *q_in;
  const struct aot_k_out_q* const q = &local;
  const int32_t k4 = k >> 2, tail = k - 4 * k4;
  const int32_t rows = (int32_t)(b1 - b0);
  int32_t c = 0;
  for (; c + 2 <= out_c; c += 2) {
    const struct aot_k_rq* const r = q->rq + c;
    const int8_t* pw = w + c * k;
    const int16_t* p0 = b0;
    const int16_t* const end = b0 + 4 * k4;
    int32_t acc00 = r[0].bias, acc10 = acc00;
    int32_t acc01 = r[1].bias, acc11 = acc01;
    while (p0 != end) {
      const int32_t x0a = aot_k_load32(p0), x0b = aot_k_load32(p0 + 2);
      const int32_t x1a = aot_k_load32(p0 + rows), x1b = aot_k_load32(p0 + rows + 2);
      p0 += 4;
      mac_2x2(x0a, x0b, x1a, x1b, pw, &acc00, &acc10, &acc01, &acc11);
      pw += 8;
    }
    for (int32_t j = 0; j < tail; ++j) {
      const int32_t x0 = p0[j], x1 = p0[rows + j], u0 = pw[j], u1 = pw[tail + j];
      acc00 += x0 * u0;
      acc10 += x1 * u0;
      acc01 += x0 * u1;
      acc11 += x1 * u1;
    }
    store_block(q, r, acc00, acc10, acc01, acc11, out0 + c, out1 + c, mode);
  }
  if (c < out_c) {
    const struct aot_k_rq* const r = q->rq + c;
    out0[c] = aot_k_out_q(q, r, dot_q15(b0, w + c * k, k, r->bias), mode);
    out1[c] = aot_k_out_q(q, r, dot_q15(b1, w + c * k, k, r->bias), mode);
  }
}

static void rows_q15(const int16_t* b0, const int16_t* b1, int32_t k, const int8_t* w,
                     int32_t out_c, const struct aot_k_out_q* q, int8_t* out0, int8_t* out1) {
  AOT_K_ROW_DISPATCH(rows_q15_body, q, b0, b1, k, w, out_c, q, out0, out1);
}

/* A word of data the call guarantees 4-byte aligned (the im2col scratch, weights of a
 * K % 4 == 0 layer): a plain load GCC may pair into LDRD, and may_alias since the scratch
 * is written as int16. */
typedef int32_t aot_k_word __attribute__((__may_alias__));

/* Four pixels a pass with the DSP extension (quad_q15: LDM-fed, one weight word unpacked
 * for four pixels); two in the plain C build (pair_q15), where the C of four pixels spills
 * and is slower on the Cortex-M3 (mps2_an385: pretrainedResnet_quant's convolutions 58.4M
 * instructions against 49.8M). */
#if AOT_K_HAVE_DSP
#define AOT_K_PIXELS 4

/* The MAC loop of quad_q15 over [px, end): per group of four depths one channel's weight
 * word (`STEP` bytes on: 8 inside a channel pair, 4 in an odd last channel's plain row),
 * its two SXTB16 halves, the four pixels' column words in two LDMs and 8 SMLAD: 13
 * instructions for 16 MACs, against pair_q15's 16. The LDMs load fixed registers (r8-r11,
 * listed as clobbered) and the even weight half lives in lr, so the loop needs eight
 * operands: it also compiles where r7 is the frame pointer. */
#if AOT_K_HAVE_DSP
#define AOT_K_QUAD_GROUP(step)                \
  "ldr %[w], [%[pw]], #" #step "\n\t"         \
  "sxtb16 lr, %[w]\n\t"                       \
  "sxtb16 %[w], %[w], ror #8\n\t"             \
  "ldmia %[px]!, {r8, r9, r10, r11}\n\t"      \
  "smlad %[a0], r8, lr, %[a0]\n\t"            \
  "smlad %[a0], r9, %[w], %[a0]\n\t"          \
  "smlad %[a1], r10, lr, %[a1]\n\t"           \
  "smlad %[a1], r11, %[w], %[a1]\n\t"         \
  "ldmia %[px]!, {r8, r9, r10, r11}\n\t"      \
  "smlad %[a2], r8, lr, %[a2]\n\t"            \
  "smlad %[a2], r9, %[w], %[a2]\n\t"          \
  "smlad %[a3], r10, lr, %[a3]\n\t"           \
  "smlad %[a3], r11, %[w], %[a3]\n\t"
/* An odd number of groups (32 bytes of columns each) runs one group before the loop. */
#define AOT_K_QUAD_LOOP(step)                 \
  "sub %[w], %[end], %[px]\n\t"               \
  "tst %[w], #32\n\t"                         \
  "beq 2f\n\t"                                \
  AOT_K_QUAD_GROUP(step)                      \
  "cmp %[px], %[end]\n\t"                     \
  "beq 3f\n"                                  \
  "2:\n\t"                                    \
  AOT_K_QUAD_GROUP(step)                      \
  AOT_K_QUAD_GROUP(step)                      \
  "cmp %[px], %[end]\n\t"                     \
  "bne 2b\n"                                  \
  "3:"
#endif

static inline __attribute__((always_inline)) void mac_quad(const aot_k_word* px,
                                                           const aot_k_word* end,
                                                           const aot_k_word* pw,
                                                           const int32_t paired, int32_t* a0,
                                                           int32_t* a1, int32_t* a2,
                                                           int32_t* a3) {
#if AOT_K_HAVE_DSP
  int32_t w;
  if (paired) {
    __asm__(AOT_K_QUAD_LOOP(8)
            : [w] "=&r"(w), [a0] "+r"(*a0), [a1] "+r"(*a1), [a2] "+r"(*a2), [a3] "+r"(*a3),
              [px] "+r"(px), [pw] "+r"(pw)
            : [end] "r"(end)
            : "r8", "r9", "r10", "r11", "lr", "memory", "cc");
  } else {
    __asm__(AOT_K_QUAD_LOOP(4)
            : [w] "=&r"(w), [a0] "+r"(*a0), [a1] "+r"(*a1), [a2] "+r"(*a2), [a3] "+r"(*a3),
              [px] "+r"(px), [pw] "+r"(pw)
            : [end] "r"(end)
            : "r8", "r9", "r10", "r11", "lr", "memory", "cc");
  }
#else
  const int32_t step = paired ? 2 : 1; /* words */
  do {
    const int32_t we = aot_k_sxtb16(*pw), wo = aot_k_sxtb16_odd(*pw);
    pw += step;
    *a0 = aot_k_smlad(px[1], wo, aot_k_smlad(px[0], we, *a0));
    *a1 = aot_k_smlad(px[3], wo, aot_k_smlad(px[2], we, *a1));
    *a2 = aot_k_smlad(px[5], wo, aot_k_smlad(px[4], we, *a2));
    *a3 = aot_k_smlad(px[7], wo, aot_k_smlad(px[6], we, *a3));
    px += 8;
  } while (px != end);
#endif
}

/* One channel of the four pixels: its weights at pw (`paired`: 8 bytes a group, else 4),
 * its record r, its four outputs at out[0..3] + c. */
static inline __attribute__((always_inline)) void quad_channel(
    const struct aot_k_out_q* q, const struct aot_k_rq* r, const aot_k_word* start,
    const aot_k_word* end, const int8_t* pw, const int32_t paired, int8_t* const* out,
    int32_t c, const int32_t mode) {
  int32_t a0 = r->bias, a1 = a0, a2 = a0, a3 = a0;
  mac_quad(start, end, (const aot_k_word*)(const void*)pw, paired, &a0, &a1, &a2, &a3);
  if (mode == AOT_K_OUT_FAST) {
    fast_pair(r, &a0, &a1);
    fast_pair(r, &a2, &a3);
  } else {
    a0 = aot_k_out_q(q, r, a0, mode);
    a1 = aot_k_out_q(q, r, a1, mode);
    a2 = aot_k_out_q(q, r, a2, mode);
    a3 = aot_k_out_q(q, r, a3, mode);
  }
  out[0][c] = (int8_t)a0;
  out[1][c] = (int8_t)a1;
  out[2][c] = (int8_t)a2;
  out[3][c] = (int8_t)a3;
}

/* An odd last channel (a plain weight row), out of line: one copy of its loop serves both
 * output modes. */
static __attribute__((noinline)) void quad_last(const struct aot_k_out_q* q,
                                                const struct aot_k_rq* r,
                                                const aot_k_word* start, const aot_k_word* end,
                                                const int8_t* pw, int8_t* const* out,
                                                int32_t c) {
  quad_channel(q, r, start, end, pw, 0, out, c, AOT_K_OUT_ANY);
}

/* Four pixels' int16 im2col interleaved by groups of four ([pixel 0: x0 x2, x1 x3][pixel
 * 1] .. [pixel 3] per group; in_c % 4 == 0, so K % 4 == 0) times every weight row, one
 * channel at a time: each weight word, unpacked once, serves four pixels. The weights stay
 * in channel pairs (the two channels' words alternate; an odd last channel a plain row). */
static inline __attribute__((always_inline)) void quad_q15_body(
    const int16_t* cols, int32_t k, const int8_t* w, int32_t out_c,
    const struct aot_k_out_q* q_in, int8_t* const* out_in, const int32_t mode) {
  const struct aot_k_out_q local = *q_in; /* int8 stores cannot alias a local copy */
  const struct aot_k_out_q* const q = &local;
  int8_t* const out[4] = {out_in[0], out_in[1], out_in[2], out_in[3]};
  const aot_k_word* const start = (const aot_k_word*)(const void*)cols;
  const aot_k_word* const end = start + 2 * k; /* 4 pixels x k halfwords */
  int32_t c = 0;
  for (; c + 2 <= out_c; c += 2, w += 2 * k) {
    quad_channel(q, q->rq + c, start, end, w, 1, out, c, mode);
    quad_channel(q, q->rq + c + 1, start, end, w + 4, 1, out, c + 1, mode);
  }
  if (c < out_c) quad_last(q, q->rq + c, start, end, w, out, c);
}

static void quad_q15(const int16_t* cols, int32_t k, const int8_t* w, int32_t out_c,
                     const struct aot_k_out_q* q, int8_t* const* out) {
  AOT_K_ROW_DISPATCH(quad_q15_body, q, cols, k, w, out_c, q, out);
}

#else
#define AOT_K_PIXELS 2

/* The MAC loop of pair_q15 over [px, end): per group of four depths both channels' weight
 * words, both pixels' column words, 8 SMLAD; pw moves on. With the DSP extension written
 * out, so each pair of words is one post-indexed LDRD: 15 instructions a group, two groups
 * per loop (an odd first one on its own), so 16 for 16 MACs (GCC 12 made 21 of it, or 23
 * with the accumulators moved about). */
#if AOT_K_HAVE_DSP
#define AOT_K_Q15_GROUP                                   \
  "ldrd %[w0], %[w1], [%[pw]], #8\n\t"                    \
  "ldrd %[xa], %[xb], [%[px]], #16\n\t"                   \
  "sxtb16 %[we0], %[w0]\n\t"                              \
  "sxtb16 %[we1], %[w1]\n\t"                              \
  "sxtb16 %[w0], %[w0], ror #8\n\t"                       \
  "sxtb16 %[w1], %[w1], ror #8\n\t"                       \
  "smlad %[a00], %[xa], %[we0], %[a00]\n\t"               \
  "smlad %[a01], %[xa], %[we1], %[a01]\n\t"               \
  "smlad %[a00], %[xb], %[w0], %[a00]\n\t"                \
  "smlad %[a01], %[xb], %[w1], %[a01]\n\t"                \
  "ldrd %[xa], %[xb], [%[px], #-8]\n\t"                   \
  "smlad %[a10], %[xa], %[we0], %[a10]\n\t"               \
  "smlad %[a11], %[xa], %[we1], %[a11]\n\t"               \
  "smlad %[a10], %[xb], %[w0], %[a10]\n\t"                \
  "smlad %[a11], %[xb], %[w1], %[a11]\n\t"
#endif

static inline __attribute__((always_inline)) void mac_q15(const aot_k_word* px,
                                                          const aot_k_word* end,
                                                          const aot_k_word** pw, int32_t* a00,
                                                          int32_t* a01, int32_t* a10,
                                                          int32_t* a11) {
#if AOT_K_HAVE_DSP
  int32_t w0, w1, we0, we1, xa, xb;
  /* an odd number of groups: the first one before the loop (px moves 4 words a group) */
  const int32_t odd = (int32_t)((end - px) >> 2) & 1;
  __asm__(
      "cbz %[odd], 2f\n\t"
      AOT_K_Q15_GROUP
      "cmp %[px], %[end]\n\t"
      "beq 3f\n"
      "2:\n\t"
      AOT_K_Q15_GROUP
      AOT_K_Q15_GROUP
      "cmp %[px], %[end]\n\t"
      "bne 2b\n"
      "3:"
      : [w0] "=&r"(w0), [w1] "=&r"(w1), [we0] "=&r"(we0), [we1] "=&r"(we1), [xa] "=&r"(xa),
        [xb] "=&r"(xb), [a00] "+r"(*a00), [a01] "+r"(*a01), [a10] "+r"(*a10),
        [a11] "+r"(*a11), [px] "+r"(px), [pw] "+r"(*pw)
      : [end] "r"(end), [odd] "l"(odd)
      : "memory", "cc");
#else
  const aot_k_word* w = *pw;
  do {
    const int32_t we0 = aot_k_sxtb16(w[0]), wo0 = aot_k_sxtb16_odd(w[0]);
    const int32_t we1 = aot_k_sxtb16(w[1]), wo1 = aot_k_sxtb16_odd(w[1]);
    *a00 = aot_k_smlad(px[1], wo0, aot_k_smlad(px[0], we0, *a00));
    *a01 = aot_k_smlad(px[1], wo1, aot_k_smlad(px[0], we1, *a01));
    *a10 = aot_k_smlad(px[3], wo0, aot_k_smlad(px[2], we0, *a10));
    *a11 = aot_k_smlad(px[3], wo1, aot_k_smlad(px[2], we1, *a11));
    px += 4;
    w += 2;
  } while (px != end);
  *pw = w;
#endif
}

/* Two pixels' int16 im2col interleaved by groups of four ([pixel 0: x0 x2, x1 x3][pixel 1:
 * ...] per group, in_c % 4 == 0, so K % 4 == 0) times the weight rows, two channels at a
 * time: one pointer for both pixels, the groups loaded in pairs of words. */
static inline __attribute__((always_inline)) void pair_q15_body(
    const int16_t* cols, int32_t k, const int8_t* w, int32_t out_c,
    const struct aot_k_out_q* q_in, int8_t* out0, int8_t* out1, const int32_t mode) {
  const struct aot_k_out_q local = *q_in; /* int8 stores cannot alias a local copy */
  const struct aot_k_out_q* const q = &local;
  const aot_k_word* const start = (const aot_k_word*)(const void*)cols;
  const aot_k_word* const end = start + k; /* 2 pixels x k halfwords */
  const aot_k_word* pw = (const aot_k_word*)(const void*)w;
  int32_t c = 0;
  for (; c + 2 <= out_c; c += 2) {
    const struct aot_k_rq* const r = q->rq + c;
    int32_t acc00 = r[0].bias, acc10 = acc00;
    int32_t acc01 = r[1].bias, acc11 = acc01;
    mac_q15(start, end, &pw, &acc00, &acc01, &acc10, &acc11);
    store_block(q, r, acc00, acc10, acc01, acc11, out0 + c, out1 + c, mode);
  }
  if (c < out_c) { /* an odd last channel: a plain row */
    const struct aot_k_rq* const r = q->rq + c;
    const int8_t* row = (const int8_t*)(const void*)pw;
    int32_t acc0 = r->bias, acc1 = acc0;
    const aot_k_word* px = start;
    for (int32_t j = 0; j < k; j += 4, px += 4) {
      const int32_t v = aot_k_load32(row + j);
      const int32_t we = aot_k_sxtb16(v), wo = aot_k_sxtb16_odd(v);
      acc0 = aot_k_smlad(px[1], wo, aot_k_smlad(px[0], we, acc0));
      acc1 = aot_k_smlad(px[3], wo, aot_k_smlad(px[2], we, acc1));
    }
    out0[c] = aot_k_out_q(q, r, acc0, mode);
    out1[c] = aot_k_out_q(q, r, acc1, mode);
  }
}

static void pair_q15(const int16_t* cols, int32_t k, const int8_t* w, int32_t out_c,
                     const struct aot_k_out_q* q, int8_t* out0, int8_t* out1) {
  AOT_K_ROW_DISPATCH(pair_q15_body, q, cols, k, w, out_c, q, out0, out1);
}

#endif

/* One pass of AOT_K_PIXELS gathered pixels over every channel. */
static void pass_q15(const int16_t* cols, int32_t k, const int8_t* w, int32_t out_c,
                     const struct aot_k_out_q* q, int8_t* const* out) {
#if AOT_K_PIXELS == 4
  quad_q15(cols, k, w, out_c, q, out);
#else
  pair_q15(cols, k, w, out_c, q, out[0], out[1]);
#endif
}

/* One output pixel's receptive field as int16 (input + offset, 0 for padded taps). */
static void im2col_q15(const struct aot_k_conv_params* p, const int8_t* input, int32_t b,
                       int32_t oy, int32_t ox, int16_t* dst, int32_t group_step) {
  /* in_c % 4 == 0: group_step 4 * AOT_K_PIXELS when the pixels of a pass interleave by
   * groups of four (quad_q15, pair_q15), so each group of this pixel's is followed by the
   * others'; else 4 */
  const int32_t in_c = p->in_c, k = p->k_h * p->k_w * in_c, k4 = (k >> 2) << 2;
  const int32_t off = p->input_offset;
  const int32_t off2 = (int32_t)(((uint32_t)(uint16_t)off) | ((uint32_t)(uint16_t)off << 16));
  const int32_t quads = (in_c & 3) == 0;
  int32_t i = 0;
  for (int32_t ky = 0; ky < p->k_h; ++ky) {
    const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
    for (int32_t kx = 0; kx < p->k_w; ++kx) {
      const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
      const int32_t inside = iy >= 0 && iy < p->in_h && ix >= 0 && ix < p->in_w;
      const int8_t* src = inside ? input + ((b * p->in_h + iy) * p->in_w + ix) * in_c : input;
      if (quads) {
        if (inside) {
          for (int32_t g = 0; g < in_c; g += 4) {
            const int32_t v = aot_k_load32(src + g);
            aot_k_store32(dst + i, aot_k_sadd16(aot_k_sxtb16(v), off2));
            aot_k_store32(dst + i + 2, aot_k_sadd16(aot_k_sxtb16_odd(v), off2));
            i += group_step;
          }
        } else {
          for (int32_t g = 0; g < in_c; g += 4, i += group_step) {
            aot_k_store32(dst + i, 0);
            aot_k_store32(dst + i + 2, 0);
          }
        }
        continue;
      }
      if (inside) {
        for (int32_t c = 0; c < in_c; ++c) dst[i + c] = (int16_t)(src[c] + off);
      } else {
        memset(dst + i, 0, (size_t)in_c * sizeof(int16_t));
      }
      i += in_c;
    }
  }
  if (!quads) {
    /* Within each full group of four: x0 x2 x1 x3, the order SXTB16 pairs weights. */
    for (int32_t g = 0; g < k4; g += 4) {
      const int16_t second = dst[g + 1];
      dst[g + 1] = dst[g + 2];
      dst[g + 2] = second;
    }
  }
}

/* A 1x1 pixel's int8 row sign-extended into its slot of the interleaved scratch (no
 * offset: the bias has the zero point folded in). */
static void expand_s8(const int8_t* row, int32_t k, int16_t* dst) {
  for (int32_t g = 0; g < k; g += 4, dst += 4 * AOT_K_PIXELS) {
    const int32_t v = aot_k_load32(row + g);
    aot_k_store32(dst, aot_k_sxtb16(v));
    aot_k_store32(dst + 2, aot_k_sxtb16_odd(v));
  }
}

/* Pixel (b, oy, ox)'s receptive field into its slot of the interleaved scratch. */
static void gather_pixel(const struct aot_k_conv_params* p, const int8_t* input, int32_t direct,
                         int32_t b, int32_t oy, int32_t ox, int16_t* slot) {
  if (direct) {
    const int32_t k = p->in_c;
    expand_s8(input + ((b * p->in_h + oy * p->stride_h) * p->in_w + ox * p->stride_w) * k, k,
              slot);
  } else {
    im2col_q15(p, input, b, oy, ox, slot, 4 * AOT_K_PIXELS);
  }
}

void AOT_K_FN(conv)(const struct aot_k_conv_params* p, const int8_t* input,
                    const int8_t* weights, const int32_t* records, int8_t* output,
                    int8_t* scratch) {
  const struct aot_k_out_q q = aot_k_out_quant(records, p->requant_form, p->output_offset,
                                         p->act_min, p->act_max, p->rounding);
  const int32_t out_c = p->out_c, k = p->k_h * p->k_w * p->in_c;
  const int32_t direct = p->k_h == 1 && p->k_w == 1 && p->pad_top == 0 && p->pad_left == 0 &&
                         p->input_offset == 0;
  int16_t* cols = (int16_t*)(void*)scratch;
  /* in_c % 4 == 0 with a scratch: four pixels interleaved in it as int16 (1x1 ones too:
   * the copy costs K/4 * 4 instructions a pixel, the MAC loop saves more per channel);
   * quad_q15 loads words of it and of the weights, both 4-byte aligned (K % 4 == 0,
   * planned buffers and constants are) */
  const int32_t interleaved = (p->in_c & 3) == 0 && scratch != 0 &&
                              (((uintptr_t)weights | (uintptr_t)scratch) & 3) == 0;
  const int8_t* pending = 0;
  int8_t* pending_out = 0;
  int32_t filled = 0;
  int8_t* pass_out[AOT_K_PIXELS]; /* the gathered pixels' outputs, in slot order */
  int32_t gathered = 0;
  int8_t* out = output;
  for (int32_t b = 0; b < p->batches; ++b) {
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
      for (int32_t ox = 0; ox < p->out_w; ++ox, out += out_c) {
        if (interleaved) {
          gather_pixel(p, input, direct, b, oy, ox, cols + 4 * gathered);
          pass_out[gathered++] = out;
          if (gathered == AOT_K_PIXELS) {
            pass_q15(cols, k, weights, out_c, &q, pass_out);
            gathered = 0;
          }
          continue;
        }
        if (direct) {
          const int8_t* row =
              input + ((b * p->in_h + oy * p->stride_h) * p->in_w + ox * p->stride_w) * k;
          if (pending) {
            row2_s8(pending, row, k, weights, out_c, &q, pending_out, out);
            pending = 0;
          } else {
            pending = row;
            pending_out = out;
          }
          continue;
        } else {
          im2col_q15(p, input, b, oy, ox, cols + filled * k, 4);
          if (filled) rows_q15(cols, cols + k, k, weights, out_c, &q, pending_out, out);
        }
        pending_out = filled ? pending_out : out;
        filled = !filled;
      }
    }
  }
  /* An odd last pixel: the two-pixel loop on it twice (same values, same place). */
  if (pending) row2_s8(pending, pending, k, weights, out_c, &q, pending_out, pending_out);
  if (gathered) {
    /* The last pixels short of a pass: the last one fills the other slots too and is
     * written again with the same values. */
    for (int32_t slot = gathered; slot < AOT_K_PIXELS; ++slot) {
      gather_pixel(p, input, direct, p->batches - 1, p->out_h - 1, p->out_w - 1, cols + 4 * slot);
      pass_out[slot] = pass_out[gathered - 1];
    }
    pass_q15(cols, k, weights, out_c, &q, pass_out);
  } else if (filled) {
    rows_q15(cols, cols, k, weights, out_c, &q, pending_out, pending_out);
  }
}

/* -- Batch 1 with int16 weights (aot_k_fc_wide) ------------------------------------------
 * Each weight of a batch-1 fully connected layer is used once per inference, so the
 * SXTB16 pair that unpacks it costs a whole instruction per two multiply-accumulates.
 * Widened at build time (aot/kernels/dsp.py wide_channel_quads: per channel quad and
 * group of four depths, each channel's (w0, w2) then (w1, w3) as halfword pairs, 32
 * bytes; channels past the last quad as plain int16 rows), only the input is unpacked:
 * per four depths one LDR and two SXTB16 serve four channels' four LDRD and eight SMLAD,
 * two groups a pass: 32 instructions for 32 multiply-accumulates with the loop (43 with
 * int8 weights).
 * Twice the weights' bytes in flash, which prepare_fc weighs. */
static inline __attribute__((always_inline)) void mac_w4(const int8_t* pa, const int8_t* end,
                                                         const int16_t** pw, int32_t* a0,
                                                         int32_t* a1, int32_t* a2,
                                                         int32_t* a3) {
#if AOT_K_HAVE_DSP
  int32_t x, xe, w0, w1;
  if ((end - pa) & 4) {
    /* An odd group of four depths first, so the loop below runs two a pass. */
    const int32_t v = aot_k_load32(pa), ve = aot_k_sxtb16(v), vo = aot_k_sxtb16_odd(v);
    const int16_t* g = *pw;
    *a0 = aot_k_smlad(vo, aot_k_load32(g + 2), aot_k_smlad(ve, aot_k_load32(g), *a0));
    *a1 = aot_k_smlad(vo, aot_k_load32(g + 6), aot_k_smlad(ve, aot_k_load32(g + 4), *a1));
    *a2 = aot_k_smlad(vo, aot_k_load32(g + 10), aot_k_smlad(ve, aot_k_load32(g + 8), *a2));
    *a3 = aot_k_smlad(vo, aot_k_load32(g + 14), aot_k_smlad(ve, aot_k_load32(g + 12), *a3));
    *pw = g + 16;
    pa += 4;
  }
  if (pa == end) return;
#define AOT_K_W4_CHANNEL(a)                  \
  "ldrd %[w0], %[w1], [%[pw]], #8\n\t"     \
  "smlad %[" #a "], %[xe], %[w0], %[" #a "]\n\t" \
  "smlad %[" #a "], %[x], %[w1], %[" #a "]\n\t"
#define AOT_K_W4_GROUP                          \
  "ldr %[x], [%[pa]], #4\n\t"                \
  "sxtb16 %[xe], %[x]\n\t"                   \
  "sxtb16 %[x], %[x], ror #8\n\t"            \
  AOT_K_W4_CHANNEL(a0) AOT_K_W4_CHANNEL(a1) AOT_K_W4_CHANNEL(a2) AOT_K_W4_CHANNEL(a3)
  __asm__(
      "1:\n\t"
      AOT_K_W4_GROUP AOT_K_W4_GROUP
      "cmp %[pa], %[end]\n\t"
      "bne 1b"
      : [x] "=&r"(x), [xe] "=&r"(xe), [w0] "=&r"(w0), [w1] "=&r"(w1), [a0] "+r"(*a0),
        [a1] "+r"(*a1), [a2] "+r"(*a2), [a3] "+r"(*a3), [pa] "+r"(pa), [pw] "+r"(*pw)
      : [end] "r"(end)
      : "memory", "cc");
#undef AOT_K_W4_GROUP
#undef AOT_K_W4_CHANNEL
#else
  /* The plain C build: the same sums, two products a halfword pair. */
  const int16_t* w = *pw;
  int32_t s0 = *a0, s1 = *a1, s2 = *a2, s3 = *a3;
  for (; pa != end; pa += 4, w += 16) {
    const int32_t x0 = pa[0], x1 = pa[1], x2 = pa[2], x3 = pa[3];
    s0 += x0 * w[0] + x2 * w[1] + x1 * w[2] + x3 * w[3];
    s1 += x0 * w[4] + x2 * w[5] + x1 * w[6] + x3 * w[7];
    s2 += x0 * w[8] + x2 * w[9] + x1 * w[10] + x3 * w[11];
    s3 += x0 * w[12] + x2 * w[13] + x1 * w[14] + x3 * w[15];
  }
  *a0 = s0, *a1 = s1, *a2 = s2, *a3 = s3;
  *pw = w;
#endif
}

static inline __attribute__((always_inline)) void row1_w4_body(
    const int8_t* a, int32_t k, const int16_t* w, int32_t out_c, const struct aot_k_out_q* q_in,
    int8_t* out, const int32_t mode) {
  const struct aot_k_out_q local = *q_in; /* int8 stores cannot alias a local copy */
  const struct aot_k_out_q* const q = &local;
  const int32_t k4 = k >> 2, tail = k - 4 * k4;
  const int8_t* const end = a + 4 * k4;
  int32_t c = 0;
  for (; c + 4 <= out_c; c += 4) {
    const struct aot_k_rq* const r = q->rq + c;
    const int16_t* pw = w + c * k;
    int32_t acc0 = r[0].bias, acc1 = r[1].bias, acc2 = r[2].bias, acc3 = r[3].bias;
    if (k4) mac_w4(a, end, &pw, &acc0, &acc1, &acc2, &acc3);
    QUAD_TAILS(end, pw, tail, acc0, acc1, acc2, acc3);
    store_quad(q, r, acc0, acc1, acc2, acc3, out + c, mode);
  }
  for (; c < out_c; ++c) {
    const int16_t* row = w + c * k;
    int32_t acc = q->rq[c].bias;
    for (int32_t j = 0; j < k; ++j) acc += a[j] * row[j];
    out[c] = aot_k_out_q(q, q->rq + c, acc, mode);
  }
}

/* A batch-1 fully connected layer with int16 weights (wide_channel_quads); the input
 * 4-byte aligned when K >= 4 (planned buffers are). */
void AOT_K_FN(fc_wide)(const struct aot_k_fc_params* p, const int8_t* input,
                       const int16_t* weights, const int32_t* records, int8_t* output,
                       int8_t* scratch) {
  (void)scratch;
  const struct aot_k_out_q q = aot_k_out_quant(records, p->requant_form, p->output_offset,
                                         p->act_min, p->act_max, p->rounding);
  AOT_K_ROW_DISPATCH(row1_w4_body, &q, input, p->depth, weights, p->out_c, &q, output);
}

void AOT_K_FN(fc)(const struct aot_k_fc_params* p, const int8_t* input,
                  const int8_t* weights, const int32_t* records, int8_t* output,
                  int8_t* scratch) {
  (void)scratch;
  const struct aot_k_out_q q = aot_k_out_quant(records, p->requant_form, p->output_offset,
                                         p->act_min, p->act_max, p->rounding);
  const int32_t k = p->depth, out_c = p->out_c;
  if (p->batches == 1) {
    row1_q4(input, k, weights, out_c, &q, output); /* weights in channel quads */
    return;
  }
  int32_t b = 0;
  for (; b + 2 <= p->batches; b += 2) {
    row2_s8(input + b * k, input + (b + 1) * k, k, weights, out_c, &q, output + b * out_c,
            output + (b + 1) * out_c);
  }
  if (b < p->batches) row1_s8(input + b * k, k, weights, out_c, &q, output + b * out_c);
}

/* -- TRANSPOSE_CONV (aot_k_transpose_conv) ------------------------------------------------
 * Output pixel (oy, ox) gathers the input pixels that reach it: iy = (oy + pad_top - ky) /
 * stride_h for the taps ky with oy + pad_top - ky a multiple of the stride (and the same
 * along x), so all pixels of one phase, ((oy + pad_top) % stride_h, (ox + pad_left) %
 * stride_w), share one set of taps: each phase is a convolution with a sub-kernel. It runs
 * as the interleaved path of aot_k_conv: its pixels' taps in the scratch as int16 with the
 * input offset added (zeros for taps outside the input), the phase's weights in channel
 * pairs (aot/kernels/dsp.py phase_weights), the phases' weights one after another. The
 * build requires in_c % 4 == 0 and a tap in every phase (kernel >= stride). */
static void gather_transposed(const struct aot_k_conv_params* p, const int8_t* input,
                              int32_t b, int32_t oy, int32_t ox, int16_t* dst) {
  const int32_t in_c = p->in_c, off = p->input_offset;
  const int32_t off2 = (int32_t)(((uint32_t)(uint16_t)off) | ((uint32_t)(uint16_t)off << 16));
  const int32_t y = oy + p->pad_top, x = ox + p->pad_left;
  int32_t i = 0;
  for (int32_t ky = y % p->stride_h; ky < p->k_h; ky += p->stride_h) {
    const int32_t iy = (y - ky) / p->stride_h; /* exact: y - ky is a multiple */
    for (int32_t kx = x % p->stride_w; kx < p->k_w; kx += p->stride_w) {
      const int32_t ix = (x - kx) / p->stride_w;
      if (iy < 0 || iy >= p->in_h || ix < 0 || ix >= p->in_w) {
        for (int32_t g = 0; g < in_c; g += 4, i += 4 * AOT_K_PIXELS) {
          aot_k_store32(dst + i, 0);
          aot_k_store32(dst + i + 2, 0);
        }
        continue;
      }
      const int8_t* src = input + ((b * p->in_h + iy) * p->in_w + ix) * in_c;
      for (int32_t g = 0; g < in_c; g += 4, i += 4 * AOT_K_PIXELS) {
        const int32_t v = aot_k_load32(src + g);
        aot_k_store32(dst + i, aot_k_sadd16(aot_k_sxtb16(v), off2));
        aot_k_store32(dst + i + 2, aot_k_sadd16(aot_k_sxtb16_odd(v), off2));
      }
    }
  }
}

void AOT_K_FN(transpose_conv)(const struct aot_k_conv_params* p, const int8_t* input,
                              const int8_t* weights, const int32_t* records, int8_t* output,
                              int8_t* scratch) {
  const struct aot_k_out_q q = aot_k_out_quant(records, p->requant_form, p->output_offset,
                                         p->act_min, p->act_max, p->rounding);
  const int32_t out_c = p->out_c, sh = p->stride_h, sw = p->stride_w;
  int16_t* cols = (int16_t*)(void*)scratch;
  const int8_t* w = weights;
  for (int32_t ty = 0; ty < sh; ++ty) {
    for (int32_t tx = 0; tx < sw; ++tx) {
      const int32_t k = ((p->k_h - ty + sh - 1) / sh) * ((p->k_w - tx + sw - 1) / sw) * p->in_c;
      /* the phase's first output row and column: (oy + pad_top) % sh == ty */
      const int32_t oy0 = ((ty - p->pad_top) % sh + sh) % sh;
      const int32_t ox0 = ((tx - p->pad_left) % sw + sw) % sw;
      int8_t* pass_out[AOT_K_PIXELS];
      int32_t gathered = 0, last_b = 0, last_y = 0, last_x = 0;
      for (int32_t b = 0; b < p->batches; ++b) {
        for (int32_t oy = oy0; oy < p->out_h; oy += sh) {
          for (int32_t ox = ox0; ox < p->out_w; ox += sw) {
            gather_transposed(p, input, b, oy, ox, cols + 4 * gathered);
            pass_out[gathered++] = output + ((b * p->out_h + oy) * p->out_w + ox) * out_c;
            last_b = b, last_y = oy, last_x = ox;
            if (gathered == AOT_K_PIXELS) {
              pass_q15(cols, k, w, out_c, &q, pass_out);
              gathered = 0;
            }
          }
        }
      }
      if (gathered) {
        /* The last pixel fills the other slots too and is written again, the same values. */
        for (int32_t slot = gathered; slot < AOT_K_PIXELS; ++slot) {
          gather_transposed(p, input, last_b, last_y, last_x, cols + 4 * slot);
          pass_out[slot] = pass_out[gathered - 1];
        }
        pass_q15(cols, k, w, out_c, &q, pass_out);
      }
      w += out_c * k;
    }
  }
}
