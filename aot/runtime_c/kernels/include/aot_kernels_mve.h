/* Helium helpers shared by the MVE kernels (aot/runtime_c/kernels/mve/): TFLite's
 * requantization on four int32 lanes and the int8 dot products of one input row with many
 * weight rows. Included only by those kernels (it needs arm_mve.h). */
#ifndef AOT_KERNELS_MVE_H
#define AOT_KERNELS_MVE_H

#include <arm_mve.h>
#include <stdint.h>

/* TFLite's single-rounding MultiplyByQuantizedMultiplier: one 64-bit product and one
 * rounding shift (shift <= 30, so the shift count is at least 1). */
static inline int32_t aot_mve_single_round(int32_t x, int32_t multiplier, int32_t shift) {
  const int32_t total = 31 - shift;
  const int64_t product = (int64_t)x * multiplier;
  return (int32_t)((product + ((int64_t)1 << (total - 1))) >> total);
}

/* Requantize four accumulators (bias already added) to int8 lanes before the clamp.
 * Double rounding is exact in vector form: VQRDMULH is gemmlowp's
 * SaturatingRoundingDoublingHighMul, and VRSHL by -e rounds halves up, so subtracting 1
 * from negative values first gives RoundingDivideByPOT's halves-away-from-zero. */
static inline int32x4_t aot_mve_requant(int32x4_t acc, int32x4_t multiplier, int32x4_t shift,
                                        int32_t rounding) {
  if (rounding) {
    int32_t lanes[4];
    int32_t mult[4];
    int32_t sh[4];
    vstrwq_s32(lanes, acc);
    vstrwq_s32(mult, multiplier);
    vstrwq_s32(sh, shift);
    for (int i = 0; i < 4; ++i) lanes[i] = aot_mve_single_round(lanes[i], mult[i], sh[i]);
    return vldrwq_s32(lanes);
  }
  const int32x4_t zero = vdupq_n_s32(0);
  const int32x4_t left = vmaxq_s32(shift, zero);
  const int32x4_t right = vminq_s32(shift, zero); /* <= 0: a right shift for VRSHL */
  int32x4_t x = vqrdmulhq_s32(vshlq_s32(acc, left), multiplier);
  /* -1 where x < 0 and there is a right shift at all (RoundingDivideByPOT(x, 0) == x) */
  const int32x4_t fixup = vandq_s32(vshrq_n_s32(x, 31), vshrq_n_s32(right, 31));
  return vrshlq_s32(vaddq_s32(x, fixup), right);
}

/* aot_mve_requant's double rounding when every lane's shift is negative (a right shift,
 * the usual case: multipliers below one): no left shift, and no lane whose exponent is
 * zero needs the fixup left out. */
static inline int32x4_t aot_mve_requant_right(int32x4_t acc, int32x4_t multiplier,
                                              int32x4_t shift) {
  const int32x4_t x = vqrdmulhq_s32(acc, multiplier);
  return vrshlq_s32(vaddq_s32(x, vshrq_n_s32(x, 31)), shift);
}

/* aot_mve_requant with one multiplier and shift for all lanes (per-tensor operators):
 * the shift amounts stay scalars (VSHL, VRSHL by a register). */
static inline int32x4_t aot_mve_requant_n(int32x4_t acc, int32_t multiplier, int32_t shift,
                                          int32_t rounding) {
  if (rounding) return aot_mve_requant(acc, vdupq_n_s32(multiplier), vdupq_n_s32(shift), 1);
  int32x4_t x = vqrdmulhq_n_s32(shift > 0 ? vshlq_r_s32(acc, shift) : acc, multiplier);
  if (shift < 0) x = vrshlq_n_s32(vaddq_s32(x, vshrq_n_s32(x, 31)), shift);
  return x;
}

/* Output zero point and activation clamp, then store the first n (1..4) lanes as int8. */
static inline void aot_mve_store4(int8_t* out, int32x4_t x, int32_t output_offset,
                                  int32_t act_min, int32_t act_max, int32_t n) {
  /* saturating: an out-of-range value clamps to the same bound either way */
  x = vqaddq_n_s32(x, output_offset);
  x = vmaxq_s32(vminq_s32(x, vdupq_n_s32(act_max)), vdupq_n_s32(act_min));
  vstrbq_p_s32(out, x, vctp32q((uint32_t)n));
}

