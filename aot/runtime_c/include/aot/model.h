/*
 * The contract between a generated model library and the application that runs it.
 *
 * Every model library compiled by aot defines one `const struct aot_model_desc
 * aot_<name>_model` next to its typed entry point `aot_<name>_run()`. The generic
 * application in runtime_c (serial benchmark server, host runner) only knows this
 * descriptor, so one application serves every model.
 */
#ifndef AOT_MODEL_H_
#define AOT_MODEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of model inputs and outputs; values are part of the serial protocol. */
typedef enum {
  AOT_DTYPE_INT8 = 0,
  AOT_DTYPE_UINT8 = 1,
  AOT_DTYPE_INT16 = 2,
  AOT_DTYPE_INT32 = 3,
  AOT_DTYPE_FLOAT32 = 4,
  AOT_DTYPE_FLOAT64 = 5,
} aot_dtype_t;

#define AOT_MAX_NDIM 6

/* Where a failing run stopped (the RUN reply's fault record, docs/protocol.md). The
 * executor of a model with accelerator steps sets `step` before each of them; the
 * accelerator's driver fills the rest when its step fails. */
#define AOT_FAULT_NONE 0xFFFFFFFFu /* step or descriptor unknown */

/* Which operand of a descriptor; values are part of the serial protocol. */
typedef enum {
  AOT_FAULT_OPERAND_NONE = 0,
  AOT_FAULT_OPERAND_INPUT = 1,
  AOT_FAULT_OPERAND_WEIGHTS = 2,
  AOT_FAULT_OPERAND_BIAS = 3,
  AOT_FAULT_OPERAND_OUTPUT = 4,
  AOT_FAULT_OPERAND_MULTIPLIER = 5,
  AOT_FAULT_OPERAND_SHIFT = 6,
} aot_fault_operand_t;

struct aot_fault {
  uint32_t step;        /* executor step (metadata.json's operators[step]), or AOT_FAULT_NONE */
  uint32_t descriptor;  /* the accelerator's descriptor within the step, or AOT_FAULT_NONE */
  uint32_t operand;     /* aot_fault_operand_t: the operand whose address failed a check */
  uint64_t address;     /* that operand's address */
  uint64_t region_base; /* the memory the accelerator reaches: [base, base + size) */
  uint64_t region_size;
};

/* Models built with --trace (a debug build for 'aot validate --layers'): run() returns
 * after step `stop_after` of the executor, leaving where that step wrote its outputs in
 * `outputs[0 .. num_outputs)`, so a host can compare each step with a reference. */
#define AOT_TRACE_NONE 0xFFFFFFFFu /* stop_after: run every step; stopped: ran through */

struct aot_trace_output {
  const void* data;
  uint32_t bytes;
};

struct aot_trace {
  uint32_t num_steps;   /* executor steps (metadata.json's operators) */
  uint32_t stop_after;  /* set by the caller before run(); AOT_TRACE_NONE: run every step */
  uint32_t stopped;     /* the step the last run() stopped after, or AOT_TRACE_NONE */
  uint32_t num_outputs; /* entries of `outputs` that step `stopped` filled */
  uint32_t max_outputs; /* entries of `outputs` */
  struct aot_trace_output* outputs; /* what step `stopped` wrote, in metadata.json's order */
};

struct aot_tensor_info {
  const char* name;
  aot_dtype_t dtype;
  uint32_t ndim;
  int32_t shape[AOT_MAX_NDIM];
  uint32_t size_bytes;
};

/* Runs one inference. inputs[i] / outputs[i] point at caller-owned buffers of
 * inputs[i].size_bytes / outputs[i].size_bytes. Returns 0 (AOT_OK) or an aot error code. */
typedef int32_t (*aot_run_fn)(void* const* inputs, void* const* outputs);

struct aot_model_desc {
  const char* name;
  uint32_t num_inputs;
  uint32_t num_outputs;
  const struct aot_tensor_info* inputs;
  const struct aot_tensor_info* outputs;
  aot_run_fn run;
  uint32_t workspace_bytes; /* the planned pools together, without the persistent one */
  uint32_t constants_bytes;
  /* Models built with --io-in-pool: where each input/output lives inside the planned
   * pools; the application writes inputs and reads outputs there (no copies). NULL: the
   * caller provides the buffers. */
  void* const* input_buffers;
  void* const* output_buffers;
  /* Models built with --profile: step_ticks[i] is how many aot_platform_ticks() step i of
   * the executor took in the last run (num_steps entries). 0 / NULL: not profiled, and
   * the executor reads no timer at all. */
  uint32_t num_steps;
  const uint32_t* step_ticks;
  /* Operator state kept between runs (SVDF's memory), in the persistent pool: its
   * bytes (0: stateless) and the function that sets it to its initial value. */
  uint32_t state_bytes;
  void (*reset)(void);
  /* Models with accelerator steps: where the last failing run stopped. NULL: no record. */
  const struct aot_fault* fault;
  /* Models built with --trace: where run() stops and what that step wrote. NULL: not a
   * trace build, run() always runs every step. */
  struct aot_trace* trace;
};

#ifdef __cplusplus
}
#endif

#endif /* AOT_MODEL_H_ */
