/* DEPTHWISE_CONV_2D int8 with Helium (MVE), any depth multiplier.
 *
 * Eight channels per step: VLDRB.S16 widens eight input bytes into int16 lanes, the weights
 * are int16 already (widened at build time), and VMULLB / VMULLT multiply the even and the
 * odd lanes into two int32x4 accumulators, so one tap of eight channels is two loads, two
 * multiplies and two adds (MVE has no lane-wise integer multiply-accumulate; int16 sums
 * would overflow after two taps). The requantized even and odd halves are narrowed back
 * into one int16x8 vector in channel order (VQMOVNB / VQMOVNT), where the output zero point
 * and the clamp take one instruction each for all eight channels.
 *
 * Build-time layouts (aot/kernels/mve.py), with B = ceil(in_c / 8) blocks of eight
 * channels, lanes past in_c zero (shift -1):
 *   weights (int16)  [depth_multiplier][B][k_h * k_w][8]  one pointer walks a block's taps
 *   records (int32)  [depth_multiplier][B][REC_WORDS]: the block's folded bias, edge bias,
 *     multiplier and shift, each the even channels (0, 2, 4, 6) then the odd ones, the
 *     accumulators' lane order
 * Output channel c * depth_multiplier + m is written by a scatter store when the
 * multiplier is above 1.
 *
 * Pixels whose taps all lie inside the image start from the folded bias (the input zero
 * point folded out) and multiply raw inputs; with a 3x3 kernel and depth multiplier 1 each
 * row's run of them is one call (run_3x3), its nine taps unrolled. Border pixels start
 * from the edge bias (the model's own) and add input_offset to the inputs of the taps that
 * are inside, as TFLite does: the fold would need the outside taps' weights otherwise.
 * The pixels with a whole window are found once per call (a range of columns and of rows),
 * so the interior pays nothing for the border. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

/* GCC 12's scheduling before register allocation hoists all nine taps' loads and its
 * induction-variable pass gives each tap address a pointer of its own: both run the eight
 * Q and thirteen core registers out and spill every tap (kws_ref_model's 3x3 depthwise:
 * 108 stack accesses in the block loop with them, 35 without) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns", "no-ivopts")
#endif

#define AOT_INLINE static inline __attribute__((always_inline))

/* one tap of eight channels: even += the even lanes' products, odd += the odd ones' */
AOT_INLINE void mac8(int32x4_t* even, int32x4_t* odd, int16x8_t x, int16x8_t w) {
  int32x4_t e = vaddq_s32(*even, vmullbq_int_s16(x, w));
  int32x4_t o = vaddq_s32(*odd, vmulltq_int_s16(x, w));
  /* an empty asm on the sums: GCC would otherwise reassociate them, keep all products
   * live at once and spill (the accumulation order does not change the int32 sums) */
  __asm__("" : "+w"(e), "+w"(o));
  *even = e;
  *odd = o;
}

/* any window, clipped to the image: taps [ky0, ky1) x [kx0, kx1), `first` the input of the
 * first of them, `w` its weights; `offset` (input_offset, or 0 inside the image where the
 * bias is folded) is added to each input when `add_offset`; `tail` loads only the
 * channels below in_c, the `lanes` of the last block (both flags constants at each call) */
AOT_INLINE void taps_window(int32x4_t* even, int32x4_t* odd, const int8_t* first,
                            const int16_t* w, int32_t rows, int32_t cols, int32_t k_w,
                            int32_t row_step, int32_t col_step, int16_t offset,
                            mve_pred16_t lanes, int tail, int add_offset) {
  for (int32_t ky = 0; ky < rows; ++ky, first += row_step, w += 8 * k_w) {
    const int8_t* in = first;
    const int16_t* wt = w;
    for (int32_t kx = 0; kx < cols; ++kx, in += col_step, wt += 8) {
      const int16x8_t x = tail ? vldrbq_z_s16(in, lanes) : vldrbq_s16(in);
      mac8(even, odd, add_offset ? vaddq_n_s16(x, offset) : x, vldrhq_s16(wt));
    }
  }
}

/* per block of eight channels, the records (int32): the folded bias, the edge bias, the
 * multiplier, the shift, and the start values of 3x3 windows whose left or right column
 * lies outside the image (the folded bias plus the zero point times that column's
 * weights, the taps COLS_LEFT_OUT / COLS_RIGHT_OUT leave out), each the even channels then
 * the odd ones */
enum {
  REC_BIAS = 0,
  REC_EDGE = 8,
  REC_MULT = 16,
  REC_SHIFT = 24,
  REC_LEFT_OUT = 32,
  REC_RIGHT_OUT = 40,
  REC_WORDS = 48
};

/* what requantizing and storing a block needs, read once per call of a blocks_ function */
struct dw_out {
  int16x8_t act_min, act_max;
  uint16x8_t scatter; /* output lane offsets: channel j at j * dm */
  int32_t rounding, output_offset, dm;
};

