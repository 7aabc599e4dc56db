/* int8 depthwise conv2d with the DSP extension.
 *
 * Fast path (depth multiplier 1, channels a multiple of 4): four channels per word,
 * SXTB16 unpacks them to two halfword pairs and SMLABB/SMLATT accumulate each channel.
 * The weights are re-laid out at build time as [channel group][tap] of two halfword
 * pairs (channels 0 and 2, then 1 and 3), so one pointer walks them with small immediate
 * offsets and only the input needs SXTB16; the bias has the input offset folded in
 * (bias + input_offset * sum of the channel's weights), so interior pixels, which have
 * every tap inside the image, multiply raw inputs with no per-tap check.
 *
 * 3x3 kernels are aot_k_dwconv3x3 (the end of this file): records for the bias and
 * requantization, interior pixels with channel groups outermost on the DSP.
 * Other kernels: pixels outermost; border pixels point their padded taps at a scratch
 * holding the input zero point (x + input_offset is 0 there, which the folded bias
 * needs), or without it take back input_offset * w per padded tap.
 * Other shapes (depth multiplier > 1, channels not a multiple of 4) take the scalar loop
 * over TFLite's [1, KH, KW, out_c] weights. */
#include <stddef.h>

#include "aot_kernels.h"
#ifdef AOT_K_SCALAR
#define AOT_K_FN(op) aot_k_##op##_s8_scalar
#else
#define AOT_K_FN(op) aot_k_##op##_s8_dsp
#endif
#include "aot_kernels_requant.h"
#include "aot_kernels_simd.h"

/* The weights of a tap, pre-expanded at build time: channels (0, 2) then (1, 3) as
 * halfword pairs, so the taps need no SXTB16 for them (8 bytes per tap and group). */
#define AOT_K_TAP(ptr, w_off)                       \
  do {                                              \
    const int32_t xv_ = aot_k_load32(ptr);          \
    const int32_t we_ = aot_k_load32(w + (w_off));  \
    const int32_t wo_ = aot_k_load32(w + (w_off) + 4); \
    const int32_t xe_ = aot_k_sxtb16(xv_);          \
    const int32_t xo_ = aot_k_sxtb16_odd(xv_);      \
    acc0 = aot_k_smlabb(xe_, we_, acc0);            \
    acc1 = aot_k_smlabb(xo_, wo_, acc1);            \
    acc2 = aot_k_smlatt(xe_, we_, acc2);            \
    acc3 = aot_k_smlatt(xo_, wo_, acc3);            \
  } while (0)

/* A padded tap reads the zero point: take back its folded input_offset * w. */
#define AOT_K_PAD_TAP(w_off)                        \
  do {                                              \
    const int32_t we_ = aot_k_load32(w + (w_off));  \
    const int32_t wo_ = aot_k_load32(w + (w_off) + 4); \
    acc0 = aot_k_smlabb(we_, neg, acc0);            \
    acc1 = aot_k_smlabb(wo_, neg, acc1);            \
    acc2 = aot_k_smlatt(we_, neg, acc2);            \
    acc3 = aot_k_smlatt(wo_, neg, acc3);            \
  } while (0)

struct dw_out {
  const int32_t* multiplier;
  const int32_t* shift;
  int32_t zp, lo, hi, rounding;
  int32_t right_only; /* aot_k_right_shifts_only */
};

static inline __attribute__((always_inline)) void store4(const struct dw_out* q, int32_t c,
                                                         int32_t acc0, int32_t acc1,
                                                         int32_t acc2, int32_t acc3,
                                                         int8_t* out) {
  const int32_t zp = q->zp, lo = q->lo, hi = q->hi, r = q->rounding;
  const int32_t* m = q->multiplier + c;
  const int32_t* sh = q->shift + c;
  if (q->right_only) {
    const int8_t o0 = aot_k_requant_right(acc0, m[0], -sh[0], zp, lo, hi);
    const int8_t o1 = aot_k_requant_right(acc1, m[1], -sh[1], zp, lo, hi);
    const int8_t o2 = aot_k_requant_right(acc2, m[2], -sh[2], zp, lo, hi);
    const int8_t o3 = aot_k_requant_right(acc3, m[3], -sh[3], zp, lo, hi);
    aot_k_store32(out, (int32_t)((uint32_t)(uint8_t)o0 | (uint32_t)(uint8_t)o1 << 8 |
                                 (uint32_t)(uint8_t)o2 << 16 | (uint32_t)(uint8_t)o3 << 24));
    return;
  }
  const int8_t o0 = aot_k_requant(acc0, m[0], sh[0], r, zp, lo, hi);
  const int8_t o1 = aot_k_requant(acc1, m[1], sh[1], r, zp, lo, hi);
  const int8_t o2 = aot_k_requant(acc2, m[2], sh[2], r, zp, lo, hi);
  const int8_t o3 = aot_k_requant(acc3, m[3], sh[3], r, zp, lo, hi);
  aot_k_store32(out, (int32_t)((uint32_t)(uint8_t)o0 | (uint32_t)(uint8_t)o1 << 8 |
                               (uint32_t)(uint8_t)o2 << 16 | (uint32_t)(uint8_t)o3 << 24));
}

/* Which taps of a pixel are inside the image: bit ky * kw + kx (kernels up to 32 taps
 * take this path; larger ones check each tap in dw_pixel_any). */
struct dw_pixel {
  const int8_t* origin; /* the input at the pixel's top-left tap (may lie outside) */
  uint32_t valid;
};

