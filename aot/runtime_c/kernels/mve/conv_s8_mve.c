/* CONV_2D int8 with Helium (MVE): NHWC input, OHWI weights, per-channel requantization.
 *
 * Each output pixel's receptive field is gathered into one row of k_h * k_w * in_c bytes
 * (im2col, in the planned scratch; padded taps hold the input zero point, which the bias
 * has already folded out), then multiplied with four weight rows at a time by VMLADAVA
 * (weights blocked at build time: aot_mve_row_times_weights).
 * A window inside the image whose kernel rows are whole 16-byte chunks (k_w * in_c a
 * multiple of 16) is read in place too, its k_h rows straight from the image
 * (segments_times_weights); other windows inside the image are copied by vector loads and
 * stores, and only border pixels clip and pad.
 * A 1x1 convolution without padding reads the input pixel in place: no copy, no scratch;
 * over at most 64 input channels the pixel is loaded once and stays in Q registers for all
 * output channels (aot_mve_row_blocks).
 * aot_k_conv_rows_s8_mve (kernel rows of at most 16 bytes: a first layer over 3 channels)
 * loads each kernel row of a window straight from the image instead of gathering it.
 * Each loop is compiled once per requantization form where the right-shift-only form
 * applies (aot_mve_requant_form), so no block of four channels tests it. */
#include "aot_kernels.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include "aot_kernels_mve.h"

static void fill(int8_t* dst, int32_t n, int8_t value) {
  const int8x16_t v = vdupq_n_s8(value);
  for (int32_t c = 0; c < n; c += 16) vstrbq_p_s8(dst + c, v, vctp8q((uint32_t)(n - c)));
}

static void copy(int8_t* dst, const int8_t* src, int32_t n) {
  for (int32_t c = 0; c < n; c += 16) {
    const mve_pred16_t p = vctp8q((uint32_t)(n - c));
    vstrbq_p_s8(dst + c, vldrbq_z_s8(src + c, p), p);
  }
}

/* one kernel row of the receptive field: k_w taps of in_c bytes, padded taps = pad;
 * without dilation the taps inside the image are one contiguous copy */
static int8_t* gather_row(int8_t* dst, const int8_t* row, int32_t x0, int32_t k_w, int32_t dil_w,
                          int32_t in_w, int32_t in_c, int8_t pad) {
  if (dil_w == 1) {
    const int32_t left = x0 < 0 ? (-x0 < k_w ? -x0 : k_w) : 0;
    const int32_t end = x0 + k_w > in_w ? in_w - x0 : k_w; /* taps before the right edge */
    const int32_t mid = end > left ? end - left : 0;
    fill(dst, left * in_c, pad);
    copy(dst + left * in_c, row + (x0 + left) * in_c, mid * in_c);
    fill(dst + (left + mid) * in_c, (k_w - left - mid) * in_c, pad);
    return dst + k_w * in_c;
  }
  for (int32_t kx = 0; kx < k_w; ++kx, dst += in_c) {
    const int32_t ix = x0 + kx * dil_w;
    if (ix >= 0 && ix < in_w) {
      copy(dst, row + ix * in_c, in_c);
    } else {
      fill(dst, in_c, pad);
    }
  }
  return dst;
}

/* direct_pixels two at a time (aot_mve_pair_blocks; `whole`: in_c is 16 * chunks): at
 * stride 1 every pixel of every image is one run, else each output row is */
static inline __attribute__((always_inline)) void direct_pairs(
    const struct aot_k_conv_params* p, const int8_t* input, const struct aot_mve_block_args* k,
    int8_t* output, const int chunks, const int whole) {
  const int32_t in_c = p->in_c, out_c = p->out_c, out_h = p->out_h, out_w = p->out_w;
  const int32_t image = p->in_h * p->in_w * in_c, col_step = p->stride_w * in_c;
  const int32_t row_step = p->stride_h * p->in_w * in_c;
  const int32_t contiguous = p->stride_h == 1 && p->stride_w == 1;
  const int32_t runs = contiguous ? 1 : p->batches * out_h;
  const int32_t run = contiguous ? p->batches * out_h * out_w : out_w;
  for (int32_t r = 0; r < runs; ++r) {
    const int8_t* row = input + (r / out_h) * image + (r % out_h) * row_step;
    int32_t i = 0;
    for (; i + 1 < run; i += 2, row += 2 * col_step, output += 2 * out_c) {
      aot_mve_pair_blocks(row, k, output, chunks, whole);
    }
    if (i < run) {
      aot_mve_row_blocks(row, k, output, AOT_MVE_RQ_RIGHT, chunks);
      output += out_c;
    }
  }
}

/* every output pixel of a 1x1 convolution without padding, each reading its input pixel in
 * place (no copy, no scratch); `chunks` 1-4: in_c <= 16 * chunks, the pixel held in Q
 * registers, 0: the chunk loop (aot_mve_row_blocks); `right`: the call's form is
 * AOT_MVE_RQ_RIGHT (a constant), else double rounding runs the same loops and single
 * rounding (only in aot's other rounding mode) the C loop */
