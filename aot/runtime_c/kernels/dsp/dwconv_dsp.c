/* int8 depthwise conv2d with the DSP extension.
 *
 * Fast path (depth multiplier 1, channels a multiple of 4): four channels per word,
 * SXTB16 unpacks them to two halfword pairs and SMLABB/SMLATT accumulate each channel.
 * The weights are re-laid out at build time as [channel group][tap][4], so one pointer
 * walks them with small immediate offsets; the bias has the input offset folded in
 * (bias + input_offset * sum of the channel's weights), so interior pixels, which have
 * every tap inside the image, multiply raw inputs with no per-tap check. Border pixels
 * (loop peeling: the same loop, decided per pixel) check each tap and take back
 * input_offset * w for the taps outside. 3x3 interior pixels are fully unrolled.
 * Other shapes (depth multiplier > 1, channels not a multiple of 4) take the scalar loop
 * over TFLite's [1, KH, KW, out_c] weights. No scratch. */
#include "aot_kernels.h"
#include "aot_kernels_requant.h"
#include "aot_kernels_simd.h"

#define AOT_K_TAP(ptr, w_off)                       \
  do {                                              \
    const int32_t xv_ = aot_k_load32(ptr);          \
    const int32_t wv_ = aot_k_load32(w + (w_off));  \
    const int32_t xe_ = aot_k_sxtb16(xv_);          \
    const int32_t xo_ = aot_k_sxtb16_odd(xv_);      \
    const int32_t we_ = aot_k_sxtb16(wv_);          \
    const int32_t wo_ = aot_k_sxtb16_odd(wv_);      \
    acc0 = aot_k_smlabb(xe_, we_, acc0);            \
    acc1 = aot_k_smlabb(xo_, wo_, acc1);            \
    acc2 = aot_k_smlatt(xe_, we_, acc2);            \
    acc3 = aot_k_smlatt(xo_, wo_, acc3);            \
  } while (0)

static void store4(const struct aot_k_conv_params* p, const int32_t* multiplier,
                   const int32_t* shift, int32_t c, int32_t acc0, int32_t acc1, int32_t acc2,
                   int32_t acc3, int8_t* out) {
  const int32_t zp = p->output_offset, lo = p->act_min, hi = p->act_max, r = p->rounding;
  out[0] = aot_k_requant(acc0, multiplier[c], shift[c], r, zp, lo, hi);
  out[1] = aot_k_requant(acc1, multiplier[c + 1], shift[c + 1], r, zp, lo, hi);
  out[2] = aot_k_requant(acc2, multiplier[c + 2], shift[c + 2], r, zp, lo, hi);
  out[3] = aot_k_requant(acc3, multiplier[c + 3], shift[c + 3], r, zp, lo, hi);
}

static void dw_quads(const struct aot_k_conv_params* p, const int8_t* input,
                     const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                     const int32_t* shift, int8_t* output) {
  const int32_t ch = p->in_c, kh = p->k_h, kw = p->k_w, taps = kh * kw;
  const int32_t row = p->dil_h * p->in_w * ch, col = p->dil_w * ch;
  const int32_t off = p->input_offset;
  int8_t* out = output;
  for (int32_t b = 0; b < p->batches; ++b) {
    const int8_t* image = input + b * p->in_h * p->in_w * ch;
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
      const int32_t iy0 = oy * p->stride_h - p->pad_top;
      const int32_t rows_in = iy0 >= 0 && iy0 + (kh - 1) * p->dil_h < p->in_h;
      for (int32_t ox = 0; ox < p->out_w; ++ox, out += ch) {
        const int32_t ix0 = ox * p->stride_w - p->pad_left;
        const int32_t inside = rows_in && ix0 >= 0 && ix0 + (kw - 1) * p->dil_w < p->in_w;
        const int8_t* w = weights;
        if (inside && kh == 3 && kw == 3) {
          const int8_t* r0 = image + (iy0 * p->in_w + ix0) * ch;
          const int8_t* r1 = r0 + row;
          const int8_t* r2 = r1 + row;
          for (int32_t c = 0; c < ch; c += 4, r0 += 4, r1 += 4, r2 += 4, w += 36) {
            int32_t acc0 = bias[c], acc1 = bias[c + 1], acc2 = bias[c + 2], acc3 = bias[c + 3];
            AOT_K_TAP(r0, 0);
            AOT_K_TAP(r0 + col, 4);
            AOT_K_TAP(r0 + 2 * col, 8);
            AOT_K_TAP(r1, 12);
            AOT_K_TAP(r1 + col, 16);
            AOT_K_TAP(r1 + 2 * col, 20);
            AOT_K_TAP(r2, 24);
            AOT_K_TAP(r2 + col, 28);
            AOT_K_TAP(r2 + 2 * col, 32);
            store4(p, multiplier, shift, c, acc0, acc1, acc2, acc3, out + c);
          }
          continue;
        }
        for (int32_t c = 0; c < ch; c += 4, w += 4 * taps) {
          int32_t acc0 = bias[c], acc1 = bias[c + 1], acc2 = bias[c + 2], acc3 = bias[c + 3];
          for (int32_t ky = 0; ky < kh; ++ky) {
            const int32_t iy = iy0 + ky * p->dil_h;
            for (int32_t kx = 0; kx < kw; ++kx) {
              const int32_t ix = ix0 + kx * p->dil_w;
              const int32_t t = 4 * (ky * kw + kx);
              if (inside || (iy >= 0 && iy < p->in_h && ix >= 0 && ix < p->in_w)) {
                AOT_K_TAP(image + (iy * p->in_w + ix) * ch + c, t);
              } else {
                /* A padded tap reads the zero point: take back the folded offset. */
                acc0 -= off * w[t];
                acc1 -= off * w[t + 1];
                acc2 -= off * w[t + 2];
                acc3 -= off * w[t + 3];
              }
            }
          }
          store4(p, multiplier, shift, c, acc0, acc1, acc2, acc3, out + c);
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

void aot_k_dwconv_s8_dsp(const struct aot_k_conv_params* p, const int8_t* input,
                         const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                         const int32_t* shift, int8_t* output, int8_t* scratch) {
  (void)scratch;
  if (p->depth_multiplier == 1 && (p->in_c & 3) == 0) {
    dw_quads(p, input, weights, bias, multiplier, shift, output);
  } else {
    dw_any(p, input, weights, bias, multiplier, shift, output);
  }
}
