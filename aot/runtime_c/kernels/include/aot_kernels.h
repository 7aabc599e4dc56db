/* aot's hand-written int8 kernels: the params structs and every kernel's prototype.
 *
 * A kernel is called as f(&params, input, [other operands and build-time constants],
 * output, scratch_or_NULL). The params are a static const struct the emitter writes.
 * Requantization is per output channel through multiplier[] and shift[] (TFLite's
 * convention: positive shift = left); rounding 0 is TFLite's double rounding (gemmlowp),
 * 1 its single rounding (TFLITE_SINGLE_ROUNDING). See docs/kernels.md. */
#ifndef AOT_KERNELS_H
#define AOT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* conv2d and depthwise conv2d, NHWC. input_offset is -input_zp, or 0 when the kernel's
 * bias has the zero-point term folded in; output_offset is the output zero point. */
struct aot_k_conv_params {
  int32_t batches, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h, stride_w, dil_h,
      dil_w, pad_top, pad_left, depth_multiplier, input_offset, output_offset, act_min,
      act_max, rounding;
  /* the raw input value a padded tap reads when the bias has the zero point folded out
   * (the input zero point); kernels that add input_offset per tap ignore it */
  int32_t pad_value;
  /* AOT_K_RQ_GENERAL or AOT_K_RQ_HIGH (aot_kernels_requant.h): the form of every record of a
   * kernel that takes struct aot_k_rq records (0 for kernels that take arrays) */
  int32_t requant_form;
};

/* fully connected: output[b][o] = requant(bias[o] + sum_k (in[b][k] + input_offset) * w[o][k]). */
struct aot_k_fc_params {
  int32_t batches, depth, out_c, input_offset, output_offset, act_min, act_max, rounding;
  int32_t requant_form; /* as in aot_k_conv_params */
};

/* -- dsp: Armv7E-M / Armv8-M DSP extension (Cortex-M4, M7, M33) ------------------------ */
/* weights: the kernel's layout (aot/kernels/dsp.py, docs/kernels.md). conv and fc take
 * one struct aot_k_rq per output channel (records, in the params' requant_form); in the
 * 1x1-without-padding and fc paths the bias has the input zero point folded in and
 * input_offset is 0; in the im2col path the bias is the model's and input_offset is
 * -input_zp (scratch: 4 * k_h * k_w * in_c bytes). dwconv: the bias has the offset folded
 * in and input_offset (-input_zp) is taken back for padded taps; no scratch. */
void aot_k_conv_s8_dsp(const struct aot_k_conv_params* p, const int8_t* input,
                       const int8_t* weights, const int32_t* records, int8_t* output, int8_t* scratch);
void aot_k_dwconv_s8_dsp(const struct aot_k_conv_params* p, const int8_t* input,
                         const int8_t* weights, const int32_t* bias, const int32_t* multiplier,
                         const int32_t* shift, int8_t* output, int8_t* scratch);
void aot_k_fc_s8_dsp(const struct aot_k_fc_params* p, const int8_t* input,
                     const int8_t* weights, const int32_t* records, int8_t* output, int8_t* scratch);
/* fc_wide: batches 1, the weights widened to int16 in channel quads (aot/kernels/dsp.py
 * wide_channel_quads), records as fc's; no scratch. */
void aot_k_fc_wide_s8_dsp(const struct aot_k_fc_params* p, const int8_t* input,
                          const int16_t* weights, const int32_t* records, int8_t* output,
                          int8_t* scratch);
/* dwconv3x3: 3x3, depth multiplier 1, in_c % 4 == 0; dwconv's weights, and records: one
 * struct aot_k_rq per channel (aot_kernels_requant.h; the bias with the input zero point
 * folded in), of the form p->requant_form; scratch: in_c bytes when some pixel has a
 * padded tap, else NULL. */
void aot_k_dwconv3x3_s8_dsp(const struct aot_k_conv_params* p, const int8_t* input,
                            const int8_t* weights, const int32_t* records, int8_t* output,
                            int8_t* scratch);

