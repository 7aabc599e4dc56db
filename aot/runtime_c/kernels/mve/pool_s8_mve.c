/* AVERAGE_POOL_2D int8 with Helium (MVE): TFLite's AveragePool. Sixteen channels a step
 * (two VLDRB.S16 widening loads) summed over the window's in-image taps in int16 lanes,
 * exact for windows of at most 256 taps (|sum| <= 128 * 256 = 32768, and -32768 is the
 * one value at the bound); the division by the tap count, rounding halves away from zero
 * as TFLite's, is a VMULH.U32 by the count's reciprocal on four lanes (SDIV only for the
 * channel tail and one-tap windows), next to the taps' two loads and two adds per sixteen
 * channels. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>

#define AOT_INLINE static inline __attribute__((always_inline))

/* the window's sums of sixteen channels from `first` (rows x cols taps, row_step and
 * col_step bytes apart); `tail`: only the first n channels (a constant at each call) */
AOT_INLINE void window_sums(const int8_t* first, int32_t rows, int32_t cols, int32_t row_step,
                            int32_t col_step, int32_t n, int16_t* sums, const int tail) {
  const mve_pred16_t lo = vctp16q((uint32_t)n);
  const mve_pred16_t hi = vctp16q((uint32_t)(n > 8 ? n - 8 : 0));
  int16x8_t a = vdupq_n_s16(0), b = vdupq_n_s16(0);
  for (int32_t y = 0; y < rows; ++y, first += row_step) {
    const int8_t* in = first;
    for (int32_t x = 0; x < cols; ++x, in += col_step) {
      a = vaddq_s16(a, tail ? vldrbq_z_s16(in, lo) : vldrbq_s16(in));
      b = vaddq_s16(b, tail ? vldrbq_z_s16(in + 8, hi) : vldrbq_s16(in + 8));
    }
  }
  vstrhq_s16(sums, a);
  vstrhq_s16(sums + 8, b);
}

/* round(sum / count), halves away from zero, for count >= 2: VMULH.U32 by
 * ceil(2^32 / count) is the exact floor of |sum| + count / 2 over count, since that is at
 * most 32896 and the multiplier's excess below count (256): their product stays under
 * 2^32 */
AOT_INLINE int32x4_t rounded_quotient(int32x4_t sum, uint32_t reciprocal, int32_t half) {
  const int32x4_t sign = vshrq_n_s32(sum, 31);
  const uint32x4_t magnitude = vreinterpretq_u32_s32(vaddq_n_s32(vabsq_s32(sum), half));
  const int32x4_t q = vreinterpretq_s32_u32(vmulhq_u32(magnitude, vdupq_n_u32(reciprocal)));
  return vsubq_s32(veorq_s32(q, sign), sign);
}

/* eight sums to their clamped outputs (count >= 2), in lane order */
AOT_INLINE int16x8_t averages8(int16x8_t sums, uint32_t reciprocal, int32_t half, int16x8_t lo,
                               int16x8_t hi) {
  int16x8_t y = vmovnbq_s32(sums, rounded_quotient(vmovlbq_s16(sums), reciprocal, half));
  y = vmovntq_s32(y, rounded_quotient(vmovltq_s16(sums), reciprocal, half));
  return vmaxq_s16(vminq_s16(y, hi), lo);
}

/* n outputs from their sums: TFLite's rounded division by count, then the clamp */
AOT_INLINE void divide(const int16_t* sums, int32_t n, int32_t count, int32_t act_min,
                       int32_t act_max, int8_t* out) {
  const int32_t half = count / 2;
  for (int32_t j = 0; j < n; ++j) {
    const int32_t sum = sums[j];
    int32_t v = (sum > 0 ? sum + half : sum - half) / count;
    v = v < act_min ? act_min : v;
    out[j] = (int8_t)(v > act_max ? act_max : v);
  }
}

void aot_k_avgpool_s8_mve(const struct aot_k_pool_params* p, const int8_t* input,
                          int8_t* output, int8_t* scratch) {
  (void)scratch;
  /* locals: every int8 store may alias *p */
  const int32_t in_h = p->in_h, in_w = p->in_w, channels = p->channels;
  const int32_t out_h = p->out_h, out_w = p->out_w, filter_h = p->filter_h;
  const int32_t filter_w = p->filter_w, stride_h = p->stride_h, stride_w = p->stride_w;
  const int32_t pad_top = p->pad_top, pad_left = p->pad_left, batches = p->batches;
  const int32_t act_min = p->act_min, act_max = p->act_max;
  const int32_t row_step = in_w * channels;
  const int32_t full = channels & ~15, rest = channels & 15;
  int16_t sums[16] __attribute__((aligned(8)));
  const int16x8_t lo = vdupq_n_s16((int16_t)act_min), hi = vdupq_n_s16((int16_t)act_max);
  for (int32_t n = 0; n < batches; ++n) {
    const int8_t* image = input + n * in_h * row_step;
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const int32_t y0 = oy * stride_h - pad_top;
      const int32_t fy0 = y0 < 0 ? -y0 : 0;
      const int32_t fy1 = in_h - y0 < filter_h ? in_h - y0 : filter_h;
      for (int32_t ox = 0; ox < out_w; ++ox, output += channels) {
        const int32_t x0 = ox * stride_w - pad_left;
        const int32_t fx0 = x0 < 0 ? -x0 : 0;
        const int32_t fx1 = in_w - x0 < filter_w ? in_w - x0 : filter_w;
        const int32_t rows = fy1 > fy0 ? fy1 - fy0 : 0;
        const int32_t cols = fx1 > fx0 ? fx1 - fx0 : 0;
        /* no tap inside (TFLite rejects such a model): the sums stay 0 */
        const int32_t count = rows * cols > 0 ? rows * cols : 1;
        const int8_t* first = image + ((y0 + fy0) * in_w + x0 + fx0) * channels;
        int32_t c = 0;
        if (count > 1) { /* sixteen channels' divisions in vectors */
          const uint32_t reciprocal = (uint32_t)((0xffffffffu / (uint32_t)count) + 1);
          const int32_t half = count / 2;
          for (; c < full; c += 16) {
            window_sums(first + c, rows, cols, row_step, channels, 16, sums, 0);
            vstrbq_s16(output + c, averages8(vldrhq_s16(sums), reciprocal, half, lo, hi));
            vstrbq_s16(output + c + 8, averages8(vldrhq_s16(sums + 8), reciprocal, half, lo, hi));
          }
        }
        for (; c < full; c += 16) {
          window_sums(first + c, rows, cols, row_step, channels, 16, sums, 0);
          divide(sums, 16, count, act_min, act_max, output + c);
        }
        if (rest) {
          window_sums(first + full, rows, cols, row_step, channels, rest, sums, 1);
          divide(sums, rest, count, act_min, act_max, output + full);
        }
      }
    }
  }
}
#endif
