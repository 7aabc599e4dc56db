/* FULLY_CONNECTED int8 with Helium (MVE): each batch row times four weight rows at a time
 * (VMLADAVA), the input zero point folded into the bias at build time. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

void aot_k_fc_s8_mve(const struct aot_k_fc_params* p, const int8_t* input,
                     const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                     const int32_t* shift, int8_t* output, int8_t* scratch) {
  (void)scratch;
  for (int32_t b = 0; b < p->batches; ++b) {
    aot_mve_row_times_weights(input + b * p->depth, p->depth, weights, p->out_c, bias,
                              multiplier, shift, p->output_offset, p->act_min, p->act_max,
                              p->rounding, output + b * p->out_c);
  }
}
#endif
