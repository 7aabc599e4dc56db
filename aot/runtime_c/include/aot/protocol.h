/*
 * Generated from aot/device/spec.py by `python3 -m aot.device.protocol_header`;
 * do not edit.
 * The serial protocol's version, command codes, request sizes and feature bits;
 * the layouts are in docs/protocol.md.
 */
#ifndef AOT_PROTOCOL_H_
#define AOT_PROTOCOL_H_

/* major << 8 | minor; majors must match */
#define AOT_PROTOCOL_VERSION 0x0102u

/* Commands (host -> device). A reply has type command | AOT_MSG_REPLY_BIT.
 * AOT_CMD_<NAME>_REQUEST_BYTES is the exact request payload size, or the minimum
 * for commands whose AOT_CMD_<NAME>_VARIABLE is 1. */
typedef enum {
  AOT_CMD_HELLO = 0x01, /* host version -> device version, limits, model */
  AOT_CMD_INFO = 0x02, /* kind, index -> one tensor's dtype, shape and name */
  AOT_CMD_SET_INPUT = 0x03, /* index, offset, data -> status */
  AOT_CMD_RUN = 0x04, /* repeats -> model status and ticks */
  AOT_CMD_GET_OUTPUT = 0x05, /* index, offset, length -> data */
  AOT_CMD_STATS = 0x06, /* -> stack and frame counters */
  AOT_CMD_QUIT = 0x07, /* -> status, then the server stops */
  AOT_CMD_PROFILE = 0x08, /* first step -> ticks of each executor step in the last run */
  AOT_CMD_RESET = 0x09, /* -> status, after the model's state is set to its initial value */
  AOT_CMD_TRACE = 0x0A, /* step -> model status and the sizes of what the step wrote, after one run that stopped there */
  AOT_CMD_GET_TRACE = 0x0B, /* output, offset, length -> data the traced step wrote */
} aot_command_t;

#define AOT_CMD_HELLO_REQUEST_BYTES 2u
#define AOT_CMD_HELLO_VARIABLE 0
#define AOT_CMD_INFO_REQUEST_BYTES 2u
#define AOT_CMD_INFO_VARIABLE 0
#define AOT_CMD_SET_INPUT_REQUEST_BYTES 5u
#define AOT_CMD_SET_INPUT_VARIABLE 1
#define AOT_CMD_RUN_REQUEST_BYTES 4u
#define AOT_CMD_RUN_VARIABLE 0
#define AOT_CMD_GET_OUTPUT_REQUEST_BYTES 7u
#define AOT_CMD_GET_OUTPUT_VARIABLE 0
#define AOT_CMD_STATS_REQUEST_BYTES 0u
#define AOT_CMD_STATS_VARIABLE 0
#define AOT_CMD_QUIT_REQUEST_BYTES 0u
#define AOT_CMD_QUIT_VARIABLE 0
#define AOT_CMD_PROFILE_REQUEST_BYTES 2u
#define AOT_CMD_PROFILE_VARIABLE 0
#define AOT_CMD_RESET_REQUEST_BYTES 0u
#define AOT_CMD_RESET_VARIABLE 0
#define AOT_CMD_TRACE_REQUEST_BYTES 2u
#define AOT_CMD_TRACE_VARIABLE 0
#define AOT_CMD_GET_TRACE_REQUEST_BYTES 7u
#define AOT_CMD_GET_TRACE_VARIABLE 0
#define AOT_MSG_REPLY_BIT 0x80u
/* Reply to a frame that could not be decoded, so its command is unknown. */
#define AOT_MSG_FRAME_ERROR 0xFFu

/* Feature bits of the HELLO reply (since 1.2). */
#define AOT_FEATURE_PROFILE (1u << 0) /* the model records ticks per executor step (aot build --profile) */
#define AOT_FEATURE_STACK (1u << 1) /* the stack is painted, so STATS reports its peak */
#define AOT_FEATURE_STATE (1u << 2) /* the model keeps operator state between runs; RESET restores it */
#define AOT_FEATURE_FAULT (1u << 3) /* a failing RUN's reply ends with where the model stopped */
#define AOT_FEATURE_TRACE (1u << 4) /* the model can stop after any executor step and return what it wrote (aot build --trace) */

#define AOT_PROFILE_REPLY_HEAD_BYTES 6u
#define AOT_TRACE_REPLY_HEAD_BYTES 7u
#define AOT_TRACE_NOT_STOPPED 0xFFFFu

#endif /* AOT_PROTOCOL_H_ */