/* requantize one block's accumulators and store its n (1..8) channels: saturating
 * narrowing to int16 keeps every value's side of the clamp, so the output zero point
 * (added saturating) and the clamp then take eight lanes at a time. `right` (a constant
 * at each call): double rounding and every shift a right shift (right_shifts_only), the
 * short form; `scatter`: a depth multiplier above 1 (else o->dm is 1 and n is 8) */
AOT_INLINE void store8(int8_t* out, int32x4_t even, int32x4_t odd, const int32_t* rec,
                       const struct dw_out* o, int32_t n, int right, int scatter) {
  const int32x4_t m_even = vldrwq_s32(rec + REC_MULT), m_odd = vldrwq_s32(rec + REC_MULT + 4);
  const int32x4_t s_even = vldrwq_s32(rec + REC_SHIFT), s_odd = vldrwq_s32(rec + REC_SHIFT + 4);
  if (right) {
    even = aot_mve_requant_right(even, m_even, s_even);
    odd = aot_mve_requant_right(odd, m_odd, s_odd);
  } else {
    even = aot_mve_requant(even, m_even, s_even, o->rounding);
    odd = aot_mve_requant(odd, m_odd, s_odd, o->rounding);
  }
  int16x8_t y = vqmovntq_s32(vqmovnbq_s32(vreinterpretq_s16_s32(odd), even), odd);
  y = vqaddq_n_s16(y, (int16_t)o->output_offset);
  y = vmaxq_s16(vminq_s16(y, o->act_max), o->act_min);
  if (!scatter) {
    vstrbq_s16(out, y);
  } else if (o->dm == 1) {
    vstrbq_p_s16(out, y, vctp16q((uint32_t)n));
  } else {
    vstrbq_scatter_offset_p_s16(out, o->scatter, y, vctp16q((uint32_t)n));
  }
}

/* a 3x3 window's three kernel rows for `pixels` pixels of an output row: row k's tap
 * kx = 0 of the first pixel at row[k], advancing step[k] bytes a pixel (0 for a row of zero
 * points above or below the image) */
struct rows_3x3 {
  const int8_t* row[3];
  int32_t step[3];
};

/* which taps of a 3x3 window's rows are read (the others are left or right of the image) */
enum { COLS_ALL = 0, COLS_LEFT_OUT = 1, COLS_RIGHT_OUT = 2 };

/* 3x3 windows in asm, a block of eight whole channels a step. Written in asm because
 * VLDRB.S16 takes its address only in r0-r7 and GCC 12 computes the taps' addresses in
 * high registers and moves them, and keeps fewer pointers in registers than the block
 * needs (it spilled the output pointer). Every pointer steps by a writeback: the start
 * value's load steps the records, kernel row k's tap 0 steps rk by the block's eight
 * channels, and kernel row 0 comes last so that its tap 0's weight load steps w. */
#define AOT_DW_TAP(xa, wa)              \
  "vldrb.s16 %q[x], " xa "\n\t"         \
  "vldrh.16 %q[wt], " wa "\n\t"         \
  "vmullb.s16 %q[p], %q[x], %q[wt]\n\t" \
  "vadd.i32 %q[e], %q[e], %q[p]\n\t"    \
  "vmullt.s16 %q[p], %q[x], %q[wt]\n\t" \
  "vadd.i32 %q[o], %q[o], %q[p]\n\t"
/* a kernel row's taps at r, r + cs, r + 2 cs (ROW2: the first two), tap 0's weights at w0;
 * cz holds the column step in its high half and the output zero point in its low one
 * (VQADD.S16 by a scalar reads the low half): the block's pointers, the step and the zero
 * point take all the core registers GCC can give the asm */
#define AOT_DW_ROW3(r, w0, o1, o2)                                                   \
  "add %[at], %[" r "], %[cz], lsr #16\n\t" AOT_DW_TAP("[%[at]]", "[%[w], #" o1 "]") \
  "add %[at], %[at], %[cz], lsr #16\n\t" AOT_DW_TAP("[%[at]]", "[%[w], #" o2 "]")    \
  AOT_DW_TAP("[%[" r "]], #8", w0)
#define AOT_DW_ROW2(r, w0, o1)                                                       \
  "add %[at], %[" r "], %[cz], lsr #16\n\t" AOT_DW_TAP("[%[at]]", "[%[w], #" o1 "]") \
  AOT_DW_TAP("[%[" r "]], #8", w0)
/* the start value (rec at the block's start value), then the taps */
#define AOT_DW_START                    \
  "vldrw.u32 %q[o], [%[rec], #16]\n\t"  \
  "vldrw.u32 %q[e], [%[rec]], #192\n\t" /* REC_WORDS * 4 */