static __attribute__((noinline)) void dw_pixel(const struct dw_pixel* px, int32_t taps,
                                               int32_t kw, int32_t row, int32_t col,
                                               const int8_t* w, const int32_t* bias,
                                               int32_t ch, int32_t neg, const struct dw_out* q_in,
                                               int8_t* out) {
  const struct dw_out local = *q_in; /* int8 stores cannot alias a local copy */
  const struct dw_out* const q = &local;
  for (int32_t c = 0; c < ch; c += 4, w += 8 * taps) {
    int32_t acc0 = bias[c], acc1 = bias[c + 1], acc2 = bias[c + 2], acc3 = bias[c + 3];
    const int8_t* tap_row = px->origin + c;
    uint32_t valid = px->valid;
    int32_t t = 0;
    for (int32_t ky = 0; t < 8 * taps; ++ky, tap_row += row) {
      const int8_t* tap = tap_row;
      for (int32_t kx = 0; kx < kw; ++kx, t += 8, tap += col, valid >>= 1) {
        if (valid & 1u) {
          AOT_K_TAP(tap, t);
        } else {
          AOT_K_PAD_TAP(t);
        }
      }
    }
    store4(q, c, acc0, acc1, acc2, acc3, out + c);
  }
}

/* A border pixel with the padded taps reading `pad` (the input zero point in every byte,
 * ch bytes): x + input_offset is then 0 there, exactly what the folded bias needs, so
 * every tap is the same unpack and four SMLAxy with no per-tap test. */
static __attribute__((noinline)) void dw_pixel_padded(const struct dw_pixel* px, int32_t taps,
                                                      int32_t kw, int32_t row, int32_t col,
                                                      const int8_t* w, const int32_t* bias,
                                                      int32_t ch, const int8_t* pad,
                                                      const struct dw_out* q_in, int8_t* out) {
  const struct dw_out local = *q_in; /* int8 stores cannot alias a local copy */
  const struct dw_out* const q = &local;
  const int8_t* tap[32];
  uint32_t valid = px->valid;
  for (int32_t t = 0, ky = 0; t < taps; ++ky) {
    for (int32_t kx = 0; kx < kw; ++kx, ++t, valid >>= 1) {
      tap[t] = (valid & 1u) ? px->origin + ky * row + kx * col : pad;
    }
  }
  for (int32_t c = 0; c < ch; c += 4, w += 8 * taps) {
    int32_t acc0 = bias[c], acc1 = bias[c + 1], acc2 = bias[c + 2], acc3 = bias[c + 3];
    for (int32_t t = 0; t < taps; ++t) AOT_K_TAP(tap[t] + c, 8 * t);
    store4(q, c, acc0, acc1, acc2, acc3, out + c);
  }
}

static void dw_quads(const struct aot_k_conv_params* p, const int8_t* restrict input,
                     const int8_t* restrict weights, const int32_t* restrict bias,
                     const int32_t* restrict multiplier, const int32_t* restrict shift,
                     int8_t* restrict output, int8_t* restrict pad) {
  /* Locals, not p->: stores through int8_t* may alias anything, so GCC would reload. */
  const int32_t ch = p->in_c, kh = p->k_h, kw = p->k_w, taps = kh * kw;
  const int32_t in_h = p->in_h, in_w = p->in_w, dil_h = p->dil_h, dil_w = p->dil_w;
  const int32_t stride_h = p->stride_h, stride_w = p->stride_w;
  const int32_t pad_top = p->pad_top, pad_left = p->pad_left;
  const int32_t out_h = p->out_h, out_w = p->out_w, batches = p->batches;
  const int32_t row = dil_h * in_w * ch, col = dil_w * ch;
  /* -input_offset (the zero point) in both halfwords, for SMLABB and SMLATT. */
  const int32_t neg = (int32_t)((uint32_t)(uint16_t)(-p->input_offset) * 0x10001u);
  const struct dw_out q = {multiplier, shift, p->output_offset, p->act_min, p->act_max,
                           p->rounding, aot_k_right_shifts_only(shift, ch, p->rounding)};
  int8_t* out = output;
  for (int32_t b = 0; b < batches; ++b) {
    const int8_t* image = input + b * in_h * in_w * ch;
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const int32_t iy0 = oy * stride_h - pad_top;
      uint32_t rows = 0; /* bit ky: tap row ky inside the image */
      for (int32_t ky = 0; ky < kh; ++ky) {
        rows |= (uint32_t)((uint32_t)(iy0 + ky * dil_h) < (uint32_t)in_h) << ky;
      }
      for (int32_t ox = 0; ox < out_w; ++ox, out += ch) {
        const int32_t ix0 = ox * stride_w - pad_left;
        struct dw_pixel px = {image + (iy0 * in_w + ix0) * ch, 0};
        for (int32_t ky = 0; ky < kh; ++ky) {
          for (int32_t kx = 0; kx < kw; ++kx) {
            const uint32_t in = ((rows >> ky) & 1u) &
                                ((uint32_t)(ix0 + kx * dil_w) < (uint32_t)in_w);
            px.valid |= in << (ky * kw + kx);
          }
        }
        if (pad) {
          dw_pixel_padded(&px, taps, kw, row, col, weights, bias, ch, pad, &q, out);
        } else {
          dw_pixel(&px, taps, kw, row, col, weights, bias, ch, neg, &q, out);
        }
      }
    }
  }
}

