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
 * requantization, runs of pixels two per pass on the DSP.
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
 * reads them at its own offset. On the DSP, runs of pixels (interior ones, and border
 * columns and rows with one padded tap line) go channel groups outermost through
 * aot_k_dw3x3_passes, two pixels per pass in assembly (below). */

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
/* -- Two output pixels per pass (aot_k_dw3x3_passes, assembly) ---------------------------
 * A run is a line of output pixels along one axis (a row of the image, or a column) whose
 * windows lie inside the image on its `lines` tap lines across that axis (3, or 2 where
 * a border pixel's first or last tap line is padding). Two neighbouring pixels are one
 * pass: at stride 1 their windows share two of their three tap positions along the run,
 * at stride 2 one, so each input word of a group is loaded and unpacked (LDR, two
 * SXTB16) once per pass and feeds both pixels' four accumulators (eight in all), with
 * each tap's weights one LDRD. The group's weights, bias and requantization live in the
 * pass's stack frame (a copy of struct dw_pass_block), so SP addresses them and the
 * fourteen other registers hold the accumulators, the input pointer, the line stride,
 * the unpacked input and a tap's weights.
 *
 * The weights and the bias are doubled (2w as halfwords, 2 * bias), so the accumulator is
 * A = 2 * acc, and the requantization of aot_k_rq_high (double rounding, right shift
 * r = shift + 1 >= 1) becomes one SMMLAR: with N = 2^(r-1) + zp * 2^r,
 *   out = SMMLAR(A, m, N - [A < 0]) >> r
 * is floor((2 acc m + 2^31 + 2^(31+r) - [acc < 0] 2^32 + zp 2^(32+r)) / 2^(32+r)), the
 * merged form (docs/kernels.md) times 2/2 with zp added. It needs |A| < 2^31 (the bias
 * below 2^29, checked per call: 2 * 128 * 9 * 128 more cannot overflow) and the SMMLAR
 * result in int32 (r <= 22: |A m| / 2^32 < 2^30, |zp| 2^r <= 2^29). Then SSAT, four
 * channels packed into a word (BFI), narrower activation bounds as SSUB8 + SEL on the
 * four bytes, and one STR per pixel. */
struct dw_pass_block {
  int32_t bias[8]; /* the group's doubled bias, twice: one LDM for 8 accumulators */
  /* [line][tap along the run] of (c0, c2), (c1, c3) doubled halfwords: 18 words, copied
   * to the frame after the bias */
  const int32_t* weights;
  int32_t rec[12];   /* per channel N, m, r */
  uint32_t lo4, hi4; /* the activation bounds in every byte */
  int32_t along;     /* input bytes between tap positions along the run */
  int32_t line;      /* input bytes between the tap lines */
  int32_t out_step;  /* output bytes between the run's pixels */
  int32_t clamp;     /* whether the bounds are narrower than int8's */
  uint32_t loop;     /* the pass loop for these lines and stride (a Thumb address) */
  uint32_t single;   /* the loop of a last, odd pixel for these lines */
};
_Static_assert(offsetof(struct dw_pass_block, weights) == 32 &&
                   offsetof(struct dw_pass_block, rec) == 36 &&
                   offsetof(struct dw_pass_block, loop) == 108 &&
                   sizeof(struct dw_pass_block) == 116,
               "aot_k_dw3x3_passes copies struct dw_pass_block to its frame: the bias to 0, "
               "the weights to 32, rec to 104, lo4 to 152, along to 160, loop to 176, "
               "single to 180");

/* n >= 1 pixels of a run from x (pixel 0's first tap line and position, at its group's
 * channel offset) and out: pairs, each pass starting two pixels on, then an odd last
 * pixel alone. */
void aot_k_dw3x3_passes(const int8_t* x, int8_t* out, int32_t n, const struct dw_pass_block* blk);
/* The pass loops (entered through the block's `loop`): 3 or 2 tap lines, stride 1 or 2;
 * and the one-pixel loops (`single`). */
void aot_k_dw3x3_l3s1(void);
void aot_k_dw3x3_l3s2(void);
void aot_k_dw3x3_l2s1(void);
void aot_k_dw3x3_l2s2(void);
void aot_k_dw3x3_l3p1(void);
void aot_k_dw3x3_l2p1(void);