static inline __attribute__((always_inline)) void direct_pixels(
    const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,
    const int32_t* records, int32_t form, int8_t* output, const int chunks, const int right) {
  /* locals: the output stores may alias *p */
  const int32_t in_c = p->in_c, out_c = p->out_c, out_h = p->out_h, out_w = p->out_w;
  const int32_t batches = p->batches, image = p->in_h * p->in_w * in_c;
  const int32_t col_step = p->stride_w * in_c, row_step = p->stride_h * p->in_w * in_c;
  const int32_t offset = p->output_offset, lo = p->act_min, hi = p->act_max;
  struct aot_mve_block_args k;
  aot_mve_block_args_init(&k, weights, records, in_c, out_c, offset, lo, hi);
  if (right && chunks) { /* two pixels per pass (aot_mve_pair_blocks) */
    aot_mve_block_args_pairs(&k, col_step);
    if (in_c == 16 * chunks) {
      direct_pairs(p, input, &k, output, chunks, 1);
    } else {
      direct_pairs(p, input, &k, output, chunks, 0);
    }
    return;
  }
  for (int32_t n = 0; n < batches; ++n) {
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const int8_t* row = input + n * image + oy * row_step;
      for (int32_t ox = 0; ox < out_w; ++ox, row += col_step, output += out_c) {
        if (right) {
          aot_mve_row_blocks(row, &k, output, AOT_MVE_RQ_RIGHT, chunks);
        } else if (form == AOT_MVE_RQ_DOUBLE) {
          aot_mve_row_blocks(row, &k, output, AOT_MVE_RQ_DOUBLE, chunks);
        } else {
          aot_mve_row_times_weights_slow(row, in_c, weights, out_c, records, offset, lo, hi,
                                         form, output);
        }
      }
    }
  }
}

#define AOT_CONV_DIRECT(name, chunks, right)                                               \
  static void __attribute__((noinline))                                                    \
  name(const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,      \
       const int32_t* records, int32_t form,                                               \
       int8_t* output) {                                                                   \
    direct_pixels(p, input, weights, records, form, output, chunks, right);                \
  }
AOT_CONV_DIRECT(direct_16, 1, 0)
AOT_CONV_DIRECT(direct_32, 2, 0)
AOT_CONV_DIRECT(direct_48, 3, 0)
AOT_CONV_DIRECT(direct_any, 0, 0)
AOT_CONV_DIRECT(direct_16_right, 1, 1)
AOT_CONV_DIRECT(direct_32_right, 2, 1)
AOT_CONV_DIRECT(direct_48_right, 3, 1)
AOT_CONV_DIRECT(direct_64_right, 4, 1)
AOT_CONV_DIRECT(direct_any_right, 0, 1)

/* the byte lanes [a, b) of a 16-byte chunk as a predicate (a, b any: clamped to 0..16) */
static inline mve_pred16_t byte_lanes(int32_t a, int32_t b) {
  a = a < 0 ? 0 : a > 16 ? 16 : a;
  b = b < 0 ? 0 : b > 16 ? 16 : b;
  return (mve_pred16_t)(((1u << b) - 1u) & ~((1u << a) - 1u));
}

/* n bytes of a window inside the image: whole 16-byte chunks unpredicated, the tail
 * predicated (`tail`: vctp8q(n % 16)) */
static inline __attribute__((always_inline)) void copy_run(int8_t* dst, const int8_t* src,
                                                           int32_t n, mve_pred16_t tail) {
  int32_t c = 0;
  for (; c + 16 <= n; c += 16) vstrbq_s8(dst + c, vldrbq_s8(src + c));
  if (c < n) vstrbq_p_s8(dst + c, vldrbq_z_s8(src + c, tail), tail);
}

/* one kernel row (no column dilation) of a border pixel: bytes [a, b) of the `n` from
 * `src` lie inside the image (src may point before the image row: the predicated loads
 * read only the lanes inside it), the others are `pad` */
static void gather_clipped(int8_t* dst, const int8_t* src, int32_t n, int32_t a, int32_t b,
                           int8x16_t pad) {
  for (int32_t c = 0; c < n; c += 16) {
    const mve_pred16_t inside = byte_lanes(a - c, b - c);
    const int8x16_t v = vpselq_s8(vldrbq_z_s8(src + c, inside), pad, inside);
    vstrbq_p_s8(dst + c, v, vctp8q((uint32_t)(n - c)));
  }
}

/* gather_clipped for n a multiple of 16 (the in-place path's border pixels): chunks wholly
 * inside or outside the image (every chunk when in_c is a multiple of 16) are a plain copy
 * or the pad vector; only a chunk across an edge is clipped by predicate */
static void gather_clipped_chunks(int8_t* dst, const int8_t* src, int32_t n, int32_t a,
                                  int32_t b, int8x16_t pad) {
  for (int32_t c = 0; c < n; c += 16) {
    int8x16_t v;
    if (c >= a && c + 16 <= b) {
      v = vldrbq_s8(src + c);
    } else if (c + 16 <= a || c >= b) {
      v = pad;
    } else {
      const mve_pred16_t inside = byte_lanes(a - c, b - c);
      v = vpselq_s8(vldrbq_z_s8(src + c, inside), pad, inside);
    }
    vstrbq_s8(dst + c, v);
  }
}

/* a border pixel's receptive field (some tap outside the image, or column dilation) into
 * `dst`, padded taps `pad` */
