/* int8 conv2d over few input channels (first layers: 3x3 from RGB, kws's 10x4 over one
 * channel), where K = k_h * k_w * in_c is small and in_c % 4 != 0, so the general im2col
 * path's groups of four straddle taps and its per-output work is spread over few MACs.
 *
 * Each kernel row's k_w * in_c inputs are contiguous in NHWC, so a window is gathered row
 * by row into int16 pairs with the input offset added (a row of odd length padded with a
 * zero weight, padded taps 0), two output pixels interleaved word by word: pair j of pixel
 * p is scratch word 2j + p, so one LDRD loads both pixels' pair. The weights are int16 in
 * the same row-padded order, re-laid out at build time (aot/kernels/dsp.py) in channel
 * pairs, pair j of channel 2c + q at word 2 * (c * pairs + j) + q: one LDRD for both
 * channels. 2 pixels x 2 channels per step: 2 LDRD, 4 SMLAD for 8 MACs. Requantization
 * from the build-time records (struct aot_k_rq, the bias included; the high form only,
 * so right shifts). Scratch: 8 * pairs bytes. */
#include "aot_kernels.h"
#ifdef AOT_K_SCALAR
#define AOT_K_FN(op) aot_k_##op##_s8_scalar
#else
#define AOT_K_FN(op) aot_k_##op##_s8_dsp
#endif
#include "aot_kernels_requant.h"
#include "aot_kernels_simd.h"

/* The scratch is written as halfwords and words and read as words: may_alias keeps GCC
 * from reordering those accesses. */
typedef int32_t __attribute__((may_alias)) scratch_word;
typedef int16_t __attribute__((may_alias)) scratch_half;

struct shallow_out {
  int32_t zp, lo, hi, full;
};

/* aot_k_rq_high's arithmetic with SMLAL written out: GCC 12 turns the sign term's
 * 0-or-1 times sign_term into UMULL + MLA + carries. Armv7-M (the M3 too) has SMLAL. */
static inline __attribute__((always_inline)) int32_t high_scale(const struct aot_k_rq* r,
                                                                int32_t acc) {
#if defined(__arm__) && defined(__thumb2__)
  uint32_t lo = r->nudge_lo;
  int32_t hi = r->nudge_hi;
  const int32_t negative = (int32_t)((uint32_t)acc >> 31);
  __asm__("smlal %0, %1, %2, %3" : "+r"(lo), "+r"(hi) : "r"(negative), "r"(r->sign_term));
  __asm__("smlal %0, %1, %2, %3" : "+r"(lo), "+r"(hi) : "r"(acc), "r"(r->multiplier));
  return hi >> r->shift;
#else
  return aot_k_rq_high(r, acc);
#endif
}

/* The high form's output: SSAT, and the activation bounds only when narrower than int8
 * (full, a constant in each copy, says they are not). The variant takes only records of
 * the high form. */
static inline __attribute__((always_inline)) int8_t shallow_q(const struct shallow_out* q,
                                                              const struct aot_k_rq* r,
                                                              int32_t acc, int32_t full) {
  return aot_k_rq_out(high_scale(r, acc), q->zp, q->lo, q->hi, full);
}

static inline int32_t pack_pair(int32_t lo, int32_t hi) {
  return (int32_t)(((uint32_t)(uint16_t)lo) | ((uint32_t)hi << 16));
}

/* The low halves of lo and hi as one pair, and the high halves (PKHBT and PKHTB; GCC 12
 * builds them from masks and shifts). */
#if AOT_K_HAVE_DSP
static inline int32_t low_halves(int32_t lo, int32_t hi) {
  int32_t r;
  __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo), "r"(hi));
  return r;
}
static inline int32_t high_halves(int32_t lo, int32_t hi) {
  int32_t r;
  __asm__("pkhtb %0, %2, %1, asr #16" : "=r"(r) : "r"(lo), "r"(hi));
  return r;
}
#else
static inline int32_t low_halves(int32_t lo, int32_t hi) { return pack_pair(lo, hi); }
static inline int32_t high_halves(int32_t lo, int32_t hi) {
  return (int32_t)(((uint32_t)lo >> 16) | ((uint32_t)hi & 0xFFFF0000u));
}
#endif

/* One output pixel's window into its slot of the interleaved scratch (words 2j + slot).
 * Not inlined: inlining it into both calls saved 1.4 % of vww's first layer for 448 bytes
 * of text, which kws_ref_model's 48 KB budget has no room for. */
