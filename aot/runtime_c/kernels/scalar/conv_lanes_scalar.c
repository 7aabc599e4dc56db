/* int8 conv2d and fully connected for cores without the DSP extension (the Cortex-M3, and
 * the Cortex-M33 as QEMU's AN521 has it): two output channels per multiply.
 *
 * A weight word holds two channels' weights as w0 + w1 * 2^24 (aot/kernels/scalar.py,
 * lane_pairs). One SMLAL of an int8 input x with it adds x * w0 + x * w1 * 2^24 to a 64-bit
 * accumulator: after K of them the accumulator is L + H * 2^24, L and H the two channels'
 * sums. The build takes a layer only when 128 * sum(|w0|) < 2^23 for every channel, so L
 * always fits the low 24 bits signed and both come back exactly: L by sign-extending them,
 * H as (acc - L) >> 24. An input is then worth two multiply-accumulates for one load and
 * one instruction, where the SMLAD-less C of conv_dsp.c pays about four.
 *
 * The inputs are the raw int8 values, the zero-point term folded into the bias at build
 * time; a padded tap reads the input zero point (pad_value), which that fold cancels.
 * Four pixels a pass: their receptive fields are copied into the scratch interleaved
 * ([k][pixel], 4 * K bytes), so one pointer walks all four and each weight word serves
 * four SMLALs. Pixels short of a pass, and a fully connected layer's single row, run one
 * pixel over three channel pairs instead, so each input load serves six channels.
 *
 * Per pass of 4 pixels x 2 channels x 1 depth: 1 LDR, 4 LDRSB, 4 SMLAL (9 for 8 MACs).
 * Depthwise layers (aot_k_dwconv_lanes, below) pair two neighbouring pixels instead. */
#include "aot_kernels.h"
#include "aot_kernels_out.h"
#include "aot_kernels_requant.h"

#include <string.h>

#define LANE_BITS 24

/* SMLAL and LDRSB with immediate offsets are in every Armv7-M and later core. */
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__)
#define LANES_ASM 1
#else
#define LANES_ASM 0
#endif

/* The outputs' requantization modes are aot_kernels_out.h's (conv_dsp.c has the same). */
static inline __attribute__((always_inline)) int8_t lane_out(const struct aot_k_out_q* q,
                                                             const struct aot_k_rq* r,
                                                             int32_t sum, const int32_t mode) {
  return aot_k_out_q(q, r, r->bias + sum, mode);
}

/* Both lanes in the fast mode, written out on the M-profile cores (26 instructions; GCC
 * 12 spills the records' words, about 19 an output): the high lane is acc >> 24 plus one
 * when the low lane is negative (acc = L + H * 2^24, so floor(acc / 2^24) = H - [L < 0]). */
static inline __attribute__((always_inline)) void store_both_fast(const struct aot_k_rq* r0,
                                                                  const struct aot_k_rq* r1,
                                                                  uint32_t lo, int32_t hi,
                                                                  int8_t* d0, int8_t* d1) {
#if LANES_ASM
  int32_t a, b, m, sh, sg;
#define LANES_OUT(v, r, d)                            \
  "ldr %[m], [%[" r "]]\n\t"                          \
  "add %[" v "], %[" v "], %[m]\n\t"                   \
  "ldrd %[lo], %[hi], [%[" r "], #8]\n\t"              \
  "ldrd %[sh], %[sg], [%[" r "], #16]\n\t"             \
  "lsr %[m], %[" v "], #31\n\t"                       \
  "smlal %[lo], %[hi], %[m], %[sg]\n\t"               \
  "ldr %[m], [%[" r "], #4]\n\t"                      \
  "smlal %[lo], %[hi], %[" v "], %[m]\n\t"             \
  "asr %[" v "], %[hi], %[sh]\n\t"                    \
  "ssat %[" v "], #8, %[" v "]\n\t"                   \
  "strb %[" v "], [%[" d "]]\n\t"
  /* volatile: its only effects are the two stores */
  __asm__ volatile(
      "sbfx %[a], %[lo], #0, #24\n\t"
      "lsr %[b], %[lo], #24\n\t"
      "orr %[b], %[b], %[hi], lsl #8\n\t"
      "add %[b], %[b], %[a], lsr #31\n\t"
      LANES_OUT("a", "r0", "d0")
      LANES_OUT("b", "r1", "d1")
      : [lo] "+&r"(lo), [hi] "+&r"(hi), [a] "=&r"(a), [b] "=&r"(b), [m] "=&r"(m),
        [sh] "=&r"(sh), [sg] "=&r"(sg)
      : [r0] "r"(r0), [r1] "r"(r1), [d0] "r"(d0), [d1] "r"(d1)
      : "memory");
#undef LANES_OUT
#else
  const int32_t low = (int32_t)(lo << (32 - LANE_BITS)) >> (32 - LANE_BITS);
  const int32_t high = (int32_t)((lo >> LANE_BITS) | ((uint32_t)hi << (32 - LANE_BITS))) +
                       (int32_t)((uint32_t)low >> 31);
  *d0 = (int8_t)aot_k_ssat8(aot_k_rq_high(r0, r0->bias + low));
  *d1 = (int8_t)aot_k_ssat8(aot_k_rq_high(r1, r1->bias + high));
#endif
}