static void __attribute__((noinline)) gather_border(
    const struct aot_k_conv_params* p, const int8_t* image, int32_t y0, int32_t x0,
    int8_t* dst) {
  const int32_t in_c = p->in_c, in_h = p->in_h, in_w = p->in_w, k_w = p->k_w;
  const int32_t segment = k_w * in_c, row_bytes = in_w * in_c;
  const int8_t pad = (int8_t)p->pad_value;
  const int8x16_t pads = vdupq_n_s8(pad);
  const int32_t a = x0 < 0 ? -x0 * in_c : 0; /* the first byte inside the image */
  const int32_t b = (in_w - x0) * in_c;      /* the first byte past its right edge */
  if (segment <= 16 && p->dil_w == 1) { /* each kernel row one clipped load */
    const mve_pred16_t row = vctp8q((uint32_t)segment), cols = byte_lanes(a, b) & row;
    const int32_t k_h = p->k_h, dil_h = p->dil_h;
    const int8_t* src = image + y0 * row_bytes + x0 * in_c;
    for (int32_t ky = 0, iy = y0; ky < k_h; ++ky, iy += dil_h, src += dil_h * row_bytes) {
      const mve_pred16_t inside = iy >= 0 && iy < in_h ? cols : 0;
      vstrbq_p_s8(dst, vpselq_s8(vldrbq_z_s8(src, inside), pads, inside), row);
      dst += segment;
    }
    return;
  }
  for (int32_t ky = 0; ky < p->k_h; ++ky, dst += segment) {
    const int32_t iy = y0 + ky * p->dil_h;
    if (iy < 0 || iy >= in_h) {
      fill(dst, segment, pad);
    } else if (p->dil_w == 1 && (segment & 15) == 0) {
      gather_clipped_chunks(dst, image + iy * row_bytes + x0 * in_c, segment, a, b, pads);
    } else if (p->dil_w == 1) {
      gather_clipped(dst, image + iy * row_bytes + x0 * in_c, segment, a, b, pads);
    } else {
      gather_row(dst, image + iy * row_bytes, x0, k_w, p->dil_w, in_w, in_c, pad);
    }
  }
}

/* aot_mve_row_times_weights for a receptive field read in place: `segments` runs of
 * `chunks` whole 16-byte chunks, run k at src + k * (chunks * 16 + skip) (a window's kernel
 * rows in the image, k_w * in_c a multiple of 16), in the order of the weights' chunks. Per
 * block of four channels the runs' chunk loops are inline asm: one input load, four weight
 * loads (pre-indexed writeback on one pointer) and four VMLADAVA per chunk, 10
 * instructions with `le` (GCC 12's loop took 12). */
static inline __attribute__((always_inline)) void segments_times_weights(
    const int8_t* src, int32_t skip, int32_t segments, int32_t chunks, const int8_t* w,
    int32_t out_c, const int32_t* records,
    int32_t output_offset, int32_t act_min, int32_t act_max, int32_t form, int8_t* out) {
  const int32x4_t lo = vdupq_n_s32(act_min), hi = vdupq_n_s32(act_max);
  w -= 64; /* the first weight load of a chunk pre-increments */
  for (int32_t o = 0; o < out_c; o += 4, out += 4) {
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    const int8_t* x;
    int32_t left;
    __asm__ volatile(
        "mov %[x], %[src]\n\t"
        "mov %[left], %[segments]\n"
        "2:\n\t"
        "dls lr, %[chunks]\n"
        "1:\n\t"
        "vldrb.8 q0, [%[x]], #16\n\t"
        "vldrb.8 q1, [%[w], #64]!\n\t"
        "vmladava.s8 %[a0], q0, q1\n\t"
        "vldrb.8 q2, [%[w], #16]\n\t"
        "vmladava.s8 %[a1], q0, q2\n\t"
        "vldrb.8 q3, [%[w], #32]\n\t"
        "vmladava.s8 %[a2], q0, q3\n\t"
        "vldrb.8 q1, [%[w], #48]\n\t"
        "vmladava.s8 %[a3], q0, q1\n\t"
        "le lr, 1b\n\t"
        "add %[x], %[x], %[skip]\n\t"
        "subs %[left], %[left], #1\n\t"
        "bne 2b\n"
        : [x] "=&r"(x), [left] "=&r"(left), [w] "+r"(w), [a0] "+Te"(a0), [a1] "+Te"(a1),
          [a2] "+Te"(a2), [a3] "+Te"(a3)
        : [src] "r"(src), [skip] "r"(skip), [segments] "r"(segments), [chunks] "r"(chunks)
        : "q0", "q1", "q2", "q3", "lr", "memory", "cc");
    aot_mve_store_block(a0, a1, a2, a3, records, o, out_c, output_offset, lo,
                        hi, form, out);
  }
}

/* four channels' sums of one window held in one to three Q registers (`chunks`, a
 * constant; v1 and v2 unused below it), the block's weights at w (chunk-major, as
 * aot_mve_row_times_weights reads one block). In asm: every weight load is an offset
 * from w (GCC hoisted the twelve addresses out of the pixel loop and spilled them). */
