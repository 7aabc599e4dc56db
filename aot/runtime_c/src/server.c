/* The serial benchmark server; the protocol is specified in docs/protocol.md. */
#include "server.h"

#include <string.h>

#include "aot/platform.h"
#include "frame.h"
#include "stack.h"

#ifndef AOT_APP_IO_BYTES
#define AOT_APP_IO_BYTES 4096u
#endif
#ifndef AOT_APP_MAX_TENSORS
#define AOT_APP_MAX_TENSORS 16u
#endif
#ifndef AOT_APP_MAX_PAYLOAD
#define AOT_APP_MAX_PAYLOAD 512u
#endif
#ifndef AOT_APP_MAX_REPEATS
#define AOT_APP_MAX_REPEATS 10000u
#endif

#define AOT_IO_ALIGN 16u
#define AOT_MAX_FRAME (AOT_APP_MAX_PAYLOAD + AOT_FRAME_OVERHEAD)
/* + 1: the encoded reply is written here followed by its delimiter. */
#define AOT_RX_BYTES (AOT_COBS_MAX_ENCODED(AOT_MAX_FRAME) + 1u)

/* Compile-time checks (C99 has no _Static_assert): a negative array size fails. */
typedef char aot_check_max_payload[(AOT_APP_MAX_PAYLOAD >= 64u && AOT_APP_MAX_PAYLOAD <= 65535u)
                                       ? 1
                                       : -1];
typedef char aot_check_max_repeats[(AOT_APP_MAX_REPEATS >= 1u && AOT_APP_MAX_REPEATS <= 0xFFFFFFFFu)
                                       ? 1
                                       : -1];
typedef char aot_check_max_tensors[(AOT_APP_MAX_TENSORS >= 1u && AOT_APP_MAX_TENSORS <= 255u)
                                       ? 1
                                       : -1];

/* The I/O arena is in its own section so a linker script can place it by name. */
static uint8_t g_io_arena[AOT_APP_IO_BYTES]
    __attribute__((aligned(AOT_IO_ALIGN), section(".bss.aot.app.io")));

static const struct aot_model_desc* g_model;
/* Where replies go: the port's serial line unless the caller routes them elsewhere. */
static aot_server_write_fn g_write;
static void* g_write_context;
static aot_error_t g_setup_status = AOT_ERR_APP_NO_MODEL;
static uint32_t g_io_required;
static void* g_inputs[AOT_APP_MAX_TENSORS];
static void* g_outputs[AOT_APP_MAX_TENSORS];

/* Received bytes, COBS-encoded until the delimiter, then decoded in place. After a
 * request is handled the same buffer holds the encoded reply. */
static uint8_t g_rx[AOT_RX_BYTES];
static size_t g_rx_len;
static int g_rx_overflow;
/* The decoded reply being built. */
static uint8_t g_tx[AOT_MAX_FRAME];
static size_t g_tx_len;

static struct {
  uint32_t runs;
  uint32_t frames_ok;
  uint32_t frames_bad;
  uint32_t stack_at_run;
} g_stats;

/* ---- setup ---------------------------------------------------------------------- */

static uint32_t align_up(uint32_t n) {
  return (n + AOT_IO_ALIGN - 1u) & ~(AOT_IO_ALIGN - 1u);
}

/* Places tensors one after another; a tensor that does not fit gets NULL (never used:
 * the setup status then blocks every command that touches tensors). */
static void layout(const struct aot_tensor_info* infos, uint32_t count, void** ptrs,
                   uint32_t* offset) {
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t size = infos[i].size_bytes;
    if (*offset <= AOT_APP_IO_BYTES && size <= AOT_APP_IO_BYTES - *offset) {
      ptrs[i] = &g_io_arena[*offset];
    } else {
      ptrs[i] = NULL;
    }
    *offset = align_up(*offset + size);
  }
}

static aot_error_t serial_write(void* context, const uint8_t* data, size_t len) {
  (void)context;
  return aot_platform_serial_write(data, len);
}