#define AOT_DW_TAPS3                                        \
  AOT_DW_ROW3("r1", "[%[w], #48]", "64", "80")              \
  AOT_DW_ROW3("r2", "[%[w], #96]", "112", "128")            \
  AOT_DW_ROW3("r0", "[%[w]], #144", "16", "32")
#define AOT_DW_TAPS2                             \
  AOT_DW_ROW2("r1", "[%[w], #48]", "64")         \
  AOT_DW_ROW2("r2", "[%[w], #96]", "112")        \
  AOT_DW_ROW2("r0", "[%[w]], #144", "16")
/* the same with the column step a constant (%c[cs]) small enough for VLDRB's immediate
 * offsets (at most 63 channels two columns apart, 127 one apart): kernel row k's pointer at
 * its tap kx = 1, the other taps at -cs and +cs, no address adds; row 0 comes last, its
 * tap 0 after rk's writeback (hence -cs-8) so that its weight load steps w */
#define AOT_DW_ROW3_IMM(r, b0, b1, b2)                        \
  AOT_DW_TAP("[%[" r "], #-%c[cs]]", "[%[w], #" b0 "]")     \
  AOT_DW_TAP("[%[" r "], #%c[cs]]", "[%[w], #" b2 "]")      \
  AOT_DW_TAP("[%[" r "]], #8", "[%[w], #" b1 "]")
#define AOT_DW_TAPS3_IMM                                   \
  AOT_DW_ROW3_IMM("r1", "48", "64", "80")                  \
  AOT_DW_ROW3_IMM("r2", "96", "112", "128")                \
  AOT_DW_TAP("[%[r0], #%c[cs]]", "[%[w], #32]")            \
  AOT_DW_TAP("[%[r0]], #8", "[%[w], #16]")                 \
  AOT_DW_TAP("[%[r0], #-%c[cs]-8]", "[%[w]], #144")
/* right column outside: taps kx = 0, 1 */
#define AOT_DW_TAPS2R_IMM                                  \
  AOT_DW_TAP("[%[r1], #-%c[cs]]", "[%[w], #48]")           \
  AOT_DW_TAP("[%[r1]], #8", "[%[w], #64]")                 \
  AOT_DW_TAP("[%[r2], #-%c[cs]]", "[%[w], #96]")           \
  AOT_DW_TAP("[%[r2]], #8", "[%[w], #112]")                \
  AOT_DW_TAP("[%[r0]], #8", "[%[w], #16]")                 \
  AOT_DW_TAP("[%[r0], #-%c[cs]-8]", "[%[w]], #144")
/* left column outside: taps kx = 1, 2, w at the block's tap 1 */
#define AOT_DW_TAPS2L_IMM                                  \
  AOT_DW_TAP("[%[r1], #%c[cs]]", "[%[w], #64]")            \
  AOT_DW_TAP("[%[r1]], #8", "[%[w], #48]")                 \
  AOT_DW_TAP("[%[r2], #%c[cs]]", "[%[w], #112]")           \
  AOT_DW_TAP("[%[r2]], #8", "[%[w], #96]")                 \
  AOT_DW_TAP("[%[r0], #%c[cs]]", "[%[w], #16]")            \
  AOT_DW_TAP("[%[r0]], #8", "[%[w]], #144")
/* aot_mve_requant_right on both halves (me/mo/se/so: the multipliers' and shifts' offsets
 * from the stepped rec), narrowed into channel order, zero point, clamp, store */
#define AOT_DW_REQUANT_RIGHT                        \
  "vldrw.u32 %q[x], [%[rec], #%c[me]]\n\t"         \
  "vqrdmulh.s32 %q[e], %q[e], %q[x]\n\t"           \
  "vldrw.u32 %q[x], [%[rec], #%c[mo]]\n\t"         \
  "vqrdmulh.s32 %q[o], %q[o], %q[x]\n\t"           \
  "vshr.s32 %q[p], %q[e], #31\n\t"                 \
  "vadd.i32 %q[e], %q[e], %q[p]\n\t"               \
  "vshr.s32 %q[p], %q[o], #31\n\t"                 \
  "vadd.i32 %q[o], %q[o], %q[p]\n\t"               \
  "vldrw.u32 %q[x], [%[rec], #%c[se]]\n\t"         \
  "vrshl.s32 %q[e], %q[e], %q[x]\n\t"              \
  "vldrw.u32 %q[x], [%[rec], #%c[so]]\n\t"         \
  "vrshl.s32 %q[o], %q[o], %q[x]\n\t"              \
  "vqmovnb.s32 %q[x], %q[e]\n\t"                   \
  "vqmovnt.s32 %q[x], %q[o]\n\t"                   \
  "vqadd.s16 %q[x], %q[x], %[cz]\n\t" /* its low half */ \
  "vmin.s16 %q[x], %q[x], %q[hi]\n\t"              \
  "vmax.s16 %q[x], %q[x], %q[lo]\n\t"              \
  "vstrb.16 %q[x], [%[out]], #8\n\t"