/* offsets from w + 64: VLDRB's immediate reaches +-127 */
#define AOT_CONV_TAP(acc, v, off)            \
  "vldrb.8 %q[t], [%[w], #" #off "]\n\t" \
  "vmladava.s8 %[" #acc "], %q[" #v "], %q[t]\n\t"
#define AOT_CONV_TAP0(acc, v, off)           \
  "vldrb.8 %q[t], [%[w], #" #off "]\n\t" \
  "vmladav.s8 %[" #acc "], %q[" #v "], %q[t]\n\t"
static inline __attribute__((always_inline)) void window_times_block(
    int8x16_t v0, int8x16_t v1, int8x16_t v2, const int8_t* w, int32_t* a0, int32_t* a1,
    int32_t* a2, int32_t* a3, const int chunks) {
  int32_t s0, s1, s2, s3;
  int8x16_t t;
  if (chunks == 1) {
    __asm__(AOT_CONV_TAP0(s0, v0, -64) AOT_CONV_TAP0(s1, v0, -48) AOT_CONV_TAP0(s2, v0, -32)
                AOT_CONV_TAP0(s3, v0, -16)
            : [s0] "=&Te"(s0), [s1] "=&Te"(s1), [s2] "=&Te"(s2), [s3] "=&Te"(s3), [t] "=&w"(t)
            : [w] "r"(w + 64), [v0] "w"(v0)
            : "memory");
  } else if (chunks == 2) {
    __asm__(AOT_CONV_TAP0(s0, v0, -64) AOT_CONV_TAP0(s1, v0, -48) AOT_CONV_TAP0(s2, v0, -32)
                AOT_CONV_TAP0(s3, v0, -16) AOT_CONV_TAP(s0, v1, 0) AOT_CONV_TAP(s1, v1, 16)
                    AOT_CONV_TAP(s2, v1, 32) AOT_CONV_TAP(s3, v1, 48)
            : [s0] "=&Te"(s0), [s1] "=&Te"(s1), [s2] "=&Te"(s2), [s3] "=&Te"(s3), [t] "=&w"(t)
            : [w] "r"(w + 64), [v0] "w"(v0), [v1] "w"(v1)
            : "memory");
  } else {
    __asm__(AOT_CONV_TAP0(s0, v0, -64) AOT_CONV_TAP0(s1, v0, -48) AOT_CONV_TAP0(s2, v0, -32)
                AOT_CONV_TAP0(s3, v0, -16) AOT_CONV_TAP(s0, v1, 0) AOT_CONV_TAP(s1, v1, 16)
                    AOT_CONV_TAP(s2, v1, 32) AOT_CONV_TAP(s3, v1, 48)
                        AOT_CONV_TAP(s0, v2, 64) AOT_CONV_TAP(s1, v2, 80)
                            AOT_CONV_TAP(s2, v2, 96) AOT_CONV_TAP(s3, v2, 112)
            : [s0] "=&Te"(s0), [s1] "=&Te"(s1), [s2] "=&Te"(s2), [s3] "=&Te"(s3), [t] "=&w"(t)
            : [w] "r"(w + 64), [v0] "w"(v0), [v1] "w"(v1), [v2] "w"(v2)
            : "memory");
  }
  (void)v1, (void)v2;
  *a0 = s0, *a1 = s1, *a2 = s2, *a3 = s3;
}
#undef AOT_CONV_TAP
#undef AOT_CONV_TAP0

/* segments_times_weights for two windows at once (two output pixels of a row, src0 and
 * src1): each weight load serves both pixels' VMLADAVAs, 16 instructions per chunk for the
 * two (20 one at a time). The eight accumulators take every even register (r14 too, so
 * the chunk loop counts with SUBS/BNE, not LE); the loop bounds are read from memory. */
