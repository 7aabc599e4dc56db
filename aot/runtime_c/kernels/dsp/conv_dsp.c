/* int8 conv2d and fully connected with the DSP extension (SMLAD on SXTB16 pairs).
 *
 * Both are a matrix product: each output pixel (or batch row) is a row of K inputs, each
 * output channel a row of K weights (TFLite's OHWI / [out, depth] layout, unchanged).
 * Output blocking: two rows x two channels per inner loop, so every loaded input word
 * serves two channels and every weight word two pixels.
 *
 * - 1x1 convolutions without padding and fully connected layers read the input in place
 *   as int8 (the input zero-point term is folded into the bias at build time).
 * - Other convolutions copy two pixels' receptive fields (im2col) into the planned
 *   scratch as int16 with the input offset added and zeros for padded taps, in the order
 *   SXTB16 unpacks the weights (x0 x2 | x1 x3), so each weight word costs one load and
 *   two SXTB16 for two pixels. Scratch: 2 * K int16. */
#include "aot_kernels.h"
#include "aot_kernels_requant.h"
#include "aot_kernels_simd.h"

struct aot_k_out_q {
  const int32_t* bias;
  const int32_t* multiplier;
  const int32_t* shift;
  int32_t zp, lo, hi, rounding;
};

static inline int8_t out_q(const struct aot_k_out_q* q, int32_t acc, int32_t c) {
  return aot_k_requant(acc, q->multiplier[c], q->shift[c], q->rounding, q->zp, q->lo, q->hi);
}

/* One int8 row times every weight row, four channels at a time. */
static void row1_s8(const int8_t* a, int32_t k, const int8_t* w, int32_t out_c,
                    const struct aot_k_out_q* q, int8_t* out) {
  const int32_t k4 = k >> 2;
  int32_t c = 0;
  for (; c + 4 <= out_c; c += 4) {
    const int8_t* w0 = w + c * k;
    const int8_t* w1 = w0 + k;
    const int8_t* w2 = w1 + k;
    const int8_t* w3 = w2 + k;
    const int8_t* pa = a;
    int32_t acc0 = q->bias[c], acc1 = q->bias[c + 1], acc2 = q->bias[c + 2],
            acc3 = q->bias[c + 3];
    for (int32_t j = 0; j < k4; ++j) {
      const int32_t av = aot_k_load32(pa);
      pa += 4;
      const int32_t ae = aot_k_sxtb16(av), ao = aot_k_sxtb16_odd(av);
      int32_t wv = aot_k_load32(w0);
      w0 += 4;
      acc0 = aot_k_smlad(ae, aot_k_sxtb16(wv), acc0);
      acc0 = aot_k_smlad(ao, aot_k_sxtb16_odd(wv), acc0);
      wv = aot_k_load32(w1);
      w1 += 4;
      acc1 = aot_k_smlad(ae, aot_k_sxtb16(wv), acc1);
      acc1 = aot_k_smlad(ao, aot_k_sxtb16_odd(wv), acc1);
      wv = aot_k_load32(w2);
      w2 += 4;
      acc2 = aot_k_smlad(ae, aot_k_sxtb16(wv), acc2);
      acc2 = aot_k_smlad(ao, aot_k_sxtb16_odd(wv), acc2);
      wv = aot_k_load32(w3);
      w3 += 4;
      acc3 = aot_k_smlad(ae, aot_k_sxtb16(wv), acc3);
      acc3 = aot_k_smlad(ao, aot_k_sxtb16_odd(wv), acc3);
    }
    for (int32_t j = k4 * 4; j < k; ++j) {
      const int32_t x = *pa++;
      acc0 += x * *w0++;
      acc1 += x * *w1++;
      acc2 += x * *w2++;
      acc3 += x * *w3++;
    }
    out[c] = out_q(q, acc0, c);
    out[c + 1] = out_q(q, acc1, c + 1);
    out[c + 2] = out_q(q, acc2, c + 2);
    out[c + 3] = out_q(q, acc3, c + 3);
  }
  for (; c < out_c; ++c) {
    const int8_t* w0 = w + c * k;
    const int8_t* pa = a;
    int32_t acc = q->bias[c];
    for (int32_t j = 0; j < k4; ++j) {
      const int32_t av = aot_k_load32(pa), wv = aot_k_load32(w0);
      pa += 4;
      w0 += 4;
      acc = aot_k_smlad(aot_k_sxtb16(av), aot_k_sxtb16(wv), acc);
      acc = aot_k_smlad(aot_k_sxtb16_odd(av), aot_k_sxtb16_odd(wv), acc);
    }
    for (int32_t j = k4 * 4; j < k; ++j) acc += *pa++ * *w0++;
    out[c] = out_q(q, acc, c);
  }
}