/* transpose_conv: TRANSPOSE_CONV, in_c % 4 == 0, kernel >= stride; weights per output
 * phase in channel pairs (aot/kernels/dsp.py phase_weights), records as conv's (the
 * model's bias; input_offset -input_zp); scratch: 2 * AOT_K_PIXELS * K bytes, K the
 * largest phase's taps * in_c. The scalar build has the same signature. */
void aot_k_transpose_conv_s8_dsp(const struct aot_k_conv_params* p, const int8_t* input,
                                 const int8_t* weights, const int32_t* records, int8_t* output,
                                 int8_t* scratch);
void aot_k_transpose_conv_s8_scalar(const struct aot_k_conv_params* p, const int8_t* input,
                                    const int8_t* weights, const int32_t* records,
                                    int8_t* output, int8_t* scratch);

/* -- scalar: plain C (any core) --------------------------------------------------------- */
void aot_k_conv_s8_scalar(const struct aot_k_conv_params* p, const int8_t* input,
                          const int8_t* weights, const int32_t* records, int8_t* output, int8_t* scratch);
void aot_k_dwconv_s8_scalar(const struct aot_k_conv_params* p, const int8_t* input,
                            const int8_t* weights, const int32_t* bias,
                            const int32_t* multiplier, const int32_t* shift, int8_t* output,
                            int8_t* scratch);
void aot_k_fc_s8_scalar(const struct aot_k_fc_params* p, const int8_t* input,
                        const int8_t* weights, const int32_t* records, int8_t* output, int8_t* scratch);
void aot_k_fc_wide_s8_scalar(const struct aot_k_fc_params* p, const int8_t* input,
                             const int16_t* weights, const int32_t* records, int8_t* output,
                             int8_t* scratch);
void aot_k_dwconv3x3_s8_scalar(const struct aot_k_conv_params* p, const int8_t* input,
                               const int8_t* weights, const int32_t* records, int8_t* output,
                               int8_t* scratch);

/* conv_lanes, fc_lanes: two output channels per multiply (conv_lanes_scalar.c); weights
 * one int32 word per channel pair and depth, w0 + w1 * 2^24, the depth padded to four
 * (aot/kernels/scalar.py lane_pairs); records: struct aot_k_rq per channel (the bias with
 * the input zero point folded in), an even count; input_offset 0, padded taps read
 * pad_value. conv's scratch: 4 * K bytes, K rounded up to four; fc's none. */
void aot_k_conv_lanes_s8_scalar(const struct aot_k_conv_params* p, const int8_t* input,
                                const int32_t* weights, const int32_t* records,
                                int8_t* output, int8_t* scratch);
void aot_k_fc_lanes_s8_scalar(const struct aot_k_fc_params* p, const int8_t* input,
                              const int32_t* weights, const int32_t* records, int8_t* output,
                              int8_t* scratch);

/* dwconv_lanes: depth multiplier 1, two neighbouring outputs of a channel per multiply;
 * the model's [1][k_h][k_w][C] weights, records as conv_lanes's (one per channel);
 * scratch: one padded channel plane (aot/kernels/scalar.py dw_lanes_scratch). */
void aot_k_dwconv_lanes_s8_scalar(const struct aot_k_conv_params* p, const int8_t* input,
                                  const int8_t* weights, const int32_t* records,
                                  int8_t* output, int8_t* scratch);

/* -- mve: Helium / MVE (Cortex-M55) ----------------------------------------------------- */
/* conv and fc take the OHWI / [out_c][depth] weights blocked per four output channels and
 * per block a record of int32 [bias][4] (the input zero point folded in), [multiplier][4],
 * [shift][4] (input_offset 0; conv's padded taps read pad_value); dwconv its blocked
 * re-layout widened to int16 and per 8-channel block a record of folded bias, edge bias
 * (the unfolded one its border pixels use with input_offset), multiplier and shift
 * (aot/kernels/mve.py, docs/kernels.md "Helium"). */
void aot_k_conv_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                       const int8_t* weights, const int32_t* records, int8_t* output,
                       int8_t* scratch);