aot_error_t aot_server_init(const struct aot_model_desc* model, aot_server_write_fn write,
                            void* context) {
  g_write = write != NULL ? write : serial_write;
  g_write_context = context;
  g_model = model;
  g_io_required = 0;
  if (model == NULL || model->run == NULL || (model->num_inputs > 0u && model->inputs == NULL) ||
      (model->num_outputs > 0u && model->outputs == NULL)) {
    g_model = NULL;
    g_setup_status = AOT_ERR_APP_NO_MODEL;
    return g_setup_status;
  }
  if (model->num_inputs > AOT_APP_MAX_TENSORS || model->num_outputs > AOT_APP_MAX_TENSORS) {
    g_setup_status = AOT_ERR_APP_TOO_MANY_TENSORS;
    return g_setup_status;
  }
  uint32_t offset = 0;
  if (model->input_buffers != NULL && model->output_buffers != NULL) {
    /* --io-in-pool: the model's own buffers, the I/O arena stays unused. */
    for (uint32_t i = 0; i < model->num_inputs; ++i) {
      g_inputs[i] = model->input_buffers[i];
    }
    for (uint32_t i = 0; i < model->num_outputs; ++i) {
      g_outputs[i] = model->output_buffers[i];
    }
  } else {
    layout(model->inputs, model->num_inputs, g_inputs, &offset);
    layout(model->outputs, model->num_outputs, g_outputs, &offset);
  }
  g_io_required = offset;
  g_setup_status = offset > AOT_APP_IO_BYTES ? AOT_ERR_APP_IO_ARENA_TOO_SMALL : AOT_OK;
  return g_setup_status;
}

/* ---- replies -------------------------------------------------------------------- */

static void put_u8(uint8_t v) {
  g_tx[g_tx_len++] = v;
}
static void put_u16(uint16_t v) {
  aot_put_u16(&g_tx[g_tx_len], v);
  g_tx_len += 2u;
}
static void put_u32(uint32_t v) {
  aot_put_u32(&g_tx[g_tx_len], v);
  g_tx_len += 4u;
}
static void put_u64(uint64_t v) {
  put_u32((uint32_t)v);
  put_u32((uint32_t)(v >> 32));
}

/* Starts a reply; the payload always begins with the u16 status. */
static void begin_reply(uint8_t type, uint8_t seq, aot_error_t status) {
  g_tx[0] = type;
  g_tx[1] = seq;
  g_tx_len = AOT_FRAME_HEADER_BYTES;
  put_u16((uint16_t)status);
}

/* Finishes the frame (length, CRC), encodes it into g_rx and writes it with the
 * delimiter. g_rx is free by now: the request has been fully handled. */
static aot_error_t send_reply(void) {
  aot_put_u16(&g_tx[2], (uint16_t)(g_tx_len - AOT_FRAME_HEADER_BYTES));
  put_u32(aot_crc32(0u, g_tx, g_tx_len));
  size_t n = aot_cobs_encode(g_tx, g_tx_len, g_rx);
  g_rx[n++] = AOT_FRAME_DELIMITER;
  return g_write(g_write_context, g_rx, n);
}

/* Every failed request gets exactly this: status and one detail word. */
static aot_error_t send_error(uint8_t type, uint8_t seq, aot_error_t status, uint32_t detail) {
  begin_reply(type, seq, status);
  put_u32(detail);
  return send_reply();
}

static void put_name(const char* name, size_t room) {
  size_t n = name != NULL ? strlen(name) : 0u;
  if (n > room) {
    n = room; /* truncated to fit the frame; the host shows what arrived */
  }
  if (n > 255u) {
    n = 255u;
  }
  put_u8((uint8_t)n);
  if (n > 0u) {
    memcpy(&g_tx[g_tx_len], name, n);
    g_tx_len += n;
  }
}

/* ---- commands ------------------------------------------------------------------- */

/* Returns whether the request may touch tensors; sends the setup error if not. */
static int ready(uint8_t type, uint8_t seq, aot_error_t* send_status) {
  if (g_setup_status != AOT_OK) {
    *send_status = send_error(type, seq, g_setup_status, g_io_required);
    return 0;
  }
  return 1;
}

/* PROFILE's step fields are u16: a descriptor with more steps is not served. */
static int profiled(void) {
  return g_model != NULL && g_model->num_steps > 0u && g_model->num_steps <= 0xFFFFu &&
         g_model->step_ticks != NULL;
}