/* An accumulator's 64 bits from its (lo, hi) words. */
static inline __attribute__((always_inline)) int64_t lanes_of(uint32_t lo, int32_t hi) {
  return (int64_t)(((uint64_t)(uint32_t)hi << 32) | lo);
}

/* One accumulator's (lo, hi) words, acc = L + H * 2^24: L requantized by r0 into *d0 and,
 * when both is set, H by r1 into *d1 (two channels of a pixel, or one channel of two
 * pixels). */
static inline __attribute__((always_inline)) void store_lanes(
    const struct aot_k_out_q* q, const struct aot_k_rq* r0, const struct aot_k_rq* r1,
    uint32_t lo, int32_t hi, int8_t* d0, int8_t* d1, int32_t both, const int32_t mode) {
  if (mode == AOT_K_OUT_FAST && both) {
    store_both_fast(r0, r1, lo, hi, d0, d1);
    return;
  }
  const int64_t acc = lanes_of(lo, hi);
  const int32_t low = (int32_t)((uint32_t)acc << (32 - LANE_BITS)) >> (32 - LANE_BITS);
  const int32_t high = (int32_t)((acc - low) >> LANE_BITS);
  *d0 = lane_out(q, r0, low, mode);
  if (both) *d1 = lane_out(q, r1, high, mode);
}

/* Two channels c, c + 1 of one pixel. */
#define STORE_CHANNELS(lo, hi, dst, both, mode) \
  store_lanes(q, r, r + 1, lo, hi, (dst), (dst) + 1, both, mode)

/* Four interleaved pixels ([k][4] bytes from px) times one pair's words [pw, end), k a
 * multiple of four, into four accumulators' (lo, hi) words. Written out on the M-profile
 * cores: 38 instructions per four depths (32 MACs), where GCC 12's loop takes 42. */
static inline __attribute__((always_inline)) void mac_pass4(const int8_t* px, const int32_t* pw,
                                                            const int32_t* end, uint32_t lo[4],
                                                            int32_t hi[4]) {
#if LANES_ASM
  int32_t word, x;
#define LANES_DEPTH(w_off, x_off)                      \
  "ldrsb %[x], [%[px], #" #x_off "]\n\t"               \
  "smlal %[l0], %[h0], %[x], %[word]\n\t"              \
  "ldrsb %[x], [%[px], #" #x_off "+1]\n\t"             \
  "smlal %[l1], %[h1], %[x], %[word]\n\t"              \
  "ldrsb %[x], [%[px], #" #x_off "+2]\n\t"             \
  "smlal %[l2], %[h2], %[x], %[word]\n\t"              \
  "ldrsb %[x], [%[px], #" #x_off "+3]\n\t"             \
  "smlal %[l3], %[h3], %[x], %[word]\n\t"
  __asm__(
      "1:\n\t"
      "ldr %[word], [%[pw]], #16\n\t"
      "ldrsb %[x], [%[px]], #16\n\t"
      "smlal %[l0], %[h0], %[x], %[word]\n\t"
      "ldrsb %[x], [%[px], #-15]\n\t"
      "smlal %[l1], %[h1], %[x], %[word]\n\t"
      "ldrsb %[x], [%[px], #-14]\n\t"
      "smlal %[l2], %[h2], %[x], %[word]\n\t"
      "ldrsb %[x], [%[px], #-13]\n\t"
      "smlal %[l3], %[h3], %[x], %[word]\n\t"
      "ldr %[word], [%[pw], #-12]\n\t"
      LANES_DEPTH(-12, -12)
      "ldr %[word], [%[pw], #-8]\n\t"
      LANES_DEPTH(-8, -8)
      "ldr %[word], [%[pw], #-4]\n\t"
      LANES_DEPTH(-4, -4)
      "cmp %[pw], %[end]\n\t"
      "bne 1b"
      : [l0] "+r"(lo[0]), [h0] "+r"(hi[0]), [l1] "+r"(lo[1]), [h1] "+r"(hi[1]),
        [l2] "+r"(lo[2]), [h2] "+r"(hi[2]), [l3] "+r"(lo[3]), [h3] "+r"(hi[3]),
        [px] "+r"(px), [pw] "+r"(pw), [word] "=&r"(word), [x] "=&r"(x)
      : [end] "r"(end)
      : "cc", "memory");
#undef LANES_DEPTH
#else
  int64_t a[4];
  for (int32_t i = 0; i < 4; ++i) a[i] = lanes_of(lo[i], hi[i]);
  for (; pw != end; ++pw, px += 4) {
    for (int32_t i = 0; i < 4; ++i) a[i] += (int64_t)px[i] * *pw;
  }
  for (int32_t i = 0; i < 4; ++i) {
    lo[i] = (uint32_t)a[i];
    hi[i] = (int32_t)((uint64_t)a[i] >> 32);
  }
#endif
}