/* Registers: r0-r3 pixel 0's accumulators (channels 0-3), r4-r7 pixel 1's, r8 the input
 * (at a tap position of line 0), r9 the line stride, r10/r11 the input word unpacked
 * (channels 0, 2 / 1, 3), r12/lr a tap's weights. Frame: the block at SP (offsets
 * above), then the output pointer and the passes left at 184 and 188. */
__asm__(
    ".pushsection .text.aot_k_dw3x3_passes,\"ax\",%progbits\n"
    ".syntax unified\n"
    ".thumb\n"
    /* line kb's input word at the current tap position, unpacked */
    ".macro aot_dw_ld kb\n"
    ".if \\kb == 0\n ldr r10, [r8]\n"
    ".elseif \\kb == 1\n ldr r10, [r8, r9]\n"
    ".else\n ldr r10, [r8, r9, lsl #1]\n.endif\n"
    " sxtb16 r11, r10, ror #8\n"
    " sxtb16 r10, r10\n"
    ".endm\n"
    /* pixel p's four channels times the weights at frame offset off */
    ".macro aot_dw_mac p, off\n"
    " ldrd r12, lr, [sp, #\\off]\n"
    ".if \\p == 0\n"
    " smlabb r0, r10, r12, r0\n smlabb r1, r11, lr, r1\n"
    " smlatt r2, r10, r12, r2\n smlatt r3, r11, lr, r3\n"
    ".else\n"
    " smlabb r4, r10, r12, r4\n smlabb r5, r11, lr, r5\n"
    " smlatt r6, r10, r12, r6\n smlatt r7, r11, lr, r7\n"
    ".endif\n"
    ".endm\n"
    /* one tap position on every line: pixel 0 with its tap t0, pixel 1 with t1 (-1: none) */
    ".macro aot_dw_pos lines, t0, t1\n"
    ".irp kb, 0, 1, 2\n"
    ".if \\kb < \\lines\n"
    " aot_dw_ld \\kb\n"
    ".if \\t0 >= 0\n aot_dw_mac 0, (32+24*\\kb+8*\\t0)\n.endif\n"
    ".if \\t1 >= 0\n aot_dw_mac 1, (32+24*\\kb+8*\\t1)\n.endif\n"
    ".endif\n"
    ".endr\n"
    ".endm\n"
    /* the input pointer one position on (1), two (2) or one back (-1) */
    ".macro aot_dw_adv n\n"
    " ldr r10, [sp, #160]\n"
    ".if \\n == 1\n add r8, r8, r10\n"
    ".elseif \\n == 2\n add r8, r8, r10, lsl #1\n"
    ".else\n sub r8, r8, r10\n.endif\n"
    ".endm\n"
    /* stride 1: positions 0, 1, 3, 2 (the next pass starts at 2); stride 2: 0 to 4;
     * one pixel (stride 0 here): 0 to 2 */
    ".macro aot_dw_loop name, lines, stride\n"
    ".balign 4\n"
    ".type \\name, %function\n"
    ".thumb_func\n"
    "\\name:\n"
    ".if \\stride == 0\n"
    " ldm sp, {r0-r3}\n"
    " aot_dw_pos \\lines, 0, -1\n aot_dw_adv 1\n"
    " aot_dw_pos \\lines, 1, -1\n aot_dw_adv 1\n"
    " aot_dw_pos \\lines, 2, -1\n"
    " b aot_k_dw3x3_tail1\n"
    ".elseif \\stride == 1\n"
    " ldm sp, {r0-r7}\n"
    " aot_dw_pos \\lines, 0, -1\n aot_dw_adv 1\n"
    " aot_dw_pos \\lines, 1, 0\n aot_dw_adv 2\n"
    " aot_dw_pos \\lines, -1, 2\n aot_dw_adv -1\n"
    " aot_dw_pos \\lines, 2, 1\n"
    " b aot_k_dw3x3_tail\n"
    ".else\n"
    " ldm sp, {r0-r7}\n"
    " aot_dw_pos \\lines, 0, -1\n aot_dw_adv 1\n"
    " aot_dw_pos \\lines, 1, -1\n aot_dw_adv 1\n"
    " aot_dw_pos \\lines, 2, 0\n aot_dw_adv 1\n"
    " aot_dw_pos \\lines, -1, 1\n aot_dw_adv 1\n"
    " aot_dw_pos \\lines, -1, 2\n"
    " b aot_k_dw3x3_tail\n"
    ".endif\n"
    ".size \\name, . - \\name\n"
    ".endm\n"
    /* channel i of both pixels (accumulators a and b): the record from r9 */
    ".macro aot_dw_rq a, b\n"
    " ldm r9!, {r10, r11, r12}\n"
    " add lr, r10, r\\a, asr #31\n"
    " smmlar r\\a, r\\a, r11, lr\n"
    " asr r\\a, r\\a, r12\n"
    " ssat r\\a, #8, r\\a\n"
    " add lr, r10, r\\b, asr #31\n"
    " smmlar r\\b, r\\b, r11, lr\n"
    " asr r\\b, r\\b, r12\n"
    " ssat r\\b, #8, r\\b\n"
    ".endm\n"
    ".balign 4\n"
    ".type aot_k_dw3x3_passes, %function\n"
    ".thumb_func\n"
    "aot_k_dw3x3_passes:\n"
    " push {r4-r11, lr}\n"
    " sub sp, sp, #196\n"
    " strd r1, r2, [sp, #184]\n"
    " mov r8, r0\n"
    " ldm r3!, {r0-r2, r4-r7, r9}\n"
    " stm sp, {r0-r2, r4-r7, r9}\n"
    " ldr r12, [r3], #4\n"
    " add lr, sp, #32\n"
    " ldm r12!, {r0-r2, r4-r7, r9-r11}\n"
    " stm lr!, {r0-r2, r4-r7, r9-r11}\n"
    " ldm r12, {r0-r2, r4-r7, r9}\n"
    " stm lr!, {r0-r2, r4-r7, r9}\n"
    " ldm r3!, {r0-r2, r4-r7, r9-r11}\n"
    " stm lr!, {r0-r2, r4-r7, r9-r11}\n"
    " ldm r3, {r0-r2, r4-r7, r9-r11}\n"
    " stm lr, {r0-r2, r4-r7, r9-r11}\n"
    " ldr r9, [sp, #164]\n"
    " ldr r10, [sp, #188]\n"
    " cmp r10, #2\n"
    " it ge\n"
    " ldrge pc, [sp, #176]\n"
    " ldr pc, [sp, #180]\n"
    ".size aot_k_dw3x3_passes, . - aot_k_dw3x3_passes\n"
    "aot_dw_loop aot_k_dw3x3_l3s1, 3, 1\n"
    "aot_dw_loop aot_k_dw3x3_l3s2, 3, 2\n"
    "aot_dw_loop aot_k_dw3x3_l2s1, 2, 1\n"
    "aot_dw_loop aot_k_dw3x3_l2s2, 2, 2\n"
    "aot_dw_loop aot_k_dw3x3_l3p1, 3, 0\n"
    "aot_dw_loop aot_k_dw3x3_l2p1, 2, 0\n"
    ".balign 4\n"
    ".type aot_k_dw3x3_tail, %function\n"
    "aot_k_dw3x3_tail:\n"
    " add r9, sp, #104\n"
    " aot_dw_rq 0, 4\n"
    " aot_dw_rq 1, 5\n"
    " aot_dw_rq 2, 6\n"
    " aot_dw_rq 3, 7\n"
    " bfi r0, r1, #8, #8\n"
    " bfi r0, r2, #16, #8\n"
    " bfi r0, r3, #24, #8\n"
    " bfi r4, r5, #8, #8\n"
    " bfi r4, r6, #16, #8\n"
    " bfi r4, r7, #24, #8\n"
    " ldr r1, [sp, #172]\n"
    " cbz r1, 1f\n"
    " ldrd r10, r11, [sp, #152]\n"
    " ssub8 r12, r0, r10\n"
    " sel r0, r0, r10\n"
    " ssub8 r12, r4, r10\n"
    " sel r4, r4, r10\n"
    " ssub8 r12, r11, r0\n"
    " sel r0, r0, r11\n"
    " ssub8 r12, r11, r4\n"
    " sel r4, r4, r11\n"
    "1:\n"
    " ldrd r10, r11, [sp, #184]\n"
    " ldr r12, [sp, #168]\n"
    " str r0, [r10]\n"
    " str r4, [r10, r12]\n"
    " add r10, r10, r12, lsl #1\n"
    " subs r11, r11, #2\n"
    " strd r10, r11, [sp, #184]\n"
    " ldr r9, [sp, #164]\n"
    " cmp r11, #2\n"
    " it ge\n"
    " ldrge pc, [sp, #176]\n"
    " cmp r11, #0\n"
    " it ne\n"
    " ldrne pc, [sp, #180]\n"
    " add sp, sp, #196\n"
    " pop {r4-r11, pc}\n"
    ".size aot_k_dw3x3_tail, . - aot_k_dw3x3_tail\n"
    /* the same for one pixel (r0-r3) */
    ".balign 4\n"
    ".type aot_k_dw3x3_tail1, %function\n"
    "aot_k_dw3x3_tail1:\n"
    " add r9, sp, #104\n"
    ".irp i, 0, 1, 2, 3\n"
    " ldm r9!, {r10, r11, r12}\n"
    " add lr, r10, r\\i, asr #31\n"
    " smmlar r\\i, r\\i, r11, lr\n"
    " asr r\\i, r\\i, r12\n"
    " ssat r\\i, #8, r\\i\n"
    ".endr\n"
    " bfi r0, r1, #8, #8\n"
    " bfi r0, r2, #16, #8\n"
    " bfi r0, r3, #24, #8\n"
    " ldr r1, [sp, #172]\n"
    " cbz r1, 1f\n"
    " ldrd r10, r11, [sp, #152]\n"
    " ssub8 r12, r0, r10\n"
    " sel r0, r0, r10\n"
    " ssub8 r12, r11, r0\n"
    " sel r0, r0, r11\n"
    "1:\n"
    " ldr r10, [sp, #184]\n"
    " str r0, [r10]\n"
    " add sp, sp, #196\n"
    " pop {r4-r11, pc}\n"
    ".size aot_k_dw3x3_tail1, . - aot_k_dw3x3_tail1\n"
    ".purgem aot_dw_ld\n"
    ".purgem aot_dw_mac\n"
    ".purgem aot_dw_pos\n"
    ".purgem aot_dw_adv\n"
    ".purgem aot_dw_loop\n"
    ".purgem aot_dw_rq\n"
    ".popsection\n");

