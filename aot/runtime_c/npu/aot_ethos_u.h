/*
 * aot's glue to Arm's Ethos-U core driver (ethosu_driver.h, supplied by the user).
 *
 * Generated model code calls aot_ethosu_invoke() once per NPU subgraph Vela compiled;
 * the first call initialises the driver. Base addresses follow Vela's regions: 0 the
 * read-only data (weights), 1 the scratch arena, 2 the fast-scratch arena (the same arena
 * unless Vela spills).
 */
#ifndef AOT_ETHOS_U_H_
#define AOT_ETHOS_U_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs one command stream; returns 0 (AOT_OK) or an aot error code. */
int32_t aot_ethosu_invoke(const uint8_t *command_stream, size_t command_stream_size,
                          const uint8_t *read_only, size_t read_only_size, uint8_t *arena,
                          size_t arena_size);

/* The driver's own result of the last failed call (0 when none failed), for debugging. */
int aot_ethosu_last_driver_error(void);

#ifdef __cplusplus
}
#endif

#endif /* AOT_ETHOS_U_H_ */