static inline __attribute__((always_inline)) void segments_times_weights_x2(
    const int8_t* src0, const int8_t* src1, int32_t skip, int32_t segments, int32_t chunks,
    const int8_t* w, int32_t out_c, const int32_t* records, int32_t output_offset,
    int32_t act_min, int32_t act_max, int32_t form, int8_t* out0, int8_t* out1) {
  const int32x4_t lo = vdupq_n_s32(act_min), hi = vdupq_n_s32(act_max);
  /* read by the asm; [3] counts the segments left (no register is free for it) */
  int32_t bounds[4] = {segments, chunks, skip, 0};
  w -= 64; /* the first weight load of a chunk pre-increments */
  for (int32_t o = 0; o < out_c; o += 4, out0 += 4, out1 += 4) {
    /* every register named: GCC 12's allocator found none for the asm on its own once
     * the block's record pointer replaced three (all even registers hold sums; r7 is left
     * for a frame pointer) */
    register int32_t a0 __asm__("r0") = 0, a1 __asm__("r2") = 0, a2 __asm__("r4") = 0;
    register int32_t a3 __asm__("r6") = 0, b0 __asm__("r8") = 0, b1 __asm__("r10") = 0;
    register int32_t b2 __asm__("r12") = 0, b3 __asm__("lr") = 0;
    register const int8_t* x0 __asm__("r1") = src0;
    register const int8_t* x1 __asm__("r3") = src1;
    register const int8_t* wp __asm__("r5") = w;
    register int32_t count __asm__("r9");
    register int32_t* at __asm__("r11") = bounds;
    __asm__ volatile(
        "ldr %[count], [%[bounds]]\n\t"
        "str %[count], [%[bounds], #12]\n"
        "2:\n\t"
        "ldr %[count], [%[bounds], #4]\n"
        "1:\n\t"
        "vldrb.8 q0, [%[x0]], #16\n\t"
        "vldrb.8 q1, [%[x1]], #16\n\t"
        "vldrb.8 q2, [%[w], #64]!\n\t"
        "vmladava.s8 %[a0], q0, q2\n\t"
        "vmladava.s8 %[b0], q1, q2\n\t"
        "vldrb.8 q3, [%[w], #16]\n\t"
        "vmladava.s8 %[a1], q0, q3\n\t"
        "vmladava.s8 %[b1], q1, q3\n\t"
        "vldrb.8 q2, [%[w], #32]\n\t"
        "vmladava.s8 %[a2], q0, q2\n\t"
        "vmladava.s8 %[b2], q1, q2\n\t"
        "vldrb.8 q3, [%[w], #48]\n\t"
        "vmladava.s8 %[a3], q0, q3\n\t"
        "vmladava.s8 %[b3], q1, q3\n\t"
        "subs %[count], %[count], #1\n\t"
        "bne 1b\n\t"
        "ldr %[count], [%[bounds], #8]\n\t"
        "add %[x0], %[x0], %[count]\n\t"
        "add %[x1], %[x1], %[count]\n\t"
        "ldr %[count], [%[bounds], #12]\n\t"
        "subs %[count], %[count], #1\n\t"
        "str %[count], [%[bounds], #12]\n\t"
        "bne 2b\n"
        : [x0] "+r"(x0), [x1] "+r"(x1), [w] "+r"(wp), [count] "=&r"(count), [a0] "+r"(a0),
          [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [b0] "+r"(b0), [b1] "+r"(b1),
          [b2] "+r"(b2), [b3] "+r"(b3)
        : [bounds] "r"(at)
        : "q0", "q1", "q2", "q3", "memory", "cc");
    w = wp;
    /* plain copies: a register variable may lose its value to a call (single rounding's
     * 64-bit shift) */
    const int32_t sums[8] = {a0, a1, a2, a3, b0, b1, b2, b3};
    aot_mve_store_block(sums[0], sums[1], sums[2], sums[3], records, o, out_c, output_offset,
                        lo, hi, form, out0);
    aot_mve_store_block(sums[4], sums[5], sums[6], sums[7], records, o, out_c, output_offset,
                        lo, hi, form, out1);
  }
}

/* segments_times_weights_x2 in functions of their own (inlined, GCC found no registers
 * for the asm), one per form */
#define AOT_CONV_PAIR(name, right)                                                           \
  static void __attribute__((noinline))                                                      \
  name(const int8_t* src0, const int8_t* src1, int32_t skip, int32_t segments,               \
       int32_t chunks, const int8_t* w, int32_t out_c, const int32_t* records,               \
       int32_t output_offset, int32_t act_min, int32_t act_max, int32_t form, int8_t* out0,  \
       int8_t* out1) {                                                                       \
    segments_times_weights_x2(src0, src1, skip, segments, chunks, w, out_c, records,         \
                              output_offset, act_min, act_max,                               \
                              right ? AOT_MVE_RQ_RIGHT : form, out0, out1);                  \
  }
AOT_CONV_PAIR(pair_times_weights, 0)
AOT_CONV_PAIR(pair_times_weights_right, 1)

enum { IN_PLACE = -1 }; /* im2col_pixels' `chunks` when its windows are read in place */

/* every output pixel of any other convolution: its receptive field gathered into the
 * scratch (im2col), then times the weights (`form` a constant when it is
 * AOT_MVE_RQ_RIGHT; `chunks` 1-3: the depth fits that many 16-byte chunks, the row is
 * multiplied from Q registers, 0: any depth, IN_PLACE: k_w * in_c is a multiple of 16).
 * A window inside the image (no column dilation) is k_h runs of k_w * in_c contiguous
 * bytes: read in place (IN_PLACE) or copied by vector loads and stores; only border pixels
 * clip and pad into the scratch (IN_PLACE: two receptive fields, a pair of border pixels'). */
static inline __attribute__((always_inline)) void im2col_pixels(
    const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,
    const int32_t* records, int32_t form,
    int8_t* output, int8_t* scratch, const int chunks) {
  /* locals: the output stores may alias *p */
  const int32_t in_c = p->in_c, in_h = p->in_h, in_w = p->in_w, k_h = p->k_h, k_w = p->k_w;
  const int32_t out_c = p->out_c, out_h = p->out_h, out_w = p->out_w, batches = p->batches;
  const int32_t stride_h = p->stride_h, stride_w = p->stride_w, dil_h = p->dil_h;
  const int32_t pad_top = p->pad_top, pad_left = p->pad_left;
  const int32_t offset = p->output_offset, lo = p->act_min, hi = p->act_max;
  const int32_t segment = k_w * in_c, depth = k_h * segment, row_bytes = in_w * in_c;
  const int32_t span_h = (k_h - 1) * dil_h + 1;
  /* columns whose window lies inside the image (none with column dilation) */
  const int32_t span_w = p->dil_w == 1 ? k_w : in_w + 1;
  const int32_t kernel_step = dil_h * row_bytes;
  const mve_pred16_t tail = vctp8q((uint32_t)(segment & 15));
  const int32x4_t lo_v = vdupq_n_s32(lo), hi_v = vdupq_n_s32(hi);
  for (int32_t n = 0; n < batches; ++n) {
    const int8_t* image = input + n * in_h * row_bytes;
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const int32_t y0 = oy * stride_h - pad_top;
      const int32_t rows_inside = y0 >= 0 && y0 + span_h <= in_h;
      for (int32_t ox = 0; ox < out_w; ++ox, output += out_c) {
        const int32_t x0 = ox * stride_w - pad_left;
        const int32_t inside = rows_inside && x0 >= 0 && x0 + span_w <= in_w;
        if (chunks == IN_PLACE && inside && ox + 1 < out_w && x0 + stride_w + span_w <= in_w) {
          /* this window and the next both inside the image: one pass over the weights */
          const int8_t* src = image + y0 * row_bytes + x0 * in_c;
          (form == AOT_MVE_RQ_RIGHT ? pair_times_weights_right : pair_times_weights)(
              src, src + stride_w * in_c, kernel_step - segment, k_h, segment >> 4, weights,
              out_c, records, offset, lo, hi, form, output, output + out_c);
          ++ox, output += out_c;
          continue;
        }
        if (chunks == IN_PLACE && !inside && ox + 1 < out_w) {
          const int32_t x1 = x0 + stride_w;
          if (!(rows_inside && x1 >= 0 && x1 + span_w <= in_w)) {
            /* this border pixel and the next: both gathered (the scratch holds two
             * receptive fields), one pass over the weights */
            gather_border(p, image, y0, x0, scratch);
            gather_border(p, image, y0, x1, scratch + depth);
            (form == AOT_MVE_RQ_RIGHT ? pair_times_weights_right : pair_times_weights)(
                scratch, scratch + depth, 0, 1, depth >> 4, weights, out_c, records, offset, lo,
                hi, form, output, output + out_c);
            ++ox, output += out_c;
            continue;
          }
        }
        if (chunks == IN_PLACE) {
          const int8_t* src = inside ? image + y0 * row_bytes + x0 * in_c : scratch;
          if (!inside) gather_border(p, image, y0, x0, scratch);
          segments_times_weights(src, kernel_step - segment, inside ? k_h : 1,
                                 inside ? segment >> 4 : depth >> 4, weights, out_c, records,
                                 offset, lo, hi, form, output);
          continue;
        }
        if (inside && segment == 4) { /* a word per kernel row (kws_ref_model's 10x4) */
          const int8_t* src = image + y0 * row_bytes + x0 * in_c;
          int8_t* dst = scratch;
          for (int32_t ky = 0; ky < k_h; ++ky, src += kernel_step, dst += 4) {
            uint32_t word;
            __builtin_memcpy(&word, src, 4); /* LDR and STR: unaligned access is allowed */
            __builtin_memcpy(dst, &word, 4);
          }
        } else if (inside) {
          const int8_t* src = image + y0 * row_bytes + x0 * in_c;
          int8_t* dst = scratch;
          for (int32_t ky = 0; ky < k_h; ++ky, src += kernel_step, dst += segment) {
            copy_run(dst, src, segment, tail);
          }
        } else {
          gather_border(p, image, y0, x0, scratch);
        }
        if (chunks) { /* the row in registers for every block */
          const int8x16_t v0 = vldrbq_z_s8(scratch, vctp8q((uint32_t)depth));
          const int8x16_t v1 =
              chunks > 1 ? vldrbq_z_s8(scratch + 16, vctp8q((uint32_t)(depth - 16))) : v0;
          const int8x16_t v2 =
              chunks > 2 ? vldrbq_z_s8(scratch + 32, vctp8q((uint32_t)(depth - 32))) : v0;
          const int8_t* w = weights;
          for (int32_t o = 0; o < out_c; o += 4, w += 64 * chunks) {
            int32_t a0, a1, a2, a3;
            window_times_block(v0, v1, v2, w, &a0, &a1, &a2, &a3, chunks);
            aot_mve_store_block(a0, a1, a2, a3, records, o, out_c, offset,
                                lo_v, hi_v, form, output + o);
          }
        } else {
          aot_mve_row_times_weights(scratch, depth, weights, out_c, records,
                                    offset, lo, hi, form, output);
        }
      }
    }
  }
}