static void dw_any(const struct aot_k_conv_params* p, const int8_t* input,
                   const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                   const int32_t* shift, int8_t* output) {
  const int32_t in_c = p->in_c, out_c = p->out_c, dm = p->depth_multiplier;
  const int32_t off = p->input_offset;
  int8_t* out = output;
  for (int32_t b = 0; b < p->batches; ++b) {
    const int8_t* image = input + b * p->in_h * p->in_w * in_c;
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
      for (int32_t ox = 0; ox < p->out_w; ++ox, out += out_c) {
        for (int32_t o = 0; o < out_c; ++o) {
          const int32_t ic = o / dm;
          int32_t acc = bias[o];
          for (int32_t ky = 0; ky < p->k_h; ++ky) {
            const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
            for (int32_t kx = 0; kx < p->k_w; ++kx) {
              const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
              const int32_t w = weights[(ky * p->k_w + kx) * out_c + o];
              if (iy >= 0 && iy < p->in_h && ix >= 0 && ix < p->in_w) {
                acc += image[(iy * p->in_w + ix) * in_c + ic] * w;
              } else {
                acc -= off * w;
              }
            }
          }
          out[o] = aot_k_requant(acc, multiplier[o], shift[o], p->rounding, p->output_offset,
                                 p->act_min, p->act_max);
        }
      }
    }
  }
}

void AOT_K_FN(dwconv)(const struct aot_k_conv_params* p, const int8_t* input,
                         const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                         const int32_t* shift, int8_t* output, int8_t* scratch) {
  const int32_t quads = p->depth_multiplier == 1 && (p->in_c & 3) == 0;
  /* The zero point for padded taps to read: the planner gives the scratch exactly when
   * some pixel has a padded tap (aot/kernels/dsp.py). */
  if (quads && scratch) memset(scratch, (uint8_t)(int8_t)(-p->input_offset), (size_t)p->in_c);
  if (quads && p->k_h * p->k_w <= 32) {
    dw_quads(p, input, weights, bias, multiplier, shift, output, scratch);
  } else {
    dw_any(p, input, weights, bias, multiplier, shift, output);
  }
}

/* -- 3x3, depth multiplier 1, channels a multiple of 4 (aot_k_dwconv3x3) ----------------
 * The bias (input offset folded in) and the requantization come as one struct aot_k_rq
 * record per channel, built at build time (aot/kernels/quant.py requant_records).
 * Border pixels (some tap outside the image) go pixels outermost: the nine tap pointers
 * are worked out once per pixel, the padded ones pointing at `pad` (the input zero point:
 * x + input_offset is 0 there, which the folded bias needs), and every channel group
 * reads them at its own offset. On the DSP the interior pixels go channel groups
 * outermost, so a group's records (with the output zero point folded into the nudge) and
 * bias are copied once per group into registers' reach and each output costs two LDRD,
 * two SMLAL, ASR, SSAT and STRB; the taps are inline assembly (GCC 12 spilled the
 * unrolled C). */

/* Bits 0-2 set where tap 0, 1, 2 (at first, first + dil, first + 2 * dil) is inside
 * [0, size). */
static inline uint32_t dw_inside3(int32_t first, int32_t dil, int32_t size) {
  return (uint32_t)((uint32_t)first < (uint32_t)size) |
         (uint32_t)((uint32_t)(first + dil) < (uint32_t)size) << 1 |
         (uint32_t)((uint32_t)(first + 2 * dil) < (uint32_t)size) << 2;
}

/* Which taps a run skips (a padded tap column or row). */
enum {
  DW_TAPS_ALL,
  DW_TAPS_BUT_FIRST_COLUMN,
  DW_TAPS_BUT_LAST_COLUMN,
  DW_TAPS_BUT_FIRST_ROW,
  DW_TAPS_BUT_LAST_ROW
};

/* Whether border column ox (tap columns inside: cols) runs as a column, and which. */
static inline int32_t dw_column_kind(int32_t ox, int32_t ox_lo, int32_t ox_hi, uint32_t cols) {
  if (ox < ox_lo && cols == 6u) return DW_TAPS_BUT_FIRST_COLUMN;
  if (ox >= ox_hi && cols == 3u) return DW_TAPS_BUT_LAST_COLUMN;
  return DW_TAPS_ALL; /* neither: the tap table */
}

/* The same for border row oy (tap rows inside: rows) across the interior columns. */
static inline int32_t dw_row_kind(int32_t oy, int32_t oy_lo, int32_t oy_hi, uint32_t rows) {
  if (oy < oy_lo && rows == 6u) return DW_TAPS_BUT_FIRST_ROW;
  if (oy >= oy_hi && rows == 3u) return DW_TAPS_BUT_LAST_ROW;
  return DW_TAPS_ALL;
}

#if AOT_K_HAVE_DSP
#define AOT_K_TAP_ASM(addr, woff)            \
  "ldr %[xv], " addr "\n\t"                  \
  "ldrd %[we], %[wo], [%[w], #" woff "]\n\t" \
  "sxtb16 %[xo], %[xv], ror #8\n\t"          \
  "sxtb16 %[xv], %[xv]\n\t"                  \
  "smlabb %[a0], %[xv], %[we], %[a0]\n\t"    \
  "smlabb %[a1], %[xo], %[wo], %[a1]\n\t"    \
  "smlatt %[a2], %[xv], %[we], %[a2]\n\t"    \
  "smlatt %[a3], %[xo], %[wo], %[a3]\n\t"
/* Tap k from the pointer table t, at the group's channel offset c. */
#define AOT_K_PTR_ASM(k, woff) \
  "ldr %[xv], [%[t], #" k "]\n\t" AOT_K_TAP_ASM("[%[xv], %[c]]", woff)
#define AOT_K_PIXEL9_AT(taps, c_)                                                          \
  do {                                                                                     \
    int32_t xv_, xo_, we_, wo_;                                                            \
    __asm__(AOT_K_PTR_ASM("0", "0") AOT_K_PTR_ASM("4", "8") AOT_K_PTR_ASM("8", "16")       \
                AOT_K_PTR_ASM("12", "24") AOT_K_PTR_ASM("16", "32")                        \
                    AOT_K_PTR_ASM("20", "40") AOT_K_PTR_ASM("24", "48")                    \
                        AOT_K_PTR_ASM("28", "56") AOT_K_PTR_ASM("32", "64")                \
            : [a0] "+r"(acc0), [a1] "+r"(acc1), [a2] "+r"(acc2), [a3] "+r"(acc3),          \
              [xv] "=&r"(xv_), [xo] "=&r"(xo_), [we] "=&r"(we_), [wo] "=&r"(wo_)           \
            : [t] "r"(taps), [c] "r"(c_), [w] "r"(w)                                       \
            : "memory");                                                                   \
  } while (0)