/* Four interleaved pixels ([k][4] bytes at x) times every channel pair. */
static inline __attribute__((always_inline)) void pass4_body(const int8_t* x, int32_t k,
                                                             const int32_t* w, int32_t out_c,
                                                             const struct aot_k_out_q* q,
                                                             int8_t* const out[4],
                                                             const int32_t mode) {
  for (int32_t c = 0; c < out_c; c += 2, w += k) {
    uint32_t lo[4] = {0, 0, 0, 0};
    int32_t hi[4] = {0, 0, 0, 0};
    /* k is a multiple of four here (the weights are padded with zero words, the scratch
     * rows past K hold any values), so four depths a loop */
    mac_pass4(x, w, w + k, lo, hi);
    /* copies: the int8 stores could alias q->rq (see dw_channel_body) */
    const struct aot_k_rq r[2] = {q->rq[c], q->rq[c + 1]};
    const int32_t both = c + 1 < out_c;
    STORE_CHANNELS(lo[0], hi[0], out[0] + c, both, mode);
    STORE_CHANNELS(lo[1], hi[1], out[1] + c, both, mode);
    STORE_CHANNELS(lo[2], hi[2], out[2] + c, both, mode);
    STORE_CHANNELS(lo[3], hi[3], out[3] + c, both, mode);
  }
}

static void pass4(const int8_t* x, int32_t k, const int32_t* w, int32_t out_c,
                  const struct aot_k_out_q* q, int8_t* const out[4]) {
  AOT_K_ROW_DISPATCH(pass4_body, q, x, k, w, out_c, q, out);
}

/* One row of k int8 inputs times every channel pair, three pairs at a time; a pair's
 * words are `stride` apart (k rounded up to four). */
static inline __attribute__((always_inline)) void row1_body(const int8_t* x, int32_t k,
                                                            int32_t stride, const int32_t* w,
                                                            int32_t out_c,
                                                            const struct aot_k_out_q* q,
                                                            int8_t* out, const int32_t mode) {
  const int8_t* end = x + k;
  int32_t c = 0;
  for (; c + 6 <= out_c; c += 6, w += 3 * stride) {
    int64_t a0 = 0, a1 = 0, a2 = 0;
    const int32_t* pw = w;
    for (const int8_t* px = x; px != end; ++px, ++pw) {
      const int32_t v = *px;
      a0 += (int64_t)v * pw[0];
      a1 += (int64_t)v * pw[stride];
      a2 += (int64_t)v * pw[2 * stride];
    }
    const struct aot_k_rq* r = q->rq + c;
    STORE_CHANNELS((uint32_t)a0, (int32_t)((uint64_t)a0 >> 32), out + c, 1, mode);
    r += 2;
    STORE_CHANNELS((uint32_t)a1, (int32_t)((uint64_t)a1 >> 32), out + c + 2, 1, mode);
    r += 2;
    STORE_CHANNELS((uint32_t)a2, (int32_t)((uint64_t)a2 >> 32), out + c + 4, 1, mode);
  }
  for (; c < out_c; c += 2, w += stride) {
    int64_t a0 = 0;
    const int32_t* pw = w;
    for (const int8_t* px = x; px != end; ++px, ++pw) a0 += (int64_t)*px * *pw;
    const struct aot_k_rq* r = q->rq + c;
    STORE_CHANNELS((uint32_t)a0, (int32_t)((uint64_t)a0 >> 32), out + c, c + 1 < out_c, mode);
  }
}