/* Two int8 rows times every weight row, two channels at a time. */
static void row2_s8(const int8_t* a0, const int8_t* a1, int32_t k, const int8_t* w,
                    int32_t out_c, const struct aot_k_out_q* q, int8_t* out0, int8_t* out1) {
  const int32_t k4 = k >> 2;
  int32_t c = 0;
  for (; c + 2 <= out_c; c += 2) {
    /* Second row and channel at fixed offsets; the loop ends on a pointer. */
    const int8_t* w0 = w + c * k;
    const int8_t* p0 = a0;
    const int8_t* const end = a0 + 4 * k4;
    const int32_t rows = (int32_t)(a1 - a0);
    int32_t acc00 = q->bias[c], acc10 = acc00; /* acc<pixel><channel> */
    int32_t acc01 = q->bias[c + 1], acc11 = acc01;
    while (p0 != end) {
      int32_t v = aot_k_load32(p0);
      const int32_t x0e = aot_k_sxtb16(v), x0o = aot_k_sxtb16_odd(v);
      v = aot_k_load32(p0 + rows);
      p0 += 4;
      const int32_t x1e = aot_k_sxtb16(v), x1o = aot_k_sxtb16_odd(v);
      v = aot_k_load32(w0);
      int32_t we = aot_k_sxtb16(v), wo = aot_k_sxtb16_odd(v);
      acc00 = aot_k_smlad(x0e, we, acc00);
      acc00 = aot_k_smlad(x0o, wo, acc00);
      acc10 = aot_k_smlad(x1e, we, acc10);
      acc10 = aot_k_smlad(x1o, wo, acc10);
      v = aot_k_load32(w0 + k);
      w0 += 4;
      we = aot_k_sxtb16(v);
      wo = aot_k_sxtb16_odd(v);
      acc01 = aot_k_smlad(x0e, we, acc01);
      acc01 = aot_k_smlad(x0o, wo, acc01);
      acc11 = aot_k_smlad(x1e, we, acc11);
      acc11 = aot_k_smlad(x1o, wo, acc11);
    }
    const int8_t* w1 = w0 + k;
    const int8_t* p1 = p0 + rows;
    for (int32_t j = k4 * 4; j < k; ++j) {
      const int32_t x0 = *p0++, x1 = *p1++, u0 = *w0++, u1 = *w1++;
      acc00 += x0 * u0;
      acc10 += x1 * u0;
      acc01 += x0 * u1;
      acc11 += x1 * u1;
    }
    out0[c] = out_q(q, acc00, c);
    out1[c] = out_q(q, acc10, c);
    out0[c + 1] = out_q(q, acc01, c + 1);
    out1[c + 1] = out_q(q, acc11, c + 1);
  }
  if (c < out_c) {
    const int8_t* w0 = w + c * k;
    const int8_t* p0 = a0;
    const int8_t* p1 = a1;
    int32_t acc0 = q->bias[c], acc1 = acc0;
    for (int32_t j = 0; j < k4; ++j) {
      const int32_t v0 = aot_k_load32(p0), v1 = aot_k_load32(p1), v = aot_k_load32(w0);
      p0 += 4;
      p1 += 4;
      w0 += 4;
      const int32_t we = aot_k_sxtb16(v), wo = aot_k_sxtb16_odd(v);
      acc0 = aot_k_smlad(aot_k_sxtb16(v0), we, acc0);
      acc0 = aot_k_smlad(aot_k_sxtb16_odd(v0), wo, acc0);
      acc1 = aot_k_smlad(aot_k_sxtb16(v1), we, acc1);
      acc1 = aot_k_smlad(aot_k_sxtb16_odd(v1), wo, acc1);
    }
    for (int32_t j = k4 * 4; j < k; ++j) {
      const int32_t u = *w0++;
      acc0 += *p0++ * u;
      acc1 += *p1++ * u;
    }
    out0[c] = out_q(q, acc0, c);
    out1[c] = out_q(q, acc1, c);
  }
}