/* Whether the passes take the call: double rounding, the records' high form with every
 * right shift at most 22 (the SMMLAR result in int32) and every bias below 2^29 (the
 * doubled accumulator in int32). */
static int32_t dw_passes_fit(const struct aot_k_rq* rq, int32_t ch, int32_t form,
                             int32_t rounding) {
  if (form != AOT_K_RQ_HIGH || rounding != 0) return 0;
  for (int32_t i = 0; i < ch; ++i) {
    const int32_t b = rq[i].bias;
    if (b >= (1 << 29) || b <= -(1 << 29)) return 0;
    if (rq[i].multiplier != 0 && (rq[i].shift > 21 || rq[i].sign_term != INT32_MIN)) return 0;
  }
  return 1;
}

/* A group's doubled weights in both orders, [kernel row][kernel column] (runs along rows)
 * and [column][row] (runs down columns), two words a tap, then the 24 bytes that the
 * copy of 18 words from line 1 of `down` reads; and its doubled bias. */
struct dw_group {
  int32_t across[18], down[18], tail[6];
  int32_t bias[4];
};

static void dw_group_make(struct dw_group* g, struct dw_pass_block* blk, const int8_t* w,
                          const struct aot_k_rq* rq, int32_t zp) {
  for (int32_t ky = 0; ky < 3; ++ky) {
    for (int32_t kx = 0; kx < 3; ++kx, w += 8) {
      const int32_t e = aot_k_load32(w), o = aot_k_load32(w + 4);
      const int32_t e2 = aot_k_sadd16(e, e), o2 = aot_k_sadd16(o, o);
      g->across[6 * ky + 2 * kx] = g->down[6 * kx + 2 * ky] = e2;
      g->across[6 * ky + 2 * kx + 1] = g->down[6 * kx + 2 * ky + 1] = o2;
    }
  }
  for (int32_t i = 0; i < 4; ++i) {
    const int32_t m = rq[i].multiplier, r = m ? rq[i].shift + 1 : 1;
    g->bias[i] = 2 * rq[i].bias;
    blk->rec[3 * i] = (1 << (r - 1)) + zp * (1 << r);
    blk->rec[3 * i + 1] = m;
    blk->rec[3 * i + 2] = r;
  }
}