static void row1(const int8_t* x, int32_t k, int32_t stride, const int32_t* w, int32_t out_c,
                 const struct aot_k_out_q* q, int8_t* out) {
  AOT_K_ROW_DISPATCH(row1_body, q, x, k, stride, w, out_c, q, out);
}

/* Pixel (b, oy, ox)'s receptive field, tap after tap in OHWI order, to dst[i * step]. */
static void gather(const struct aot_k_conv_params* p, const int8_t* input, int32_t b,
                   int32_t oy, int32_t ox, int8_t* dst, int32_t step) {
  const int32_t in_c = p->in_c;
  const int8_t pad = (int8_t)p->pad_value;
  for (int32_t ky = 0; ky < p->k_h; ++ky) {
    const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
    for (int32_t kx = 0; kx < p->k_w; ++kx, dst += in_c * step) {
      const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
      if (iy < 0 || iy >= p->in_h || ix < 0 || ix >= p->in_w) {
        for (int32_t c = 0; c < in_c; ++c) dst[c * step] = pad;
        continue;
      }
      const int8_t* src = input + ((b * p->in_h + iy) * p->in_w + ix) * in_c;
      for (int32_t c = 0; c < in_c; ++c) dst[c * step] = src[c];
    }
  }
}

void aot_k_conv_lanes_s8_scalar(const struct aot_k_conv_params* p, const int8_t* input,
                                const int32_t* weights, const int32_t* records,
                                int8_t* output, int8_t* scratch) {
  const struct aot_k_out_q q = aot_k_out_quant(records, p->requant_form, p->output_offset,
                                          p->act_min, p->act_max, p->rounding);
  const int32_t k = p->k_h * p->k_w * p->in_c, out_c = p->out_c, stride = (k + 3) & ~3;
  const int32_t pixels = p->out_h * p->out_w;
  int8_t* out[4];
  int32_t slot = 0;
  int8_t* dst = output;
  for (int32_t b = 0; b < p->batches; ++b) {
    for (int32_t i = 0; i < pixels; ++i, dst += out_c) {
      gather(p, input, b, i / p->out_w, i % p->out_w, scratch + slot, 4);
      out[slot++] = dst;
      if (slot == 4) {
        pass4(scratch, stride, weights, out_c, &q, out);
        slot = 0;
      }
    }
  }
  /* The last pixels short of a pass (of the last batch), one at a time, gathered again
   * as a plain row. */
  for (int32_t s = 0; s < slot; ++s) {
    const int32_t i = pixels - slot + s;
    gather(p, input, p->batches - 1, i / p->out_w, i % p->out_w, scratch, 1);
    row1(scratch, k, stride, weights, out_c, &q, out[s]);
  }
}

void aot_k_fc_lanes_s8_scalar(const struct aot_k_fc_params* p, const int8_t* input,
                              const int32_t* weights, const int32_t* records, int8_t* output,
                              int8_t* scratch) {
  (void)scratch;
  const struct aot_k_out_q q = aot_k_out_quant(records, p->requant_form, p->output_offset,
                                          p->act_min, p->act_max, p->rounding);
  for (int32_t b = 0; b < p->batches; ++b) {
    row1(input + b * p->depth, p->depth, (p->depth + 3) & ~3, weights, p->out_c, &q, output + b * p->out_c);
  }
}

