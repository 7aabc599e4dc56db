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

/* one tap in the asm below: x = the inputs at [at], w = the weights at w + off bytes */
#define AOT_DW_TAP(at, off)                    \
  "vldrb.s16 %q[x], [" at "]\n\t"              \
  "vldrh.16 %q[wt], [%[w], #" off "]\n\t"      \
  "vmullb.s16 %q[p], %q[x], %q[wt]\n\t"        \
  "vadd.i32 %q[e], %q[e], %q[p]\n\t"           \
  "vmullt.s16 %q[p], %q[x], %q[wt]\n\t"        \
  "vadd.i32 %q[o], %q[o], %q[p]\n\t"

/* a 3x3 window inside the image, a block of eight whole channels: kernel row k's first tap
 * at rk. Written in asm because VLDRB.S16 takes its address only in r0-r7 and GCC 12
 * computes the other taps' addresses in high registers and moves them (eight
 * instructions per tap where six loads and arithmetic and one address add do) */
AOT_INLINE void taps_3x3(int32x4_t* even, int32x4_t* odd, const int8_t* r0, const int8_t* r1,
                         const int8_t* r2, const int16_t* w, int32_t col_step,
                         int32_t col_step2) {
  int32x4_t e = *even, o = *odd;
  int16x8_t x, wt;
  int32x4_t p;
  const int8_t* at;
  __asm__(AOT_DW_TAP("%[r0]", "0")
          "add %[at], %[r0], %[cs]\n\t"
          AOT_DW_TAP("%[at]", "16")
          "add %[at], %[r0], %[cs2]\n\t"
          AOT_DW_TAP("%[at]", "32")
          AOT_DW_TAP("%[r1]", "48")
          "add %[at], %[r1], %[cs]\n\t"
          AOT_DW_TAP("%[at]", "64")
          "add %[at], %[r1], %[cs2]\n\t"
          AOT_DW_TAP("%[at]", "80")
          AOT_DW_TAP("%[r2]", "96")
          "add %[at], %[r2], %[cs]\n\t"
          AOT_DW_TAP("%[at]", "112")
          "add %[at], %[r2], %[cs2]\n\t"
          AOT_DW_TAP("%[at]", "128")
          : [e] "+w"(e), [o] "+w"(o), [x] "=&w"(x), [wt] "=&w"(wt), [p] "=&w"(p),
            [at] "=&l"(at)
          : [r0] "l"(r0), [r1] "l"(r1), [r2] "l"(r2), [w] "r"(w), [cs] "r"(col_step),
            [cs2] "r"(col_step2)
          : "memory");
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
 * multiplier and the shift, each the even channels then the odd ones */
enum { REC_BIAS = 0, REC_EDGE = 8, REC_MULT = 16, REC_SHIFT = 24, REC_WORDS = 32 };

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

/* `count` whole blocks of a pixel whose 3x3 window lies inside the image, depth
 * multiplier 1 */
AOT_INLINE void blocks_3x3(const int8_t* in, const int16_t* w, const int32_t* rec, int8_t* out,
                           int32_t count, int32_t row_step, int32_t col_step,
                           const struct dw_out* out_params, int right) {
  const struct dw_out o = *out_params; /* locals: the stores may alias it */
  const int8_t* r0 = in;
  const int8_t* r1 = r0 + row_step;
  const int8_t* r2 = r1 + row_step;
  const int32_t col_step2 = 2 * col_step;
  for (int32_t b = 0; b < count; ++b, r0 += 8, r1 += 8, r2 += 8, w += 72, rec += REC_WORDS,
               out += 8) {
    int32x4_t even = vldrwq_s32(rec + REC_BIAS);
    int32x4_t odd = vldrwq_s32(rec + REC_BIAS + 4);
    taps_3x3(&even, &odd, r0, r1, r2, w, col_step, col_step2);
    store8(out, even, odd, rec, &o, 8, right, 0);
  }
}

/* `pixels` pixels of an output row, `in_step` input and `out_step` output bytes apart,
 * each `count` whole blocks of blocks_3x3 */
AOT_INLINE void run_3x3(const int8_t* in, const int16_t* w, const int32_t* rec, int8_t* out,
                        int32_t pixels, int32_t count, int32_t row_step, int32_t col_step,
                        int32_t in_step, int32_t out_step, const struct dw_out* o, int right) {
  for (int32_t i = 0; i < pixels; ++i, in += in_step, out += out_step) {
    blocks_3x3(in, w, rec, out, count, row_step, col_step, o, right);
  }
}

static void __attribute__((noinline))
run_3x3_right(const int8_t* in, const int16_t* w, const int32_t* rec, int8_t* out,
              int32_t pixels, int32_t count, int32_t row_step, int32_t col_step,
              int32_t in_step, int32_t out_step, const struct dw_out* o) {
  run_3x3(in, w, rec, out, pixels, count, row_step, col_step, in_step, out_step, o, 1);
}
static void __attribute__((noinline))
run_3x3_any(const int8_t* in, const int16_t* w, const int32_t* rec, int8_t* out,
            int32_t pixels, int32_t count, int32_t row_step, int32_t col_step, int32_t in_step,
            int32_t out_step, const struct dw_out* o) {
  run_3x3(in, w, rec, out, pixels, count, row_step, col_step, in_step, out_step, o, 0);
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

void aot_k_dwconv_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                         const int16_t* weights, const int32_t* records, int8_t* output,
                         int8_t* scratch) {
  (void)scratch;
  /* locals: every int8 store may alias *p, which would reload it after each store */
  const int32_t in_h = p->in_h, in_w = p->in_w, k_h = p->k_h, k_w = p->k_w;
  const int32_t out_h = p->out_h, out_w = p->out_w;
  const int32_t stride_h = p->stride_h, stride_w = p->stride_w;
  const int32_t pad_top = p->pad_top, pad_left = p->pad_left;
  const int32_t dil_h = p->dil_h, dil_w = p->dil_w;
  const int16_t input_offset = (int16_t)p->input_offset;
  const int32_t in_c = p->in_c;
  const int32_t dm = p->depth_multiplier;
  const int32_t batches = p->batches;
  const struct dw_out o = {
      .act_min = vdupq_n_s16((int16_t)p->act_min),
      .act_max = vdupq_n_s16((int16_t)p->act_max),
      .scatter = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)dm),
      .rounding = p->rounding,
      .output_offset = p->output_offset,
      .dm = dm,
  };
  const int32_t out_c = in_c * dm;
  const int32_t blocks = (in_c + 7) >> 3;
  const int32_t full = in_c >> 3; /* blocks of eight channels below in_c */
  const int32_t rest = in_c & 7;
  const int32_t taps = k_h * k_w;
  const int32_t row_step = dil_h * in_w * in_c;
  const int32_t col_step = dil_w * in_c;
  const int32_t right = o.rounding == 0 && right_shifts_only(records, dm * blocks);
  const int32_t in_step = stride_w * in_c; /* from one output pixel's window to the next */
  int32_t oy_lo, oy_hi, ox_lo, ox_hi;
  whole_windows(pad_top, stride_h, (k_h - 1) * dil_h + 1, in_h, out_h, &oy_lo, &oy_hi);
  whole_windows(pad_left, stride_w, (k_w - 1) * dil_w + 1, in_w, out_w, &ox_lo, &ox_hi);
  /* the pixels of a row with whole windows that run_3x3 takes (3x3, depth multiplier 1) */
  const int32_t run_pixels = k_h == 3 && k_w == 3 && dm == 1 ? ox_hi - ox_lo : 0;
  for (int32_t n = 0; n < batches; ++n) {
    const int8_t* image = input + n * in_h * in_w * in_c;
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const int32_t y0 = oy * stride_h - pad_top;
      const int32_t ky0 = first_tap(y0, dil_h);
      const int32_t ky1 = end_tap(y0, dil_h, k_h, in_h);
      const int32_t whole_rows = oy >= oy_lo && oy < oy_hi;
      for (int32_t ox = 0; ox < out_w; ++ox, output += out_c) {
        if (whole_rows && ox == ox_lo && run_pixels > 0) {
          /* the row's pixels with whole windows in one call */
          const int8_t* in = image + (y0 * in_w + ox * stride_w - pad_left) * in_c;
          (right ? run_3x3_right : run_3x3_any)(in, weights, records, output, run_pixels, full,
                                                row_step, col_step, in_step, out_c, &o);
          for (int32_t i = 0; rest && i < run_pixels; ++i) { /* their partial blocks */
            const int32_t at = full * 8;
            tail_inside(in + i * in_step + at, weights + at * taps, records + full * REC_WORDS,
                        output + i * out_c + at, 1, k_h, k_w, k_w, taps, row_step, col_step, 0,
                        rest, &o);
          }
          ox += run_pixels - 1;
          output += (run_pixels - 1) * out_c;
          continue;
        }
        const int32_t x0 = ox * stride_w - pad_left;
        const int32_t inside = whole_rows && ox >= ox_lo && ox < ox_hi;
        int32_t kx0 = 0, kx1 = k_w;
        if (!inside) {
          kx0 = first_tap(x0, dil_w);
          kx1 = end_tap(x0, dil_w, k_w, in_w);
          if (ky1 <= ky0 || kx1 <= kx0) kx1 = kx0; /* no tap inside: the bias alone */
        }
        const int32_t rows = inside ? k_h : ky1 - ky0;
        const int32_t cols = kx1 - kx0;
        const int32_t skip = inside ? 0 : (ky0 * k_w + kx0) * 8; /* weights before the first */
        const int8_t* first =
            inside ? image + (y0 * in_w + x0) * in_c
                   : image + ((y0 + ky0 * dil_h) * in_w + x0 + kx0 * dil_w) * in_c;
        for (int32_t m = 0; m < dm; ++m) {
          const int16_t* w = weights + m * blocks * taps * 8 + skip;
          const int32_t* rec = records + m * blocks * REC_WORDS;
          int8_t* out = output + m;
          if (inside) {
            (right ? blocks_inside_right : blocks_inside_any)(
                first, w, rec, out, full, rows, cols, k_w, taps, row_step, col_step, 0, 8, &o);
          } else {
            (right ? blocks_border_right : blocks_border_any)(first, w, rec, out, full, rows,
                                                              cols, k_w, taps, row_step,
                                                              col_step, input_offset, 8, &o);
          }
          if (rest) { /* the last, partial block: predicated loads and store */
            const int32_t at = full * 8;
            (inside ? tail_inside : tail_border)(first + at, w + at * taps,
                                                 rec + full * REC_WORDS, out + at * dm, 1,
                                                 rows, cols, k_w, taps, row_step, col_step,
                                                 inside ? 0 : input_offset, rest, &o);
          }
        }
      }
    }
  }
}
#endif
