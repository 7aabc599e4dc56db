/* DEPTHWISE_CONV_2D int8 with Helium (MVE), any depth multiplier.
 *
 * Four channels per vector in int32 lanes (VLDRB widening loads, VMUL + VADD: MVE has no
 * lane-wise integer multiply-accumulate). Build-time layouts (aot/kernels/mve.py), with
 * B = ceil(in_c / 4) blocks of four channels, lanes past in_c zero:
 *   weights  [depth_multiplier][B][k_h * k_w][4]  one pointer walks a block's taps
 *   bias, edge_bias, multiplier, shift  [depth_multiplier][B * 4]
 * Output channel c * depth_multiplier + m is written by a scatter store when the
 * multiplier is above 1.
 *
 * Pixels whose taps all lie inside the image use `bias`, which has the input zero point
 * folded out, and multiply raw inputs (a 3x3 kernel fully unrolled). Border pixels use
 * `edge_bias` (the model's own bias) and add input_offset to the inputs of the taps that
 * are inside, as TFLite does: the fold would need the outside taps' weights otherwise. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

/* a 3x3 window inside the image, channels a multiple of four: one row of taps at a time
 * (the rows rolled, so the eight Q registers hold everything without spills) */
static inline __attribute__((always_inline)) int32x4_t
taps_3x3(int32x4_t acc, const int8_t* row, const int8_t* w, int32_t row_step, int32_t col_step) {
  const int32_t col_step2 = 2 * col_step;
#pragma GCC unroll 1
  for (int32_t ky = 0; ky < 3; ++ky, row += row_step, w += 12) {
    acc = vaddq_s32(acc, vmulq_s32(vldrbq_s32(row), vldrbq_s32(w)));
    acc = vaddq_s32(acc, vmulq_s32(vldrbq_s32(row + col_step), vldrbq_s32(w + 4)));
    acc = vaddq_s32(acc, vmulq_s32(vldrbq_s32(row + col_step2), vldrbq_s32(w + 8)));
  }
  return acc;
}

/* any window, clipped to the image: taps [ky0, ky1) x [kx0, kx1), `first` the input of the
 * first of them; input_offset is 0 for a window inside the image (bias folded) */
static inline int32x4_t taps_clipped(int32x4_t acc, const int8_t* first, const int8_t* w,
                                     int32_t rows, int32_t cols, int32_t k_w, int32_t row_step,
                                     int32_t col_step, int32_t input_offset,
                                     mve_pred16_t lanes) {
  for (int32_t ky = 0; ky < rows; ++ky, first += row_step, w += 4 * k_w) {
    const int8_t* in = first;
    const int8_t* wt = w;
    for (int32_t kx = 0; kx < cols; ++kx, in += col_step, wt += 4) {
      const int32x4_t x = vaddq_n_s32(vldrbq_z_s32(in, lanes), input_offset);
      acc = vaddq_s32(acc, vmulq_s32(x, vldrbq_s32(wt)));
    }
  }
  return acc;
}

/* the first tap index of a window starting at `start` (dilation `dil`) that is >= 0, and
 * one past the last that is < size */
static inline int32_t first_tap(int32_t start, int32_t dil) {
  return start >= 0 ? 0 : (-start + dil - 1) / dil;
}
static inline int32_t end_tap(int32_t start, int32_t dil, int32_t k, int32_t size) {
  const int32_t room = size - start;  /* taps t with start + t * dil < size */
  const int32_t end = room <= 0 ? 0 : (room + dil - 1) / dil;
  return end < k ? end : k;
}

void aot_k_dwconv_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                         const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                         const int32_t* shift, const int32_t* edge_bias, int8_t* output,
                         int8_t* scratch) {
  (void)scratch;
  /* locals: every int8 store may alias *p, which would reload it after each store */
  const int32_t in_h = p->in_h, in_w = p->in_w, k_h = p->k_h, k_w = p->k_w;
  const int32_t dil_h = p->dil_h, dil_w = p->dil_w;
  const int32_t rounding = p->rounding, output_offset = p->output_offset;
  const int32_t act_min = p->act_min, act_max = p->act_max, input_offset = p->input_offset;
  const int32_t in_c = p->in_c;
  const int32_t dm = p->depth_multiplier;
  const int32_t out_c = in_c * dm;
  const int32_t blocks = (in_c + 3) / 4;
  const int32_t taps = k_h * k_w;
  const int32_t row_step = dil_h * in_w * in_c;
  const int32_t col_step = dil_w * in_c;
  const int32_t fast = k_h == 3 && k_w == 3 && (in_c & 3) == 0;
  const uint32x4_t scatter = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)dm);
  for (int32_t n = 0; n < p->batches; ++n) {
    const int8_t* image = input + n * in_h * in_w * in_c;
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
      const int32_t y0 = oy * p->stride_h - p->pad_top;
      const int32_t ky0 = first_tap(y0, dil_h);
      const int32_t ky1 = end_tap(y0, dil_h, k_h, in_h);
      for (int32_t ox = 0; ox < p->out_w; ++ox, output += out_c) {
        const int32_t x0 = ox * p->stride_w - p->pad_left;
        const int32_t kx0 = first_tap(x0, dil_w);
        const int32_t kx1 = end_tap(x0, dil_w, k_w, in_w);
        const int32_t inside = ky0 == 0 && kx0 == 0 && ky1 == k_h && kx1 == k_w;
        const int8_t* first =
            image + ((y0 + ky0 * dil_h) * in_w + x0 + kx0 * dil_w) * in_c;
        const int32_t* start = inside ? bias : edge_bias;
        const int32_t offset = inside ? 0 : input_offset;
        const int32_t skip = (ky0 * k_w + kx0) * 4;
        for (int32_t m = 0; m < dm; ++m) {
          for (int32_t b = 0; b < blocks; ++b) {
            const int32_t c = b * 4;
            const int32_t ch = (m * blocks + b) * 4;
            const int8_t* w = weights + ch * taps;
            const mve_pred16_t lanes = vctp32q((uint32_t)(in_c - c));
            int32x4_t acc = vldrwq_s32(start + ch);
            if (inside && fast) {
              acc = taps_3x3(acc, first + c, w, row_step, col_step);
            } else if (ky1 > ky0 && kx1 > kx0) {
              acc = taps_clipped(acc, first + c, w + skip, ky1 - ky0, kx1 - kx0, k_w,
                                 row_step, col_step, offset, lanes);
            }
            acc = aot_mve_requant(acc, vldrwq_s32(multiplier + ch), vldrwq_s32(shift + ch),
                                  rounding);
            acc = vqaddq_n_s32(acc, output_offset);
            acc = vmaxq_s32(vminq_s32(acc, vdupq_n_s32(act_max)), vdupq_n_s32(act_min));
            if (dm == 1) {
              vstrbq_p_s32(output + c, acc, lanes);
            } else {
              vstrbq_scatter_offset_p_s32(output + c * dm + m, scatter, acc, lanes);
            }
          }
        }
      }
    }
  }
}
#endif
