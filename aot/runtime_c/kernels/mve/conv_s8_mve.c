/* CONV_2D int8 with Helium (MVE): NHWC input, OHWI weights, per-channel requantization.
 *
 * Each output pixel's receptive field is gathered into one row of k_h * k_w * in_c bytes
 * (im2col, in the planned scratch; padded taps hold the input zero point, which the bias
 * has already folded out), then multiplied with four weight rows at a time by VMLADAVA
 * (weights blocked at build time: aot_mve_row_times_weights).
 * A 1x1 convolution without padding reads the input pixel in place: no copy, no scratch;
 * over at most 32 input channels (vww_96_int8's first 1x1 layers) the pixel is loaded
 * once and stays in Q registers for all output channels (aot_mve_short_row_times_weights).
 * aot_k_conv_rows_s8_mve (kernel rows of at most 16 bytes: a first layer over 3 channels)
 * loads each kernel row of a window straight from the image instead of gathering it.
 * Each loop is compiled once per requantization form where the right-shift-only form
 * applies (aot_mve_requant_form), so no block of four channels tests it. */
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

/* every output pixel of a 1x1 convolution without padding, each reading its input pixel in
 * place (no copy, no scratch); `chunks` 1-2: in_c <= 16 * chunks, the row in registers
 * (aot_mve_short_row_times_weights), 0: any in_c */
static inline __attribute__((always_inline)) void direct_pixels(
    const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,
    const int32_t* bias, const int32_t* multiplier, const int32_t* shift, int32_t form,
    int8_t* output, const int chunks) {
  /* locals: the output stores may alias *p */
  const int32_t in_c = p->in_c, out_c = p->out_c, out_h = p->out_h, out_w = p->out_w;
  const int32_t batches = p->batches, image = p->in_h * p->in_w * in_c;
  const int32_t col_step = p->stride_w * in_c, row_step = p->stride_h * p->in_w * in_c;
  const int32_t offset = p->output_offset, lo = p->act_min, hi = p->act_max;
  for (int32_t n = 0; n < batches; ++n) {
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const int8_t* row = input + n * image + oy * row_step;
      for (int32_t ox = 0; ox < out_w; ++ox, row += col_step, output += out_c) {
        if (chunks) {
          aot_mve_short_row_times_weights(row, in_c, weights, out_c, bias, multiplier, shift,
                                          offset, lo, hi, form, output, chunks);
        } else {
          aot_mve_row_times_weights(row, in_c, weights, out_c, bias, multiplier, shift, offset,
                                    lo, hi, form, output);
        }
      }
    }
  }
}

/* `right`: the call's form is AOT_MVE_RQ_RIGHT, a constant (no test per block) */
#define AOT_CONV_DIRECT(name, chunks, right)                                               \
  static void __attribute__((noinline))                                                    \
  name(const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,      \
       const int32_t* bias, const int32_t* multiplier, const int32_t* shift, int32_t form, \
       int8_t* output) {                                                                   \
    direct_pixels(p, input, weights, bias, multiplier, shift,                              \
                  right ? AOT_MVE_RQ_RIGHT : form, output, chunks);                        \
  }
AOT_CONV_DIRECT(direct_16, 1, 0)
AOT_CONV_DIRECT(direct_32, 2, 0)
AOT_CONV_DIRECT(direct_any, 0, 0)
AOT_CONV_DIRECT(direct_16_right, 1, 1)
AOT_CONV_DIRECT(direct_32_right, 2, 1)
AOT_CONV_DIRECT(direct_any_right, 0, 1)

/* every output pixel of any other convolution: its receptive field gathered into the
 * scratch (im2col), then times the weights (`form` a constant when it is
 * AOT_MVE_RQ_RIGHT) */
static inline __attribute__((always_inline)) void im2col_pixels(
    const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,
    const int32_t* bias, const int32_t* multiplier, const int32_t* shift, int32_t form,
    int8_t* output, int8_t* scratch) {
  const int32_t in_c = p->in_c;
  const int32_t depth = p->k_h * p->k_w * in_c;
  const int8_t pad = (int8_t)p->pad_value;
  for (int32_t n = 0; n < p->batches; ++n) {
    const int8_t* image = input + (int32_t)n * p->in_h * p->in_w * in_c;
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
      for (int32_t ox = 0; ox < p->out_w; ++ox) {
        const int32_t y0 = oy * p->stride_h - p->pad_top;
        const int32_t x0 = ox * p->stride_w - p->pad_left;
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
        aot_mve_row_times_weights(scratch, depth, weights, p->out_c, bias, multiplier, shift,
                                  p->output_offset, p->act_min, p->act_max, form, output);
        output += p->out_c;
      }
    }
  }
}

#define AOT_CONV_IM2COL(name, right)                                                       \
  static void __attribute__((noinline))                                                    \
  name(const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,      \
       const int32_t* bias, const int32_t* multiplier, const int32_t* shift, int32_t form, \
       int8_t* output, int8_t* scratch) {                                                  \
    im2col_pixels(p, input, weights, bias, multiplier, shift,                              \
                  right ? AOT_MVE_RQ_RIGHT : form, output, scratch);                       \
  }