/* What a high-form requantization does once the nudge is in lo:hi and the multiplier
 * in m: the SMLAL, the sign term as [acc < 0] times k by a second SMLAL, the shift. */
#define AOT_K_HIGH_TAIL_ASM                  \
  "smlal %[lo], %[hi], %[a], %[m]\n\t"       \
  "lsr %[m], %[a], #31\n\t"                 \
  "smlal %[lo], %[hi], %[m], %[k]\n\t"       \
  "asr %[hi], %[hi], %[sh]"
/* aot_k_rq_high of record r in assembly (the C form costs about 17 instructions with
 * GCC 12: a UMULL and MLA for the sign term); the value before zp is added. The offsets
 * are struct aot_k_rq's, checked below. */
_Static_assert(offsetof(struct aot_k_rq, multiplier) == 4 &&
                   offsetof(struct aot_k_rq, nudge_lo) == 8 &&
                   offsetof(struct aot_k_rq, shift) == 16 &&
                   offsetof(struct aot_k_rq, sign_term) == 20,
               "DW_RECORD_SCALE reads struct aot_k_rq at these offsets");
#define DW_RECORD_SCALE(acc, r)                                                        \
  __extension__({                                                                        \
    int32_t lo_, hi_, m_, sh_, k_;                                                       \
    __asm__("ldrd %[lo], %[hi], [%[b], #8]\n\t"                                          \
            "ldrd %[sh], %[k], [%[b], #16]\n\t"                                          \
            "ldr %[m], [%[b], #4]\n\t" AOT_K_HIGH_TAIL_ASM                               \
            : [lo] "=&r"(lo_), [hi] "=&r"(hi_), [m] "=&r"(m_), [sh] "=&r"(sh_),          \
              [k] "=&r"(k_)                                                              \
            : [a] "r"(acc), [b] "r"(r)                                                   \
            : "memory");                                                                 \
    (void)lo_;                                                                           \
    hi_;                                                                                 \
  })
#else
#define AOT_K_PIXEL9_AT(taps, c_)                                                          \
  do {                                                                                     \
    for (int32_t k_ = 0; k_ < 9; ++k_) AOT_K_TAP((taps)[k_] + (c_), 8 * k_);               \
  } while (0)
#define DW_RECORD_SCALE(acc, r) aot_k_rq_high(r, acc)
#endif

/* What every output of a call shares. */
struct dw3x3_out {
  int32_t zp, lo, hi, rounding, form;
};

/* One border pixel, every channel group: t[k] is tap k at channel 0 (or pad). */
static inline __attribute__((always_inline)) void dw3x3_edge_body(
    const int8_t* const* t, const int8_t* w, const struct aot_k_rq* rq, int32_t ch,
    const struct dw3x3_out* q, int32_t full, int8_t* out) {
  const int32_t zp = q->zp, lo = q->lo, hi = q->hi;
  for (int32_t c = 0; c < ch; c += 4, w += 72, rq += 4) {
    int32_t acc0 = rq[0].bias, acc1 = rq[1].bias, acc2 = rq[2].bias, acc3 = rq[3].bias;
    AOT_K_PIXEL9_AT(t, c);
    if (q->form == AOT_K_RQ_HIGH) {
      out[c] = aot_k_rq_out(DW_RECORD_SCALE(acc0, &rq[0]), zp, lo, hi, full);
      out[c + 1] = aot_k_rq_out(DW_RECORD_SCALE(acc1, &rq[1]), zp, lo, hi, full);
      out[c + 2] = aot_k_rq_out(DW_RECORD_SCALE(acc2, &rq[2]), zp, lo, hi, full);
      out[c + 3] = aot_k_rq_out(DW_RECORD_SCALE(acc3, &rq[3]), zp, lo, hi, full);
    } else {
      const int32_t r = q->rounding;
      out[c] = aot_k_rq_apply(&rq[0], acc0, AOT_K_RQ_GENERAL, r, zp, lo, hi);
      out[c + 1] = aot_k_rq_apply(&rq[1], acc1, AOT_K_RQ_GENERAL, r, zp, lo, hi);
      out[c + 2] = aot_k_rq_apply(&rq[2], acc2, AOT_K_RQ_GENERAL, r, zp, lo, hi);
      out[c + 3] = aot_k_rq_apply(&rq[3], acc3, AOT_K_RQ_GENERAL, r, zp, lo, hi);
    }
  }
}

/* The clamp compiled in twice: with int8's whole range (one SSAT) and narrower. */
static __attribute__((noinline)) void dw3x3_edge_full(const int8_t* const* t, const int8_t* w,
                                                      const struct aot_k_rq* rq, int32_t ch,
                                                      const struct dw3x3_out* q, int8_t* out) {
  dw3x3_edge_body(t, w, rq, ch, q, 1, out);
}

static __attribute__((noinline)) void dw3x3_edge_clamped(const int8_t* const* t,
                                                         const int8_t* w,
                                                         const struct aot_k_rq* rq, int32_t ch,
                                                         const struct dw3x3_out* q,
                                                         int8_t* out) {
  dw3x3_edge_body(t, w, rq, ch, q, 0, out);
}

#if AOT_K_HAVE_DSP
/* A group's bias and records for its interior pixels: the output zero point folded into
 * the nudge (zp * 2^(32 + shift): the high word's shift then adds zp), so an output is
 * ((acc * m + nudge + [acc < 0] * sign_term) >> 32) >> shift, clamped. */