/* -- Depthwise, depth multiplier 1 (aot_k_dwconv_lanes) -----------------------------------
 * Two horizontally neighbouring outputs of one channel share an accumulator: for a row of
 * taps, each input column either output reads (kx * dil_w for the first, stride_w further
 * for the second) gets one word, w(first) + w(second) * 2^24, with 0 where an output does
 * not read it; a 3x3 row at stride 1 is four words for six MACs. The words are built per
 * channel on the stack from the model's weights. Each channel's plane is copied into the
 * scratch, whose padding (the input zero point, which the folded bias cancels) is written
 * once a call, so no tap is tested and every load has a constant offset. 3x3 at stride 1 runs four outputs
 * a pass (two accumulators reading the same words two columns apart, each input loaded
 * once); other windows two, through a table of the columns. The build gives it stride 1
 * along rows only (aot/kernels/scalar.py takes_lanes_dwconv). */
#define DW_MOST_COLUMNS 16 /* columns a pair reads, checked at build time */
#define DW_MOST_WORDS 64   /* k_h * those columns, checked at build time */

/* Which taps of a row the pair's column u holds: kx + 1 of the first output and of the
 * second (0: none), for every u of the call. */
struct dw_columns {
  int32_t count;
  int32_t offset[DW_MOST_COLUMNS];
  int8_t first[DW_MOST_COLUMNS], second[DW_MOST_COLUMNS];
};

static void dw_columns_of(const struct aot_k_conv_params* p, struct dw_columns* t) {
  const int32_t last = p->stride_w + (p->k_w - 1) * p->dil_w;
  t->count = 0;
  for (int32_t x = 0; x <= last; ++x) {
    const int32_t s = x - p->stride_w;
    const int32_t first = x % p->dil_w == 0 && x / p->dil_w < p->k_w ? x / p->dil_w + 1 : 0;
    const int32_t second = s >= 0 && s % p->dil_w == 0 && s / p->dil_w < p->k_w ? s / p->dil_w + 1 : 0;
    if (!first && !second) continue;
    t->offset[t->count] = x;
    t->first[t->count] = (int8_t)first;
    t->second[t->count++] = (int8_t)second;
  }
}

/* words[ky * count + u]: channel c's word for the pair's column u in tap row ky. */
static void dw_words(const struct aot_k_conv_params* p, const int8_t* weights, int32_t c,
                     const struct dw_columns* t, int32_t* words) {
  const int32_t out_c = p->out_c;
  for (int32_t ky = 0; ky < p->k_h; ++ky) {
    const int8_t* row = weights + ky * p->k_w * out_c + c - out_c; /* tap kx + 1 at row + (kx + 1) * out_c */
    for (int32_t u = 0; u < t->count; ++u) {
      const int32_t first = t->first[u] ? row[t->first[u] * out_c] : 0;
      const int32_t second = t->second[u] ? row[t->second[u] * out_c] : 0;
      *words++ = (int32_t)((uint32_t)first + ((uint32_t)second << LANE_BITS));
    }
  }
}

/* The plane a call reads: every row and column of its outputs' windows, an odd last
 * output of a row read as if it had a neighbour. */
static inline void dw_plane(const struct aot_k_conv_params* p, int32_t* rows, int32_t* cols) {
  const int32_t even_w = p->out_w + (p->out_w & 1);
  *rows = (p->out_h - 1) * p->stride_h + (p->k_h - 1) * p->dil_h + 1;
  *cols = (even_w - 1) * p->stride_w + (p->k_w - 1) * p->dil_w + 1;
}

/* Channel c of batch b into the inside of plane[rows][cols]; its padding was written once
 * for the call (the same for every channel). */
static void dw_gather(const struct aot_k_conv_params* p, const int8_t* input, int32_t b,
                      int32_t c, int8_t* plane, int32_t rows, int32_t cols) {
  const int32_t in_c = p->in_c;
  /* the plane's columns [left, right) hold input columns from left - pad_left on; the
   * others, and the rows outside the input, are padding */
  const int32_t right = p->pad_left + p->in_w > cols ? cols : p->pad_left + p->in_w;
  const int32_t first_col = p->pad_left < 0 ? 0 : p->pad_left;
  const int32_t left = first_col > right ? right : first_col;
  const int32_t first = p->pad_top < 0 ? 0 : p->pad_top;
  const int32_t last = p->pad_top + p->in_h < rows ? p->pad_top + p->in_h : rows;
  const int32_t width = right - left;
  const int8_t* src = input + ((b * p->in_h + first - p->pad_top) * p->in_w + left - p->pad_left) * in_c + c;
  const int32_t skip = (p->in_w - width) * in_c;
  for (int8_t* row = plane + first * cols + left; row < plane + last * cols; row += cols, src += skip) {
    for (int32_t x = 0; x < width; ++x, src += in_c) row[x] = *src;
  }
}

