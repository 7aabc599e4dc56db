/* Helium helpers shared by the MVE kernels (aot/runtime_c/kernels/mve/): TFLite's
 * requantization on four int32 lanes and the int8 dot products of one input row with many
 * weight rows (in C, and in inline asm: aot_mve_row_blocks). Included only by those
 * kernels (it needs arm_mve.h). */
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
 * model's rounding mode, each in a short form when every shift is a right shift (the
 * usual case: multipliers below one). Double rounding's short form is
 * aot_mve_requant_right; single rounding's is VQDMULH then VRSHL by the shift: for a
 * shift s <= -1, (x * m + 2^(30 - s)) >> (31 - s) is VRSHL(floor(x * m / 2^31), s)
 * exactly (the bits VQDMULH drops lie below the rounding bit), and VQDMULH cannot
 * saturate with m >= 0. */
/* Per block of four output channels one record of int32 [bias][4], [multiplier][4],
 * [shift][4] (aot/kernels/mve.py _row_constants): one pointer walks them. */
enum { AOT_MVE_REC_BIAS = 0, AOT_MVE_REC_MULT = 4, AOT_MVE_REC_SHIFT = 8, AOT_MVE_REC = 12 };

enum {
  AOT_MVE_RQ_DOUBLE = 0,
  AOT_MVE_RQ_SINGLE = 1,
  AOT_MVE_RQ_RIGHT = 2,
  AOT_MVE_RQ_SINGLE_RIGHT = 3
};

/* The forms a build's calls use: aot/kernels/mve.py defines AOT_MVE_FORMS_KNOWN and, per
 * kernel family and form, AOT_MVE_<CONV|FC>_<form> for the project, so the loops of forms
 * no call takes are compiled out (their text was most of the kernels'). Without
 * AOT_MVE_FORMS_KNOWN (a firmware calling the kernels on data of its own) every form is
 * compiled. */
#ifdef AOT_MVE_FORMS_KNOWN
#define AOT_MVE_FORM_DEFAULT 0
#else
#define AOT_MVE_FORM_DEFAULT 1
#endif
#ifndef AOT_MVE_CONV_RIGHT
#define AOT_MVE_CONV_RIGHT AOT_MVE_FORM_DEFAULT
#endif
#ifndef AOT_MVE_CONV_SINGLE_RIGHT
#define AOT_MVE_CONV_SINGLE_RIGHT AOT_MVE_FORM_DEFAULT
#endif
#ifndef AOT_MVE_CONV_DOUBLE
#define AOT_MVE_CONV_DOUBLE AOT_MVE_FORM_DEFAULT
#endif
#ifndef AOT_MVE_CONV_SINGLE
#define AOT_MVE_CONV_SINGLE AOT_MVE_FORM_DEFAULT
#endif
#ifndef AOT_MVE_FC_RIGHT
#define AOT_MVE_FC_RIGHT AOT_MVE_FORM_DEFAULT
#endif
#ifndef AOT_MVE_FC_SINGLE_RIGHT
#define AOT_MVE_FC_SINGLE_RIGHT AOT_MVE_FORM_DEFAULT
#endif
#ifndef AOT_MVE_FC_DOUBLE
#define AOT_MVE_FC_DOUBLE AOT_MVE_FORM_DEFAULT
#endif
#ifndef AOT_MVE_FC_SINGLE
#define AOT_MVE_FC_SINGLE AOT_MVE_FORM_DEFAULT
#endif
/* a convolution's loops for a form known only at run time (all but RIGHT) */
#define AOT_MVE_CONV_OTHER (AOT_MVE_CONV_SINGLE_RIGHT || AOT_MVE_CONV_DOUBLE || AOT_MVE_CONV_SINGLE)

/* A call whose form the build said no call has: the defines and aot_mve_requant_form
 * disagree, a fault rather than wrong outputs. */
static inline void aot_mve_form_missing(void) { __builtin_trap(); }

/* Whether a convolution of form `form` runs its right-shift loops: a constant when the
 * build compiled only one kind (the other's functions are then unreferenced and dropped). */
static inline int32_t aot_mve_conv_right(int32_t form) {
  const int32_t right = form == AOT_MVE_RQ_RIGHT;
  if (right ? !AOT_MVE_CONV_RIGHT : !AOT_MVE_CONV_OTHER) aot_mve_form_missing();
  return !AOT_MVE_CONV_RIGHT ? 0 : !AOT_MVE_CONV_OTHER ? 1 : right;
}

