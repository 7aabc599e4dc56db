/*
 * The example NPU: a device model compiled into the firmware, and its driver.
 *
 * The driver half (aot_npu_submit) only hands the stream to the device; the device half
 * validates each descriptor completely (kind, size, parameters, every operand inside
 * its region) before it computes, then runs TFLite's reference integer kernels. Checks
 * are plain ifs on data (runtime_c/README.md, tier 3): a bad stream is an error code,
 * never an abort.
 *
 * Signed right shifts of negative values are arithmetic, as on every compiler aot
 * targets (gcc, clang, arm-none-eabi-gcc); the int32 accumulator wraps modulo 2^32 like
 * TFLite's in practice, computed without signed overflow.
 */
#include "example_npu.h"

/* The region comes from board data (aot.boards.Board.c_defines: the first memory the
 * board's `accelerators: [{name: example_npu, ...}]` entry reaches). Without it the
 * device is unconfigured until aot_npu_configure(). */
#if defined(AOT_ACCEL_EXAMPLE_NPU_MEMORY0_BASE) && defined(AOT_ACCEL_EXAMPLE_NPU_MEMORY0_SIZE)
#define AOT_EXAMPLE_NPU_REGION_BASE AOT_ACCEL_EXAMPLE_NPU_MEMORY0_BASE
#define AOT_EXAMPLE_NPU_REGION_SIZE AOT_ACCEL_EXAMPLE_NPU_MEMORY0_SIZE
#else
#define AOT_EXAMPLE_NPU_REGION_BASE 0u
#define AOT_EXAMPLE_NPU_REGION_SIZE 0u
#endif

/* The device's state: what a register block would hold on real hardware. */
static struct {
  uintptr_t region_base;
  size_t region_size;
  uint32_t failed_descriptor;
  uint32_t failed_operand; /* aot_fault_operand_t of the address that failed a check */
  uintptr_t failed_address;
} npu = {(uintptr_t)AOT_EXAMPLE_NPU_REGION_BASE, (size_t)AOT_EXAMPLE_NPU_REGION_SIZE, 0u, 0u, 0u};

void aot_npu_configure(uintptr_t region_base, size_t region_size) {
  npu.region_base = region_base;
  npu.region_size = region_size;
}

uint32_t aot_npu_failed_descriptor(void) { return npu.failed_descriptor; }

void aot_npu_fault(struct aot_fault* fault) {
  fault->descriptor = npu.failed_descriptor;
  fault->operand = npu.failed_operand;
  fault->address = (uint64_t)npu.failed_address;
  fault->region_base = (uint64_t)npu.region_base;
  fault->region_size = (uint64_t)npu.region_size;
}

/* -- fixed-point arithmetic (TFLite reference, docs/int8.md) ------------------------ */

static int32_t wrap32(int64_t value) { return (int32_t)(uint32_t)(uint64_t)value; }

/* gemmlowp SaturatingRoundingDoublingHighMul. */
static int32_t srdhm(int32_t a, int32_t b) {
  if (a == INT32_MIN && b == INT32_MIN) {
    return INT32_MAX;
  }
  int64_t ab = (int64_t)a * (int64_t)b;
  int64_t nudge = ab >= 0 ? (1ll << 30) : (1 - (1ll << 30));
  return (int32_t)((ab + nudge) / (1ll << 31)); /* C division truncates, as gemmlowp's */
}

