/* ADD int8 (same shapes, no broadcasting) with Helium (MVE): TFLite's AddFunc on four
 * int32 lanes (offset, left shift, each input rescaled, the sum rescaled, zero point,
 * clamp), four elements per step, the last step tail-predicated. Each step loads both
 * inputs before it stores, so the output may overlay either input. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

/* The params are copied to locals: every int8 store may alias the struct, so reading
 * them through the pointer would reload them after each store. */
struct add_consts {
  int32_t lhs_m, lhs_s, rhs_m, rhs_s, out_m, out_s;
  int32_t lhs_offset, rhs_offset, left_shift, rounding;
};

static inline __attribute__((always_inline)) int32x4_t add4(int32x4_t a, int32x4_t b,
                                                            const struct add_consts* k) {
  a = vshlq_r_s32(vaddq_n_s32(a, k->lhs_offset), k->left_shift);
  b = vshlq_r_s32(vaddq_n_s32(b, k->rhs_offset), k->left_shift);
  a = aot_mve_requant_n(a, k->lhs_m, k->lhs_s, k->rounding);
  b = aot_mve_requant_n(b, k->rhs_m, k->rhs_s, k->rounding);
  return aot_mve_requant_n(vaddq_s32(a, b), k->out_m, k->out_s, k->rounding);
}

void aot_k_add_s8_mve(const struct aot_k_add_params* p, const int8_t* lhs, const int8_t* rhs,
                      int8_t* output, int8_t* scratch) {
  (void)scratch;
  const struct add_consts k = {
      p->lhs_multiplier, p->lhs_shift, p->rhs_multiplier, p->rhs_shift,
      p->output_multiplier, p->output_shift, p->lhs_offset, p->rhs_offset, p->left_shift,
      p->rounding,
  };
  const int32_t size = p->size, output_offset = p->output_offset;
  const int32_t act_min = p->act_min, act_max = p->act_max;
  int32_t i = 0;
  for (; i + 4 <= size; i += 4) {
    const int32x4_t sum = add4(vldrbq_s32(lhs + i), vldrbq_s32(rhs + i), &k);
    aot_mve_store4(output + i, sum, output_offset, act_min, act_max, 4);
  }
  if (i < size) {
    const mve_pred16_t lanes = vctp32q((uint32_t)(size - i));
    const int32x4_t sum = add4(vldrbq_z_s32(lhs + i, lanes), vldrbq_z_s32(rhs + i, lanes), &k);
    aot_mve_store4(output + i, sum, output_offset, act_min, act_max, size - i);
  }
}
#endif