#define AOT_CONV_IM2COL(name, chunks, right)                                               \
  static void __attribute__((noinline))                                                    \
  name(const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,      \
       const int32_t* records, int32_t form,                                               \
       int8_t* output, int8_t* scratch) {                                                  \
    im2col_pixels(p, input, weights, records,                              \
                  right ? AOT_MVE_RQ_RIGHT : form, output, scratch, chunks);               \
  }
AOT_CONV_IM2COL(im2col_any, 0, 0)
AOT_CONV_IM2COL(im2col_48, 3, 0)
AOT_CONV_IM2COL(im2col_in_place, IN_PLACE, 0)
AOT_CONV_IM2COL(im2col_any_right, 0, 1)
AOT_CONV_IM2COL(im2col_48_right, 3, 1)
AOT_CONV_IM2COL(im2col_in_place_right, IN_PLACE, 1)

void aot_k_conv_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                       const int8_t* weights, const int32_t* records, int8_t* output,
                       int8_t* scratch) {
  const int32_t in_c = p->in_c;
  const int32_t direct = p->k_h == 1 && p->k_w == 1 && p->pad_top == 0 && p->pad_left == 0;
  const int32_t form = aot_mve_requant_form(p->rounding, records, p->out_c);
  const int32_t right = aot_mve_conv_right(form);
  if (direct) { /* double rounding over 49-64 channels lacks a free Q register: the loop */
    (in_c <= 16   ? (right ? direct_16_right : direct_16)
     : in_c <= 32 ? (right ? direct_32_right : direct_32)
     : in_c <= 48 ? (right ? direct_48_right : direct_48)
     : in_c <= 64 ? (right ? direct_64_right : direct_any)
                  : (right ? direct_any_right : direct_any))(p, input, weights, records, form,
                                                             output);
  } else {
    const int32_t segment = p->k_w * in_c, depth = p->k_h * segment;
    ((segment & 15) == 0          ? (right ? im2col_in_place_right : im2col_in_place)
     : depth > 32 && depth <= 48 ? (right ? im2col_48_right : im2col_48)
                                 : (right ? im2col_any_right : im2col_any))(
        p, input, weights, records, form, output, scratch);
  }
}