/* conv_rows: k_h <= 3, k_w * in_c <= 16, dil_w 1; conv's weights with each kernel row
 * zero-padded to 16 bytes (aot/kernels/mve.py); no scratch (border rows load clipped). */
void aot_k_conv_rows_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                            const int8_t* weights, const int32_t* records, int8_t* output,
                            int8_t* scratch);
void aot_k_dwconv_s8_mve(const struct aot_k_conv_params* p, const int8_t* input,
                         const int16_t* weights, const int32_t* records, int8_t* output,
                         int8_t* scratch);
void aot_k_fc_s8_mve(const struct aot_k_fc_params* p, const int8_t* input,
                     const int8_t* weights, const int32_t* records, int8_t* output,
                     int8_t* scratch);

/* add: TFLite's AddFunc on inputs of one shape (size elements); the shifts are TFLite's
 * (<= 0 for the inputs' and output's rescaling), offsets are minus the zero points. */
struct aot_k_add_params {
  int32_t size, lhs_offset, rhs_offset, left_shift, lhs_multiplier, lhs_shift, rhs_multiplier,
      rhs_shift, output_multiplier, output_shift, output_offset, act_min, act_max, rounding;
  /* the rhs's element count: it repeats over the lhs with this period (a broadcast
   * per-channel or scalar operand; size for equal shapes); the Helium kernel ignores it */
  int32_t rhs_size;
};
/* lhs_table/rhs_table: each input's rescaled value per int8 value, 256 int32 indexed by
 * the byte read as unsigned (aot/kernels/mve.py) */
void aot_k_add_s8_mve(const struct aot_k_add_params* p, const int8_t* lhs, const int8_t* rhs,
                      const int32_t* lhs_table, const int32_t* rhs_table, int8_t* output,
                      int8_t* scratch);

/* average pool: TFLite's AveragePool (in-image taps summed, the sum divided by their count
 * rounding halves away from zero, the clamp); windows of at most 256 taps, no dilation. */
struct aot_k_pool_params {
  int32_t batches, in_h, in_w, channels, out_h, out_w, filter_h, filter_w, stride_h, stride_w,
      pad_top, pad_left, act_min, act_max;
};
void aot_k_avgpool_s8_mve(const struct aot_k_pool_params* p, const int8_t* input,
                          int8_t* output, int8_t* scratch);

/* -- conv2d over few input channels, dsp and scalar ------------------------------------- */
/* weights: int16 pairs per kernel row (rows of odd length padded with a zero), in channel
 * pairs (aot/kernels/dsp.py); records: struct aot_k_rq per output channel (its bias the
 * model's, the high form only: right shifts; the params' input_offset is -input_zp).
 * Scratch: 8 * k_h * ceil(k_w * in_c / 2) bytes. */
void aot_k_conv_shallow_s8_dsp(const struct aot_k_conv_params* p, const int8_t* input,
                               const int8_t* weights, const int32_t* records, int8_t* output,
                               int8_t* scratch);
void aot_k_conv_shallow_s8_scalar(const struct aot_k_conv_params* p, const int8_t* input,
                                  const int8_t* weights, const int32_t* records,
                                  int8_t* output, int8_t* scratch);

/* -- add, dsp and scalar ------------------------------------------------------------------ */
/* lhs_table, rhs_table: 256 int32 each, twice each input's rescaled value for the int8
 * values -128 .. 127 (aot/kernels/dsp.py); the output shift is <= 0. No scratch. */
void aot_k_add_s8_dsp(const struct aot_k_add_params* p, const int8_t* lhs, const int8_t* rhs,
                      const int32_t* lhs_table, const int32_t* rhs_table, int8_t* output,
                      int8_t* scratch);
void aot_k_add_s8_scalar(const struct aot_k_add_params* p, const int8_t* lhs,
                         const int8_t* rhs, const int32_t* lhs_table,
                         const int32_t* rhs_table, int8_t* output, int8_t* scratch);

#ifdef __cplusplus
}
#endif

#endif /* AOT_KERNELS_H */