/* The block for runs over `lines` tap lines from line k0 of `order` (a dw_group array),
 * with padded: the padded tap line (-1: none), whose zp * w the bias gets back. */
static inline void dw_pass_kind(struct dw_pass_block* blk, const struct dw_group* g,
                                const int32_t* order, int32_t input_zp, int32_t k0,
                                int32_t lines, int32_t padded, int32_t stride) {
  blk->weights = order + 6 * k0;
  int32_t b0 = g->bias[0], b1 = g->bias[1], b2 = g->bias[2], b3 = g->bias[3];
  if (padded >= 0) {
    /* the padded line's doubled weights summed, per channel */
    const int32_t* t = order + 6 * padded;
    const int32_t even = aot_k_sadd16(aot_k_sadd16(t[0], t[2]), t[4]);
    const int32_t odd = aot_k_sadd16(aot_k_sadd16(t[1], t[3]), t[5]);
    b0 += input_zp * (int16_t)even, b1 += input_zp * (int16_t)odd;
    b2 += input_zp * (even >> 16), b3 += input_zp * (odd >> 16);
  }
  blk->bias[0] = blk->bias[4] = b0, blk->bias[1] = blk->bias[5] = b1;
  blk->bias[2] = blk->bias[6] = b2, blk->bias[3] = blk->bias[7] = b3;
  blk->loop = lines == 3 ? (stride == 1 ? (uint32_t)(uintptr_t)&aot_k_dw3x3_l3s1
                                        : (uint32_t)(uintptr_t)&aot_k_dw3x3_l3s2)
                         : (stride == 1 ? (uint32_t)(uintptr_t)&aot_k_dw3x3_l2s1
                                        : (uint32_t)(uintptr_t)&aot_k_dw3x3_l2s2);
  blk->single = lines == 3 ? (uint32_t)(uintptr_t)&aot_k_dw3x3_l3p1
                           : (uint32_t)(uintptr_t)&aot_k_dw3x3_l2p1;
}