/* Every byte of the plane the input zero point, so its padding is written once. */
static void dw_pad(const struct aot_k_conv_params* p, int8_t* plane, int32_t rows, int32_t cols) {
  memset(plane, (int8_t)p->pad_value, (size_t)(rows * cols));
}

/* 3x3 at stride 1: a row's four words w[0..3] times six inputs, (a0_lo, a0_hi) for the
 * outputs x, x + 1 and (a1_lo, a1_hi) for x + 2, x + 3. Written out on the M-profile
 * cores: GCC 12 moves the 64-bit accumulators between registers around each SMLAL
 * (about 110 instructions for the three rows instead of 54). */
static inline __attribute__((always_inline)) void dw_row4(const int8_t* row, const int32_t* w,
                                                          uint32_t* a0_lo, int32_t* a0_hi,
                                                          uint32_t* a1_lo, int32_t* a1_hi) {
#if LANES_ASM
  int32_t word, t0, t1, t2, t3;
  __asm__(
      "ldr %[word], [%[w]]\n\t"
      "ldrsb %[t0], [%[row]]\n\t"
      "ldrsb %[t2], [%[row], #2]\n\t"
      "smlal %[l0], %[h0], %[t0], %[word]\n\t"
      "smlal %[l1], %[h1], %[t2], %[word]\n\t"
      "ldr %[word], [%[w], #4]\n\t"
      "ldrsb %[t1], [%[row], #1]\n\t"
      "ldrsb %[t3], [%[row], #3]\n\t"
      "smlal %[l0], %[h0], %[t1], %[word]\n\t"
      "smlal %[l1], %[h1], %[t3], %[word]\n\t"
      "ldr %[word], [%[w], #8]\n\t"
      "ldrsb %[t0], [%[row], #4]\n\t"
      "smlal %[l0], %[h0], %[t2], %[word]\n\t"
      "smlal %[l1], %[h1], %[t0], %[word]\n\t"
      "ldr %[word], [%[w], #12]\n\t"
      "ldrsb %[t1], [%[row], #5]\n\t"
      "smlal %[l0], %[h0], %[t3], %[word]\n\t"
      "smlal %[l1], %[h1], %[t1], %[word]"
      : [l0] "+r"(*a0_lo), [h0] "+r"(*a0_hi), [l1] "+r"(*a1_lo), [h1] "+r"(*a1_hi),
        [word] "=&r"(word), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3)
      : [row] "r"(row), [w] "r"(w), "m"(*(const int8_t(*)[6])row), "m"(*(const int32_t(*)[4])w));
#else
  int64_t a0 = (int64_t)(((uint64_t)(uint32_t)*a0_hi << 32) | *a0_lo);
  int64_t a1 = (int64_t)(((uint64_t)(uint32_t)*a1_hi << 32) | *a1_lo);
  for (int32_t u = 0; u < 4; ++u) {
    a0 += (int64_t)row[u] * w[u];
    a1 += (int64_t)row[u + 2] * w[u];
  }
  *a0_lo = (uint32_t)a0;
  *a0_hi = (int32_t)((uint64_t)a0 >> 32);
  *a1_lo = (uint32_t)a1;
  *a1_hi = (int32_t)((uint64_t)a1 >> 32);
#endif
}

/* One pair's row of n words (n a constant). */
#define DW_ROW2(row, w, n)                                              \
  do {                                                                  \
    _Pragma("GCC unroll 4")                                             \
    for (int32_t u = 0; u < (n); ++u) a0 += (int64_t)(row)[u] * (w)[u]; \
  } while (0)

enum { DW_ANY = 0, DW_3X3_S1 = 1 };