AOT_CONV_IM2COL(im2col, 0)
AOT_CONV_IM2COL(im2col_right, 1)

void aot_k_conv_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                       const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                       const int32_t* shift, int8_t* output, int8_t* scratch) {
  const int32_t in_c = p->in_c;
  const int32_t direct = p->k_h == 1 && p->k_w == 1 && p->pad_top == 0 && p->pad_left == 0;
  const int32_t form = aot_mve_requant_form(p->rounding, shift, p->out_c);
  const int32_t right = form == AOT_MVE_RQ_RIGHT;
  if (direct) {
    (in_c <= 16   ? (right ? direct_16_right : direct_16)
     : in_c <= 32 ? (right ? direct_32_right : direct_32)
                  : (right ? direct_any_right : direct_any))(p, input, weights, bias,
                                                             multiplier, shift, form, output);
  } else {
    (right ? im2col_right : im2col)(p, input, weights, bias, multiplier, shift, form, output,
                                    scratch);
  }
}

/* aot_k_conv_rows_s8_mve's pixels, `chunks` = k_h (1 to 3): kernel row k of a window is
 * one predicated load of k_w * in_c bytes, from the image when the window lies inside it,
 * else from scratch slot k (gathered, padded taps pad_value) */
static inline __attribute__((always_inline)) void rows_pixels(
    const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,
    const int32_t* bias, const int32_t* multiplier, const int32_t* shift, int32_t form,
    int8_t* output, int8_t* scratch, const int chunks) {
  /* locals: the output stores may alias *p */
  const int32_t in_c = p->in_c, in_h = p->in_h, in_w = p->in_w, k_w = p->k_w;
  const int32_t out_c = p->out_c, out_h = p->out_h, out_w = p->out_w, dil_h = p->dil_h;
  const int32_t stride_h = p->stride_h, stride_w = p->stride_w;
  const int32_t pad_top = p->pad_top, pad_left = p->pad_left, batches = p->batches;
  const int32_t offset = p->output_offset, lo = p->act_min, hi = p->act_max;
  const int8_t pad = (int8_t)p->pad_value;
  const int32_t segment = k_w * in_c, row_bytes = in_w * in_c;
  const mve_pred16_t lanes = vctp8q((uint32_t)segment);
  for (int32_t n = 0; n < batches; ++n) {
    const int8_t* image = input + n * in_h * row_bytes;
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const int32_t y0 = oy * stride_h - pad_top;
      const int32_t rows_inside = y0 >= 0 && y0 + (chunks - 1) * dil_h < in_h;
      for (int32_t ox = 0; ox < out_w; ++ox, output += out_c) {
        const int32_t x0 = ox * stride_w - pad_left;
        const int8_t* at[3];
        if (rows_inside && x0 >= 0 && x0 + k_w <= in_w) {
          for (int32_t k = 0; k < chunks; ++k) {
            at[k] = image + (y0 + k * dil_h) * row_bytes + x0 * in_c;
          }
        } else {
          for (int32_t k = 0; k < chunks; ++k) {
            const int32_t iy = y0 + k * dil_h;
            int8_t* slot = scratch + 16 * k;
            if (iy >= 0 && iy < in_h) {
              gather_row(slot, image + iy * row_bytes, x0, k_w, 1, in_w, in_c, pad);
            } else {
              fill(slot, segment, pad);
            }
            at[k] = slot;
          }
        }
        const int8x16_t v0 = vldrbq_z_s8(at[0], lanes);
        const int8x16_t v1 = chunks > 1 ? vldrbq_z_s8(at[1], lanes) : v0;
        const int8x16_t v2 = chunks > 2 ? vldrbq_z_s8(at[2], lanes) : v0;
        aot_mve_vectors_times_weights(v0, v1, v2, weights, out_c, bias, multiplier, shift,
                                      offset, lo, hi, form, output, chunks);
      }
    }
  }
}

#define AOT_CONV_ROWS(name, chunks)                                                        \
  static void __attribute__((noinline))                                                    \
  name(const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,      \
       const int32_t* bias, const int32_t* multiplier, const int32_t* shift, int32_t form, \
       int8_t* output, int8_t* scratch) {                                                  \
    rows_pixels(p, input, weights, bias, multiplier, shift, form, output, scratch, chunks); \
  }
AOT_CONV_ROWS(rows_1, 1)
AOT_CONV_ROWS(rows_2, 2)
AOT_CONV_ROWS(rows_3, 3)

void aot_k_conv_rows_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                            const int8_t* weights, const int32_t* bias,
                            const int32_t* multiplier, const int32_t* shift, int8_t* output,
                            int8_t* scratch) {
  const int32_t form = aot_mve_requant_form(p->rounding, shift, p->out_c);
  (p->k_h == 1 ? rows_1 : p->k_h == 2 ? rows_2 : rows_3)(p, input, weights, bias, multiplier,
                                                           shift, form, output, scratch);
}
#endif