/* gemmlowp RoundingDivideByPOT: halves away from zero. */
static int32_t rounding_divide_by_pot(int32_t x, int exponent) {
  int32_t mask = (int32_t)((1ll << exponent) - 1);
  int32_t remainder = x & mask;
  int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

static int32_t multiply_by_quantized_multiplier(int32_t x, int32_t multiplier, int shift,
                                                uint32_t rounding) {
  if (rounding == AOT_NPU_ROUNDING_SINGLE) {
    int total = 31 - shift; /* shift <= 30 was checked, so total >= 1 */
    int64_t wide = (int64_t)x * (int64_t)multiplier + (1ll << (total - 1));
    return (int32_t)(wide >> total);
  }
  int left = shift > 0 ? shift : 0;
  int right = shift > 0 ? 0 : -shift;
  return rounding_divide_by_pot(srdhm(wrap32((int64_t)x * (1ll << left)), multiplier), right);
}

static void channel_requant(const struct aot_npu_requant* rq, uint32_t channel,
                            int32_t* multiplier, int* shift) {
  if (rq->mode == AOT_NPU_REQUANT_PER_CHANNEL) {
    *multiplier = rq->multiplier[channel];
    *shift = rq->shift[channel];
  } else if (rq->mode == AOT_NPU_REQUANT_PACKED) {
    uint32_t word = (uint32_t)rq->multiplier[channel];
    *multiplier = (int32_t)((word & AOT_NPU_PACKED_MULTIPLIER_MASK) | (1u << 30));
    *shift = (int)(word >> 30) + rq->shift0;
  } else {
    *multiplier = rq->multiplier0;
    *shift = rq->shift0;
  }
}

static int8_t requantize(int64_t acc, const struct aot_npu_requant* rq, uint32_t channel) {
  int32_t multiplier;
  int shift;
  channel_requant(rq, channel, &multiplier, &shift);
  int32_t scaled = multiply_by_quantized_multiplier(wrap32(acc), multiplier, shift, rq->rounding);
  int64_t value = (int64_t)scaled + rq->output_offset;
  if (value < rq->act_min) {
    value = rq->act_min;
  }
  if (value > rq->act_max) {
    value = rq->act_max;
  }
  return (int8_t)value;
}

/* -- checks ------------------------------------------------------------------------- */

/* Whether [address, address + bytes) lies inside the region (and is aligned). */
static int in_region(const void* address, uint64_t bytes, uintptr_t alignment) {
  uintptr_t start = (uintptr_t)address;
  if (address == NULL || start % alignment != 0 || start < npu.region_base) {
    return 0;
  }
  uint64_t offset = (uint64_t)(start - npu.region_base);
  return offset <= npu.region_size && bytes <= npu.region_size - offset;
}

/* in_region, remembering which operand failed for aot_npu_fault(). */
static int reaches(const void* address, uint64_t bytes, uintptr_t alignment, uint32_t operand) {
  if (in_region(address, bytes, alignment)) {
    return 1;
  }
  npu.failed_operand = operand;
  npu.failed_address = (uintptr_t)address;
  return 0;
}

static aot_error_t check_requant(const struct aot_npu_requant* rq, uint32_t channels) {
  if (rq->rounding != AOT_NPU_ROUNDING_DOUBLE && rq->rounding != AOT_NPU_ROUNDING_SINGLE) {
    return AOT_ERR_NPU_BAD_DESCRIPTOR;
  }
  if (rq->act_min < -128 || rq->act_max > 127 || rq->act_min > rq->act_max) {
    return AOT_ERR_NPU_BAD_DESCRIPTOR;
  }
  if (rq->output_offset < -128 || rq->output_offset > 127) {
    return AOT_ERR_NPU_BAD_DESCRIPTOR;
  }
  if (rq->mode == AOT_NPU_REQUANT_PER_CHANNEL) {
    if (!reaches(rq->multiplier, 4ull * channels, 4, AOT_FAULT_OPERAND_MULTIPLIER) ||
        !reaches(rq->shift, channels, 1, AOT_FAULT_OPERAND_SHIFT)) {
      return AOT_ERR_NPU_ADDRESS_OUT_OF_REGION;
    }
  } else if (rq->mode == AOT_NPU_REQUANT_PACKED) {
    if (!reaches(rq->multiplier, 4ull * channels, 4, AOT_FAULT_OPERAND_MULTIPLIER)) {
      return AOT_ERR_NPU_ADDRESS_OUT_OF_REGION;
    }
  } else if (rq->mode != AOT_NPU_REQUANT_PER_TENSOR) {
    return AOT_ERR_NPU_BAD_DESCRIPTOR;
  }
  /* Every channel's shift in range: the single-rounding shift needs 31 - shift >= 1. */
  int max_shift = rq->rounding == AOT_NPU_ROUNDING_SINGLE ? 30 : 31;
  for (uint32_t c = 0; c < channels; ++c) {
    int32_t multiplier;
    int shift;
    channel_requant(rq, c, &multiplier, &shift);
    if (shift < -31 || shift > max_shift || multiplier < 0) {
      return AOT_ERR_NPU_BAD_DESCRIPTOR;
    }
  }
  return AOT_OK;
}

static int offset_ok(int32_t offset) { return offset >= -255 && offset <= 255; }

static aot_error_t check_conv2d(const struct aot_npu_conv2d* d, int depthwise) {
  if (d->batches == 0 || d->in_h == 0 || d->in_w == 0 || d->in_c == 0 || d->out_h == 0 ||
      d->out_w == 0 || d->out_c == 0 || d->k_h == 0 || d->k_w == 0 || d->stride_h == 0 ||
      d->stride_w == 0 || d->dilation_h == 0 || d->dilation_w == 0 ||
      d->depth_multiplier == 0 || !offset_ok(d->input_offset) || d->pad_value < -128 ||
      d->pad_value > 127) {
    return AOT_ERR_NPU_BAD_DESCRIPTOR;
  }
  /* Every dimension below 2^16 keeps each index product below 2^64. */
  const uint32_t dims[] = {d->batches,  d->in_h,     d->in_w,    d->in_c,     d->out_h,
                           d->out_w,    d->out_c,    d->k_h,     d->k_w,      d->stride_h,
                           d->stride_w, d->dilation_h, d->dilation_w, d->pad_top,
                           d->pad_left, d->depth_multiplier};
  for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); ++i) {
    if (dims[i] > 0xFFFFu) {
      return AOT_ERR_NPU_BAD_DESCRIPTOR;
    }
  }
  if (depthwise ? d->out_c != d->in_c * d->depth_multiplier : d->depth_multiplier != 1) {
    return AOT_ERR_NPU_BAD_DESCRIPTOR;
  }
  uint64_t in_bytes = (uint64_t)d->batches * d->in_h * d->in_w * d->in_c;
  uint64_t out_bytes = (uint64_t)d->batches * d->out_h * d->out_w * d->out_c;
  uint64_t w_bytes = (uint64_t)d->k_h * d->k_w * d->out_c * (depthwise ? 1u : d->in_c);
  if (!reaches(d->input, in_bytes, 1, AOT_FAULT_OPERAND_INPUT) ||
      !reaches(d->output, out_bytes, 1, AOT_FAULT_OPERAND_OUTPUT) ||
      !reaches(d->weights, w_bytes, 1, AOT_FAULT_OPERAND_WEIGHTS) ||
      (d->bias != NULL && !reaches(d->bias, 4ull * d->out_c, 4, AOT_FAULT_OPERAND_BIAS))) {
    return AOT_ERR_NPU_ADDRESS_OUT_OF_REGION;
  }
  return check_requant(&d->requant, d->out_c);
}