_Static_assert(REC_WORDS == 48, "AOT_DW_START steps the records by 192 bytes");

#define AOT_DW_TAP_OPERANDS                                                            \
  [e] "=&w"(even), [o] "=&w"(odd), [x] "=&w"(x), [wt] "=&w"(wt), [p] "=&w"(p),         \
      [at] "=&l"(at), [r0] "+l"(a0), [r1] "+l"(a1), [r2] "+l"(a2), [w] "+r"(wb),       \
      [rec] "+r"(rb)
/* the requantization fields' offsets in a block's records from the asm's pointer, which
 * stands at the start value's field `start` plus 192 bytes */
#define AOT_DW_RECORD_OFFSETS(start)                                                    \
  [me] "i"((REC_MULT - (start)) * 4 - 192), [mo] "i"((REC_MULT + 4 - (start)) * 4 - 192), \
      [se] "i"((REC_SHIFT - (start)) * 4 - 192),                                        \
      [so] "i"((REC_SHIFT + 4 - (start)) * 4 - 192)
/* one block, double rounding with right shifts: all in asm; `start` the start value's
 * field (a constant) */
#define AOT_DW_BLOCK_RIGHT(taps, start)                                                 \
  __asm__ volatile(AOT_DW_START taps AOT_DW_REQUANT_RIGHT                               \
                   : AOT_DW_TAP_OPERANDS, [out] "+l"(ob)                                \
                   : [cz] "r"(cz), [lo] "w"(lo), [hi] "w"(hi), AOT_DW_RECORD_OFFSETS(start) \
                   : "memory")
/* AOT_DW_BLOCK_RIGHT with the column step the constant fixed_step */
#define AOT_DW_BLOCK_RIGHT_IMM(taps, start)                                             \
  __asm__ volatile(AOT_DW_START taps AOT_DW_REQUANT_RIGHT                               \
                   : AOT_DW_TAP_OPERANDS, [out] "+l"(ob)                                \
                   : [cz] "r"(cz), [lo] "w"(lo), [hi] "w"(hi), [cs] "i"(fixed_step),    \
                     AOT_DW_RECORD_OFFSETS(start)                                       \
                   : "memory")
/* one block's taps in asm, any requantization (store8) after */
#define AOT_DW_BLOCK_ANY(taps, start)                                             \
  do {                                                                            \
    __asm__ volatile(AOT_DW_START taps                                            \
                     : AOT_DW_TAP_OPERANDS                                        \
                     : [cz] "r"(cz)                                               \
                     : "memory");                                                 \
    store8(ob, even, odd, rb - (start) - REC_WORDS, &q, 8, 0, 0);                 \
    ob += 8;                                                                      \
  } while (0)

/* one block of run_3x3 (its locals a0-a2, wb, rb, ob step by the asm's writebacks) */
#define AOT_DW_ONE_BLOCK()                                                                 \
  do {                                                                                     \
    int32x4_t even, odd, p;                                                                \
    int16x8_t x, wt;                                                                       \
    const int8_t* at;                                                                      \
    if (fixed_step) {                                                                      \
      if (cols == COLS_ALL) AOT_DW_BLOCK_RIGHT_IMM(AOT_DW_TAPS3_IMM, REC_BIAS);            \
      if (cols == COLS_LEFT_OUT) AOT_DW_BLOCK_RIGHT_IMM(AOT_DW_TAPS2L_IMM, REC_LEFT_OUT);  \
      if (cols == COLS_RIGHT_OUT) AOT_DW_BLOCK_RIGHT_IMM(AOT_DW_TAPS2R_IMM, REC_RIGHT_OUT); \
    } else if (right) {                                                                    \
      if (cols == COLS_ALL) AOT_DW_BLOCK_RIGHT(AOT_DW_TAPS3, REC_BIAS);                    \
      if (cols == COLS_LEFT_OUT) AOT_DW_BLOCK_RIGHT(AOT_DW_TAPS2, REC_LEFT_OUT);           \
      if (cols == COLS_RIGHT_OUT) AOT_DW_BLOCK_RIGHT(AOT_DW_TAPS2, REC_RIGHT_OUT);         \
    } else {                                                                               \
      if (cols == COLS_ALL) AOT_DW_BLOCK_ANY(AOT_DW_TAPS3, REC_BIAS);                      \
      if (cols == COLS_LEFT_OUT) AOT_DW_BLOCK_ANY(AOT_DW_TAPS2, REC_LEFT_OUT);             \
      if (cols == COLS_RIGHT_OUT) AOT_DW_BLOCK_ANY(AOT_DW_TAPS2, REC_RIGHT_OUT);           \
    }                                                                                      \
  } while (0)