/* The requantization every output channel of a call shares (aot_mve_requant_form): the
 * model's rounding mode, or double rounding with every shift a right shift, which takes
 * aot_mve_requant_right's short form. */
enum { AOT_MVE_RQ_DOUBLE = 0, AOT_MVE_RQ_SINGLE = 1, AOT_MVE_RQ_RIGHT = 2 };

static inline int32_t aot_mve_requant_form(int32_t rounding, const int32_t* shift, int32_t n) {
  if (rounding) return AOT_MVE_RQ_SINGLE;
  for (int32_t i = 0; i < n; ++i) {
    if (shift[i] >= 0) return AOT_MVE_RQ_DOUBLE;
  }
  return AOT_MVE_RQ_RIGHT;
}

/* Four channels' sums (channels o .. o + 3) with their bias, requantized, clamped and
 * stored; predicated past out_c. */
static inline __attribute__((always_inline)) void aot_mve_store_block(
    int32_t a0, int32_t a1, int32_t a2, int32_t a3, const int32_t* bias,
    const int32_t* multiplier, const int32_t* shift, int32_t o, int32_t out_c,
    int32_t output_offset, int32x4_t lo, int32x4_t hi, int32_t form, int8_t* out) {
  int32x4_t acc = vdupq_n_s32(a0);
  acc = vsetq_lane_s32(a1, acc, 1);
  acc = vsetq_lane_s32(a2, acc, 2);
  acc = vsetq_lane_s32(a3, acc, 3);
  acc = vaddq_s32(acc, vldrwq_s32(bias + o));
  if (form == AOT_MVE_RQ_RIGHT) {
    acc = aot_mve_requant_right(acc, vldrwq_s32(multiplier + o), vldrwq_s32(shift + o));
  } else {
    acc = aot_mve_requant(acc, vldrwq_s32(multiplier + o), vldrwq_s32(shift + o), form);
  }
  acc = vmaxq_s32(vminq_s32(vqaddq_n_s32(acc, output_offset), hi), lo);
  if (out_c - o >= 4) { /* a whole block: no predicate to make */
    vstrbq_s32(out, acc);
  } else {
    vstrbq_p_s32(out, acc, vctp32q((uint32_t)(out_c - o)));
  }
}

/* out[o] = requant(bias[o] + sum_k row[k] * w[o][k]) for o < out_c, weights blocked at
 * build time (aot/kernels/mve.py): per block of four output channels, per 16-byte chunk
 * of the depth, the four channels' 16 bytes; out_c padded to a multiple of 4 and the depth
 * to a multiple of 16 with zero weights, as are bias, multiplier and shift. One pointer
 * walks the block, each 16-byte load of the row serves four VMLADAVAs; only the row's
 * last partial chunk is loaded predicated (the zero weights cancel the rest anyway).
 * `form`: aot_mve_requant_form's, of the call (a branch per block of four channels). */
static inline __attribute__((always_inline)) void aot_mve_row_times_weights(
    const int8_t* row, int32_t depth, const int8_t* w, int32_t out_c, const int32_t* bias,
    const int32_t* multiplier, const int32_t* shift, int32_t output_offset, int32_t act_min,
    int32_t act_max, int32_t form, int8_t* out) {
  const int32_t full = depth >> 4;
  const int32_t rest = depth & 15;
  const mve_pred16_t tail = vctp8q((uint32_t)rest);
  const int32x4_t lo = vdupq_n_s32(act_min), hi = vdupq_n_s32(act_max);
  for (int32_t o = 0; o < out_c; o += 4, out += 4) {
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    const int8_t* x = row;
    for (int32_t i = 0; i < full; ++i, x += 16, w += 64) {
      const int8x16_t v = vldrbq_s8(x);
      a0 = vmladavaq_s8(a0, v, vldrbq_s8(w));
      a1 = vmladavaq_s8(a1, v, vldrbq_s8(w + 16));
      a2 = vmladavaq_s8(a2, v, vldrbq_s8(w + 32));
      a3 = vmladavaq_s8(a3, v, vldrbq_s8(w + 48));
    }
    if (rest) {
      const int8x16_t v = vldrbq_z_s8(x, tail);
      a0 = vmladavaq_s8(a0, v, vldrbq_s8(w));
      a1 = vmladavaq_s8(a1, v, vldrbq_s8(w + 16));
      a2 = vmladavaq_s8(a2, v, vldrbq_s8(w + 32));
      a3 = vmladavaq_s8(a3, v, vldrbq_s8(w + 48));
      w += 64;
    }
    aot_mve_store_block(a0, a1, a2, a3, bias, multiplier, shift, o, out_c, output_offset, lo,
                        hi, form, out);
  }
}