static aot_error_t check_fully_connected(const struct aot_npu_fully_connected* d) {
  if (d->batches == 0 || d->depth == 0 || d->out_c == 0 || d->batches > 0xFFFFu ||
      d->depth > 0xFFFFu || d->out_c > 0xFFFFu || !offset_ok(d->input_offset) ||
      !offset_ok(d->weight_offset)) {
    return AOT_ERR_NPU_BAD_DESCRIPTOR;
  }
  if (!reaches(d->input, (uint64_t)d->batches * d->depth, 1, AOT_FAULT_OPERAND_INPUT) ||
      !reaches(d->output, (uint64_t)d->batches * d->out_c, 1, AOT_FAULT_OPERAND_OUTPUT) ||
      !reaches(d->weights, (uint64_t)d->out_c * d->depth, 1, AOT_FAULT_OPERAND_WEIGHTS) ||
      (d->bias != NULL && !reaches(d->bias, 4ull * d->out_c, 4, AOT_FAULT_OPERAND_BIAS))) {
    return AOT_ERR_NPU_ADDRESS_OUT_OF_REGION;
  }
  return check_requant(&d->requant, d->out_c);
}

/* -- kernels ------------------------------------------------------------------------ */

/* reference_integer_ops::ConvPerChannel and DepthwiseConvPerChannel in one loop nest:
 * a depthwise output channel o reads input channel o / depth_multiplier only. A tap
 * outside the image reads pad_value (see the header). */
