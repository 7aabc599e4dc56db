/* DEPTHWISE_CONV_2D int8 with Helium (MVE), any depth multiplier.
 *
 * Four channels per vector in int32 lanes (VLDRB widening loads, VMUL + VADD: MVE has
 * no lane-wise integer multiply-accumulate). The build-time
 * layout is [depth_multiplier][k_h][k_w][in_c] for the weights and [depth_multiplier][in_c]
 * for bias and requantization, so each multiplier's channels are contiguous; output
 * channel c * depth_multiplier + m is written by a scatter store when the multiplier is
 * above 1. The bias has the input zero point folded out: taps inside the image multiply
 * the raw input, padded taps add pad_value * w (what the fold took away). Pixels whose
 * taps are all inside the image skip the checks; a 3x3 kernel has them unrolled. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

static inline int32x4_t taps_inside(int32x4_t acc, const int8_t* in, const int8_t* w,
                                    int32_t k_h, int32_t k_w, int32_t row_step, int32_t col_step,
                                    int32_t in_c, mve_pred16_t lanes) {
  for (int32_t ky = 0; ky < k_h; ++ky) {
    for (int32_t kx = 0; kx < k_w; ++kx) {
      const int32x4_t x = vldrbq_z_s32(in + ky * row_step + kx * col_step, lanes);
      acc = vaddq_s32(acc, vmulq_s32(x, vldrbq_z_s32(w + (ky * k_w + kx) * in_c, lanes)));
    }
  }
  return acc;
}

void aot_k_dwconv_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                         const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                         const int32_t* shift, int8_t* output, int8_t* scratch) {
  (void)scratch;
  const int32_t in_c = p->in_c;
  const int32_t dm = p->depth_multiplier;
  const int32_t out_c = in_c * dm;
  const int32_t taps = p->k_h * p->k_w;
  const int32_t row_step = p->dil_h * p->in_w * in_c;
  const int32_t col_step = p->dil_w * in_c;
  const int32_t span_h = (p->k_h - 1) * p->dil_h;
  const int32_t span_w = (p->k_w - 1) * p->dil_w;
  const int32_t is_3x3 = p->k_h == 3 && p->k_w == 3;
  const uint32x4_t scatter = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)dm);
  for (int32_t n = 0; n < p->batches; ++n) {
    const int8_t* image = input + n * p->in_h * p->in_w * in_c;
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
      const int32_t y0 = oy * p->stride_h - p->pad_top;
      for (int32_t ox = 0; ox < p->out_w; ++ox, output += out_c) {
        const int32_t x0 = ox * p->stride_w - p->pad_left;
        const int32_t inside =
            y0 >= 0 && y0 + span_h < p->in_h && x0 >= 0 && x0 + span_w < p->in_w;
        const int8_t* origin = image + (y0 * p->in_w + x0) * in_c;
        for (int32_t m = 0; m < dm; ++m) {
          const int8_t* wm = weights + m * taps * in_c;
          for (int32_t c = 0; c < in_c; c += 4) {
            const mve_pred16_t lanes = vctp32q((uint32_t)(in_c - c));
            const int32_t ch = m * in_c + c;
            int32x4_t acc = vldrwq_z_s32(bias + ch, lanes);
            if (inside && is_3x3) {
              acc = taps_inside(acc, origin + c, wm + c, 3, 3, row_step, col_step, in_c, lanes);
            } else if (inside) {
              acc = taps_inside(acc, origin + c, wm + c, p->k_h, p->k_w, row_step, col_step,
                                in_c, lanes);
            } else {
              for (int32_t ky = 0; ky < p->k_h; ++ky) {
                const int32_t iy = y0 + ky * p->dil_h;
                for (int32_t kx = 0; kx < p->k_w; ++kx) {
                  const int32_t ix = x0 + kx * p->dil_w;
                  const int32x4_t w = vldrbq_z_s32(wm + (ky * p->k_w + kx) * in_c + c, lanes);
                  if (iy >= 0 && iy < p->in_h && ix >= 0 && ix < p->in_w) {
                    const int32x4_t x =
                        vldrbq_z_s32(image + (iy * p->in_w + ix) * in_c + c, lanes);
                    acc = vaddq_s32(acc, vmulq_s32(x, w));
                  } else {
                    acc = vmlaq_n_s32(acc, w, p->pad_value);
                  }
                }
              }
            }
            acc = aot_mve_requant(acc, vldrwq_z_s32(multiplier + ch, lanes),
                                  vldrwq_z_s32(shift + ch, lanes), p->rounding);
            if (dm == 1) {
              aot_mve_store4(output + c, acc, p->output_offset, p->act_min, p->act_max,
                             in_c - c);
            } else {
              acc = vqaddq_n_s32(acc, p->output_offset);
              acc = vmaxq_s32(vminq_s32(acc, vdupq_n_s32(p->act_max)), vdupq_n_s32(p->act_min));
              vstrbq_scatter_offset_p_s32(output + c * dm + m, scatter, acc, lanes);
            }
          }
        }
      }
    }
  }
}
#endif
