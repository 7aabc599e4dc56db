/* The example plug-in's kernel (see avgpool.h). The mean rounds half away from zero, as
 * TFLite's int8 average pool does, so results are bit-exact with its reference kernel. */
#include "avgpool.h"

int32_t avgpool_s8(const int8_t* input, int8_t* output, int32_t height, int32_t width,
                   int32_t channels, int32_t out_h, int32_t out_w, int32_t filter_h,
                   int32_t filter_w, int32_t stride_h, int32_t stride_w, int32_t act_min,
                   int32_t act_max) {
  const int32_t taps = filter_h * filter_w;
  if ((out_h - 1) * stride_h + filter_h > height || (out_w - 1) * stride_w + filter_w > width) {
    return -1;
  }
  for (int32_t oy = 0; oy < out_h; ++oy) {
    for (int32_t ox = 0; ox < out_w; ++ox) {
      for (int32_t c = 0; c < channels; ++c) {
        int32_t sum = 0;
        for (int32_t fy = 0; fy < filter_h; ++fy) {
          for (int32_t fx = 0; fx < filter_w; ++fx) {
            const int32_t y = oy * stride_h + fy;
            const int32_t x = ox * stride_w + fx;
            sum += input[(y * width + x) * channels + c];
          }
        }
        /* C division truncates toward zero: adding half the divisor away from zero first
         * rounds half away from zero. */
        int32_t mean = (sum >= 0 ? sum + taps / 2 : sum - taps / 2) / taps;
        mean = mean < act_min ? act_min : (mean > act_max ? act_max : mean);
        output[(oy * out_w + ox) * channels + c] = (int8_t)mean;
      }
    }
  }
  return 0;
}