/* A model with operator state (SVDF) answers RESET. */
static int stateful(void) {
  return g_model != NULL && g_model->state_bytes > 0u && g_model->reset != NULL;
}

/* A model with accelerator steps keeps a fault record: a failing RUN's reply ends with it. */
static int faults_recorded(void) { return g_model != NULL && g_model->fault != NULL; }

/* A --trace build stops after a chosen step and shows what it wrote: TRACE, GET_TRACE. */
static int traced(void) {
  return g_model != NULL && g_model->trace != NULL && g_model->trace->outputs != NULL &&
         g_model->trace->num_steps <= 0xFFFFu; /* TRACE's step field is a u16 */
}

static uint32_t features(void) {
  return (profiled() ? AOT_FEATURE_PROFILE : 0u) |
         (aot_stack_painted_bytes() > 0u ? AOT_FEATURE_STACK : 0u) |
         (stateful() ? AOT_FEATURE_STATE : 0u) | (faults_recorded() ? AOT_FEATURE_FAULT : 0u) |
         (traced() ? AOT_FEATURE_TRACE : 0u);
}

static aot_error_t cmd_hello(uint8_t type, uint8_t seq, const uint8_t* p, uint16_t len) {
  (void)len; /* checked against the protocol table by handle_frame */
  const uint16_t host_version = aot_get_u16(p);
  if ((host_version >> 8) != (AOT_PROTOCOL_VERSION >> 8)) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_VERSION_MISMATCH, AOT_PROTOCOL_VERSION);
  }
  /* A 1.0 host parses the name up to the end of the payload: a host gets only the
   * fields added after it that its minor version knows (1.1 max_repeats, 1.2 features). */
  const uint32_t host_minor = host_version & 0xFFu;
  const size_t tail = host_minor >= 2u ? 8u : (host_minor >= 1u ? 4u : 0u);
  begin_reply(type, seq, AOT_OK);
  put_u16(AOT_PROTOCOL_VERSION);
  put_u16((uint16_t)AOT_APP_MAX_PAYLOAD);
  put_u16((uint16_t)g_setup_status);
  put_u32(aot_platform_ticks_per_second());
  put_u32(AOT_APP_IO_BYTES);
  put_u32(g_io_required);
  put_u32(g_model != NULL ? g_model->workspace_bytes : 0u);
  put_u32(g_model != NULL ? g_model->constants_bytes : 0u);
  put_u8(g_model != NULL ? (uint8_t)g_model->num_inputs : 0u);
  put_u8(g_model != NULL ? (uint8_t)g_model->num_outputs : 0u);
  put_name(g_model != NULL ? g_model->name : NULL,
           AOT_MAX_FRAME - AOT_FRAME_CRC_BYTES - g_tx_len - 1u - tail);
  if (host_minor >= 1u) {
    put_u32(AOT_APP_MAX_REPEATS);
  }
  if (host_minor >= 2u) {
    put_u32(features());
  }
  return send_reply();
}

static aot_error_t cmd_info(uint8_t type, uint8_t seq, const uint8_t* p, uint16_t len) {
  (void)len;
  if (p[0] > 1u) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_BAD_PAYLOAD, 2u);
  }
  const uint8_t kind = p[0];
  const uint8_t index = p[1];
  const uint32_t count =
      g_model == NULL ? 0u : (kind == 0u ? g_model->num_inputs : g_model->num_outputs);
  if (index >= count) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_BAD_INDEX, count);
  }
  const struct aot_tensor_info* t = kind == 0u ? &g_model->inputs[index] : &g_model->outputs[index];
  const uint32_t ndim = t->ndim <= AOT_MAX_NDIM ? t->ndim : AOT_MAX_NDIM;
  begin_reply(type, seq, AOT_OK);
  put_u8(kind);
  put_u8(index);
  put_u8((uint8_t)t->dtype);
  put_u8((uint8_t)ndim);
  put_u32(t->size_bytes);
  for (uint32_t d = 0; d < ndim; ++d) {
    put_u32((uint32_t)t->shape[d]);
  }
  put_name(t->name, AOT_MAX_FRAME - AOT_FRAME_CRC_BYTES - g_tx_len - 1u);
  return send_reply();
}

