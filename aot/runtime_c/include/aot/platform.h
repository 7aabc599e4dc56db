/*
 * The port: everything the aot runtime needs from a board, in six hooks.
 *
 * A port is one file, aot/runtime_c/ports/<name>/port.c. It must define the two serial
 * hooks; the other four have weak defaults in aot/runtime_c/src/platform_defaults.c
 * (init does nothing, abort spins, no timer: ticks and ticks-per-second are 0).
 * One more optional hook, aot_platform_copy, serves models built with --allow-copies.
 *
 * Stack bounds are not a hook: a linker script may define the symbol
 * `aot_stack_limit` (lowest address of the main stack) and the application paints
 * and measures the stack down to it; see docs/protocol.md (STATS).
 */
#ifndef AOT_PLATFORM_H_
#define AOT_PLATFORM_H_

#include <stddef.h>
#include <stdint.h>

#include "aot/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define AOT_NORETURN __attribute__((noreturn))
#define AOT_WEAK __attribute__((weak))
#else
#define AOT_NORETURN
#define AOT_WEAK
#endif

/* Board bring-up: clocks, UART, timer. Called once, first thing in main(). Optional. */
aot_error_t aot_platform_init(void);

/* Stops the program after an unrecoverable error. Never returns. Only the platform
 * aborts; the rest of the runtime returns error codes. Optional (default: spin). */
AOT_NORETURN void aot_platform_abort(aot_error_t error);

/* Free-running tick counter, wrapping modulo 2^32. One inference must be shorter than
 * 2^32 ticks; the server accumulates per-run differences. Optional (default: 0). */
uint32_t aot_platform_ticks(void);

/* Frequency of aot_platform_ticks(); 0 means "no timer" (timing not measured). Optional. */
uint32_t aot_platform_ticks_per_second(void);

/* Blocks until at least one byte arrives, stores 1..capacity bytes in buf and sets
 * *n_read. Returns AOT_ERR_PLATFORM_SERIAL_CLOSED when the stream ended, or
 * AOT_ERR_PLATFORM_SERIAL_READ. A UART port may return exactly one byte. Required. */
aot_error_t aot_platform_serial_read(uint8_t* buf, size_t capacity, size_t* n_read);

/* Writes all len bytes, blocking. Returns AOT_OK or AOT_ERR_PLATFORM_SERIAL_WRITE. Required. */
aot_error_t aot_platform_serial_write(const uint8_t* data, size_t len);

/* Copies n bytes from src to dst; the regions do not overlap. Called by the copy steps
 * of a model built with --allow-copies, which move a tensor between pools that not every
 * target reaches (CPU memory, an accelerator's SRAM). A port with a DMA engine that
 * reaches both pools may use it; it must return once the bytes are in place. Optional
 * (default: memcpy, which needs the CPU to reach both pools). */
void aot_platform_copy(void* dst, const void* src, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* AOT_PLATFORM_H_ */
