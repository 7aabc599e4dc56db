/* CONV_2D int8 with Helium (MVE): NHWC input, OHWI weights, per-channel requantization.
 *
 * Each output pixel's receptive field is gathered into one row of k_h * k_w * in_c bytes
 * (im2col, in the planned scratch; padded taps hold the input zero point, which the bias
 * has already folded out), then multiplied with four weight rows at a time by VMLADAVA
 * (weights blocked at build time: aot_mve_row_times_weights).
 * A 1x1 convolution without padding reads the input pixel in place: no copy, no scratch. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

static void fill(int8_t* dst, int32_t n, int8_t value) {
  const int8x16_t v = vdupq_n_s8(value);
  for (int32_t c = 0; c < n; c += 16) vstrbq_p_s8(dst + c, v, vctp8q((uint32_t)(n - c)));
}

static void copy(int8_t* dst, const int8_t* src, int32_t n) {
  for (int32_t c = 0; c < n; c += 16) {
    const mve_pred16_t p = vctp8q((uint32_t)(n - c));
    vstrbq_p_s8(dst + c, vldrbq_z_s8(src + c, p), p);
  }
}

/* one kernel row of the receptive field: k_w taps of in_c bytes, padded taps = pad;
 * without dilation the taps inside the image are one contiguous copy */
static int8_t* gather_row(int8_t* dst, const int8_t* row, int32_t x0, int32_t k_w, int32_t dil_w,
                          int32_t in_w, int32_t in_c, int8_t pad) {
  if (dil_w == 1) {
    const int32_t left = x0 < 0 ? (-x0 < k_w ? -x0 : k_w) : 0;
    const int32_t end = x0 + k_w > in_w ? in_w - x0 : k_w; /* taps before the right edge */
    const int32_t mid = end > left ? end - left : 0;
    fill(dst, left * in_c, pad);
    copy(dst + left * in_c, row + (x0 + left) * in_c, mid * in_c);
    fill(dst + (left + mid) * in_c, (k_w - left - mid) * in_c, pad);
    return dst + k_w * in_c;
  }
  for (int32_t kx = 0; kx < k_w; ++kx, dst += in_c) {
    const int32_t ix = x0 + kx * dil_w;
    if (ix >= 0 && ix < in_w) {
      copy(dst, row + ix * in_c, in_c);
    } else {
      fill(dst, in_c, pad);
    }
  }
  return dst;
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
            if (iy >= 0 && iy < p->in_h) {
              dst = gather_row(dst, image + iy * p->in_w * in_c, x0, p->k_w, p->dil_w, p->in_w,
                               in_c, pad);
            } else {
              fill(dst, p->k_w * in_c, pad);
              dst += p->k_w * in_c;
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