/* `n` windows of a row inside the image, from `at` on: per window its kernel rows loaded
 * with predicate `rows` (0xffff: a plain 16-byte load), times the block of weights at w,
 * requantized and stored (out, stepping out_c) */
static inline __attribute__((always_inline)) void rows_run(
    const int8_t* at, int32_t col_step, int32_t kernel_step, int32_t n, const int8_t* w,
    const int32_t* records, int32_t o,
    int32_t out_c, int32_t offset, int32x4_t lo, int32x4_t hi, int32_t form, int8_t* out,
    const mve_pred16_t rows, const int chunks) {
  for (int32_t i = 0; i < n; ++i, at += col_step, out += out_c) {
    int8x16_t v0, v1, v2;
    if (rows == 0xffff) {
      v0 = vldrbq_s8(at);
      v1 = chunks > 1 ? vldrbq_s8(at + kernel_step) : v0;
      v2 = chunks > 2 ? vldrbq_s8(at + 2 * kernel_step) : v0;
    } else {
      v0 = vldrbq_z_s8(at, rows);
      v1 = chunks > 1 ? vldrbq_z_s8(at + kernel_step, rows) : v0;
      v2 = chunks > 2 ? vldrbq_z_s8(at + 2 * kernel_step, rows) : v0;
    }
    int32_t a0, a1, a2, a3;
    window_times_block(v0, v1, v2, w, &a0, &a1, &a2, &a3, chunks);
    aot_mve_store_block(a0, a1, a2, a3, records, o, out_c, offset, lo, hi,
                        form, out);
  }
}

/* aot_k_conv_rows_s8_mve's pixels, `chunks` = k_h (1 to 3): kernel row k of a window is
 * one predicated load of k_w * in_c bytes straight from the image; a border pixel's load
 * takes only the lanes inside the image (the others read pad_value by VPSEL), so no pixel
 * gathers into scratch. Per output row, for the pixels whose window lies inside the
 * image, the blocks of four channels are the outer loop and the pixels the inner one: a
 * pixel's block is then its three row loads, the VMLADAVs and the requantization, with
 * the loop state of a row in registers (per pixel over all blocks it spilled and reloaded
 * about 40 instructions' worth); a border pixel loads its clipped rows once for all
 * blocks. `form` is a constant when it is AOT_MVE_RQ_RIGHT. */