/* `pixels` pixels of an output row, `out_step` output bytes apart, each `count` whole
 * blocks of a 3x3 window (depth multiplier 1, column step col_step): kernel row k's tap
 * kx = 0 at rows->row[k], `cols` (a constant) the columns inside the image; `right` as
 * store8's */
AOT_INLINE void run_3x3(const struct rows_3x3* rows, const int16_t* w, const int32_t* rec,
                        int8_t* out, int32_t pixels, int32_t count, int32_t col_step,
                        int32_t out_step, const struct dw_out* params, int right,
                        const int cols, const int32_t fixed_step) {
  const struct dw_out q = *params; /* locals: the stores may alias it */
  /* the rows' pointers: at tap kx = 1 with a constant step (fixed_step, right shifts
   * only), else at kx = 0, or kx = 1 without the left column */
  const int32_t skip = fixed_step || cols == COLS_LEFT_OUT ? col_step : 0;
  const int8_t* r0 = rows->row[0] + skip;
  const int8_t* r1 = rows->row[1] + skip;
  const int8_t* r2 = rows->row[2] + skip;
  const int32_t s0 = rows->step[0], s1 = rows->step[1], s2 = rows->step[2];
  w += cols == COLS_LEFT_OUT ? 8 : 0;
  rec += cols == COLS_ALL ? REC_BIAS : cols == COLS_LEFT_OUT ? REC_LEFT_OUT : REC_RIGHT_OUT;
  const uint32_t cz = (uint32_t)col_step << 16 | (uint16_t)q.output_offset;
  const int16x8_t lo = q.act_min, hi = q.act_max;
  /* one block a pixel (eight channels): no block loop to set up (compiled for the step of
   * eight channels alone: it doubles a run function's asm) */
  if (fixed_step == 8 && count == 1) {
    const int32_t d0 = s0 - 8, d1 = s1 - 8, d2 = s2 - 8; /* past the asm's writebacks */
    const int32_t out_rest = out_step - 8;
    const int8_t* a0 = r0;
    const int8_t* a1 = r1;
    const int8_t* a2 = r2;
    int8_t* ob = out;
    for (int32_t i = 0; i < pixels; ++i, a0 += d0, a1 += d1, a2 += d2, ob += out_rest) {
      const int16_t* wb = w;
      const int32_t* rb = rec;
      AOT_DW_ONE_BLOCK();
    }
    return;
  }
  for (int32_t i = 0; i < pixels; ++i, r0 += s0, r1 += s1, r2 += s2, out += out_step) {
    const int8_t* a0 = r0;
    const int8_t* a1 = r1;
    const int8_t* a2 = r2;
    const int16_t* wb = w;
    const int32_t* rb = rec;
    int8_t* ob = out;
    for (int32_t b = 0; b < count; ++b) AOT_DW_ONE_BLOCK();
  }
#undef AOT_DW_ONE_BLOCK
}

typedef void (*run_3x3_fn)(const struct rows_3x3* rows, const int16_t* w, const int32_t* rec,
                           int8_t* out, int32_t pixels, int32_t count, int32_t col_step,
                           int32_t out_step, const struct dw_out* o);
#define AOT_DW_RUN_3X3(name, right, cols, fixed_step)                                       \
  static void __attribute__((noinline))                                                     \
  name(const struct rows_3x3* rows, const int16_t* w, const int32_t* rec, int8_t* out,     \
       int32_t pixels, int32_t count, int32_t col_step, int32_t out_step,                  \
       const struct dw_out* o) {                                                            \
    run_3x3(rows, w, rec, out, pixels, count, col_step, out_step, o, right, cols,          \
            fixed_step);                                                                    \
  }