struct dw_record {
  int32_t nudge_lo, nudge_hi, multiplier, shift;
};

struct dw_block {
  int32_t bias[4];
  struct dw_record rec[4];
  /* the bias of a pixel whose first (left) or last (right) tap column is padding: the
   * padded taps' zp * w put back, so those pixels skip the three taps */
  int32_t bias_left[4], bias_right[4];
  /* the group's weights (9 taps x 8 bytes), so one pointer reaches weights and records
   * and GCC has a register more for the loop */
  int8_t weights[72];
  int32_t bias_top[4], bias_bottom[4]; /* the same for a padded first or last tap row */
};
_Static_assert(offsetof(struct dw_block, rec) == 16 && sizeof(struct dw_record) == 16 &&
                   offsetof(struct dw_block, weights) == 112,
               "AOT_K_BLOCK_SCALE reads the records at 16 + 16 * i, the taps the weights at 112");

/* Channel i's nine weights, from the group's halfword layout (per tap: channels 0, 2,
 * 1, 3). */
static void dw_channel_weights(const int8_t* w, int32_t i, int32_t out[9]) {
  static const int8_t lane[4] = {0, 2, 1, 3};
  for (int32_t t = 0; t < 9; ++t) {
    int16_t v;
    memcpy(&v, w + 8 * t + 2 * lane[i], 2);
    out[t] = v;
  }
}

/* Whether the folded zero point stays inside the nudge's range for every channel: the
 * high word's shift at most 22 (|zp * 2^(32+22)| < 2^61, the sum below 2^63). */
static int32_t dw_blocks_fit(const struct aot_k_rq* rq, int32_t ch, int32_t form) {
  if (form != AOT_K_RQ_HIGH) return 0;
  for (int32_t i = 0; i < ch; ++i) {
    if (rq[i].shift > 22) return 0;
  }
  return 1;
}

/* The bias with zp * the padded taps' weights put back (int32 wraps as TFLite's
 * accumulator does). */
static int32_t dw_edge_bias(int32_t bias, int32_t input_zp, int32_t weights) {
  return (int32_t)((uint32_t)bias + (uint32_t)input_zp * (uint32_t)weights);
}

/* columns, rows: whether the column or row runs need their biases. */
static void dw_block_make(struct dw_block* blk, const struct aot_k_rq* rq, int32_t zp,
                          const int8_t* w, int32_t input_zp, int32_t columns, int32_t rows) {
  for (int32_t i = 0; i < 4; ++i) {
    const struct aot_k_rq* r = &rq[i];
    blk->bias[i] = r->bias;
    if (i == 0) memcpy(blk->weights, w, sizeof blk->weights);
    if (columns || rows) {
      int32_t k[9];
      dw_channel_weights(w, i, k);
      blk->bias_left[i] = dw_edge_bias(r->bias, input_zp, k[0] + k[3] + k[6]);
      blk->bias_right[i] = dw_edge_bias(r->bias, input_zp, k[2] + k[5] + k[8]);
      blk->bias_top[i] = dw_edge_bias(r->bias, input_zp, k[0] + k[1] + k[2]);
      blk->bias_bottom[i] = dw_edge_bias(r->bias, input_zp, k[6] + k[7] + k[8]);
    }
    int64_t nudge = (int64_t)(((uint64_t)(uint32_t)r->nudge_hi << 32) | r->nudge_lo);
    if (r->multiplier == 0) {
      /* a dead channel gives zp: 2^31 in the low word absorbs the sign term's borrow */
      nudge = (int64_t)((uint64_t)(int64_t)zp << 32) + ((int64_t)1 << 31);
    } else {
      nudge += (int64_t)zp * ((int64_t)1 << (32 + r->shift));
    }
    blk->rec[i].nudge_lo = (int32_t)(uint32_t)(uint64_t)nudge;
    blk->rec[i].nudge_hi = (int32_t)(nudge >> 32);
    blk->rec[i].multiplier = r->multiplier;
    blk->rec[i].shift = r->shift;
  }
}

/* Channel i's output with zp added, before the clamp. */
#define AOT_K_BLOCK_SCALE(acc, blk, i, sign)                                             \
  __extension__({                                                                        \
    int32_t lo_, hi_, m_, sh_;                                                           \
    __asm__("ldrd %[lo], %[hi], [%[b], %[o0]]\n\t"                                       \
            "ldrd %[m], %[sh], [%[b], %[o1]]\n\t" AOT_K_HIGH_TAIL_ASM                    \
            : [lo] "=&r"(lo_), [hi] "=&r"(hi_), [m] "=&r"(m_), [sh] "=&r"(sh_)           \
            : [a] "r"(acc), [b] "r"(blk), [k] "r"(sign), [o0] "i"(16 + 16 * (i)),        \
              [o1] "i"(24 + 16 * (i))                                                    \
            : "memory");                                                                 \
    (void)lo_;                                                                           \
    hi_;                                                                                 \
  })

/* The clamp after SSAT (int8's range): which activation bounds are narrower. */
enum { DW_CLAMP_NONE, DW_CLAMP_HI, DW_CLAMP_BOTH };

static inline __attribute__((always_inline)) int8_t dw_block_clamp(int32_t v, int32_t lo,
                                                                   int32_t hi, int32_t kind) {
  v = __ssat(v, 8);
  if (kind == DW_CLAMP_BOTH) v = v < lo ? lo : v;
  if (kind != DW_CLAMP_NONE) v = v > hi ? hi : v;
  return (int8_t)v;
}

/* The nine taps of an interior pixel: x at tap (0, 0), rows `row` and columns `col`
 * bytes apart; x itself steps down the rows. */