static void run_conv2d(const struct aot_npu_conv2d* d, int depthwise) {
  const uint32_t taps_c = depthwise ? 1u : d->in_c;
  for (uint32_t b = 0; b < d->batches; ++b) {
    for (uint32_t oy = 0; oy < d->out_h; ++oy) {
      for (uint32_t ox = 0; ox < d->out_w; ++ox) {
        for (uint32_t o = 0; o < d->out_c; ++o) {
          int64_t acc = 0;
          for (uint32_t ky = 0; ky < d->k_h; ++ky) {
            int64_t iy = (int64_t)oy * d->stride_h - d->pad_top + (int64_t)ky * d->dilation_h;
            for (uint32_t kx = 0; kx < d->k_w; ++kx) {
              int64_t ix =
                  (int64_t)ox * d->stride_w - d->pad_left + (int64_t)kx * d->dilation_w;
              int inside = iy >= 0 && iy < (int64_t)d->in_h && ix >= 0 && ix < (int64_t)d->in_w;
              size_t pixel =
                  inside ? ((size_t)b * d->in_h + (size_t)iy) * d->in_w + (size_t)ix : 0u;
              for (uint32_t c = 0; c < taps_c; ++c) {
                uint32_t ic = depthwise ? o / d->depth_multiplier : c;
                int32_t x = inside ? d->input[pixel * d->in_c + ic] : d->pad_value;
                int32_t w = depthwise
                                ? d->weights[((size_t)ky * d->k_w + kx) * d->out_c + o]
                                : d->weights[(((size_t)o * d->k_h + ky) * d->k_w + kx) *
                                                 d->in_c + c];
                acc += (int64_t)(x + d->input_offset) * w;
              }
            }
          }
          if (d->bias != NULL) {
            acc = (int64_t)wrap32(acc) + d->bias[o];
          }
          size_t out = (((size_t)b * d->out_h + oy) * d->out_w + ox) * d->out_c + o;
          d->output[out] = requantize(acc, &d->requant, o);
        }
      }
    }
  }
}

/* reference_integer_ops::FullyConnected (per-tensor or per-channel multipliers). */
static void run_fully_connected(const struct aot_npu_fully_connected* d) {
  for (uint32_t b = 0; b < d->batches; ++b) {
    for (uint32_t o = 0; o < d->out_c; ++o) {
      int64_t acc = 0;
      for (uint32_t k = 0; k < d->depth; ++k) {
        int32_t x = d->input[(size_t)b * d->depth + k] + d->input_offset;
        int32_t w = d->weights[(size_t)o * d->depth + k] + d->weight_offset;
        acc += (int64_t)x * w;
      }
      if (d->bias != NULL) {
        acc = (int64_t)wrap32(acc) + d->bias[o];
      }
      d->output[(size_t)b * d->out_c + o] = requantize(acc, &d->requant, o);
    }
  }
}

/* -- the device: one descriptor at a time, checked completely before it runs ----------- */

static aot_error_t execute(const struct aot_npu_desc_header* header) {
  if (header == NULL) {
    return AOT_ERR_NPU_BAD_STREAM;
  }
  aot_error_t err;
  switch (header->op) {
    case AOT_NPU_OP_CONV2D:
    case AOT_NPU_OP_DEPTHWISE_CONV2D: {
      if (header->size != sizeof(struct aot_npu_conv2d)) {
        return AOT_ERR_NPU_BAD_STREAM;
      }
      const struct aot_npu_conv2d* d = (const struct aot_npu_conv2d*)(const void*)header;
      int depthwise = header->op == AOT_NPU_OP_DEPTHWISE_CONV2D;
      err = check_conv2d(d, depthwise);
      if (err == AOT_OK) {
        run_conv2d(d, depthwise);
      }
      return err;
    }
    case AOT_NPU_OP_FULLY_CONNECTED: {
      if (header->size != sizeof(struct aot_npu_fully_connected)) {
        return AOT_ERR_NPU_BAD_STREAM;
      }
      const struct aot_npu_fully_connected* d =
          (const struct aot_npu_fully_connected*)(const void*)header;
      err = check_fully_connected(d);
      if (err == AOT_OK) {
        run_fully_connected(d);
      }
      return err;
    }
    default:
      return AOT_ERR_NPU_BAD_STREAM;
  }
}

/* -- the driver ----------------------------------------------------------------------- */

aot_error_t aot_npu_submit(const struct aot_npu_stream* stream) {
  npu.failed_descriptor = 0;
  npu.failed_operand = AOT_FAULT_OPERAND_NONE;
  npu.failed_address = 0u;
  if (npu.region_size == 0) {
    return AOT_ERR_NPU_NOT_CONFIGURED;
  }
  if (stream == NULL || stream->magic != AOT_NPU_STREAM_MAGIC ||
      stream->version != AOT_NPU_STREAM_VERSION ||
      (stream->count > 0 && stream->descriptors == NULL)) {
    return AOT_ERR_NPU_BAD_STREAM;
  }
  for (uint32_t i = 0; i < stream->count; ++i) {
    aot_error_t err = execute(stream->descriptors[i]);
    if (err != AOT_OK) {
      npu.failed_descriptor = i;
      return err;
    }
  }
  return AOT_OK;
}
