/*
 * The example NPU: a device model that runs int8 command streams, and its driver API.
 *
 * A command stream is a list of descriptors, one per operator (CONV_2D,
 * DEPTHWISE_CONV_2D, FULLY_CONNECTED), each with its operand addresses, shapes and
 * requantization. The backend (aot/backends/example_npu/) writes the descriptors as
 * const templates at build time; at run time the CPU fills in the activation
 * addresses and kicks the device with aot_npu_submit(). The device reads and writes
 * only its own memory region: it checks every operand against that region before it
 * touches any byte and fails with AOT_ERR_NPU_ADDRESS_OUT_OF_REGION, so a memory plan
 * that put an NPU buffer in CPU-only memory fails at run time instead of working by
 * accident.
 *
 * Arithmetic is TFLite's reference integer kernels bit for bit (docs/int8.md):
 * ConvPerChannel, DepthwiseConvPerChannel and FullyConnected, with the rounding of
 * MultiplyByQuantizedMultiplier chosen per descriptor.
 *
 * The layout is versioned: a stream carries AOT_NPU_STREAM_MAGIC and
 * AOT_NPU_STREAM_VERSION, and each descriptor its kind and its size in bytes, so a
 * stream generated for another layout is refused (AOT_ERR_NPU_BAD_STREAM), never
 * misread.
 */
#ifndef AOT_EXAMPLE_NPU_H_
#define AOT_EXAMPLE_NPU_H_

#include <stddef.h>
#include <stdint.h>

#include "aot/error.h"
#include "aot/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AOT_NPU_STREAM_MAGIC 0x3155504Eu /* "NPU1" in little-endian bytes */
#define AOT_NPU_STREAM_VERSION 1u

typedef enum {
  AOT_NPU_OP_CONV2D = 1,
  AOT_NPU_OP_DEPTHWISE_CONV2D = 2,
  AOT_NPU_OP_FULLY_CONNECTED = 3,
} aot_npu_op_t;

/* TFLite's two builds of MultiplyByQuantizedMultiplier (docs/int8.md, "Rounding"). */
typedef enum {
  AOT_NPU_ROUNDING_DOUBLE = 0, /* gemmlowp SRDHM then RoundingDivideByPOT */
  AOT_NPU_ROUNDING_SINGLE = 1, /* one 64-bit multiply and one rounding shift */
} aot_npu_rounding_t;

/* First member of every descriptor. */
struct aot_npu_desc_header {
  uint16_t op;   /* aot_npu_op_t */
  uint16_t size; /* sizeof the whole descriptor */
};

/* How a descriptor holds its per-channel requantization: the three forms the int8
 * importer emits (docs/int8.md), so the model's own constants are used as they are. */
typedef enum {
  AOT_NPU_REQUANT_PER_TENSOR = 0,  /* multiplier0 and shift0 for every channel */
  AOT_NPU_REQUANT_PER_CHANNEL = 1, /* multiplier[c] and shift[c] */
  AOT_NPU_REQUANT_PACKED = 2,      /* multiplier[c] packs both; shift0 is the base shift */
} aot_npu_requant_mode_t;

/* Packed form: bits 0-29 are the multiplier's low bits (bit 30 is implied, the
 * multiplier being in [2^30, 2^31)), bits 30-31 the shift minus shift0. */
#define AOT_NPU_PACKED_MULTIPLIER_MASK 0x3FFFFFFFu

/* Requantization of the int32 accumulator to int8. */
struct aot_npu_requant {
  uint32_t mode;             /* aot_npu_requant_mode_t */
  const int32_t* multiplier; /* [out_c] (per channel, packed), else NULL */
  const int8_t* shift;       /* [out_c] (per channel), else NULL */
  int32_t multiplier0;       /* per tensor: Q31 in [2^30, 2^31) or 0 */
  int32_t shift0;            /* per tensor: left-shift exponent (negative: right); packed: base */
  int32_t output_offset;     /* output zero point */
  int32_t act_min;           /* fused activation clamp, within [-128, 127] */
  int32_t act_max;
  uint32_t rounding; /* aot_npu_rounding_t */
};

