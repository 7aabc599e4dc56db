/* The DSP-extension operations the kernels use (not a public header): ACLE's intrinsics
 * where the core has them (__ARM_FEATURE_DSP: Cortex-M4, M7, M33 with DSP, M55), else
 * plain C with the same results, so the same kernel source also builds and is tested on
 * the host. Packed loads go through memcpy: one LDR on the M-profile cores, which allow
 * unaligned word loads, and no aliasing or alignment undefined behaviour in C. */
#ifndef AOT_KERNELS_SIMD_H
#define AOT_KERNELS_SIMD_H

#include <stdint.h>
#include <string.h>

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP && !defined(AOT_K_SCALAR)
#include <arm_acle.h>
#define AOT_K_HAVE_DSP 1
/* Bytes 0 and 2, sign-extended to two halfwords. */
static inline int32_t aot_k_sxtb16(int32_t x) { return (int32_t)__sxtb16((uint32_t)x); }
/* Bytes 1 and 3: SXTB16 with its free ROR #8. GCC 12 neither has __ror nor folds a
 * rotate into SXTB16 (it emits a separate ROR), so this one is written out. */
static inline int32_t aot_k_sxtb16_odd(int32_t x) {
  int32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}
/* acc + lo(a)*lo(b) + hi(a)*hi(b) */
static inline int32_t aot_k_smlad(int32_t a, int32_t b, int32_t acc) {
  return __smlad((int16x2_t)a, (int16x2_t)b, acc);
}
/* Two halfword additions. */
static inline int32_t aot_k_sadd16(int32_t a, int32_t b) {
  return (int32_t)__sadd16((int16x2_t)a, (int16x2_t)b);
}
/* acc + lo(a)*lo(b), acc + hi(a)*hi(b) */
static inline int32_t aot_k_smlabb(int32_t a, int32_t b, int32_t acc) {
  return __smlabb(a, b, acc);
}
static inline int32_t aot_k_smlatt(int32_t a, int32_t b, int32_t acc) {
  return __smlatt(a, b, acc);
}
#else
#define AOT_K_HAVE_DSP 0
static inline int32_t aot_k_pack16(int32_t lo, int32_t hi) {
  return (int32_t)(((uint32_t)(uint16_t)lo) | ((uint32_t)(uint16_t)hi << 16));
}
static inline int32_t aot_k_lo16(int32_t x) { return (int16_t)(uint16_t)((uint32_t)x); }
static inline int32_t aot_k_hi16(int32_t x) { return (int16_t)(uint16_t)((uint32_t)x >> 16); }
static inline int32_t aot_k_sxtb16(int32_t x) {
  return aot_k_pack16((int8_t)(uint8_t)((uint32_t)x), (int8_t)(uint8_t)((uint32_t)x >> 16));
}
static inline int32_t aot_k_sxtb16_odd(int32_t x) {
  return aot_k_pack16((int8_t)(uint8_t)((uint32_t)x >> 8), (int8_t)(uint8_t)((uint32_t)x >> 24));
}
static inline int32_t aot_k_smlad(int32_t a, int32_t b, int32_t acc) {
  /* SMLAD wraps modulo 2^32 (it only sets Q on overflow). */
  uint32_t sum = (uint32_t)acc + (uint32_t)(aot_k_lo16(a) * aot_k_lo16(b));
  return (int32_t)(sum + (uint32_t)(aot_k_hi16(a) * aot_k_hi16(b)));
}
static inline int32_t aot_k_sadd16(int32_t a, int32_t b) {
  return aot_k_pack16(aot_k_lo16(a) + aot_k_lo16(b), aot_k_hi16(a) + aot_k_hi16(b));
}
static inline int32_t aot_k_smlabb(int32_t a, int32_t b, int32_t acc) {
  return (int32_t)((uint32_t)acc + (uint32_t)(aot_k_lo16(a) * aot_k_lo16(b)));
}
static inline int32_t aot_k_smlatt(int32_t a, int32_t b, int32_t acc) {
  return (int32_t)((uint32_t)acc + (uint32_t)(aot_k_hi16(a) * aot_k_hi16(b)));
}
#endif

static inline int32_t aot_k_load32(const void* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

static inline void aot_k_store32(void* p, int32_t v) { memcpy(p, &v, 4); }

#endif /* AOT_KERNELS_SIMD_H */
