/* The example plug-in's kernel: int8 average pooling, NHWC, batch 1, no padding. */
#ifndef AVGPOOL_H_
#define AVGPOOL_H_

#include <stdint.h>

/* Returns 0, or -1 when a window would leave the input (the backend took a bad shape). */
int32_t avgpool_s8(const int8_t* input, int8_t* output, int32_t height, int32_t width,
                   int32_t channels, int32_t out_h, int32_t out_w, int32_t filter_h,
                   int32_t filter_w, int32_t stride_h, int32_t stride_w, int32_t act_min,
                   int32_t act_max);

#endif /* AVGPOOL_H_ */