/* Checks index/offset/length against a tensor list; sends the error reply if bad. */
static int check_range(uint8_t type, uint8_t seq, const struct aot_tensor_info* infos,
                       uint32_t count, uint8_t index, uint32_t offset, uint32_t length,
                       aot_error_t* send_status) {
  if (index >= count) {
    *send_status = send_error(type, seq, AOT_ERR_PROTOCOL_BAD_INDEX, count);
    return 0;
  }
  const uint32_t size = infos[index].size_bytes;
  if (offset > size || length > size - offset) {
    *send_status = send_error(type, seq, AOT_ERR_PROTOCOL_OUT_OF_RANGE, size);
    return 0;
  }
  return 1;
}

static aot_error_t cmd_set_input(uint8_t type, uint8_t seq, const uint8_t* p, uint16_t len) {
  aot_error_t status = AOT_OK;
  if (!ready(type, seq, &status)) {
    return status;
  }
  const uint8_t index = p[0];
  const uint32_t offset = aot_get_u32(&p[1]);
  const uint32_t length = (uint32_t)len - AOT_CMD_SET_INPUT_REQUEST_BYTES;
  if (!check_range(type, seq, g_model->inputs, g_model->num_inputs, index, offset, length,
                   &status)) {
    return status;
  }
  memcpy((uint8_t*)g_inputs[index] + offset, &p[AOT_CMD_SET_INPUT_REQUEST_BYTES], length);
  begin_reply(type, seq, AOT_OK);
  return send_reply();
}

static aot_error_t cmd_run(uint8_t type, uint8_t seq, const uint8_t* p, uint16_t len) {
  aot_error_t status = AOT_OK;
  (void)len;
  if (aot_get_u32(p) == 0u) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_BAD_PAYLOAD, AOT_CMD_RUN_REQUEST_BYTES);
  }
  const uint32_t repeats = aot_get_u32(p);
#if AOT_APP_MAX_REPEATS < 0xFFFFFFFFu /* at the maximum any u32 fits (and gcc warns) */
  /* Nothing interrupts a RUN, so the cap is what bounds how long the device is deaf. */
  if (repeats > AOT_APP_MAX_REPEATS) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_BAD_PAYLOAD, AOT_APP_MAX_REPEATS);
  }
#endif
  if (!ready(type, seq, &status)) {
    return status;
  }
  uint64_t total = 0;
  uint32_t min_ticks = 0xFFFFFFFFu;
  uint32_t max_ticks = 0;
  uint32_t done = 0;
  int32_t model_status = AOT_OK;
  g_stats.stack_at_run = aot_stack_depth_here();
  while (done < repeats && model_status == AOT_OK) {
    const uint32_t start = aot_platform_ticks();
    model_status = g_model->run(g_inputs, g_outputs);
    /* Unsigned difference is right across one counter wrap. */
    const uint32_t ticks = aot_platform_ticks() - start;
    ++done;
    total += ticks;
    min_ticks = ticks < min_ticks ? ticks : min_ticks;
    max_ticks = ticks > max_ticks ? ticks : max_ticks;
  }
  g_stats.runs += done;
  begin_reply(type, seq, AOT_OK);
  put_u32((uint32_t)model_status);
  put_u32(done);
  put_u64(total);
  put_u32(min_ticks);
  put_u32(max_ticks);
  put_u32(aot_platform_ticks_per_second());
  if (model_status != AOT_OK && faults_recorded()) {
    /* Appended: a host that does not know the FAULT bit reads the fields before it. */
    const struct aot_fault* fault = g_model->fault;
    put_u32(fault->step);
    put_u32(fault->descriptor);
    put_u32(fault->operand);
    put_u64(fault->address);
    put_u64(fault->region_base);
    put_u32(fault->region_size > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)fault->region_size);
  }
  return send_reply();
}

