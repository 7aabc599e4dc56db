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
 * Per pass of 4 pixels x 2 channels x 1 depth: 1 LDR, 4 LDRSB, 4 SMLAL (9 for 8 MACs). */
#include "aot_kernels.h"
#include "aot_kernels_requant.h"

#define LANE_BITS 24

/* How a call's outputs are requantized, fixed per call, so each hot function is inlined
 * once per mode (conv_dsp.c has the same two): OUT_FAST, the records' zero-point form and
 * int8's full range (two SMLALs, an ASR and an SSAT); OUT_ANY, any form and range. */
enum { OUT_ANY = 0, OUT_FAST = 1 };

struct lanes_out {
  const struct aot_k_rq* rq; /* one record per output channel, an even count */
  int32_t zp, lo, hi, rounding, form, mode;
};

static struct lanes_out lanes_out_of(const int32_t* records, int32_t form, int32_t zp,
                                     int32_t lo, int32_t hi, int32_t rounding) {
  const int32_t fast = form == AOT_K_RQ_HIGH_ZP && lo == -128 && hi == 127;
  const struct lanes_out q = {(const struct aot_k_rq*)(const void*)records, zp, lo, hi,
                              rounding, form, fast ? OUT_FAST : OUT_ANY};
  return q;
}

static inline __attribute__((always_inline)) int8_t lane_out(const struct lanes_out* q,
                                                             const struct aot_k_rq* r,
                                                             int32_t sum, const int32_t mode) {
  const int32_t acc = r->bias + sum;
  if (mode == OUT_FAST) return (int8_t)aot_k_ssat8(aot_k_rq_high(r, acc));
  return aot_k_rq_apply(r, acc, q->form, q->rounding, q->zp, q->lo, q->hi);
}

/* Calls body(..., mode) with mode a constant. */
#define LANES_DISPATCH(body, q, ...) \
  do {                               \
    if ((q)->mode == OUT_FAST) {     \
      body(__VA_ARGS__, OUT_FAST);   \
    } else {                         \
      body(__VA_ARGS__, OUT_ANY);    \
    }                                \
  } while (0)

/* One accumulator's two lanes, requantized by r0 and r1, into *d0 and, when both is set,
 * *d1 (two channels of a pixel, or one channel of two pixels). */
static inline __attribute__((always_inline)) void store_lanes(
    const struct lanes_out* q, const struct aot_k_rq* r0, const struct aot_k_rq* r1,
    int64_t acc, int8_t* d0, int8_t* d1, int32_t both, const int32_t mode) {
  const int32_t low = (int32_t)((uint32_t)acc << (32 - LANE_BITS)) >> (32 - LANE_BITS);
  const int32_t high = (int32_t)((acc - low) >> LANE_BITS);
  *d0 = lane_out(q, r0, low, mode);
  if (both) *d1 = lane_out(q, r1, high, mode);
}

/* Two channels c, c + 1 of one pixel. */
#define STORE_CHANNELS(acc, dst, both, mode) \
  store_lanes(q, r, r + 1, acc, (dst), (dst) + 1, both, mode)

/* Depth j of the four pixels times the pair's word j. */
#define LANES_MAC4(j)                      \
  do {                                     \
    const int32_t word = pw[j];            \
    a0 += (int64_t)px[4 * (j)] * word;     \
    a1 += (int64_t)px[4 * (j) + 1] * word; \
    a2 += (int64_t)px[4 * (j) + 2] * word; \
    a3 += (int64_t)px[4 * (j) + 3] * word; \
  } while (0)

/* Four interleaved pixels ([k][4] bytes at x) times every channel pair. */
static inline __attribute__((always_inline)) void pass4_body(const int8_t* x, int32_t k,
                                                             const int32_t* w, int32_t out_c,
                                                             const struct lanes_out* q,
                                                             int8_t* const out[4],
                                                             const int32_t mode) {
  for (int32_t c = 0; c < out_c; c += 2, w += k) {
    int64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    const int8_t* px = x;
    const int32_t* pw = w;
    const int32_t* end = w + k;
    /* k is a multiple of four here (the weights are padded with zeros, the scratch rows
     * past K hold any values), so four depths a loop */
    do {
      LANES_MAC4(0);
      LANES_MAC4(1);
      LANES_MAC4(2);
      LANES_MAC4(3);
      px += 16;
      pw += 4;
    } while (pw != end);
    const struct aot_k_rq* r = q->rq + c;
    const int32_t both = c + 1 < out_c;
    STORE_CHANNELS(a0, out[0] + c, both, mode);
    STORE_CHANNELS(a1, out[1] + c, both, mode);
    STORE_CHANNELS(a2, out[2] + c, both, mode);
    STORE_CHANNELS(a3, out[3] + c, both, mode);
  }
}

static void pass4(const int8_t* x, int32_t k, const int32_t* w, int32_t out_c,
                  const struct lanes_out* q, int8_t* const out[4]) {
  LANES_DISPATCH(pass4_body, q, x, k, w, out_c, q, out);
}

/* One row of k int8 inputs times every channel pair, three pairs at a time; a pair's
 * words are `stride` apart (k rounded up to four). */
static inline __attribute__((always_inline)) void row1_body(const int8_t* x, int32_t k,
                                                            int32_t stride, const int32_t* w,
                                                            int32_t out_c,
                                                            const struct lanes_out* q,
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
    STORE_CHANNELS(a0, out + c, 1, mode);
    r += 2;
    STORE_CHANNELS(a1, out + c + 2, 1, mode);
    r += 2;
    STORE_CHANNELS(a2, out + c + 4, 1, mode);
  }
  for (; c < out_c; c += 2, w += stride) {
    int64_t a0 = 0;
    const int32_t* pw = w;
    for (const int8_t* px = x; px != end; ++px, ++pw) a0 += (int64_t)*px * *pw;
    const struct aot_k_rq* r = q->rq + c;
    STORE_CHANNELS(a0, out + c, c + 1 < out_c, mode);
  }
}

static void row1(const int8_t* x, int32_t k, int32_t stride, const int32_t* w, int32_t out_c,
                 const struct lanes_out* q, int8_t* out) {
  LANES_DISPATCH(row1_body, q, x, k, stride, w, out_c, q, out);
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
  const struct lanes_out q = lanes_out_of(records, p->requant_form, p->output_offset,
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
  const struct lanes_out q = lanes_out_of(records, p->requant_form, p->output_offset,
                                          p->act_min, p->act_max, p->rounding);
  for (int32_t b = 0; b < p->batches; ++b) {
    row1(input + b * p->depth, p->depth, (p->depth + 3) & ~3, weights, p->out_c, &q, output + b * p->out_c);
  }
}
