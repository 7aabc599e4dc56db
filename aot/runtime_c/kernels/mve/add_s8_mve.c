/* ADD int8 (same shapes, no broadcasting) with Helium (MVE): TFLite's AddFunc.
 *
 * Each input's rescaling ((x + offset) << left_shift, then its multiplier and shift)
 * depends on the int8 value only, so it is a 256-entry int32 table built at build time
 * (aot/kernels/mve.py), indexed by the byte read as unsigned: an input of four lanes is a
 * widening byte load and one word gather. Only the sum's requantization is computed, in a
 * form chosen once per call (form_of), so no step tests the shift or the rounding mode:
 *   double rounding, right shift:  VQRDMULH, the halves-away fixup, VRSHL
 *   single rounding, right shift:  VQDMULH, VRSHL (the exact floor of the 64-bit product,
 *     since adding 2^(t-1) to it and flooring by 2^31 first does not change the result)
 *   anything else:                 aot_mve_requant_n
 * Sixteen elements per step: four gathers of every fourth byte (elements j, j+4, j+8, j+12
 * from base +0, +2, +1, +3) so that two saturating narrowings (VQMOVNB/VQMOVNT to int16,
 * then to int8) leave them in order; the output zero point is added at int16 (saturating,
 * so every value keeps its side of the clamp) and the clamp takes one VMIN and one VMAX
 * for all sixteen. The last size % 16 go four at a time, the last step predicated. Each
 * step loads both inputs before it stores, so the output may overlay either input. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

#define AOT_INLINE static inline __attribute__((always_inline))

enum { ADD_DOUBLE_RIGHT = 0, ADD_SINGLE_RIGHT = 1, ADD_ANY = 2 };

/* the params the loops read, copied to locals: every int8 store may alias the struct */
struct add_out {
  int32_t multiplier, shift, rounding, offset, act_min, act_max;
};

AOT_INLINE int32x4_t requant_sum(int32x4_t x, const struct add_out* o, const int form) {
  if (form == ADD_DOUBLE_RIGHT) {
    x = vqrdmulhq_n_s32(x, o->multiplier);
    return vrshlq_n_s32(vaddq_s32(x, vshrq_n_s32(x, 31)), o->shift);
  }
  if (form == ADD_SINGLE_RIGHT) return vrshlq_n_s32(vqdmulhq_n_s32(x, o->multiplier), o->shift);
  return aot_mve_requant_n(x, o->multiplier, o->shift, o->rounding);
}

/* one quarter of a 16-element step: four elements of each input (post-incremented loads),
 * their table values summed, requantized (REQUANT) and narrowed by `narrow` into `dst` */
#define AOT_ADD_QUARTER(requant, narrow, dst)           \
  "vldrb.u32 %q[a], [%[lhs]], #4\n\t"                  \
  "vldrb.u32 %q[b], [%[rhs]], #4\n\t"                  \
  "vldrw.u32 %q[t], [%[lt], %q[a], uxtw #2]\n\t"       \
  "vldrw.u32 %q[a], [%[rt], %q[b], uxtw #2]\n\t"       \
  "vadd.i32 %q[t], %q[t], %q[a]\n\t" requant narrow " %q[" dst "], %q[t]\n\t"

#define AOT_ADD_DOUBLE_RIGHT                 \
  "vqrdmulh.s32 %q[t], %q[t], %[m]\n\t"      \
  "vshr.s32 %q[a], %q[t], #31\n\t"           \
  "vadd.i32 %q[t], %q[t], %q[a]\n\t"         \
  "vrshl.s32 %q[t], %[s]\n\t"
#define AOT_ADD_SINGLE_RIGHT            \
  "vqdmulh.s32 %q[t], %q[t], %[m]\n\t"  \
  "vrshl.s32 %q[t], %[s]\n\t"

/* Sixteen elements: contiguous quarters narrowed into int16 lanes [0 4 1 5 2 6 3 7] and
 * [8 12 9 13 10 14 11 15], then into bytes, which a scatter store with `order`'s offsets
 * puts back in place. */
#define AOT_ADD_STEP(requant)                                                            \
  __asm__ volatile(AOT_ADD_QUARTER(requant, "vqmovnb.s32", "e")                          \
                   AOT_ADD_QUARTER(requant, "vqmovnt.s32", "e")                          \
                   AOT_ADD_QUARTER(requant, "vqmovnb.s32", "f")                          \
                   AOT_ADD_QUARTER(requant, "vqmovnt.s32", "f")                          \
                   "vqadd.s16 %q[e], %q[e], %[zp]\n\t"                                   \
                   "vqadd.s16 %q[f], %q[f], %[zp]\n\t"                                   \
                   "vqmovnb.s16 %q[t], %q[e]\n\t"                                        \
                   "vqmovnt.s16 %q[t], %q[f]\n\t"                                        \
                   "vmin.s8 %q[t], %q[t], %q[hi]\n\t"                                    \
                   "vmax.s8 %q[t], %q[t], %q[lo]\n\t"                                    \
                   "vstrb.8 %q[t], [%[out], %q[order]]\n\t"                              \
                   : [lhs] "+r"(lhs), [rhs] "+r"(rhs), [a] "=&w"(a), [b] "=&w"(b),      \
                     [t] "=&w"(t), [e] "=&w"(e), [f] "=&w"(f)                            \
                   : [out] "r"(out), [lt] "r"(lhs_table), [rt] "r"(rhs_table),           \
                     [m] "r"(o.multiplier), [s] "r"(o.shift), [zp] "r"(zp), [lo] "w"(lo), \
                     [hi] "w"(hi), [order] "w"(order)                                    \
                   : "memory")