static inline int32_t aot_mve_requant_form(int32_t rounding, const int32_t* records,
                                           int32_t n) {
  /* per block: the padded channels' shifts are -1 */
  for (int32_t o = 0; o < n; o += 4, records += AOT_MVE_REC) {
    if (vmaxvq_s32(INT32_MIN, vldrwq_s32(records + AOT_MVE_REC_SHIFT)) >= 0) {
      return rounding ? AOT_MVE_RQ_SINGLE : AOT_MVE_RQ_DOUBLE;
    }
  }
  return rounding ? AOT_MVE_RQ_SINGLE_RIGHT : AOT_MVE_RQ_RIGHT;
}

/* Four channels' sums (channels o .. o + 3) with their bias, requantized, clamped and
 * stored; predicated past out_c. */
static inline __attribute__((always_inline)) void aot_mve_store_block(
    int32_t a0, int32_t a1, int32_t a2, int32_t a3, const int32_t* records, int32_t o,
    int32_t out_c, int32_t output_offset, int32x4_t lo, int32x4_t hi, int32_t form,
    int8_t* out) {
  const int32_t* record = records + 3 * o; /* o: a multiple of 4 */
  int32x4_t acc = vdupq_n_s32(a0);
  acc = vsetq_lane_s32(a1, acc, 1);
  acc = vsetq_lane_s32(a2, acc, 2);
  acc = vsetq_lane_s32(a3, acc, 3);
  acc = vaddq_s32(acc, vldrwq_s32(record + AOT_MVE_REC_BIAS));
  const int32x4_t multiplier = vldrwq_s32(record + AOT_MVE_REC_MULT);
  const int32x4_t shift = vldrwq_s32(record + AOT_MVE_REC_SHIFT);
  if (form == AOT_MVE_RQ_RIGHT) {
    acc = aot_mve_requant_right(acc, multiplier, shift);
  } else {
    acc = aot_mve_requant(acc, multiplier, shift, form);
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
 * `form`: aot_mve_requant_form's, of the call (a branch per block of four channels).
 * The C form of aot_mve_row_times_weights, which takes it for single rounding with a
 * left shift or a zero exponent (per lane, through the stack). */
static inline __attribute__((always_inline)) void aot_mve_row_times_weights_c(
    const int8_t* row, int32_t depth, const int8_t* w, int32_t out_c, const int32_t* records,
    int32_t output_offset, int32_t act_min, int32_t act_max, int32_t form, int8_t* out) {
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
    aot_mve_store_block(a0, a1, a2, a3, records, o, out_c, output_offset, lo, hi, form, out);
  }
}

/* aot_mve_row_times_weights_c out of line: the forms no asm block takes (rare) cost a call
 * per row, not their loop's code at every caller */
static __attribute__((noinline, unused)) void aot_mve_row_times_weights_slow(
    const int8_t* row, int32_t depth, const int8_t* w, int32_t out_c, const int32_t* records,
    int32_t output_offset, int32_t act_min, int32_t act_max, int32_t form, int8_t* out) {
  aot_mve_row_times_weights_c(row, depth, w, out_c, records, output_offset, act_min, act_max,
                              form, out);
}

/* -- The dot-product core in inline asm ------------------------------------------------
 * GCC 12 spilled the loop state of the C loops above and built each block's vector from
 * the four sums with a VDUP and three lane inserts; these blocks are written out. Per
 * block of four channels: the weight loads and VMLADAV(A)s (sums in r0, r2, r4, r6:
 * VMLADAV needs even registers), two VMOVs of two sums each into q4, the bias, the
 * requantization, the output offset, the clamp (q6, q7) and one VSTRB.32. The row lives
 * in q0-q3 when it has at most four 16-byte chunks (its last chunk loaded predicated,
 * the lanes past the depth zero); a longer row is read by a chunk loop (VLDRB with
 * pre-index writeback, two chunks per LE), its partial last chunk kept in q1.
 * Registers: the row in r1, the output in r3, the args in r5 (register variables); the
 * weights' and records' pointers in r8 and r9, r10 and r12 (the offset, or the chunk
 * loop's count and rewind) are saved and restored by the asm itself, so GCC keeps its
 * loop state in them (with all of them clobbered it found no registers for the
 * operands). A block's record: bias by `vldrw.u32 q5, [r9, #48]!`, multiplier
 * [r9, #16], shift [r9, #32]. */

/* What every pixel of a call shares, read by the asm (the byte offsets in the asm). */
struct aot_mve_block_args {
  int32_t hi[4];     /* 0: act_max */
  int32_t lo[4];     /* 16: act_min */
  int32_t offset[4]; /* 32: the output offset */
  int32_t last;      /* 48: bytes in the row's last chunk, 1..16 */
  int32_t out_c;     /* 52 */
  int32_t blocks;    /* 56: whole blocks of four channels */
  int32_t tail;      /* 60: channels past them, 0..3 */
  int32_t loops;     /* 64: the row's whole chunks less one (the chunk loop's count) */
  const int8_t* w;   /* 68: the blocked weights (r8) */
  uintptr_t records; /* 72: the records' address less one record (r9, pre-indexed) */
  uintptr_t records_end; /* 76: r9 after the whole blocks (aot_mve_block_args_pairs) */
  int32_t col_step;      /* 80: the pair's second pixel, bytes after the first */
  int32_t pairs;         /* 84: the chunk loop's iterations (two chunks each) */
  int32_t rewind;        /* 88: 16 * (whole chunks - 1) */
};

static inline void aot_mve_block_args_init(struct aot_mve_block_args* k, const int8_t* w,
                                           const int32_t* records, int32_t depth,
                                           int32_t out_c, int32_t output_offset,
                                           int32_t act_min, int32_t act_max) {
  vstrwq_s32(k->hi, vdupq_n_s32(act_max));
  vstrwq_s32(k->lo, vdupq_n_s32(act_min));
  vstrwq_s32(k->offset, vdupq_n_s32(output_offset));
  k->last = ((depth - 1) & 15) + 1;
  k->out_c = out_c;
  k->blocks = out_c >> 2;
  k->tail = out_c & 3;
  k->loops = (depth >> 4) - 1;
  k->pairs = k->loops >> 1;
  k->rewind = 16 * k->loops;
  k->w = w;
  k->records = (uintptr_t)records - 4 * AOT_MVE_REC;
}

/* the fields only aot_mve_pair_blocks reads */
static inline void aot_mve_block_args_pairs(struct aot_mve_block_args* k, int32_t col_step) {
  k->records_end = k->records + 4 * AOT_MVE_REC * (uint32_t)k->blocks;
  k->col_step = col_step;
}

/* four channels' 16 bytes of one chunk (in q) into the four sums */
#define AOT_MVE_DOT4(op, q)                         \
  "vldrb.8 q4, [r8], #16\n\t" op " r0, " q ", q4\n\t" \
  "vldrb.8 q4, [r8], #16\n\t" op " r2, " q ", q4\n\t" \
  "vldrb.8 q4, [r8], #16\n\t" op " r4, " q ", q4\n\t" \
  "vldrb.8 q4, [r8], #16\n\t" op " r6, " q ", q4\n\t"
#define AOT_MVE_DOTS1 AOT_MVE_DOT4("vmladav.s8", "q0")
#define AOT_MVE_DOTS2 AOT_MVE_DOTS1 AOT_MVE_DOT4("vmladava.s8", "q1")
#define AOT_MVE_DOTS3 AOT_MVE_DOTS2 AOT_MVE_DOT4("vmladava.s8", "q2")
#define AOT_MVE_DOTS4 AOT_MVE_DOTS3 AOT_MVE_DOT4("vmladava.s8", "q3")

/* the row's chunks into q0.., the last one predicated (P0: vctp.8 of its bytes) */
#define AOT_MVE_LOAD1 "vpst\n\tvldrbt.8 q0, [r1]\n\t"
#define AOT_MVE_LOAD2 "vldrb.8 q0, [r1]\n\tvpst\n\tvldrbt.8 q1, [r1, #16]\n\t"
#define AOT_MVE_LOAD3                                   \
  "vldrb.8 q0, [r1]\n\tvldrb.8 q1, [r1, #16]\n\t" \
  "vpst\n\tvldrbt.8 q2, [r1, #32]\n\t"
#define AOT_MVE_LOAD4                                                   \
  "vldrb.8 q0, [r1]\n\tvldrb.8 q1, [r1, #16]\n\tvldrb.8 q2, [r1, #32]\n\t" \
  "vpst\n\tvldrbt.8 q3, [r1, #48]\n\t"

/* the four sums into q4's lanes 0-3 (GAS's "vmov q4[2], q4[0], r0, r4" puts r0 in lane 0
 * and r4 in lane 2), plus the bias */
#define AOT_MVE_SUMS               \
  "vmov q4[2], q4[0], r0, r4\n\t"  \
  "vmov q4[3], q4[1], r2, r6\n\t"  \
  "vldrw.u32 q5, [r9, #48]!\n\t"    \
  "vadd.i32 q4, q4, q5\n\t"

/* aot_mve_requant_right (t unused) */
#define AOT_MVE_RQ_RIGHT_ASM(t)     \
  "vldrw.u32 q5, [r9, #16]\n\t"    \
  "vqrdmulh.s32 q4, q4, q5\n\t"     \
  "vshr.s32 q5, q4, #31\n\t"        \
  "vadd.i32 q4, q4, q5\n\t"         \
  "vldrw.u32 q5, [r9, #32]\n\t"    \
  "vrshl.s32 q4, q4, q5\n\t"
/* single rounding, every shift <= -1 (aot_mve_requant_form; t unused) */
#define AOT_MVE_RQ_SINGLE_RIGHT_ASM(t) \
  "vldrw.u32 q5, [r9, #16]\n\t"       \
  "vqdmulh.s32 q4, q4, q5\n\t"         \
  "vldrw.u32 q5, [r9, #32]\n\t"       \
  "vrshl.s32 q4, q4, q5\n\t"
/* aot_mve_requant's double rounding, t a free Q register: left = shift & ~(shift >> 31),
 * right = shift - left, the fixup -1 where x and right are both negative */
#define AOT_MVE_RQ_DOUBLE_ASM(t)        \
  "vldrw.u32 q5, [r9, #32]\n\t"        \
  "vshr.s32 " t ", q5, #31\n\t"         \
  "vbic " t ", q5, " t "\n\t"           \
  "vsub.i32 q5, q5, " t "\n\t"          \
  "vshl.s32 q4, q4, " t "\n\t"          \
  "vldrw.u32 " t ", [r9, #16]\n\t"     \
  "vqrdmulh.s32 q4, q4, " t "\n\t"      \
  "vand " t ", q4, q5\n\t"              \
  "vshr.s32 " t ", " t ", #31\n\t"      \
  "vadd.i32 q4, q4, " t "\n\t"          \
  "vrshl.s32 q4, q4, q5\n\t"

/* output offset (in r12 or a Q register) and clamp */
#define AOT_MVE_FINISH(offset) \
  "vqadd.s32 q4, q4, " offset "\n\tvmin.s32 q4, q4, q6\n\tvmax.s32 q4, q4, q7\n\t"

#define AOT_MVE_ASM(body)                                                                 \
  do {                                                                                    \
    register const int8_t* x_ __asm__("r1") = row;                                        \
    register int8_t* out_ __asm__("r3") = out;                                            \
    register const struct aot_mve_block_args* k_ __asm__("r5") = k;                      \
    __asm__ volatile("push {r8, r9, r10, r12}\n\t"                              \
                     "ldrd r8, r9, [r5, #68]\n\t"                                         \
                     "vldrw.u32 q6, [r5]\n\t"                                             \
                     "vldrw.u32 q7, [r5, #16]\n\t" body "pop {r8, r9, r10, r12}\n" \
                     : "+r"(x_), "+r"(out_), "+r"(k_)                                     \
                     :                                                                    \
                     : "r0", "r2", "r4", "r6", "lr", "q0", "q1", "q2", "q3", "q4", "q5",  \
                       "q6", "q7", "memory", "cc");                                       \
  } while (0)

/* every block of four channels of a row held in q0..q(chunks-1) */
#define AOT_MVE_RESIDENT(LOADS, DOTS, RQ)                              \
  AOT_MVE_ASM("ldr r12, [r5, #32]\n\t"                                 \
              "ldr r0, [r5, #48]\n\t"                                  \
              "vctp.8 r0\n\t" LOADS                                    \
              "ldr r0, [r5, #56]\n\t"                                  \
              "wls lr, r0, 2f\n"                                       \
              "1:\n\t" DOTS AOT_MVE_SUMS RQ AOT_MVE_FINISH("r12")      \
              "vstrb.32 q4, [r3], #4\n\t"                              \
              "le lr, 1b\n"                                            \
              "2:\n\t"                                                 \
              "ldr r0, [r5, #60]\n\t"                                  \
              "cmp r0, #0\n\t"                                         \
              "beq 3f\n\t" DOTS AOT_MVE_SUMS RQ AOT_MVE_FINISH("r12")  \
              "ldr r0, [r5, #60]\n\t"                                  \
              "vctp.32 r0\n\t"                                         \
              "vpst\n\t"                                               \
              "vstrbt.32 q4, [r3]\n"                                   \
              "3:\n\t")

/* one block's sums by the chunk loop: the first chunk, r12 iterations of two chunks (one
 * LE per two), one more when `odd` (k->loops odd); r10: the bytes to rewind the row by;
 * `rest`: the partial last chunk, in q1 */
#define AOT_MVE_LOOP_CHUNK "vldrb.8 q0, [r1, #16]!\n\t" AOT_MVE_DOT4("vmladava.s8", "q0")
#define AOT_MVE_LOOP_DOTS(odd, rest)                      \
  "vldrb.8 q0, [r1]\n\t" AOT_MVE_DOT4("vmladav.s8", "q0") \
  "wls lr, r12, 4f\n"                                     \
  "3:\n\t" AOT_MVE_LOOP_CHUNK AOT_MVE_LOOP_CHUNK          \
  "le lr, 3b\n"                                           \
  "4:\n\t" odd                                            \
  "sub r1, r1, r10\n\t" rest
#define AOT_MVE_REST AOT_MVE_DOT4("vmladava.s8", "q1")
#define AOT_MVE_REST_LOAD        \
  "ldr r0, [r5, #48]\n\t"        \
  "vctp.8 r0\n\t"                \
  "add r2, r1, r10\n\t"          \
  "vpst\n\t"                     \
  "vldrbt.8 q1, [r2, #16]\n\t"

/* every block of four channels of a longer row (r5 then counts the channels down) */
#define AOT_MVE_LOOP(ODD, REST_LOAD, REST, RQ)                              \
  AOT_MVE_ASM("vldrw.u32 q3, [r5, #32]\n\t"                                 \
              "ldrd r12, r10, [r5, #84]\n\t" REST_LOAD                      \
              "ldr r5, [r5, #52]\n\t"                                       \
              "subs r5, r5, #4\n\t"                                         \
              "blt 5f\n"                                                    \
              "1:\n\t" AOT_MVE_LOOP_DOTS(ODD, REST) AOT_MVE_SUMS RQ AOT_MVE_FINISH("q3") \
              "vstrb.32 q4, [r3], #4\n\t"                                   \
              "subs r5, r5, #4\n\t"                                         \
              "bge 1b\n"                                                    \
              "5:\n\t"                                                      \
              "adds r5, r5, #4\n\t"                                         \
              "beq 6f\n\t" AOT_MVE_LOOP_DOTS(ODD, REST) AOT_MVE_SUMS RQ AOT_MVE_FINISH("q3") \
              "vctp.32 r5\n\t"                                              \
              "vpst\n\t"                                                    \
              "vstrbt.32 q4, [r3]\n"                                        \
              "6:\n\t")

#define AOT_MVE_ROW_ASM(RQ, chunks)                                                  \
  do {                                                                               \
    if (chunks == 1) {                                                               \
      AOT_MVE_RESIDENT(AOT_MVE_LOAD1, AOT_MVE_DOTS1, RQ("q3"));                      \
    } else if (chunks == 2) {                                                        \
      AOT_MVE_RESIDENT(AOT_MVE_LOAD2, AOT_MVE_DOTS2, RQ("q3"));                      \
    } else if (chunks == 3) {                                                        \
      AOT_MVE_RESIDENT(AOT_MVE_LOAD3, AOT_MVE_DOTS3, RQ("q3"));                      \
    } else if (chunks == 4) {                                                        \
      AOT_MVE_RESIDENT(AOT_MVE_LOAD4, AOT_MVE_DOTS4, RQ("q2"));                      \
    } else if (k->last == 16 && (k->loops & 1)) {                                    \
      AOT_MVE_LOOP(AOT_MVE_LOOP_CHUNK, "", "", RQ("q2"));                            \
    } else if (k->last == 16) {                                                      \
      AOT_MVE_LOOP("", "", "", RQ("q2"));                                            \
    } else if (k->loops & 1) {                                                       \
      AOT_MVE_LOOP(AOT_MVE_LOOP_CHUNK, AOT_MVE_REST_LOAD, AOT_MVE_REST, RQ("q2"));   \
    } else {                                                                         \
      AOT_MVE_LOOP("", AOT_MVE_REST_LOAD, AOT_MVE_REST, RQ("q2"));                   \
    }                                                                                \
  } while (0)

/* -- Two pixels per pass over the weights -----------------------------------------------
 * A 1x1 convolution's rows of at most 64 bytes (chunks 1-4; a partial last chunk loaded
 * predicated), right-shift double rounding: each weight load serves both pixels'
 * VMLADAVs. Their eight sums take every even register (r0-r6 pixel A, r8, r10, r12, lr
 * pixel B), so the block loop has no LE:
 * it ends when the record pointer (r9) reaches the last whole block's, kept on the stack
 * with the tail count and the offset vector. Registers: A's row r1, B's r7 (= r1 + the
 * column step), A's output r3, B's r5 (= r3 + out_c), weights r11. Per block of four
 * channels of two pixels: 2 row and 4 weight loads and 8 VMLADAVs per chunk, 29 for the
 * sums' moves, both requantizations, stores and the loop test (94 for two single
 * pixels' blocks over 64 bytes, 85 here). */
#define AOT_MVE_PAIR_DOT4(op)                                                   \
  "vldrb.8 q2, [r11], #16\n\t" op " r0, q0, q2\n\t" op " r8, q1, q2\n\t"    \
  "vldrb.8 q2, [r11], #16\n\t" op " r2, q0, q2\n\t" op " r10, q1, q2\n\t"   \
  "vldrb.8 q2, [r11], #16\n\t" op " r4, q0, q2\n\t" op " r12, q1, q2\n\t"   \
  "vldrb.8 q2, [r11], #16\n\t" op " r6, q0, q2\n\t" op " lr, q1, q2\n\t"
#define AOT_MVE_PAIR_CHUNK(off, op) \
  "vldrb.8 q0, [r1, #" off "]\n\tvldrb.8 q1, [r7, #" off "]\n\t" AOT_MVE_PAIR_DOT4(op)
/* a partial last chunk: both rows' loads predicated (P0: vctp.8 of its bytes) */
#define AOT_MVE_PAIR_LAST(off, op)                                                \
  "vpstt\n\tvldrbt.8 q0, [r1, #" off "]\n\tvldrbt.8 q1, [r7, #" off "]\n\t" \
      AOT_MVE_PAIR_DOT4(op)
#define AOT_MVE_PAIR_DOTS1 AOT_MVE_PAIR_CHUNK("0", "vmladav.s8")
#define AOT_MVE_PAIR_DOTS2 AOT_MVE_PAIR_DOTS1 AOT_MVE_PAIR_CHUNK("16", "vmladava.s8")
#define AOT_MVE_PAIR_DOTS3 AOT_MVE_PAIR_DOTS2 AOT_MVE_PAIR_CHUNK("32", "vmladava.s8")
#define AOT_MVE_PAIR_DOTS4 AOT_MVE_PAIR_DOTS3 AOT_MVE_PAIR_CHUNK("48", "vmladava.s8")
#define AOT_MVE_PAIR_PART1 AOT_MVE_PAIR_LAST("0", "vmladav.s8")
#define AOT_MVE_PAIR_PART2 AOT_MVE_PAIR_DOTS1 AOT_MVE_PAIR_LAST("16", "vmladava.s8")
#define AOT_MVE_PAIR_PART3 AOT_MVE_PAIR_DOTS2 AOT_MVE_PAIR_LAST("32", "vmladava.s8")
#define AOT_MVE_PAIR_PART4 AOT_MVE_PAIR_DOTS3 AOT_MVE_PAIR_LAST("48", "vmladava.s8")
#define AOT_MVE_PAIR_PREDICATE "ldr r0, [r5, #48]\n\tvctp.8 r0\n\t"

/* both pixels' sums into q3 and q4, requantized (aot_mve_requant_right), offset, clamped */
#define AOT_MVE_PAIR_REQUANT            \
  "vmov q3[2], q3[0], r0, r4\n\t"       \
  "vmov q3[3], q3[1], r2, r6\n\t"       \
  "vmov q4[2], q4[0], r8, r12\n\t"      \
  "vmov q4[3], q4[1], r10, lr\n\t"      \
  "vldrw.u32 q5, [r9, #48]!\n\t"        \
  "vadd.i32 q3, q3, q5\n\t"             \
  "vadd.i32 q4, q4, q5\n\t"             \
  "vldrw.u32 q5, [r9, #16]\n\t"         \
  "vqrdmulh.s32 q3, q3, q5\n\t"         \
  "vqrdmulh.s32 q4, q4, q5\n\t"         \
  "vshr.s32 q0, q3, #31\n\t"            \
  "vadd.i32 q3, q3, q0\n\t"             \
  "vshr.s32 q1, q4, #31\n\t"            \
  "vadd.i32 q4, q4, q1\n\t"             \
  "vldrw.u32 q5, [r9, #32]\n\t"         \
  "vrshl.s32 q3, q3, q5\n\t"            \
  "vrshl.s32 q4, q4, q5\n\t"            \
  "vldrw.u32 q5, [sp, #8]\n\t"          \
  "vqadd.s32 q3, q3, q5\n\t"            \
  "vqadd.s32 q4, q4, q5\n\t"            \
  "vmin.s32 q3, q3, q6\n\t"             \
  "vmin.s32 q4, q4, q6\n\t"             \
  "vmax.s32 q3, q3, q7\n\t"             \
  "vmax.s32 q4, q4, q7\n\t"

#define AOT_MVE_PAIR_ASM(PREDICATE, DOTS)                                               \
  do {                                                                                  \
    register const int8_t* x_ __asm__("r1") = row;                                      \
    register int8_t* out_ __asm__("r3") = out;                                          \
    register const struct aot_mve_block_args* k_ __asm__("r5") = k;                    \
    __asm__ volatile("push {r7, r8, r9, r10, r11, r12}\n\t"                             \
                     "sub sp, #24\n\t" PREDICATE                                        \
                     "ldrd r11, r9, [r5, #68]\n\t"                                      \
                     "ldrd r0, r2, [r5, #76]\n\t" /* records' end, column step */       \
                     "ldr r4, [r5, #60]\n\t"                                            \
                     "strd r0, r4, [sp]\n\t"                                            \
                     "add r7, r1, r2\n\t"                                               \
                     "vldrw.u32 q0, [r5, #32]\n\t"                                      \
                     "vstrw.32 q0, [sp, #8]\n\t"                                        \
                     "vldrw.u32 q6, [r5]\n\t"                                           \
                     "vldrw.u32 q7, [r5, #16]\n\t"                                      \
                     "ldr r2, [r5, #52]\n\t"                                            \
                     "add r5, r3, r2\n\t"                                               \
                     "cmp r9, r0\n\t"                                                   \
                     "beq 2f\n"                                                         \
                     "1:\n\t" DOTS AOT_MVE_PAIR_REQUANT                                 \
                     "vstrb.32 q3, [r3], #4\n\t"                                        \
                     "vstrb.32 q4, [r5], #4\n\t"                                        \
                     "ldr r0, [sp]\n\t"                                                 \
                     "cmp r9, r0\n\t"                                                   \
                     "bne 1b\n"                                                         \
                     "2:\n\t"                                                           \
                     "ldr r0, [sp, #4]\n\t"                                             \
                     "cmp r0, #0\n\t"                                                   \
                     "beq 3f\n\t" DOTS AOT_MVE_PAIR_REQUANT                             \
                     "ldr r0, [sp, #4]\n\t"                                             \
                     "vctp.32 r0\n\t"                                                   \
                     "vpstt\n\t"                                                        \
                     "vstrbt.32 q3, [r3]\n\t"                                           \
                     "vstrbt.32 q4, [r5]\n"                                             \
                     "3:\n\t"                                                           \
                     "add sp, #24\n\t"                                                  \
                     "pop {r7, r8, r9, r10, r11, r12}\n"                                \
                     : "+r"(x_), "+r"(out_), "+r"(k_)                                   \
                     :                                                                  \
                     : "r0", "r2", "r4", "r6", "lr", "q0", "q1", "q2", "q3", "q4", "q5", \
                       "q6", "q7", "memory", "cc");                                     \
  } while (0)

/* two pixels' rows of 16 * (chunks - 1) + k->last bytes (chunks 1-4, a constant; `whole`:
 * k->last is 16, no predicated load), B's at row + k->col_step, outputs out and
 * out + k->out_c, right-shift double rounding */
static inline __attribute__((always_inline)) void aot_mve_pair_blocks(
    const int8_t* row, const struct aot_mve_block_args* k, int8_t* out, const int chunks,
    int32_t whole) {
  if (whole) {
    if (chunks == 1) {
      AOT_MVE_PAIR_ASM("", AOT_MVE_PAIR_DOTS1);
    } else if (chunks == 2) {
      AOT_MVE_PAIR_ASM("", AOT_MVE_PAIR_DOTS2);
    } else if (chunks == 3) {
      AOT_MVE_PAIR_ASM("", AOT_MVE_PAIR_DOTS3);
    } else {
      AOT_MVE_PAIR_ASM("", AOT_MVE_PAIR_DOTS4);
    }
  } else if (chunks == 1) {
    AOT_MVE_PAIR_ASM(AOT_MVE_PAIR_PREDICATE, AOT_MVE_PAIR_PART1);
  } else if (chunks == 2) {
    AOT_MVE_PAIR_ASM(AOT_MVE_PAIR_PREDICATE, AOT_MVE_PAIR_PART2);
  } else if (chunks == 3) {
    AOT_MVE_PAIR_ASM(AOT_MVE_PAIR_PREDICATE, AOT_MVE_PAIR_PART3);
  } else {
    AOT_MVE_PAIR_ASM(AOT_MVE_PAIR_PREDICATE, AOT_MVE_PAIR_PART4);
  }
}

/* out[o] = requant(bias[o] + sum row[..] * w[o][..]) for every o < k->out_c, weights
 * blocked as aot_mve_row_times_weights_c's. `chunks` (a constant at each call): 1-4, the
 * row's 16-byte chunks, held in Q registers; 0, a chunk loop (any depth of at least 16).
 * `form`: RIGHT, SINGLE_RIGHT or DOUBLE (DOUBLE needs a free Q register: chunks 4 runs
 * the chunk loop). */
static inline __attribute__((always_inline)) void aot_mve_row_blocks(
    const int8_t* row, const struct aot_mve_block_args* k, int8_t* out, const int32_t form,
    const int chunks) {
  if (form == AOT_MVE_RQ_RIGHT) {
    AOT_MVE_ROW_ASM(AOT_MVE_RQ_RIGHT_ASM, chunks);
  } else if (form == AOT_MVE_RQ_SINGLE_RIGHT) {
    AOT_MVE_ROW_ASM(AOT_MVE_RQ_SINGLE_RIGHT_ASM, chunks);
  } else if (chunks == 4) {
    AOT_MVE_ROW_ASM(AOT_MVE_RQ_DOUBLE_ASM, 0);
  } else {
    AOT_MVE_ROW_ASM(AOT_MVE_RQ_DOUBLE_ASM, chunks);
  }
}

/* out[o] = requant(bias[o] + sum_k row[k] * w[o][k]) for o < out_c (weights, bias,
 * multiplier and shift as aot_mve_row_times_weights_c's), for any row: rows of at most 64
 * bytes are held in registers, longer ones run the chunk loop; single rounding with a
 * left shift or a zero exponent takes the C loop. */
static inline __attribute__((always_inline)) void aot_mve_row_times_weights(
    const int8_t* row, int32_t depth, const int8_t* w, int32_t out_c, const int32_t* records,
    int32_t output_offset, int32_t act_min, int32_t act_max, int32_t form, int8_t* out) {
  /* a form known only at run time (a caller's loop compiled for every form but the right
   * shifts) gets double rounding's blocks and the C loop for the rest */
  if (__builtin_constant_p(form) ? form == AOT_MVE_RQ_SINGLE : form != AOT_MVE_RQ_DOUBLE) {
    aot_mve_row_times_weights_slow(row, depth, w, out_c, records, output_offset, act_min,
                                   act_max, form, out);
    return;
  }
  struct aot_mve_block_args k;
  aot_mve_block_args_init(&k, w, records, depth, out_c, output_offset, act_min,
                          act_max);
  if (depth <= 16) {
    aot_mve_row_blocks(row, &k, out, form, 1);
  } else if (depth <= 32) {
    aot_mve_row_blocks(row, &k, out, form, 2);
  } else if (depth <= 48) {
    aot_mve_row_blocks(row, &k, out, form, 3);
  } else if (depth <= 64) {
    aot_mve_row_blocks(row, &k, out, form, 4);
  } else {
    aot_mve_row_blocks(row, &k, out, form, 0);
  }
}

#endif