#define AOT_K_ROW_ASM(first)                  \
  AOT_K_TAP_ASM("[%[x]]", first)              \
  AOT_K_TAP_ASM("[%[x], %[col]]", first "+8") \
  AOT_K_TAP_ASM("[%[x], %[col], lsl #1]", first "+16")
/* Two tap columns of a row, x at the first of them, weights from tap column c0. */
#define AOT_K_ROW2_ASM(first, c0) \
  AOT_K_TAP_ASM("[%[x]]", first "+8*" c0) AOT_K_TAP_ASM("[%[x], %[col]]", first "+8+8*" c0)
/* One pixel's taps, each row's taps given by ROW(weight offset of the row). */
#define AOT_K_PIXEL_ROWS(x_, row_, col_, r0, r1, r2)                                       \
  do {                                                                                     \
    const int8_t* xp_ = (x_);                                                              \
    int32_t xv_, xo_, we_, wo_;                                                            \
    __asm__(r0 "add %[x], %[x], %[row]\n\t" r1 "add %[x], %[x], %[row]\n\t" r2            \
            : [a0] "+r"(acc0), [a1] "+r"(acc1), [a2] "+r"(acc2), [a3] "+r"(acc3),          \
              [x] "+r"(xp_), [xv] "=&r"(xv_), [xo] "=&r"(xo_), [we] "=&r"(we_),            \
              [wo] "=&r"(wo_)                                                              \
            : [row] "r"(row_), [col] "r"(col_), [w] "r"(blk)                               \
            : "memory");                                                                   \
  } while (0)
/* Two tap rows (x at the first of them). */
#define AOT_K_PIXEL_ROWS2(x_, row_, col_, r0, r1)                                          \
  do {                                                                                     \
    const int8_t* xp_ = (x_);                                                              \
    int32_t xv_, xo_, we_, wo_;                                                            \
    __asm__(r0 "add %[x], %[x], %[row]\n\t" r1                                             \
            : [a0] "+r"(acc0), [a1] "+r"(acc1), [a2] "+r"(acc2), [a3] "+r"(acc3),          \
              [x] "+r"(xp_), [xv] "=&r"(xv_), [xo] "=&r"(xo_), [we] "=&r"(we_),            \
              [wo] "=&r"(wo_)                                                              \
            : [row] "r"(row_), [col] "r"(col_), [w] "r"(blk)                               \
            : "memory");                                                                   \
  } while (0)
#define AOT_K_PIXEL6_TOP(x_, row_, col_) \
  AOT_K_PIXEL_ROWS2(x_, row_, col_, AOT_K_ROW_ASM("112+24"), AOT_K_ROW_ASM("112+48"))
#define AOT_K_PIXEL6_BOTTOM(x_, row_, col_) \
  AOT_K_PIXEL_ROWS2(x_, row_, col_, AOT_K_ROW_ASM("112+0"), AOT_K_ROW_ASM("112+24"))
#define AOT_K_PIXEL9(x_, row_, col_)                                                      \
  AOT_K_PIXEL_ROWS(x_, row_, col_, AOT_K_ROW_ASM("112+0"), AOT_K_ROW_ASM("112+24"),        \
                   AOT_K_ROW_ASM("112+48"))
/* The last two tap columns (x at column 1), or the first two. */
#define AOT_K_PIXEL6_LEFT(x_, row_, col_)                                                  \
  AOT_K_PIXEL_ROWS(x_, row_, col_, AOT_K_ROW2_ASM("112+0", "1"),                           \
                   AOT_K_ROW2_ASM("112+24", "1"), AOT_K_ROW2_ASM("112+48", "1"))
#define AOT_K_PIXEL6_RIGHT(x_, row_, col_)                                                 \
  AOT_K_PIXEL_ROWS(x_, row_, col_, AOT_K_ROW2_ASM("112+0", "0"),                           \
                   AOT_K_ROW2_ASM("112+24", "0"), AOT_K_ROW2_ASM("112+48", "0"))


/* n interior pixels of one group, `step` input and `out_step` output bytes apart; double
 * rounding, so the sign term is -2^31 (a constant GCC keeps in a register). */
static inline __attribute__((always_inline)) void dw3x3_run_body(
    const int8_t* x, int32_t n, int32_t step, int32_t row, int32_t col,
    const struct dw_block* blk, int32_t lo, int32_t hi, int32_t kind, int32_t columns,
    int8_t* out, int32_t out_step) {
  const int32_t sign = INT32_MIN;
  const int32_t* bias = columns == DW_TAPS_ALL                ? blk->bias
                        : columns == DW_TAPS_BUT_FIRST_COLUMN ? blk->bias_left
                        : columns == DW_TAPS_BUT_LAST_COLUMN  ? blk->bias_right
                        : columns == DW_TAPS_BUT_FIRST_ROW    ? blk->bias_top
                                                              : blk->bias_bottom;
  for (; n > 0; --n, x += step, out += out_step) {
    int32_t acc0 = bias[0], acc1 = bias[1], acc2 = bias[2], acc3 = bias[3];
    if (columns == DW_TAPS_ALL) {
      AOT_K_PIXEL9(x, row, col);
    } else if (columns == DW_TAPS_BUT_FIRST_COLUMN) {
      AOT_K_PIXEL6_LEFT(x, row, col);
    } else if (columns == DW_TAPS_BUT_LAST_COLUMN) {
      AOT_K_PIXEL6_RIGHT(x, row, col);
    } else if (columns == DW_TAPS_BUT_FIRST_ROW) {
      AOT_K_PIXEL6_TOP(x, row, col);
    } else {
      AOT_K_PIXEL6_BOTTOM(x, row, col);
    }
    out[0] = dw_block_clamp(AOT_K_BLOCK_SCALE(acc0, blk, 0, sign), lo, hi, kind);
    out[1] = dw_block_clamp(AOT_K_BLOCK_SCALE(acc1, blk, 1, sign), lo, hi, kind);
    out[2] = dw_block_clamp(AOT_K_BLOCK_SCALE(acc2, blk, 2, sign), lo, hi, kind);
    out[3] = dw_block_clamp(AOT_K_BLOCK_SCALE(acc3, blk, 3, sign), lo, hi, kind);
  }
}

