/* ADD int8 (same shapes, no broadcasting) with Helium (MVE): TFLite's AddFunc on four
 * int32 lanes (offset, left shift, each input rescaled, the sum rescaled, zero point,
 * clamp), four elements per step, the last step tail-predicated. Each step loads both
 * inputs before it stores, so the output may overlay either input. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

static inline __attribute__((always_inline)) int32x4_t
add4(int32x4_t a, int32x4_t b, const struct aot_k_add_params* p) {
  const int32x4_t lhs_m = vdupq_n_s32(p->lhs_multiplier), lhs_s = vdupq_n_s32(p->lhs_shift);
  const int32x4_t rhs_m = vdupq_n_s32(p->rhs_multiplier), rhs_s = vdupq_n_s32(p->rhs_shift);
  const int32x4_t out_m = vdupq_n_s32(p->output_multiplier);
  const int32x4_t out_s = vdupq_n_s32(p->output_shift);
  a = vshlq_r_s32(vaddq_n_s32(a, p->lhs_offset), p->left_shift);
  b = vshlq_r_s32(vaddq_n_s32(b, p->rhs_offset), p->left_shift);
  a = aot_mve_requant(a, lhs_m, lhs_s, p->rounding);
  b = aot_mve_requant(b, rhs_m, rhs_s, p->rounding);
  return aot_mve_requant(vaddq_s32(a, b), out_m, out_s, p->rounding);
}

void aot_k_add_s8_mve(const struct aot_k_add_params* p, const int8_t* lhs, const int8_t* rhs,
                      int8_t* output, int8_t* scratch) {
  (void)scratch;
  const int32_t size = p->size;
  int32_t i = 0;
  for (; i + 4 <= size; i += 4) {
    const int32x4_t sum = add4(vldrbq_s32(lhs + i), vldrbq_s32(rhs + i), p);
    aot_mve_store4(output + i, sum, p->output_offset, p->act_min, p->act_max, 4);
  }
  if (i < size) {
    const mve_pred16_t lanes = vctp32q((uint32_t)(size - i));
    const int32x4_t sum = add4(vldrbq_z_s32(lhs + i, lanes), vldrbq_z_s32(rhs + i, lanes), p);
    aot_mve_store4(output + i, sum, p->output_offset, p->act_min, p->act_max, size - i);
  }
}
#endif
