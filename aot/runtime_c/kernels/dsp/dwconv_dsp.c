/* int8 depthwise conv2d with the DSP extension.
 *
 * Fast path (depth multiplier 1, channels a multiple of 4): four channels per word,
 * SXTB16 unpacks them to two halfword pairs and SMLABB/SMLATT accumulate each channel.
 * The weights are re-laid out at build time as [channel group][tap] of two halfword
 * pairs (channels 0 and 2, then 1 and 3), so one pointer walks them with small immediate
 * offsets and only the input needs SXTB16; the bias has the input offset folded in
 * (bias + input_offset * sum of the channel's weights), so interior pixels, which have
 * every tap inside the image, multiply raw inputs with no per-tap check. Border pixels
 * (loop peeling: the same loop, decided per pixel) check each tap and take back
 * input_offset * w for the taps outside. 3x3 interior pixels are fully unrolled.
 * A padded tap costs two loads and four SMLAxy.
 * Other shapes (depth multiplier > 1, channels not a multiple of 4) take the scalar loop
 * over TFLite's [1, KH, KW, out_c] weights. No scratch. */
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

/* One interior pixel of a 3x3 kernel, every channel group. Its own (not inlined)
 * function so the register allocator sees only this loop's values. */
static __attribute__((noinline)) void dw3x3_pixel(const int8_t* r0, int32_t row, int32_t col,
                                                  const int8_t* w, const int32_t* bias,
                                                  int32_t ch, const struct dw_out* q_in,
                                                  int8_t* out) {
  const struct dw_out local = *q_in; /* int8 stores cannot alias a local copy */
  const struct dw_out* const q = &local;
  const int8_t* r1 = r0 + row;
  const int8_t* r2 = r1 + row;
  const int32_t col2 = 2 * col;
  for (int32_t c = 0; c < ch; c += 4, r0 += 4, r1 += 4, r2 += 4, w += 72) {
    int32_t acc0 = bias[c], acc1 = bias[c + 1], acc2 = bias[c + 2], acc3 = bias[c + 3];
    AOT_K_TAP(r0, 0);
    AOT_K_TAP(r0 + col, 8);
    AOT_K_TAP(r0 + col2, 16);
    AOT_K_TAP(r1, 24);
    AOT_K_TAP(r1 + col, 32);
    AOT_K_TAP(r1 + col2, 40);
    AOT_K_TAP(r2, 48);
    AOT_K_TAP(r2 + col, 56);
    AOT_K_TAP(r2 + col2, 64);
    store4(q, c, acc0, acc1, acc2, acc3, out + c);
  }
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
 * every tap is the same unpack and four SMLAxy with no per-tap test. 3x3 kernels are
 * unrolled; other kernels loop over the tap pointers. */
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
  if (taps == 9) {
    for (int32_t c = 0; c < ch; c += 4, w += 72) {
      int32_t acc0 = bias[c], acc1 = bias[c + 1], acc2 = bias[c + 2], acc3 = bias[c + 3];
      AOT_K_TAP(tap[0] + c, 0);
      AOT_K_TAP(tap[1] + c, 8);
      AOT_K_TAP(tap[2] + c, 16);
      AOT_K_TAP(tap[3] + c, 24);
      AOT_K_TAP(tap[4] + c, 32);
      AOT_K_TAP(tap[5] + c, 40);
      AOT_K_TAP(tap[6] + c, 48);
      AOT_K_TAP(tap[7] + c, 56);
      AOT_K_TAP(tap[8] + c, 64);
      store4(q, c, acc0, acc1, acc2, acc3, out + c);
    }
    return;
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
  const int32_t three = kh == 3 && kw == 3;
  /* The zero point for padded taps to read, when the planner gave the scratch for it. */
  if (pad) memset(pad, (uint8_t)(int8_t)(-p->input_offset), (size_t)ch);
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
        if (three && px.valid == 0x1FFu) {
          dw3x3_pixel(px.origin, row, col, weights, bias, ch, &q, out);
        } else if (pad) {
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
  if (p->depth_multiplier == 1 && (p->in_c & 3) == 0 && p->k_h * p->k_w <= 32) {
    dw_quads(p, input, weights, bias, multiplier, shift, output, scratch);
  } else {
    dw_any(p, input, weights, bias, multiplier, shift, output);
  }
}