static aot_error_t cmd_get_output(uint8_t type, uint8_t seq, const uint8_t* p, uint16_t len) {
  aot_error_t status = AOT_OK;
  /* Reply payload is status + data, so data may be at most max payload - 2. */
  (void)len;
  if (aot_get_u16(&p[5]) > AOT_APP_MAX_PAYLOAD - 2u) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_BAD_PAYLOAD, AOT_APP_MAX_PAYLOAD - 2u);
  }
  if (!ready(type, seq, &status)) {
    return status;
  }
  const uint8_t index = p[0];
  const uint32_t offset = aot_get_u32(&p[1]);
  const uint16_t length = aot_get_u16(&p[5]);
  if (!check_range(type, seq, g_model->outputs, g_model->num_outputs, index, offset, length,
                   &status)) {
    return status;
  }
  begin_reply(type, seq, AOT_OK);
  memcpy(&g_tx[g_tx_len], (const uint8_t*)g_outputs[index] + offset, length);
  g_tx_len += length;
  return send_reply();
}

static aot_error_t cmd_stats(uint8_t type, uint8_t seq) {
  begin_reply(type, seq, AOT_OK);
  put_u32(aot_stack_painted_bytes());
  put_u32(aot_stack_peak_bytes());
  put_u32(g_stats.stack_at_run);
  put_u32(g_stats.runs);
  put_u32(g_stats.frames_ok);
  put_u32(g_stats.frames_bad);
  return send_reply();
}

/* Ticks of executor steps first.. of the last run, as many as fit one reply. */
static aot_error_t cmd_profile(uint8_t type, uint8_t seq, const uint8_t* p) {
  const uint32_t steps = g_model->num_steps;
  const uint32_t first = aot_get_u16(p);
  if (first > steps) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_BAD_INDEX, steps);
  }
  const uint32_t room = (AOT_APP_MAX_PAYLOAD - 2u - AOT_PROFILE_REPLY_HEAD_BYTES) / 4u;
  const uint32_t count = steps - first < room ? steps - first : room;
  begin_reply(type, seq, AOT_OK);
  put_u16((uint16_t)steps);
  put_u16((uint16_t)first);
  put_u16((uint16_t)count);
  for (uint32_t i = 0; i < count; ++i) {
    put_u32(g_model->step_ticks[first + i]);
  }
  return send_reply();
}

/* One run of the model on the current inputs that stops after executor step `step`; the
 * reply says where it stopped and how many bytes each output of that step has. */
static aot_error_t cmd_trace(uint8_t type, uint8_t seq, const uint8_t* p) {
  aot_error_t status = AOT_OK;
  struct aot_trace* trace = g_model->trace;
  const uint32_t step = aot_get_u16(p);
  if (step >= trace->num_steps) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_BAD_INDEX, trace->num_steps);
  }
  if (!ready(type, seq, &status)) {
    return status;
  }
  trace->stop_after = step;
  const int32_t model_status = g_model->run(g_inputs, g_outputs);
  trace->stop_after = AOT_TRACE_NONE; /* RUN runs every step again */
  ++g_stats.runs;
  const int stopped = model_status == AOT_OK && trace->stopped == step;
  /* What a step writes fits one reply's list: the executor records at most max_outputs. */
  const uint32_t room = (AOT_APP_MAX_PAYLOAD - 2u - AOT_TRACE_REPLY_HEAD_BYTES) / 4u;
  uint32_t count = stopped ? trace->num_outputs : 0u;
  count = count < room ? count : room;
  begin_reply(type, seq, AOT_OK);
  put_u32((uint32_t)model_status);
  put_u16(stopped ? (uint16_t)step : (uint16_t)AOT_TRACE_NOT_STOPPED);
  put_u8((uint8_t)count);
  for (uint32_t i = 0; i < count; ++i) {
    put_u32(trace->outputs[i].bytes);
  }
  return send_reply();
}

/* Bytes of output `index` of the step the last TRACE stopped after. */
static aot_error_t cmd_get_trace(uint8_t type, uint8_t seq, const uint8_t* p) {
  const struct aot_trace* trace = g_model->trace;
  if (aot_get_u16(&p[5]) > AOT_APP_MAX_PAYLOAD - 2u) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_BAD_PAYLOAD, AOT_APP_MAX_PAYLOAD - 2u);
  }
  const uint32_t count = trace->stopped == AOT_TRACE_NONE ? 0u : trace->num_outputs;
  const uint8_t index = p[0];
  const uint32_t offset = aot_get_u32(&p[1]);
  const uint32_t length = aot_get_u16(&p[5]);
  if (index >= count) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_BAD_INDEX, count);
  }
  const uint32_t size = trace->outputs[index].bytes;
  if (offset > size || length > size - offset) {
    return send_error(type, seq, AOT_ERR_PROTOCOL_OUT_OF_RANGE, size);
  }
  begin_reply(type, seq, AOT_OK);
  memcpy(&g_tx[g_tx_len], (const uint8_t*)trace->outputs[index].data + offset, length);
  g_tx_len += length;
  return send_reply();
}