/* A run's cost in instructions, about (a pass 190, one pixel 110, a call 40), to choose
 * the direction of the interior runs. */
static int32_t dw_runs_cost(int32_t runs, int32_t n) {
  return runs * ((n >> 1) * 190 + (n & 1) * 110 + 40);
}

enum { DW_INNER_NONE, DW_INNER_ROWS, DW_INNER_COLUMNS };
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
  const int32_t n_rows = oy_hi - oy_lo, n_cols = ox_hi - ox_lo;
#if AOT_K_HAVE_DSP
  /* Runs along rows need their taps one column apart and a stride of 1 or 2 across
   * them (the pass loops), runs down columns the same between rows. */
  /* Below 8 interior pixels the group setup (the doubled weights, one block per kind of
   * run) costs what the passes save over the tap table (vww_96_int8's 3x3 images). */
  const int32_t fit = n_rows * n_cols >= 8 && dw_passes_fit(rq, ch, q.form, q.rounding);
  const int32_t across = fit && dil_w == 1 && stride_w <= 2 && n_cols >= 2;
  const int32_t down = fit && dil_h == 1 && stride_h <= 2 && n_rows >= 2;
  int32_t inner = DW_INNER_NONE;
  if (across && (!down || dw_runs_cost(n_rows, n_cols) <= dw_runs_cost(n_cols, n_rows))) {
    inner = DW_INNER_ROWS;
  } else if (down) {
    inner = DW_INNER_COLUMNS;
  }
  const int32_t columns = down, row_runs = across; /* the border columns and rows */
#else
  const int32_t inner = 0, columns = 0, row_runs = 0; /* the M3: all through the tap table */
  (void)n_rows;