AOT_DW_RUN_3X3(run_3x3_right, 1, COLS_ALL, 0)
AOT_DW_RUN_3X3(run_3x3_right_left_out, 1, COLS_LEFT_OUT, 0)
AOT_DW_RUN_3X3(run_3x3_right_right_out, 1, COLS_RIGHT_OUT, 0)
AOT_DW_RUN_3X3(run_3x3_any, 0, COLS_ALL, 0)
AOT_DW_RUN_3X3(run_3x3_any_left_out, 0, COLS_LEFT_OUT, 0)
AOT_DW_RUN_3X3(run_3x3_any_right_out, 0, COLS_RIGHT_OUT, 0)
/* right shifts only and 8, 16, 32 or 64 channels: the column step a constant */
#define AOT_DW_RUNS_FIXED(c)                                                \
  AOT_DW_RUN_3X3(run_3x3_right_##c, 1, COLS_ALL, c)                         \
  AOT_DW_RUN_3X3(run_3x3_right_left_out_##c, 1, COLS_LEFT_OUT, c)           \
  AOT_DW_RUN_3X3(run_3x3_right_right_out_##c, 1, COLS_RIGHT_OUT, c)
AOT_DW_RUNS_FIXED(8)
AOT_DW_RUNS_FIXED(16)
AOT_DW_RUNS_FIXED(32)
AOT_DW_RUNS_FIXED(64)

/* a call's three run functions (all, left column out, right column out) */
struct runs_3x3 {
  run_3x3_fn all, left_out, right_out;
};

static struct runs_3x3 choose_runs(int32_t right, int32_t col_step) {
  struct runs_3x3 r = {run_3x3_any, run_3x3_any_left_out, run_3x3_any_right_out};
  if (!right) return r;
  switch (col_step) {
#define AOT_DW_CHOOSE(c)                                                            \
  case c:                                                                           \
    r.all = run_3x3_right_##c;                                                      \
    r.left_out = run_3x3_right_left_out_##c;                                        \
    r.right_out = run_3x3_right_right_out_##c;                                      \
    return r;
    AOT_DW_CHOOSE(8)
    AOT_DW_CHOOSE(16)
    AOT_DW_CHOOSE(32)
    AOT_DW_CHOOSE(64)
#undef AOT_DW_CHOOSE
    default:
      r.all = run_3x3_right;
      r.left_out = run_3x3_right_left_out;
      r.right_out = run_3x3_right_right_out;
      return r;
  }
}

/* `count` blocks of a pixel over the window's taps [0, rows) x [0, cols) from `in` (the
 * weights from `skip` taps on): `border` pixels start from the edge bias and add
 * input_offset to every input, the last `tail` block loads and stores n channels; `right`
 * as store8's */
AOT_INLINE void window_blocks(const int8_t* in, const int16_t* w, const int32_t* rec,
                              int8_t* out, int32_t count, int32_t rows, int32_t cols,
                              int32_t k_w, int32_t taps, int32_t row_step, int32_t col_step,
                              int16_t input_offset, int32_t n, const struct dw_out* out_params,
                              int border, int tail, int right) {
  const struct dw_out o = *out_params;
  const mve_pred16_t lanes = vctp16q((uint32_t)n);
  for (int32_t b = 0; b < count; ++b, in += 8, w += 8 * taps, rec += REC_WORDS, out += 8 * o.dm) {
    const int32_t* start = rec + (border ? REC_EDGE : REC_BIAS);
    int32x4_t even = vldrwq_s32(start);
    int32x4_t odd = vldrwq_s32(start + 4);
    taps_window(&even, &odd, in, w, rows, cols, k_w, row_step, col_step, input_offset, lanes,
                tail, border);
    store8(out, even, odd, rec, &o, tail ? n : 8, right, 1);
  }
}

#define AOT_DW_WINDOW(name, border, tail, right)                                            \
  static void __attribute__((noinline))                                                     \
  name(const int8_t* in, const int16_t* w, const int32_t* rec, int8_t* out, int32_t count, \
       int32_t rows, int32_t cols, int32_t k_w, int32_t taps, int32_t row_step,            \
       int32_t col_step, int16_t input_offset, int32_t n, const struct dw_out* o) {        \
    window_blocks(in, w, rec, out, count, rows, cols, k_w, taps, row_step, col_step,       \
                  input_offset, n, o, border, tail, right);                                \
  }
AOT_DW_WINDOW(blocks_inside_right, 0, 0, 1)
AOT_DW_WINDOW(blocks_border_right, 1, 0, 1)
AOT_DW_WINDOW(blocks_inside_any, 0, 0, 0)
AOT_DW_WINDOW(blocks_border_any, 1, 0, 0)
AOT_DW_WINDOW(tail_inside, 0, 1, 0)
AOT_DW_WINDOW(tail_border, 1, 1, 0)

/* whether every shift (padded lanes included, -1 there) is a right shift: the usual case,
 * multipliers below one, whose requantization needs no left shift and no test for a
 * zero exponent */
static int32_t right_shifts_only(const int32_t* rec, int32_t count) {
  uint32_t all = 0xffff;
  for (int32_t i = 0; i < count; ++i, rec += REC_WORDS) {
    all &= vcmpltq_n_s32(vldrwq_s32(rec + REC_SHIFT), 0);
    all &= vcmpltq_n_s32(vldrwq_s32(rec + REC_SHIFT + 4), 0);
  }
  return all == 0xffff;
}

/* the first tap index of a window starting at `start` (dilation `dil`) that is >= 0, and
 * one past the last that is < size */
static inline int32_t first_tap(int32_t start, int32_t dil) {
  return start >= 0 ? 0 : (-start + dil - 1) / dil;
}
static inline int32_t end_tap(int32_t start, int32_t dil, int32_t k, int32_t size) {
  const int32_t room = size - start; /* taps t with start + t * dil < size */
  const int32_t end = room <= 0 ? 0 : (room + dil - 1) / dil;
  return end < k ? end : k;
}

/* the outputs o in [*lo, *hi) whose windows (o * stride - pad, span wide) lie inside
 * [0, size): an empty range when none does */
static void whole_windows(int32_t pad, int32_t stride, int32_t span, int32_t size, int32_t out,
                          int32_t* lo, int32_t* hi) {
  int32_t first = pad <= 0 ? 0 : (pad + stride - 1) / stride;
  const int32_t room = size - span + pad; /* o * stride <= room */
  int32_t end = room < 0 ? 0 : room / stride + 1;
  if (end > out) end = out;
  if (first > end) first = end;
  *lo = first;
  *hi = end;
}

/* what a pixel's clipped-window loops need, read once per call */
struct dw_call {
  const int16_t* weights;
  const int32_t* records;
  int32_t in_h, in_w, in_c, k_h, k_w, stride_h, stride_w, pad_top, pad_left, dil_h, dil_w;
  int32_t dm, blocks, full, rest, taps, row_step, col_step, right;
  int32_t oy_lo, oy_hi, ox_lo, ox_hi; /* the pixels whose windows lie inside the image */
  int16_t input_offset;
  struct dw_out o;
};

/* one output pixel of `image` by the clipped-window loops, its blocks from `from` on (0,
 * or c->full for the partial block alone) */
static void generic_pixel(const struct dw_call* c, const int8_t* image, int32_t oy, int32_t ox,
                          int8_t* output, int32_t from) {
  const int32_t in_w = c->in_w, in_c = c->in_c, k_w = c->k_w, taps = c->taps;
  const int32_t dm = c->dm, full = c->full;
  const int32_t y0 = oy * c->stride_h - c->pad_top;
  const int32_t x0 = ox * c->stride_w - c->pad_left;
  const int32_t ky0 = first_tap(y0, c->dil_h);
  const int32_t ky1 = end_tap(y0, c->dil_h, c->k_h, c->in_h);
  const int32_t inside = oy >= c->oy_lo && oy < c->oy_hi && ox >= c->ox_lo && ox < c->ox_hi;
  int32_t kx0 = 0, kx1 = k_w;
  if (!inside) {
    kx0 = first_tap(x0, c->dil_w);
    kx1 = end_tap(x0, c->dil_w, k_w, in_w);
    if (ky1 <= ky0 || kx1 <= kx0) kx1 = kx0; /* no tap inside: the bias alone */
  }
  const int32_t rows = inside ? c->k_h : ky1 - ky0;
  const int32_t cols = kx1 - kx0;
  const int32_t skip = inside ? 0 : (ky0 * k_w + kx0) * 8; /* weights before the first */
  const int8_t* first =
      inside ? image + (y0 * in_w + x0) * in_c
             : image + ((y0 + ky0 * c->dil_h) * in_w + x0 + kx0 * c->dil_w) * in_c;
  const int16_t offset = inside ? 0 : c->input_offset;
  for (int32_t m = 0; m < dm; ++m) {
    const int16_t* w = c->weights + m * c->blocks * taps * 8 + skip;
    const int32_t* rec = c->records + m * c->blocks * REC_WORDS;
    int8_t* out = output + m;
    if (from == 0) {
      if (inside) {
        (c->right ? blocks_inside_right : blocks_inside_any)(first, w, rec, out, full, rows,
                                                             cols, k_w, taps, c->row_step,
                                                             c->col_step, 0, 8, &c->o);
      } else {
        (c->right ? blocks_border_right : blocks_border_any)(first, w, rec, out, full, rows,
                                                             cols, k_w, taps, c->row_step,
                                                             c->col_step, offset, 8, &c->o);
      }
    }
    if (c->rest) { /* the last, partial block: predicated loads and store */
      const int32_t at = full * 8;
      (inside ? tail_inside : tail_border)(first + at, w + at * taps, rec + full * REC_WORDS,
                                           out + at * dm, 1, rows, cols, k_w, taps,
                                           c->row_step, c->col_step, offset, c->rest, &c->o);
    }
  }
}

/* whether a call takes the 3x3 row runs (and 3 * in_c bytes of scratch, a row of zero
 * points): mve.py's _dwconv_prepare asks the same */
static inline int32_t runs_3x3(const struct aot_k_conv_params* p) {
  return p->k_h == 3 && p->k_w == 3 && p->depth_multiplier == 1 && p->dil_w == 1 && p->in_c >= 8;
}

void aot_k_dwconv_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                         const int16_t* weights, const int32_t* records, int8_t* output,
                         int8_t* scratch) {
  /* locals: every int8 store may alias *p, which would reload it after each store */
  struct dw_call c; /* every field set below (an initializer would be a memset) */
  c.weights = weights;
  c.records = records;
  c.in_h = p->in_h;
  c.in_w = p->in_w;
  c.in_c = p->in_c;
  c.k_h = p->k_h;
  c.k_w = p->k_w;
  c.stride_h = p->stride_h;
  c.stride_w = p->stride_w;
  c.pad_top = p->pad_top;
  c.pad_left = p->pad_left;
  c.dil_h = p->dil_h;
  c.dil_w = p->dil_w;
  c.dm = p->depth_multiplier;
  c.input_offset = (int16_t)p->input_offset;
  c.o.act_min = vdupq_n_s16((int16_t)p->act_min);
  c.o.act_max = vdupq_n_s16((int16_t)p->act_max);
  c.o.scatter = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)p->depth_multiplier);
  c.o.rounding = p->rounding;
  c.o.output_offset = p->output_offset;
  c.o.dm = p->depth_multiplier;
  const int32_t in_h = c.in_h, in_w = c.in_w, in_c = c.in_c;
  const int32_t out_h = p->out_h, out_w = p->out_w, batches = p->batches;
  const int32_t out_c = in_c * c.dm;
  c.blocks = (in_c + 7) >> 3;
  c.full = in_c >> 3; /* blocks of eight channels below in_c */
  c.rest = in_c & 7;
  c.taps = c.k_h * c.k_w;
  c.row_step = c.dil_h * in_w * in_c;
  c.col_step = c.dil_w * in_c;
  c.right = c.o.rounding == 0 && right_shifts_only(records, c.dm * c.blocks);
  whole_windows(c.pad_top, c.stride_h, (c.k_h - 1) * c.dil_h + 1, in_h, out_h, &c.oy_lo,
                &c.oy_hi);
  whole_windows(c.pad_left, c.stride_w, (c.k_w - 1) * c.dil_w + 1, in_w, out_w, &c.ox_lo,
                &c.ox_hi);
  const int32_t runs = runs_3x3(p);
  const int32_t in_step = c.stride_w * in_c; /* from one output pixel's window to the next */
  if (runs) { /* the row of zero points that kernel rows outside the image read */
    const int8x16_t pad = vdupq_n_s8((int8_t)p->pad_value);
    for (int32_t i = 0; i < 3 * in_c; i += 16) {
      vstrbq_p_s8(scratch + i, pad, vctp8q((uint32_t)(3 * in_c - i)));
    }
  }
  const struct runs_3x3 chosen = choose_runs(c.right, c.col_step);
  const run_3x3_fn run_all = chosen.all;
  const run_3x3_fn run_left_out = chosen.left_out;
  const run_3x3_fn run_right_out = chosen.right_out;
  for (int32_t n = 0; n < batches; ++n) {
    const int8_t* image = input + n * in_h * in_w * in_c;
    for (int32_t oy = 0; oy < out_h; ++oy) {
      if (!runs) {
        for (int32_t ox = 0; ox < out_w; ++ox, output += out_c) {
          generic_pixel(&c, image, oy, ox, output, 0);
        }
        continue;
      }
      /* the kernel rows' tap kx = 0 of the row's first pixel, rows outside at the zeros */
      struct rows_3x3 rows;
      for (int32_t k = 0; k < 3; ++k) {
        const int32_t y = oy * c.stride_h - c.pad_top + k * c.dil_h;
        const int32_t in_image = y >= 0 && y < in_h;
        rows.row[k] = in_image ? image + (y * in_w - c.pad_left) * in_c : scratch;
        rows.step[k] = in_image ? in_step : 0;
      }
      for (int32_t ox = 0; ox < out_w;) {
        const int32_t x0 = ox * c.stride_w - c.pad_left;
        const int32_t kx0 = first_tap(x0, 1), kx1 = end_tap(x0, 1, 3, in_w);
        int32_t pixels = 1;
        run_3x3_fn run = 0;
        if (ox == c.ox_lo && c.ox_hi > c.ox_lo) { /* the row's whole windows in one call */
          pixels = c.ox_hi - c.ox_lo;
          run = run_all;
        } else if (kx0 == 0 && kx1 == 3) {
          run = run_all;
        } else if (kx0 == 1 && kx1 == 3) {
          run = run_left_out;
        } else if (kx0 == 0 && kx1 == 2) {
          run = run_right_out;
        }
        if (run) {
          struct rows_3x3 at = rows;
          for (int32_t k = 0; k < 3; ++k) at.row[k] += ox * rows.step[k];
          run(&at, weights, records, output, pixels, c.full, in_c, out_c, &c.o);
          for (int32_t i = 0; c.rest && i < pixels; ++i) { /* their partial blocks */
            generic_pixel(&c, image, oy, ox + i, output + i * out_c, c.full);
          }
        } else {
          generic_pixel(&c, image, oy, ox, output, 0);
        }
        ox += pixels;
        output += pixels * out_c;
      }
    }
  }
}
#endif