AOT_INLINE void add_run(const uint8_t* lhs, const uint8_t* rhs, const int32_t* lhs_table,
                        const int32_t* rhs_table, int8_t* out, int32_t size,
                        const struct add_out* params, const int form) {
  static const uint8_t byte_order[16] = {0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7, 15};
  const struct add_out o = *params;
  const uint8x16_t order = vld1q_u8(byte_order);
  const int8x16_t lo = vdupq_n_s8((int8_t)o.act_min), hi = vdupq_n_s8((int8_t)o.act_max);
  const int32_t zp = o.offset;
  for (int32_t n = size >> 4; n > 0; --n, out += 16) {
    uint32x4_t a, b;
    int32x4_t t;
    int16x8_t e, f;
    if (form == ADD_DOUBLE_RIGHT) {
      AOT_ADD_STEP(AOT_ADD_DOUBLE_RIGHT);
    } else if (form == ADD_SINGLE_RIGHT) {
      AOT_ADD_STEP(AOT_ADD_SINGLE_RIGHT);
    } else { /* the general requantization: intrinsics, any order */
      int16x8_t lo16 = vuninitializedq_s16(), hi16 = vuninitializedq_s16();
      for (int q = 0; q < 4; ++q) {
        a = vldrbq_u32(lhs + 4 * q);
        b = vldrbq_u32(rhs + 4 * q);
        t = vaddq_s32(vldrwq_gather_shifted_offset_s32(lhs_table, a),
                      vldrwq_gather_shifted_offset_s32(rhs_table, b));
        t = aot_mve_requant_n(t, o.multiplier, o.shift, o.rounding);
        if (q == 0) lo16 = vqmovnbq_s32(lo16, t);
        if (q == 1) lo16 = vqmovntq_s32(lo16, t);
        if (q == 2) hi16 = vqmovnbq_s32(hi16, t);
        if (q == 3) hi16 = vqmovntq_s32(hi16, t);
      }
      lhs += 16;
      rhs += 16;
      lo16 = vqaddq_n_s16(lo16, (int16_t)zp);
      hi16 = vqaddq_n_s16(hi16, (int16_t)zp);
      int8x16_t y = vqmovntq_s16(vqmovnbq_s16(vuninitializedq_s8(), lo16), hi16);
      vstrbq_scatter_offset_s8(out, order, vmaxq_s8(vminq_s8(y, hi), lo));
    }
  }
  for (int32_t rest = size & 15; rest > 0; rest -= 4, lhs += 4, rhs += 4, out += 4) {
    const mve_pred16_t lanes = vctp32q((uint32_t)rest);
    const uint32x4_t a = vldrbq_z_u32(lhs, lanes), b = vldrbq_z_u32(rhs, lanes);
    const int32x4_t sum = vaddq_s32(vldrwq_gather_shifted_offset_s32(lhs_table, a),
                                    vldrwq_gather_shifted_offset_s32(rhs_table, b));
    aot_mve_store4(out, requant_sum(sum, &o, form), o.offset, o.act_min, o.act_max,
                   rest < 4 ? rest : 4);
  }
}

#define AOT_ADD_RUN(name, form)                                                          \
  static void __attribute__((noinline))                                                  \
  name(const uint8_t* lhs, const uint8_t* rhs, const int32_t* lhs_table,                 \
       const int32_t* rhs_table, int8_t* out, int32_t size, const struct add_out* o) {   \
    add_run(lhs, rhs, lhs_table, rhs_table, out, size, o, form);                         \
  }
AOT_ADD_RUN(add_double_right, ADD_DOUBLE_RIGHT)
AOT_ADD_RUN(add_single_right, ADD_SINGLE_RIGHT)
AOT_ADD_RUN(add_any, ADD_ANY)

void aot_k_add_s8_mve(const struct aot_k_add_params* p, const int8_t* lhs, const int8_t* rhs,
                      const int32_t* lhs_table, const int32_t* rhs_table, int8_t* output,
                      int8_t* scratch) {
  (void)scratch;
  const struct add_out o = {p->output_multiplier, p->output_shift, p->rounding,
                            p->output_offset,     p->act_min,      p->act_max};
  const uint8_t* a = (const uint8_t*)lhs;
  const uint8_t* b = (const uint8_t*)rhs;
  if (o.shift < 0) {
    (o.rounding ? add_single_right : add_double_right)(a, b, lhs_table, rhs_table, output,
                                                       p->size, &o);
  } else {
    add_any(a, b, lhs_table, rhs_table, output, p->size, &o);
  }
}
#endif