/* One function per clamp kind, so each loop is allocated on its own. */
#define AOT_K_RUN_ARGS                                                                 \
  const int8_t *x, int32_t n, int32_t step, int32_t row, int32_t col, \
      const struct dw_block *blk, int32_t lo, int32_t hi, int8_t *out, int32_t out_step
#define AOT_K_RUN_CALL(kind, columns) \
  dw3x3_run_body(x, n, step, row, col, blk, lo, hi, kind, columns, out, out_step)
static __attribute__((noinline)) void dw3x3_run_full(AOT_K_RUN_ARGS) {
  AOT_K_RUN_CALL(DW_CLAMP_NONE, DW_TAPS_ALL);
}
static __attribute__((noinline)) void dw3x3_run_upper(AOT_K_RUN_ARGS) {
  AOT_K_RUN_CALL(DW_CLAMP_HI, DW_TAPS_ALL);
}
static __attribute__((noinline)) void dw3x3_run_clamped(AOT_K_RUN_ARGS) {
  AOT_K_RUN_CALL(DW_CLAMP_BOTH, DW_TAPS_ALL);
}
/* Border pixels with one padded tap column (a column of them, top to bottom) or row
 * (a row, across the interior columns): six taps each. */
#define AOT_K_EDGE_RUN(clamp)                                  \
  do {                                                         \
    if (taps == DW_TAPS_BUT_FIRST_COLUMN) {                    \
      AOT_K_RUN_CALL(clamp, DW_TAPS_BUT_FIRST_COLUMN);         \
    } else if (taps == DW_TAPS_BUT_LAST_COLUMN) {              \
      AOT_K_RUN_CALL(clamp, DW_TAPS_BUT_LAST_COLUMN);          \
    } else if (taps == DW_TAPS_BUT_FIRST_ROW) {                \
      AOT_K_RUN_CALL(clamp, DW_TAPS_BUT_FIRST_ROW);            \
    } else {                                                   \
      AOT_K_RUN_CALL(clamp, DW_TAPS_BUT_LAST_ROW);             \
    }                                                          \
  } while (0)
static __attribute__((noinline)) void dw3x3_edge_run_full(AOT_K_RUN_ARGS, int32_t taps) {
  AOT_K_EDGE_RUN(DW_CLAMP_NONE);
}
static __attribute__((noinline)) void dw3x3_edge_run_clamped(AOT_K_RUN_ARGS, int32_t taps) {
  AOT_K_EDGE_RUN(DW_CLAMP_BOTH);
}
#endif /* AOT_K_HAVE_DSP */