static inline __attribute__((always_inline)) void dw_channel_body(
    const struct aot_k_conv_params* p, const int8_t* plane, int32_t cols, const int32_t* words,
    const struct dw_columns* t, const struct aot_k_out_q* q, int8_t* out, int32_t c,
    const int32_t shape, const int32_t mode) {
  /* A copy of the channel's record: the int8 stores could alias q->rq, which would then
   * be read again after each of them. */
  const struct aot_k_rq record = q->rq[c];
  const struct aot_k_rq* r = &record;
  const int32_t step = p->out_c, down = p->dil_h * cols;
  for (int32_t oy = 0; oy < p->out_h; ++oy) {
    const int8_t* top = plane + oy * p->stride_h * cols;
    int8_t* dst = out + oy * p->out_w * step + c;
    int32_t ox = 0;
    if (shape == DW_3X3_S1) {
      for (; ox + 4 <= p->out_w; ox += 4, dst += 4 * step) {
        uint32_t a0_lo = 0, a1_lo = 0;
        int32_t a0_hi = 0, a1_hi = 0;
        const int8_t* row = top + ox;
        dw_row4(row, words, &a0_lo, &a0_hi, &a1_lo, &a1_hi);
        dw_row4(row + down, words + 4, &a0_lo, &a0_hi, &a1_lo, &a1_hi);
        dw_row4(row + 2 * down, words + 8, &a0_lo, &a0_hi, &a1_lo, &a1_hi);
        store_lanes(q, r, r, a0_lo, a0_hi, dst, dst + step, 1, mode);
        store_lanes(q, r, r, a1_lo, a1_hi, dst + 2 * step, dst + 3 * step, 1, mode);
      }
    }
    for (; ox < p->out_w; ox += 2, dst += 2 * step) {
      int64_t a0 = 0;
      const int8_t* row = top + ox * p->stride_w;
      if (shape == DW_3X3_S1) {
        DW_ROW2(row, words, 4);
        DW_ROW2(row + down, words + 4, 4);
        DW_ROW2(row + 2 * down, words + 8, 4);
      } else {
        const int32_t* w = words;
        for (int32_t ky = 0; ky < p->k_h; ++ky, row += down, w += t->count) {
          for (int32_t u = 0; u < t->count; ++u) a0 += (int64_t)row[t->offset[u]] * w[u];
        }
      }
      store_lanes(q, r, r, (uint32_t)a0, (int32_t)((uint64_t)a0 >> 32), dst, dst + step,
                  ox + 1 < p->out_w, mode);
    }
  }
}

#define DW_SHAPES(p, ...)                                                    \
  do {                                                                       \
    if ((p)->k_h == 3 && (p)->k_w == 3 && (p)->stride_w == 1 && (p)->dil_w == 1) { \
      dw_channel_body(__VA_ARGS__, DW_3X3_S1, mode);                         \
    } else {                                                                 \
      dw_channel_body(__VA_ARGS__, DW_ANY, mode);                            \
    }                                                                        \
  } while (0)

static inline __attribute__((always_inline)) void dw_channel_mode(
    const struct aot_k_conv_params* p, const int8_t* plane, int32_t cols, const int32_t* words,
    const struct dw_columns* t, const struct aot_k_out_q* q, int8_t* out, int32_t c,
    const int32_t mode) {
  DW_SHAPES(p, p, plane, cols, words, t, q, out, c);
}

static void dw_channel(const struct aot_k_conv_params* p, const int8_t* plane, int32_t cols,
                       const int32_t* words, const struct dw_columns* t,
                       const struct aot_k_out_q* q, int8_t* out, int32_t c) {
  AOT_K_ROW_DISPATCH(dw_channel_mode, q, p, plane, cols, words, t, q, out, c);
}

void aot_k_dwconv_lanes_s8_scalar(const struct aot_k_conv_params* p, const int8_t* input,
                                  const int8_t* weights, const int32_t* records,
                                  int8_t* output, int8_t* scratch) {
  const struct aot_k_out_q q = aot_k_out_quant(records, p->requant_form, p->output_offset,
                                          p->act_min, p->act_max, p->rounding);
  struct dw_columns t;
  int32_t rows, cols, words[DW_MOST_WORDS];
  dw_plane(p, &rows, &cols);
  dw_columns_of(p, &t);
  dw_pad(p, scratch, rows, cols);
  for (int32_t b = 0; b < p->batches; ++b) {
    int8_t* out = output + b * p->out_h * p->out_w * p->out_c;
    for (int32_t c = 0; c < p->out_c; ++c) {
      dw_gather(p, input, b, c, scratch, rows, cols);
      dw_words(p, weights, c, &t, words);
      dw_channel(p, scratch, cols, words, &t, &q, out, c);
    }
  }
}