/* Rows of int16 im2col (groups of four stored x0 x2 x1 x3) times the weight rows:
 * n = 1 or 2 rows, two channels at a time for two rows. */
static void rows_q15(int32_t n, const int16_t* b0, const int16_t* b1, int32_t k,
                     const int8_t* w, int32_t out_c, const struct aot_k_out_q* q,
                     int8_t* out0, int8_t* out1) {
  const int32_t k4 = k >> 2;
  int32_t c = 0;
  if (n == 2) {
    for (; c + 2 <= out_c; c += 2) {
      /* Few live registers (the M4 has 14): the second row and channel are at fixed
       * offsets from the first, and the loop ends on a pointer, not a counter. */
      const int8_t* w0 = w + c * k;
      const int16_t* p0 = b0;
      const int16_t* const end = b0 + 4 * k4;
      const int32_t rows = (int32_t)(b1 - b0);
      int32_t acc00 = q->bias[c], acc10 = acc00;
      int32_t acc01 = q->bias[c + 1], acc11 = acc01;
      while (p0 != end) {
        const int32_t x0a = aot_k_load32(p0), x0b = aot_k_load32(p0 + 2);
        const int32_t x1a = aot_k_load32(p0 + rows), x1b = aot_k_load32(p0 + rows + 2);
        p0 += 4;
        int32_t v = aot_k_load32(w0);
        int32_t we = aot_k_sxtb16(v), wo = aot_k_sxtb16_odd(v);
        acc00 = aot_k_smlad(x0a, we, acc00);
        acc00 = aot_k_smlad(x0b, wo, acc00);
        acc10 = aot_k_smlad(x1a, we, acc10);
        acc10 = aot_k_smlad(x1b, wo, acc10);
        v = aot_k_load32(w0 + k);
        w0 += 4;
        we = aot_k_sxtb16(v);
        wo = aot_k_sxtb16_odd(v);
        acc01 = aot_k_smlad(x0a, we, acc01);
        acc01 = aot_k_smlad(x0b, wo, acc01);
        acc11 = aot_k_smlad(x1a, we, acc11);
        acc11 = aot_k_smlad(x1b, wo, acc11);
      }
      const int8_t* w1 = w0 + k;
      const int16_t* p1 = p0 + rows;
      for (int32_t j = k4 * 4; j < k; ++j) {
        const int32_t x0 = *p0++, x1 = *p1++, u0 = *w0++, u1 = *w1++;
        acc00 += x0 * u0;
        acc10 += x1 * u0;
        acc01 += x0 * u1;
        acc11 += x1 * u1;
      }
      out0[c] = out_q(q, acc00, c);
      out1[c] = out_q(q, acc10, c);
      out0[c + 1] = out_q(q, acc01, c + 1);
      out1[c + 1] = out_q(q, acc11, c + 1);
    }
  }
  for (int32_t r = 0; r < n; ++r) {
    const int16_t* b = r ? b1 : b0;
    int8_t* out = r ? out1 : out0;
    for (int32_t cc = c; cc < out_c; ++cc) {
      const int8_t* w0 = w + cc * k;
      const int16_t* p = b;
      int32_t acc = q->bias[cc];
      for (int32_t j = 0; j < k4; ++j) {
        const int32_t v = aot_k_load32(w0);
        w0 += 4;
        acc = aot_k_smlad(aot_k_load32(p), aot_k_sxtb16(v), acc);
        acc = aot_k_smlad(aot_k_load32(p + 2), aot_k_sxtb16_odd(v), acc);
        p += 4;
      }
      for (int32_t j = k4 * 4; j < k; ++j) acc += *p++ * *w0++;
      out[cc] = out_q(q, acc, cc);
    }
  }
}