/* CONV_2D (op AOT_NPU_OP_CONV2D) and DEPTHWISE_CONV_2D (AOT_NPU_OP_DEPTHWISE_CONV2D). */
struct aot_npu_conv2d {
  struct aot_npu_desc_header header;
  const int8_t* input;   /* NHWC [batches, in_h, in_w, in_c] */
  const int8_t* weights; /* conv OHWI [out_c, k_h, k_w, in_c]; depthwise [1, k_h, k_w, out_c] */
  const int32_t* bias;   /* [out_c], or NULL */
  int8_t* output;        /* NHWC [batches, out_h, out_w, out_c] */
  uint32_t batches, in_h, in_w, in_c;
  uint32_t out_h, out_w, out_c;
  uint32_t k_h, k_w;
  uint32_t stride_h, stride_w;
  uint32_t dilation_h, dilation_w;
  uint32_t pad_top, pad_left;
  uint32_t depth_multiplier; /* depthwise: out_c = in_c * depth_multiplier; conv: 1 */
  /* Each tap adds (x + input_offset) * w, where x is pad_value for a tap outside the
   * image. TFLite's form: input_offset = -zero point, pad_value = zero point (padding
   * adds 0). With the zero point folded into the bias (-zp * sum(w) per channel):
   * input_offset = 0, pad_value = zero point. */
  int32_t input_offset;
  int32_t pad_value; /* an int8 */
  struct aot_npu_requant requant;
};

/* FULLY_CONNECTED: output[b, o] = requant(sum_k (in[b, k] + input_offset) *
 * (w[o, k] + weight_offset) + bias[o]). */
struct aot_npu_fully_connected {
  struct aot_npu_desc_header header;
  const int8_t* input;   /* [batches, depth] */
  const int8_t* weights; /* [out_c, depth] */
  const int32_t* bias;   /* [out_c], or NULL */
  int8_t* output;        /* [batches, out_c] */
  uint32_t batches, depth, out_c;
  int32_t input_offset;  /* minus the input zero point */
  int32_t weight_offset; /* minus the weights' zero point */
  struct aot_npu_requant requant;
};

struct aot_npu_stream {
  uint32_t magic;   /* AOT_NPU_STREAM_MAGIC */
  uint32_t version; /* AOT_NPU_STREAM_VERSION */
  uint32_t count;
  const struct aot_npu_desc_header* const* descriptors; /* count entries */
};

/* Sets the memory region the device can reach. Firmware need not call it: the project
 * defines AOT_ACCEL_EXAMPLE_NPU_MEMORY0_BASE and _SIZE from the board's accelerator
 * entry (aot.boards.Board.c_defines). A size of 0 leaves the device unconfigured. */
void aot_npu_configure(uintptr_t region_base, size_t region_size);

/* Runs a stream to completion. AOT_OK, or the first failing descriptor's error:
 * AOT_ERR_NPU_NOT_CONFIGURED, AOT_ERR_NPU_BAD_STREAM, AOT_ERR_NPU_BAD_DESCRIPTOR or
 * AOT_ERR_NPU_ADDRESS_OUT_OF_REGION. A descriptor that fails a check writes nothing. */
aot_error_t aot_npu_submit(const struct aot_npu_stream* stream);

/* Index of the descriptor the last failing submit stopped at (for diagnostics). */
uint32_t aot_npu_failed_descriptor(void);

/* Where the last failing submit stopped, into the model's fault record (all but its
 * `step`): the descriptor, the operand whose address failed the region check (NONE for
 * other failures) and that address, and the device's region. */
void aot_npu_fault(struct aot_fault* fault);

#ifdef __cplusplus
}
#endif

#endif /* AOT_EXAMPLE_NPU_H_ */
