/*
 * Host port: the serial line is stdin/stdout (raw bytes, unbuffered POSIX read/write),
 * ticks are CLOCK_MONOTONIC nanoseconds (wrapping at 2^32, about 4.3 s per run).
 * The host executable thus speaks the device protocol over pipes.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "aot/platform.h"

aot_error_t aot_platform_init(void) {
  /* stdio is not used for the protocol, but keep stderr diagnostics unbuffered. */
  setvbuf(stderr, NULL, _IONBF, 0);
  /* A host that stops reading must give a write error (reported), not kill us silently. */
  signal(SIGPIPE, SIG_IGN);
  return AOT_OK;
}

void aot_platform_abort(aot_error_t error) {
  if (error == AOT_ERR_PLATFORM_SERIAL_CLOSED) {
    /* The host closed the pipe without QUIT: not a crash, but not a clean end either. */
    fprintf(stderr, "aot: serial stream closed without QUIT\n");
  } else {
    fprintf(stderr, "aot: abort: error 0x%04x\n", (unsigned)error);
  }
  exit(1);
}

uint32_t aot_platform_ticks(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint32_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

uint32_t aot_platform_ticks_per_second(void) {
  return 1000000000u;
}

aot_error_t aot_platform_serial_read(uint8_t* buf, size_t capacity, size_t* n_read) {
  for (;;) {
    const ssize_t n = read(STDIN_FILENO, buf, capacity);
    if (n > 0) {
      *n_read = (size_t)n;
      return AOT_OK;
    }
    if (n == 0) {
      return AOT_ERR_PLATFORM_SERIAL_CLOSED;
    }
    if (errno != EINTR) {
      return AOT_ERR_PLATFORM_SERIAL_READ;
    }
  }
}

aot_error_t aot_platform_serial_write(const uint8_t* data, size_t len) {
  while (len > 0u) {
    const ssize_t n = write(STDOUT_FILENO, data, len);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return AOT_ERR_PLATFORM_SERIAL_WRITE;
    }
    data += n;
    len -= (size_t)n;
  }
  return AOT_OK;
}