static inline __attribute__((always_inline)) void rows_pixels(
    const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,
    const int32_t* records, int32_t form,
    int8_t* output, const int chunks) {
  /* locals: the output stores may alias *p */
  const int32_t in_c = p->in_c, in_h = p->in_h, in_w = p->in_w, k_w = p->k_w;
  const int32_t out_c = p->out_c, out_h = p->out_h, out_w = p->out_w, dil_h = p->dil_h;
  const int32_t stride_h = p->stride_h, stride_w = p->stride_w;
  const int32_t pad_top = p->pad_top, pad_left = p->pad_left, batches = p->batches;
  const int32_t offset = p->output_offset;
  const int32x4_t lo = vdupq_n_s32(p->act_min), hi = vdupq_n_s32(p->act_max);
  const int8x16_t pads = vdupq_n_s8((int8_t)p->pad_value);
  const int32_t segment = k_w * in_c, row_bytes = in_w * in_c;
  const int32_t col_step = stride_w * in_c, kernel_step = dil_h * row_bytes;
  const mve_pred16_t lanes = vctp8q((uint32_t)segment);
  const int8_t* input_end = input + batches * in_h * row_bytes;
  /* the output columns whose window lies inside the image's columns: [ox_lo, ox_hi) */
  const int32_t ox_lo = (pad_left + stride_w - 1) / stride_w;
  int32_t ox_hi = in_w - k_w + pad_left < 0 ? 0 : (in_w - k_w + pad_left) / stride_w + 1;
  if (ox_hi > out_w) ox_hi = out_w;
  for (int32_t n = 0; n < batches; ++n) {
    const int8_t* image = input + n * in_h * row_bytes;
    for (int32_t oy = 0; oy < out_h; ++oy, output += out_w * out_c) {
      const int32_t y0 = oy * stride_h - pad_top;
      /* per kernel row: all lanes when it lies inside the image, none (all pad) if not */
      mve_pred16_t rows[3];
      for (int32_t k = 0; k < chunks; ++k) {
        const int32_t iy = y0 + k * dil_h;
        rows[k] = iy >= 0 && iy < in_h ? 0xffff : 0;
      }
      const int32_t rows_inside = y0 >= 0 && y0 + (chunks - 1) * dil_h < in_h;
      /* [lo_x, hi_x): the pixels whose window lies inside the image */
      const int32_t lo_x = rows_inside && ox_lo < ox_hi ? ox_lo : 0;
      const int32_t hi_x = rows_inside && ox_lo < ox_hi ? ox_hi : 0;
      /* the first window's first kernel row (it may point outside the image: the loads then
       * read only lanes inside it) */
      const int8_t* first = image + y0 * row_bytes - pad_left * in_c;
      const int8_t* w = weights;
      /* the windows inside the image: a row load each, unpredicated (16 bytes: the lanes
       * past k_w * in_c meet zero weights) when the row's last load ends inside the input */
      const int32_t plain =
          lo_x < hi_x &&
          first + (hi_x - 1) * col_step + (chunks - 1) * kernel_step + 16 <= input_end;
      for (int32_t o = 0; o < out_c && lo_x < hi_x; o += 4, w += 64 * chunks) {
        const int8_t* at = first + lo_x * col_step;
        int8_t* out = output + o + lo_x * out_c;
        if (plain) {
          rows_run(at, col_step, kernel_step, hi_x - lo_x, w, records, o,
                   out_c, offset, lo, hi, form, out, 0xffff, chunks);
        } else {
          rows_run(at, col_step, kernel_step, hi_x - lo_x, w, records, o,
                   out_c, offset, lo, hi, form, out, lanes, chunks);
        }
      }
      /* the border pixels, [0, lo_x) and [hi_x, out_w): clipped rows, loaded once for all
       * blocks */
      for (int32_t ox = 0; ox < out_w; ++ox) {
        if (ox == lo_x) ox = hi_x > lo_x ? hi_x : lo_x;
        if (ox >= out_w) break;
        const int32_t x0 = ox * stride_w - pad_left;
        const int8_t* from = first + ox * col_step;
        const mve_pred16_t cols = byte_lanes(-x0 * in_c, (in_w - x0) * in_c) & lanes;
        const mve_pred16_t p0 = cols & rows[0];
        const int8x16_t v0 = vpselq_s8(vldrbq_z_s8(from, p0), pads, p0);
        int8x16_t v1 = v0, v2 = v0;
        if (chunks > 1) {
          const mve_pred16_t p1 = cols & rows[1];
          v1 = vpselq_s8(vldrbq_z_s8(from + kernel_step, p1), pads, p1);
        }
        if (chunks > 2) {
          const mve_pred16_t p2 = cols & rows[2];
          v2 = vpselq_s8(vldrbq_z_s8(from + 2 * kernel_step, p2), pads, p2);
        }
        const int8_t* wb = weights;
        for (int32_t o = 0; o < out_c; o += 4, wb += 64 * chunks) {
          int32_t a0, a1, a2, a3;
          window_times_block(v0, v1, v2, wb, &a0, &a1, &a2, &a3, chunks);
          aot_mve_store_block(a0, a1, a2, a3, records, o, out_c, offset, lo,
                              hi, form, output + o + ox * out_c);
        }
      }
    }
  }
}

#define AOT_CONV_ROWS(name, chunks, right)                                                 \
  static void __attribute__((noinline))                                                    \
  name(const struct aot_k_conv_params* p, const int8_t* input, const int8_t* weights,      \
       const int32_t* records, int32_t form, int8_t* output) {                             \
    rows_pixels(p, input, weights, records, right ? AOT_MVE_RQ_RIGHT : form, output,      \
                chunks);                                                                   \
  }
AOT_CONV_ROWS(rows_1, 1, 0)
AOT_CONV_ROWS(rows_2, 2, 0)
AOT_CONV_ROWS(rows_3, 3, 0)
AOT_CONV_ROWS(rows_1_right, 1, 1)
AOT_CONV_ROWS(rows_2_right, 2, 1)
AOT_CONV_ROWS(rows_3_right, 3, 1)

void aot_k_conv_rows_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                            const int8_t* weights, const int32_t* records, int8_t* output,
                            int8_t* scratch) {
  (void)scratch; /* border pixels load their rows clipped: no scratch */
  const int32_t form = aot_mve_requant_form(p->rounding, records, p->out_c);
  const int32_t right = aot_mve_conv_right(form);
  (p->k_h == 1   ? (right ? rows_1_right : rows_1)
   : p->k_h == 2 ? (right ? rows_2_right : rows_2)
                 : (right ? rows_3_right : rows_3))(p, input, weights, records,
                                                    form, output);
}
#endif