void AOT_K_FN(dwconv3x3)(const struct aot_k_conv_params* p, const int8_t* input,
                            const int8_t* weights, const int32_t* records, int8_t* output,
                            int8_t* scratch) {
  const struct aot_k_rq* rq = (const struct aot_k_rq*)(const void*)records;
  const int32_t ch = p->in_c, in_h = p->in_h, in_w = p->in_w;
  const int32_t dil_h = p->dil_h, dil_w = p->dil_w, stride_h = p->stride_h;
  const int32_t stride_w = p->stride_w, pad_top = p->pad_top, pad_left = p->pad_left;
  const int32_t out_h = p->out_h, out_w = p->out_w;
  const int32_t row = dil_h * in_w * ch, col = dil_w * ch;
  const struct dw3x3_out q = {p->output_offset, p->act_min, p->act_max, p->rounding,
                              p->requant_form};
  const int32_t full = q.lo == -128 && q.hi == 127;
  /* The zero point for padded taps to read: the planner gives the scratch exactly when
   * some pixel has a padded tap (aot/kernels/dsp.py). */
  if (scratch) memset(scratch, (uint8_t)(int8_t)(-p->input_offset), (size_t)ch);
  /* The interior columns [ox_lo, ox_hi): every tap column inside the image. */
  int32_t ox_lo = 0, ox_hi = out_w;
  while (ox_lo < out_w && dw_inside3(ox_lo * stride_w - pad_left, dil_w, in_w) != 7u) ++ox_lo;
  while (ox_hi > ox_lo && dw_inside3((ox_hi - 1) * stride_w - pad_left, dil_w, in_w) != 7u) {
    --ox_hi;
  }
  /* and the rows [oy_lo, oy_hi) whose tap rows are all inside */
  int32_t oy_lo = 0, oy_hi = out_h;
  while (oy_lo < out_h && dw_inside3(oy_lo * stride_h - pad_top, dil_h, in_h) != 7u) ++oy_lo;
  while (oy_hi > oy_lo && dw_inside3((oy_hi - 1) * stride_h - pad_top, dil_h, in_h) != 7u) {
    --oy_hi;
  }
#if AOT_K_HAVE_DSP
  /* Border columns as runs down the rows: below 4 rows the column biases (built per
   * group) and the calls cost more than the tap table (vww_96_int8's 3x3 image). */
  /* Below 8 interior pixels the blocks (built per group) cost more than the runs save:
   * vww_96_int8's 3x3 image, one interior pixel per group, goes through the tap table. */
  const int32_t runs = q.rounding == 0 && dw_blocks_fit(rq, ch, q.form) && ox_hi > ox_lo &&
                       (ox_hi - ox_lo) * (oy_hi - oy_lo) >= 8;
  const int32_t columns = runs && oy_hi - oy_lo >= 4;
  const int32_t row_runs = runs && ox_hi - ox_lo >= 2; /* the same for the top and bottom */
#else
  const int32_t runs = 0, columns = 0, row_runs = 0; /* the M3: all through the tap table */
#endif
  for (int32_t b = 0; b < p->batches; ++b) {
    const int8_t* image = input + b * in_h * in_w * ch;
    int8_t* image_out = output + b * out_h * out_w * ch;
#if AOT_K_HAVE_DSP
    if (runs) {
      const int32_t step = stride_w * ch;
      struct dw_block blk;
      for (int32_t c = 0; c < ch; c += 4) {
        const int8_t* w = weights + 18 * c; /* 9 taps x 8 bytes per group of 4 channels */
        dw_block_make(&blk, rq + c, q.zp, w, -p->input_offset, columns, row_runs);
        for (int32_t oy = 0; oy < out_h; ++oy) {
          const int32_t iy0 = oy * stride_h - pad_top;
          if (dw_inside3(iy0, dil_h, in_h) != 7u) continue;
          const int8_t* x = image + (iy0 * in_w + ox_lo * stride_w - pad_left) * ch + c;
          int8_t* o = image_out + (oy * out_w + ox_lo) * ch + c;
          const int32_t n = ox_hi - ox_lo;
          if (full) {
            dw3x3_run_full(x, n, step, row, col, &blk, q.lo, q.hi, o, ch);
          } else if (q.lo == -128) {
            dw3x3_run_upper(x, n, step, row, col, &blk, q.lo, q.hi, o, ch);
          } else {
            dw3x3_run_clamped(x, n, step, row, col, &blk, q.lo, q.hi, o, ch);
          }
        }
        for (int32_t ox = 0; ox < out_w && columns; ox = ox + 1 == ox_lo ? ox_hi : ox + 1) {
          const int32_t ix0 = ox * stride_w - pad_left;
          const int32_t kind = dw_column_kind(ox, ox_lo, ox_hi, dw_inside3(ix0, dil_w, in_w));
          if (kind == DW_TAPS_ALL) continue;
          const int32_t iy0 = oy_lo * stride_h - pad_top;
          /* x at the first tap column inside */
          const int8_t* x = image + (iy0 * in_w + ix0) * ch + c +
                            (kind == DW_TAPS_BUT_FIRST_COLUMN ? col : 0);
          int8_t* o = image_out + (oy_lo * out_w + ox) * ch + c;
          const int32_t n = oy_hi - oy_lo, down = stride_h * in_w * ch;
          if (full) {
            dw3x3_edge_run_full(x, n, down, row, col, &blk, q.lo, q.hi, o, out_w * ch, kind);
          } else {
            dw3x3_edge_run_clamped(x, n, down, row, col, &blk, q.lo, q.hi, o, out_w * ch,
                                   kind);
          }
        }
        for (int32_t oy = 0; oy < out_h && row_runs; oy = oy + 1 == oy_lo ? oy_hi : oy + 1) {
          const int32_t iy0 = oy * stride_h - pad_top;
          const int32_t kind = dw_row_kind(oy, oy_lo, oy_hi, dw_inside3(iy0, dil_h, in_h));
          if (kind == DW_TAPS_ALL) continue;
          /* x at the first tap row inside */
          const int32_t iy = iy0 + (kind == DW_TAPS_BUT_FIRST_ROW ? dil_h : 0);
          const int8_t* x = image + (iy * in_w + ox_lo * stride_w - pad_left) * ch + c;
          int8_t* o = image_out + (oy * out_w + ox_lo) * ch + c;
          const int32_t n = ox_hi - ox_lo;
          if (full) {
            dw3x3_edge_run_full(x, n, step, row, col, &blk, q.lo, q.hi, o, ch, kind);
          } else {
            dw3x3_edge_run_clamped(x, n, step, row, col, &blk, q.lo, q.hi, o, ch, kind);
          }
        }
      }
    }
#endif
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const int32_t iy0 = oy * stride_h - pad_top;
      const uint32_t rows = dw_inside3(iy0, dil_h, in_h);
      /* valid: bit 3 * ky + kx; each row's bit spread to its three */
      const uint32_t row_bits = (rows & 1u) * 7u | (rows & 2u) * 28u | (rows & 4u) * 112u;
      for (int32_t ox = 0; ox < out_w; ++ox) {
        const int32_t ran = (runs && rows == 7u) ||
                            (row_runs && dw_row_kind(oy, oy_lo, oy_hi, rows) != DW_TAPS_ALL);
        if (ran && ox == ox_lo) {
          ox = ox_hi - 1; /* the interior columns ran above */
          continue;
        }
        const int32_t ix0 = ox * stride_w - pad_left;
        const uint32_t cols = dw_inside3(ix0, dil_w, in_w);
        if (columns && rows == 7u && dw_column_kind(ox, ox_lo, ox_hi, cols) != DW_TAPS_ALL) {
          continue; /* ran above as a column */
        }
        uint32_t valid = row_bits & (cols * 0x49u);
        const int8_t* x = image + (iy0 * in_w + ix0) * ch;
        const int8_t* t[9];
        for (int32_t k = 0; k < 9; k += 3, x += row, valid >>= 3) {
          t[k] = (valid & 1u) ? x : scratch;
          t[k + 1] = (valid & 2u) ? x + col : scratch;
          t[k + 2] = (valid & 4u) ? x + 2 * col : scratch;
        }
        int8_t* o = image_out + (oy * out_w + ox) * ch;
        if (full) {
          dw3x3_edge_full(t, weights, rq, ch, &q, o);
        } else {
          dw3x3_edge_clamped(t, weights, rq, ch, &q, o);
        }
      }
    }
  }
}
