/*
 * The serial benchmark server: receives inputs, runs the model, sends outputs and
 * measurements over the framed protocol of docs/protocol.md.
 *
 * Build-time configuration (all optional -D defines):
 *   AOT_APP_IO_BYTES      size of the one static I/O arena holding every input and
 *                         output tensor, each at a 16-byte aligned offset (default 4096).
 *                         The project generator sets it from metadata.json; HELLO
 *                         reports both this size and what the model needs.
 *   AOT_APP_MAX_TENSORS   maximum inputs and maximum outputs (default 16).
 *   AOT_APP_MAX_PAYLOAD   largest frame payload in bytes, 64..65535 (default 512);
 *                         costs about 2x this in RAM. Larger tensors move in chunks.
 *   AOT_APP_MAX_REPEATS   most model runs one RUN request may ask for, 1..2^32-1
 *                         (default 10000). A RUN cannot be interrupted, so this bounds
 *                         how long the device stops listening; HELLO announces it.
 */
#ifndef AOT_SERVER_H_
#define AOT_SERVER_H_

#include <stddef.h>

#include "aot/error.h"
#include "aot/model.h"

/* Writes all len bytes of a reply (several frames never interleave); returns AOT_OK or
 * the error that stops the server. `context` is what aot_server_init was given. */
typedef aot_error_t (*aot_server_write_fn)(void* context, const uint8_t* data, size_t len);

/* Validates the model and lays out the I/O arena. A setup failure (arena too small,
 * too many tensors) is returned and also kept: the server still answers HELLO, INFO,
 * STATS and QUIT, reporting it, so the host can say what to rebuild.
 * Replies go through `write` (NULL: aot_platform_serial_write), so a port or a test
 * can route them (a second UART, USB, a buffer) without the server knowing. */
aot_error_t aot_server_init(const struct aot_model_desc* model, aot_server_write_fn write,
                            void* context);

/* Processes received bytes; replies go out through the write callback.
 * Sets *quit to 1 after answering QUIT (remaining bytes are ignored).
 * Returns AOT_OK or the platform error that stopped a reply. */
aot_error_t aot_server_feed(const uint8_t* data, size_t len, int* quit);

/* Reads the serial port and feeds the server until QUIT (returns AOT_OK) or a
 * platform error (returned, e.g. AOT_ERR_PLATFORM_SERIAL_CLOSED). */
aot_error_t aot_server_serve(void);

#endif /* AOT_SERVER_H_ */
