/* CONV_2D int8 with Helium (MVE): NHWC input, OHWI weights, per-channel requantization.
 *
 * Each output pixel's receptive field is gathered into one row of k_h * k_w * in_c bytes
 * (im2col, in the planned scratch; padded taps hold the input zero point, which the bias
 * has already folded out), then multiplied with four weight rows at a time by VMLADAVA.
 * A 1x1 convolution without padding reads the input pixel in place: no copy, no scratch. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

static void copy_or_fill(int8_t* dst, const int8_t* src, int32_t n, int8_t fill) {
  for (int32_t c = 0; c < n; c += 16) {
    const mve_pred16_t p = vctp8q((uint32_t)(n - c));
    const int8x16_t v = src ? vldrbq_z_s8(src + c, p) : vdupq_n_s8(fill);
    vstrbq_p_s8(dst + c, v, p);
  }
}

void aot_k_conv_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                       const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                       const int32_t* shift, int8_t* output, int8_t* scratch) {
  const int32_t in_c = p->in_c;
  const int32_t depth = p->k_h * p->k_w * in_c;
  const int32_t direct = p->k_h == 1 && p->k_w == 1 && p->pad_top == 0 && p->pad_left == 0;
  const int8_t pad = (int8_t)p->pad_value;
  for (int32_t n = 0; n < p->batches; ++n) {
    const int8_t* image = input + (int32_t)n * p->in_h * p->in_w * in_c;
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
      for (int32_t ox = 0; ox < p->out_w; ++ox) {
        const int32_t y0 = oy * p->stride_h - p->pad_top;
        const int32_t x0 = ox * p->stride_w - p->pad_left;
        const int8_t* row;
        if (direct) {
          row = image + (y0 * p->in_w + x0) * in_c;
        } else {
          int8_t* dst = scratch;
          for (int32_t ky = 0; ky < p->k_h; ++ky) {
            const int32_t iy = y0 + ky * p->dil_h;
            const int32_t row_inside = iy >= 0 && iy < p->in_h;
            for (int32_t kx = 0; kx < p->k_w; ++kx, dst += in_c) {
              const int32_t ix = x0 + kx * p->dil_w;
              const int32_t inside = row_inside && ix >= 0 && ix < p->in_w;
              copy_or_fill(dst, inside ? image + (iy * p->in_w + ix) * in_c : 0, in_c, pad);
            }
          }
          row = scratch;
        }
        aot_mve_row_times_weights(row, depth, weights, p->out_c, bias, multiplier, shift,
                                  p->output_offset, p->act_min, p->act_max, p->rounding,
                                  output);
        output += p->out_c;
      }
    }
  }
}
#endif