/* The request sizes of docs/protocol.md, from the generated table in aot/protocol.h:
 * exact, or a minimum for commands that carry data. The detail is the size expected. */
static int request_ok(uint16_t len, uint32_t expected, int variable) {
  return variable ? len >= expected : len == expected;
}
#define AOT_REQUEST_OK(name, len) \
  request_ok((len), AOT_CMD_##name##_REQUEST_BYTES, AOT_CMD_##name##_VARIABLE)
#define AOT_CHECK_REQUEST(name, len)                                                         \
  do {                                                                                       \
    if (!AOT_REQUEST_OK(name, len)) {                                                        \
      return send_error(reply, seq, AOT_ERR_PROTOCOL_BAD_PAYLOAD, AOT_CMD_##name##_REQUEST_BYTES); \
    }                                                                                        \
  } while (0)

/* ---- frames --------------------------------------------------------------------- */

/* Decodes and checks one frame in g_rx[0..g_rx_len) and answers it. */
static aot_error_t handle_frame(int* quit) {
  size_t n = 0;
  if (g_rx_overflow) {
    ++g_stats.frames_bad;
    return send_error(AOT_MSG_FRAME_ERROR, 0u, AOT_ERR_PROTOCOL_FRAME_TOO_LONG, AOT_MAX_FRAME);
  }
  if (aot_cobs_decode(g_rx, g_rx_len, &n) != AOT_OK) {
    ++g_stats.frames_bad;
    return send_error(AOT_MSG_FRAME_ERROR, 0u, AOT_ERR_PROTOCOL_BAD_ENCODING, 0u);
  }
  if (n < AOT_FRAME_OVERHEAD) {
    ++g_stats.frames_bad;
    return send_error(AOT_MSG_FRAME_ERROR, 0u, AOT_ERR_PROTOCOL_FRAME_TOO_SHORT, (uint32_t)n);
  }
  /* From here the header is readable, though not yet trusted: echo its seq. */
  const uint8_t type = g_rx[0];
  const uint8_t seq = g_rx[1];
  const uint16_t len = aot_get_u16(&g_rx[2]);
  if ((size_t)len + AOT_FRAME_OVERHEAD != n) {
    ++g_stats.frames_bad;
    return send_error(AOT_MSG_FRAME_ERROR, seq, AOT_ERR_PROTOCOL_BAD_LENGTH, (uint32_t)n);
  }
#if AOT_APP_MAX_PAYLOAD < 65535u /* at the maximum every u16 length fits (and gcc warns) */
  if (len > AOT_APP_MAX_PAYLOAD) { /* fits the buffer thanks to COBS slack, still refused */
    ++g_stats.frames_bad;
    return send_error(AOT_MSG_FRAME_ERROR, seq, AOT_ERR_PROTOCOL_FRAME_TOO_LONG, AOT_MAX_FRAME);
  }
#endif
  const uint32_t crc = aot_get_u32(&g_rx[n - AOT_FRAME_CRC_BYTES]);
  if (aot_crc32(0u, g_rx, n - AOT_FRAME_CRC_BYTES) != crc) {
    ++g_stats.frames_bad;
    return send_error(AOT_MSG_FRAME_ERROR, seq, AOT_ERR_PROTOCOL_BAD_CRC, crc);
  }
  ++g_stats.frames_ok;
  const uint8_t* payload = &g_rx[AOT_FRAME_HEADER_BYTES];
  const uint8_t reply = (uint8_t)(type | AOT_MSG_REPLY_BIT);
  switch (type) {
    case AOT_CMD_HELLO:
      AOT_CHECK_REQUEST(HELLO, len);
      return cmd_hello(reply, seq, payload, len);
    case AOT_CMD_INFO:
      AOT_CHECK_REQUEST(INFO, len);
      return cmd_info(reply, seq, payload, len);
    case AOT_CMD_SET_INPUT:
      AOT_CHECK_REQUEST(SET_INPUT, len);
      return cmd_set_input(reply, seq, payload, len);
    case AOT_CMD_RUN:
      AOT_CHECK_REQUEST(RUN, len);
      return cmd_run(reply, seq, payload, len);
    case AOT_CMD_GET_OUTPUT:
      /* the detail of a bad GET_OUTPUT is its length limit, as before the table */
      if (!AOT_REQUEST_OK(GET_OUTPUT, len)) {
        return send_error(reply, seq, AOT_ERR_PROTOCOL_BAD_PAYLOAD, AOT_APP_MAX_PAYLOAD - 2u);
      }
      return cmd_get_output(reply, seq, payload, len);
    case AOT_CMD_STATS:
      AOT_CHECK_REQUEST(STATS, len);
      return cmd_stats(reply, seq);
    case AOT_CMD_PROFILE:
      if (!profiled()) { /* an optional command: absent unless the feature bit is set */
        return send_error(reply, seq, AOT_ERR_PROTOCOL_UNKNOWN_COMMAND, type);
      }
      AOT_CHECK_REQUEST(PROFILE, len);
      return cmd_profile(reply, seq, payload);
    case AOT_CMD_RESET:
      if (!stateful()) { /* optional, like PROFILE */
        return send_error(reply, seq, AOT_ERR_PROTOCOL_UNKNOWN_COMMAND, type);
      }
      AOT_CHECK_REQUEST(RESET, len);
      g_model->reset();
      begin_reply(reply, seq, AOT_OK);
      return send_reply();
    case AOT_CMD_TRACE:
      if (!traced()) { /* optional, like PROFILE */
        return send_error(reply, seq, AOT_ERR_PROTOCOL_UNKNOWN_COMMAND, type);
      }
      AOT_CHECK_REQUEST(TRACE, len);
      return cmd_trace(reply, seq, payload);
    case AOT_CMD_GET_TRACE:
      if (!traced()) {
        return send_error(reply, seq, AOT_ERR_PROTOCOL_UNKNOWN_COMMAND, type);
      }
      if (!AOT_REQUEST_OK(GET_TRACE, len)) { /* detail: the length limit, as GET_OUTPUT */
        return send_error(reply, seq, AOT_ERR_PROTOCOL_BAD_PAYLOAD, AOT_APP_MAX_PAYLOAD - 2u);
      }
      return cmd_get_trace(reply, seq, payload);
    case AOT_CMD_QUIT:
      AOT_CHECK_REQUEST(QUIT, len); /* refused like STATS: the device keeps serving */
      *quit = 1;
      begin_reply(reply, seq, AOT_OK);
      return send_reply();
    default:
      return send_error(reply, seq, AOT_ERR_PROTOCOL_UNKNOWN_COMMAND, type);
  }
}

aot_error_t aot_server_feed(const uint8_t* data, size_t len, int* quit) {
  *quit = 0;
  for (size_t i = 0; i < len; ++i) {
    const uint8_t byte = data[i];
    if (byte != AOT_FRAME_DELIMITER) {
      if (g_rx_len < sizeof(g_rx)) {
        g_rx[g_rx_len++] = byte;
      } else {
        g_rx_overflow = 1; /* keep discarding until the delimiter, then report */
      }
      continue;
    }
    if (g_rx_len == 0u && !g_rx_overflow) {
      continue; /* empty frame: hosts send a lone delimiter to resynchronise */
    }
    const aot_error_t err = handle_frame(quit);
    g_rx_len = 0;
    g_rx_overflow = 0;
    if (err != AOT_OK || *quit) {
      return err;
    }
  }
  return AOT_OK;
}

aot_error_t aot_server_serve(void) {
  uint8_t buf[64];
  for (;;) {
    size_t n = 0;
    aot_error_t err = aot_platform_serial_read(buf, sizeof(buf), &n);
    if (err != AOT_OK) {
      return err;
    }
    int quit = 0;
    err = aot_server_feed(buf, n, &quit);
    if (err != AOT_OK || quit) {
      return err;
    }
  }
}