#endif
  for (int32_t b = 0; b < p->batches; ++b) {
    const int8_t* image = input + b * in_h * in_w * ch;
    int8_t* image_out = output + b * out_h * out_w * ch;
#if AOT_K_HAVE_DSP
    if (inner != DW_INNER_NONE || columns || row_runs) {
      const int32_t input_zp = -p->input_offset;
      struct dw_pass_block blk;
      struct dw_group g;
      blk.lo4 = (uint32_t)(uint8_t)(int8_t)q.lo * 0x01010101u;
      blk.hi4 = (uint32_t)(uint8_t)(int8_t)q.hi * 0x01010101u;
      blk.clamp = !full;
      const int32_t iy_lo = oy_lo * stride_h - pad_top, ix_lo = ox_lo * stride_w - pad_left;
      for (int32_t c = 0; c < ch; c += 4) {
        dw_group_make(&g, &blk, weights + 18 * c, rq + c, q.zp);
        if (inner == DW_INNER_ROWS) {
          dw_pass_kind(&blk, &g, g.across, input_zp, 0, 3, -1, stride_w);
          blk.along = ch, blk.line = row, blk.out_step = ch;
          for (int32_t oy = oy_lo; oy < oy_hi; ++oy) {
            const int32_t iy0 = oy * stride_h - pad_top;
            aot_k_dw3x3_passes(image + (iy0 * in_w + ix_lo) * ch + c,
                   image_out + (oy * out_w + ox_lo) * ch + c, n_cols, &blk);
          }
        } else if (inner == DW_INNER_COLUMNS) {
          dw_pass_kind(&blk, &g, g.down, input_zp, 0, 3, -1, stride_h);
          blk.along = in_w * ch, blk.line = col, blk.out_step = out_w * ch;
          for (int32_t ox = ox_lo; ox < ox_hi; ++ox) {
            const int32_t ix0 = ox * stride_w - pad_left;
            aot_k_dw3x3_passes(image + (iy_lo * in_w + ix0) * ch + c,
                   image_out + (oy_lo * out_w + ox) * ch + c, n_rows, &blk);
          }
        }
        /* border columns with their first or last tap column padded, down the rows */
        int32_t built = DW_TAPS_ALL;
        for (int32_t ox = 0; ox < out_w && columns; ox = ox + 1 == ox_lo ? ox_hi : ox + 1) {
          const int32_t ix0 = ox * stride_w - pad_left;
          const int32_t kind = dw_column_kind(ox, ox_lo, ox_hi, dw_inside3(ix0, dil_w, in_w));
          if (kind == DW_TAPS_ALL) continue;
          const int32_t left = kind == DW_TAPS_BUT_FIRST_COLUMN;
          if (kind != built) {
            dw_pass_kind(&blk, &g, g.down, input_zp, left, 2, left ? 0 : 2, stride_h);
            blk.along = in_w * ch, blk.line = col, blk.out_step = out_w * ch;
            built = kind;
          }
          aot_k_dw3x3_passes(image + (iy_lo * in_w + ix0) * ch + c + (left ? col : 0),
                 image_out + (oy_lo * out_w + ox) * ch + c, n_rows, &blk);
        }
        /* border rows with their first or last tap row padded, across the columns */
        for (int32_t oy = 0; oy < out_h && row_runs; oy = oy + 1 == oy_lo ? oy_hi : oy + 1) {
          const int32_t iy0 = oy * stride_h - pad_top;
          const int32_t kind = dw_row_kind(oy, oy_lo, oy_hi, dw_inside3(iy0, dil_h, in_h));
          if (kind == DW_TAPS_ALL) continue;
          const int32_t top = kind == DW_TAPS_BUT_FIRST_ROW;
          if (kind != built) {
            dw_pass_kind(&blk, &g, g.across, input_zp, top, 2, top ? 0 : 2, stride_w);
            blk.along = ch, blk.line = row, blk.out_step = ch;
            built = kind;
          }
          aot_k_dw3x3_passes(image + (iy0 * in_w + ix_lo) * ch + c + (top ? row : 0),
                 image_out + (oy * out_w + ox_lo) * ch + c, n_cols, &blk);
        }
      }
    }
#endif
    /* The rest pixel by pixel through the tap table: corners, and whatever no run took. */
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const int32_t iy0 = oy * stride_h - pad_top;
      const uint32_t rows = dw_inside3(iy0, dil_h, in_h);
      /* valid: bit 3 * ky + kx; each row's bit spread to its three */
      const uint32_t row_bits = (rows & 1u) * 7u | (rows & 2u) * 28u | (rows & 4u) * 112u;
      const int32_t row_ran = row_runs && dw_row_kind(oy, oy_lo, oy_hi, rows) != DW_TAPS_ALL;
      for (int32_t ox = 0; ox < out_w; ++ox) {
        if (ox == ox_lo && n_cols > 0 && ((inner && rows == 7u) || row_ran)) {
          ox = ox_hi - 1; /* the interior columns, or this border row's, ran above */
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