static __attribute__((noinline)) void gather(const struct aot_k_conv_params* p,
                                             const int8_t* image, int32_t oy, int32_t ox,
                                             int32_t row_pairs, scratch_word* words) {
  const int32_t off = p->input_offset, in_c = p->in_c, row_len = p->k_w * in_c;
  const int32_t y0 = oy * p->stride_h - p->pad_top, x0 = ox * p->stride_w - p->pad_left;
  const int32_t inside = x0 >= 0 && x0 + p->k_w <= p->in_w;
  const int32_t offsets = pack_pair(off, off);
  for (int32_t ky = 0; ky < p->k_h; ++ky, words += 2 * row_pairs) {
    const int32_t y = y0 + ky;
    if (y < 0 || y >= p->in_h) {
      for (int32_t j = 0; j < row_pairs; ++j) words[2 * j] = 0;
      continue;
    }
    const int8_t* line = image + y * p->in_w * in_c;
    if (inside) {
      const int8_t* row = line + x0 * in_c;
      int32_t j = 0;
      /* Four inputs per word: SXTB16 splits even and odd bytes, SADD16 adds the offset
       * to two at once, and the halves are repaired into pairs (b0 b1) and (b2 b3). */
      for (; 2 * j + 3 < row_len; j += 2) {
        const int32_t v = aot_k_load32(row + 2 * j);
        const int32_t even = aot_k_sadd16(aot_k_sxtb16(v), offsets);
        const int32_t odd = aot_k_sadd16(aot_k_sxtb16_odd(v), offsets);
        words[2 * j] = low_halves(even, odd);
        words[2 * j + 2] = high_halves(even, odd);
      }
      for (; 2 * j + 1 < row_len; ++j) {
        words[2 * j] = pack_pair(row[2 * j] + off, row[2 * j + 1] + off);
      }
      if (j < row_pairs) words[2 * j] = row[2 * j] + off; /* its pair's weight is 0 */
      continue;
    }
    /* A row cut by the image's left or right edge: per tap. */
    scratch_half* halves = (scratch_half*)words;
    for (int32_t e = 0; e < 2 * row_pairs; ++e) {
      const int32_t x = x0 + e / in_c;
      const int32_t v = e < row_len && x >= 0 && x < p->in_w ? line[x0 * in_c + e] + off : 0;
      halves[(e >> 1) * 4 + (e & 1)] = (int16_t)v;
    }
  }
}

/* One int16 pair of both pixels times one of both channels (two LDRDs, four SMLADs). */
#define SHALLOW_STEP()                                                                  \
  do {                                                                                  \
    const int32_t x0 = px[0], x1 = px[1], w0 = pw[0], w1 = pw[1];                       \
    px += 2;                                                                            \
    pw += 2;                                                                            \
    acc00 = aot_k_smlad(x0, w0, acc00);                                                 \
    acc01 = aot_k_smlad(x0, w1, acc01);                                                 \
    acc10 = aot_k_smlad(x1, w0, acc10);                                                 \
    acc11 = aot_k_smlad(x1, w1, acc11);                                                 \
  } while (0)

/* Both slots' windows times every channel pair (out1 may be out0: the same pixel twice):
 * five steps per loop iteration (3x3 over 3 channels is 15 pairs, 10x4 over 1 is 20), then
 * one at a time for the rest. */
static inline __attribute__((always_inline)) void pixels(
    const scratch_word* x, int32_t pairs, const int32_t* w, const struct aot_k_rq* rq,
    int32_t out_c, const struct shallow_out* q, int8_t* out0, int8_t* out1, int32_t full) {
  const int32_t fives = pairs - pairs % 5;
  for (int32_t c = 0; c < out_c; c += 2, rq += 2) {
    int32_t acc00 = rq[0].bias, acc01 = rq[1].bias, acc10 = acc00, acc11 = acc01;
    const scratch_word* px = x;
    const int32_t* pw = w;
    const int32_t* const end5 = w + 2 * fives;
    const int32_t* const end = w + 2 * pairs;
    while (pw != end5) {
      SHALLOW_STEP();
      SHALLOW_STEP();
      SHALLOW_STEP();
      SHALLOW_STEP();
      SHALLOW_STEP();
    }
    while (pw != end) SHALLOW_STEP();
    w = end;
    /* Local copies: the int8 stores could alias the records, these they cannot. */
    const struct aot_k_rq r0 = rq[0], r1 = rq[1];
    out0[c] = shallow_q(q, &r0, acc00, full);
    out1[c] = shallow_q(q, &r0, acc10, full);
    if (c + 1 < out_c) {
      out0[c + 1] = shallow_q(q, &r1, acc01, full);
      out1[c + 1] = shallow_q(q, &r1, acc11, full);
    }
  }
}

void AOT_K_FN(conv_shallow)(const struct aot_k_conv_params* p, const int8_t* input,
                            const int8_t* weights, const int32_t* records, int8_t* output,
                            int8_t* scratch) {
  const int32_t row_pairs = (p->k_w * p->in_c + 1) >> 1, pairs = p->k_h * row_pairs;
  const int32_t out_c = p->out_c, count = p->out_h * p->out_w;
  const struct shallow_out q = {p->output_offset, p->act_min, p->act_max,
                                p->act_min == -128 && p->act_max == 127};
  const int32_t* w = (const int32_t*)(const void*)weights;
  const struct aot_k_rq* rq = (const struct aot_k_rq*)(const void*)records;
  scratch_word* x = (scratch_word*)(void*)scratch;
  for (int32_t b = 0; b < p->batches; ++b) {
    const int8_t* image = input + b * p->in_h * p->in_w * p->in_c;
    int8_t* out = output + b * count * out_c;
    for (int32_t o = 0; o < count; o += 2) {
      /* An odd last pixel fills both slots and is written twice, with the same values. */
      const int32_t o1 = o + 1 < count ? o + 1 : o;
      gather(p, image, o / p->out_w, o % p->out_w, row_pairs, x);
      gather(p, image, o1 / p->out_w, o1 % p->out_w, row_pairs, x + 1);
      /* Two copies, with and without the activation bounds (a run-time test of them cost
       * 10 % in the first layers; a third copy, for left shifts, did not fit the text). */
      if (q.full) {
        pixels(x, pairs, w, rq, out_c, &q, out + o * out_c, out + o1 * out_c, 1);
      } else {
        pixels(x, pairs, w, rq, out_c, &q, out + o * out_c, out + o1 * out_c, 0);
      }
    }
  }
}