/* aot_mve_row_times_weights for a row already in one to three Q registers (`chunks`, a
 * constant at each call; v1 and v2 unused below it), its lanes past the depth zero: every
 * block of four channels is then only its weight loads, the VMLADAVs and the
 * requantization (no chunk loop, no reload of the row). */
static inline __attribute__((always_inline)) void aot_mve_vectors_times_weights(
    int8x16_t v0, int8x16_t v1, int8x16_t v2, const int8_t* w, int32_t out_c,
    const int32_t* bias, const int32_t* multiplier, const int32_t* shift, int32_t output_offset,
    int32_t act_min, int32_t act_max, int32_t form, int8_t* out, const int chunks) {
  const int32x4_t lo = vdupq_n_s32(act_min), hi = vdupq_n_s32(act_max);
  for (int32_t o = 0; o < out_c; o += 4, out += 4, w += 64 * chunks) {
    int32_t a0 = vmladavq_s8(v0, vldrbq_s8(w));
    int32_t a1 = vmladavq_s8(v0, vldrbq_s8(w + 16));
    int32_t a2 = vmladavq_s8(v0, vldrbq_s8(w + 32));
    int32_t a3 = vmladavq_s8(v0, vldrbq_s8(w + 48));
    if (chunks > 1) {
      a0 = vmladavaq_s8(a0, v1, vldrbq_s8(w + 64));
      a1 = vmladavaq_s8(a1, v1, vldrbq_s8(w + 80));
      a2 = vmladavaq_s8(a2, v1, vldrbq_s8(w + 96));
      a3 = vmladavaq_s8(a3, v1, vldrbq_s8(w + 112));
    }
    if (chunks > 2) {
      a0 = vmladavaq_s8(a0, v2, vldrbq_s8(w + 128));
      a1 = vmladavaq_s8(a1, v2, vldrbq_s8(w + 144));
      a2 = vmladavaq_s8(a2, v2, vldrbq_s8(w + 160));
      a3 = vmladavaq_s8(a3, v2, vldrbq_s8(w + 176));
    }
    aot_mve_store_block(a0, a1, a2, a3, bias, multiplier, shift, o, out_c, output_offset, lo,
                        hi, form, out);
  }
}

/* aot_mve_row_times_weights for a row of at most 16 * `chunks` bytes (chunks 1 to 3, a
 * constant at each call: convolutions over few input channels): the row's chunks are
 * loaded once, predicated, and kept in Q registers for every block of four channels. */
static inline __attribute__((always_inline)) void aot_mve_short_row_times_weights(
    const int8_t* row, int32_t depth, const int8_t* w, int32_t out_c, const int32_t* bias,
    const int32_t* multiplier, const int32_t* shift, int32_t output_offset, int32_t act_min,
    int32_t act_max, int32_t form, int8_t* out, const int chunks) {
  const int8x16_t v0 = vldrbq_z_s8(row, vctp8q((uint32_t)depth));
  const int8x16_t v1 = chunks > 1 ? vldrbq_z_s8(row + 16, vctp8q((uint32_t)(depth - 16))) : v0;
  const int8x16_t v2 = chunks > 2 ? vldrbq_z_s8(row + 32, vctp8q((uint32_t)(depth - 32))) : v0;
  aot_mve_vectors_times_weights(v0, v1, v2, w, out_c, bias, multiplier, shift, output_offset,
                                act_min, act_max, form, out, chunks);
}

#endif