/* One output pixel's receptive field as int16 (input + offset, 0 for padded taps). */
static void im2col_q15(const struct aot_k_conv_params* p, const int8_t* input, int32_t b,
                       int32_t oy, int32_t ox, int16_t* dst) {
  const int32_t in_c = p->in_c, k = p->k_h * p->k_w * in_c, k4 = (k >> 2) << 2;
  const int32_t off = p->input_offset;
  const int32_t off2 = (int32_t)(((uint32_t)(uint16_t)off) | ((uint32_t)(uint16_t)off << 16));
  const int32_t quads = (in_c & 3) == 0;
  int32_t i = 0;
  for (int32_t ky = 0; ky < p->k_h; ++ky) {
    const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
    for (int32_t kx = 0; kx < p->k_w; ++kx) {
      const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
      const int32_t inside = iy >= 0 && iy < p->in_h && ix >= 0 && ix < p->in_w;
      const int8_t* src = inside ? input + ((b * p->in_h + iy) * p->in_w + ix) * in_c : input;
      if (quads) {
        if (inside) {
          for (int32_t g = 0; g < in_c; g += 4) {
            const int32_t v = aot_k_load32(src + g);
            aot_k_store32(dst + i, aot_k_sadd16(aot_k_sxtb16(v), off2));
            aot_k_store32(dst + i + 2, aot_k_sadd16(aot_k_sxtb16_odd(v), off2));
            i += 4;
          }
        } else {
          memset(dst + i, 0, (size_t)in_c * sizeof(int16_t));
          i += in_c;
        }
        continue;
      }
      for (int32_t c = 0; c < in_c; ++c, ++i) {
        /* Within each full group of four: x0 x2 x1 x3, the order SXTB16 pairs weights. */
        const int32_t at = i < k4 ? (i & ~3) | ((i & 1) << 1) | ((i >> 1) & 1) : i;
        dst[at] = (int16_t)(inside ? src[c] + off : 0);
      }
    }
  }
}

void aot_k_conv_s8_dsp(const struct aot_k_conv_params* p, const int8_t* input,
                       const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                       const int32_t* shift, int8_t* output, int8_t* scratch) {
  const struct aot_k_out_q q = {bias,        multiplier, shift,      p->output_offset,
                                p->act_min,  p->act_max, p->rounding};
  const int32_t out_c = p->out_c, k = p->k_h * p->k_w * p->in_c;
  const int32_t direct = p->k_h == 1 && p->k_w == 1 && p->pad_top == 0 && p->pad_left == 0 &&
                         p->input_offset == 0;
  int16_t* cols = (int16_t*)(void*)scratch;
  const int8_t* pending = 0;
  int8_t* pending_out = 0;
  int32_t filled = 0;
  int8_t* out = output;
  for (int32_t b = 0; b < p->batches; ++b) {
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
      for (int32_t ox = 0; ox < p->out_w; ++ox, out += out_c) {
        if (direct) {
          const int8_t* row =
              input + ((b * p->in_h + oy * p->stride_h) * p->in_w + ox * p->stride_w) * k;
          if (pending) {
            row2_s8(pending, row, k, weights, out_c, &q, pending_out, out);
            pending = 0;
          } else {
            pending = row;
            pending_out = out;
          }
          continue;
        }
        im2col_q15(p, input, b, oy, ox, cols + filled * k);
        if (filled) {
          rows_q15(2, cols, cols + k, k, weights, out_c, &q, pending_out, out);
          filled = 0;
        } else {
          filled = 1;
          pending_out = out;
        }
      }
    }
  }
  if (pending) row1_s8(pending, k, weights, out_c, &q, pending_out);
  if (filled) rows_q15(1, cols, cols, k, weights, out_c, &q, pending_out, pending_out);
}

void aot_k_fc_s8_dsp(const struct aot_k_fc_params* p, const int8_t* input,
                     const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                     const int32_t* shift, int8_t* output, int8_t* scratch) {
  (void)scratch;
  const struct aot_k_out_q q = {bias,        multiplier, shift,      p->output_offset,
                                p->act_min,  p->act_max, p->rounding};
  const int32_t k = p->depth, out_c = p->out_c;
  int32_t b = 0;
  for (; b + 2 <= p->batches; b += 2) {
    row2_s8(input + b * k, input + (b + 1) * k, k, weights, out_c, &q, output + b * out_c,
            output + (b + 1) * out_c);
  }
  if (b < p->batches) row1_s8(input + b * k, k, weights, out_c, &q, output + b * out_c);
}
