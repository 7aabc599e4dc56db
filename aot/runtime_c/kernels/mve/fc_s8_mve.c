/* FULLY_CONNECTED int8 with Helium (MVE): each batch row times four weight rows at a time
 * (VMLADAVA), the input zero point folded into the bias at build time. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

/* every batch row, `form` a constant at each call for the right-shift forms (the asm blocks
 * of aot_mve_row_blocks, rows of up to 64 bytes in registers); a form known only at run
 * time gets double rounding's blocks, or the C loop */
static inline __attribute__((always_inline)) void rows(const struct aot_k_fc_params* p,
                                                       const int8_t* input,
                                                       const int8_t* weights,
                                                       const int32_t* records, int8_t* output,
                                                       const int32_t form) {
  const int32_t depth = p->depth, out_c = p->out_c, batches = p->batches;
  const int32_t offset = p->output_offset, lo = p->act_min, hi = p->act_max;
  for (int32_t b = 0; b < batches; ++b) {
    aot_mve_row_times_weights(input + b * depth, depth, weights, out_c, records, offset, lo, hi,
                              form, output + b * out_c);
  }
}

void aot_k_fc_s8_mve(const struct aot_k_fc_params* p, const int8_t* input,
                     const int8_t* weights, const int32_t* records, int8_t* output,
                     int8_t* scratch) {
  (void)scratch;
  const int32_t form = aot_mve_requant_form(p->rounding, records, p->out_c);
  /* only the forms the build's calls use are compiled (aot_kernels_mve.h) */
  if (form == AOT_MVE_RQ_SINGLE_RIGHT && AOT_MVE_FC_SINGLE_RIGHT) { /* LiteRT's */
    rows(p, input, weights, records, output, AOT_MVE_RQ_SINGLE_RIGHT);
  } else if (form == AOT_MVE_RQ_RIGHT && AOT_MVE_FC_RIGHT) {
    rows(p, input, weights, records, output, AOT_MVE_RQ_RIGHT);
  } else if (AOT_MVE_FC_DOUBLE || AOT_MVE_FC_SINGLE) {
    rows(p, input, weights, records, output, form);
  } else {
    aot_mve_form_missing();
  }
}
#endif
