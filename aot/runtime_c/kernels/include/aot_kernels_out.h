/* How a call's outputs are requantized (not a public header): fixed per call, so each
 * hot function of a kernel is inlined once per mode (AOT_K_ROW_DISPATCH) and no output
 * tests it. AOT_K_OUT_FAST: records in the zero-point form and the activation range
 * int8's, so an output is two SMLALs, an ASR and an SSAT; AOT_K_OUT_ANY: any form and
 * range, tested per output. Shared by conv_dsp.c and conv_lanes_scalar.c. */
#ifndef AOT_KERNELS_OUT_H
#define AOT_KERNELS_OUT_H

#include <stdint.h>

#include "aot_kernels_requant.h"

enum { AOT_K_OUT_ANY = 0, AOT_K_OUT_FAST = 1 };

struct aot_k_out_q {
  const struct aot_k_rq* rq; /* one record per output channel (aot_kernels_requant.h) */
  int32_t zp, lo, hi, rounding, form;
  int32_t mode; /* AOT_K_OUT_* */
};

/* One output of acc (the bias included) from its channel's record r. */
static inline __attribute__((always_inline)) int8_t aot_k_out_q(const struct aot_k_out_q* q,
                                                                const struct aot_k_rq* r,
                                                                int32_t acc,
                                                                const int32_t mode) {
  if (mode == AOT_K_OUT_FAST) return (int8_t)aot_k_ssat8(aot_k_rq_high(r, acc));
  return aot_k_rq_apply(r, acc, q->form, q->rounding, q->zp, q->lo, q->hi);
}

static inline struct aot_k_out_q aot_k_out_quant(const int32_t* records, int32_t form,
                                                 int32_t zp, int32_t lo, int32_t hi,
                                                 int32_t rounding) {
  const int32_t fast = form == AOT_K_RQ_HIGH_ZP && lo == -128 && hi == 127;
  const struct aot_k_out_q q = {(const struct aot_k_rq*)(const void*)records,
                                zp, lo, hi, rounding, form,
                                fast ? AOT_K_OUT_FAST : AOT_K_OUT_ANY};
  return q;
}

/* Calls body(..., mode) with mode a constant, so each mode gets its own inlined copy. */
#define AOT_K_ROW_DISPATCH(body, q, ...)  \
  do {                                    \
    if ((q)->mode == AOT_K_OUT_FAST) {    \
      body(__VA_ARGS__, AOT_K_OUT_FAST);  \
    } else {                              \
      body(__VA_ARGS__, AOT_K_OUT_ANY);   \
    }                                     \
  } while (0)

#endif /* AOT_KERNELS_OUT_H */
