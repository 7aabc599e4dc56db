/* Weak defaults for the optional platform hooks; a port overrides any of them. */
#include "aot/platform.h"

#include <string.h>

AOT_WEAK aot_error_t aot_platform_init(void) {
  return AOT_OK;
}

AOT_WEAK void aot_platform_abort(aot_error_t error) {
  /* volatile so a debugger can read the code; the loop is where it stops. */
  volatile aot_error_t last_error = error;
  (void)last_error;
  for (;;) {
  }
}

AOT_WEAK uint32_t aot_platform_ticks(void) {
  return 0u;
}

AOT_WEAK uint32_t aot_platform_ticks_per_second(void) {
  return 0u;
}

AOT_WEAK void aot_platform_copy(void* dst, const void* src, size_t n) {
  memcpy(dst, src, n);
}
