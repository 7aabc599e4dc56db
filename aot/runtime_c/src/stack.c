/* Stack painting; see stack.h for how the bounds are chosen. */
#include "stack.h"

#include <stddef.h>

#ifndef AOT_APP_STACK_PAINT_BYTES
#define AOT_APP_STACK_PAINT_BYTES 0u
#endif

/* Left unpainted below the painting function's local: room for its own spills and for
 * the red zone a leaf function may use below the stack pointer (128 bytes in the
 * x86-64 System V and Apple arm64 ABIs; none on Cortex-M). Also the measurement floor. */
#if defined(__x86_64__) || (defined(__aarch64__) && defined(__APPLE__))
#define AOT_STACK_MARGIN 160u
#else
#define AOT_STACK_MARGIN 32u
#endif
#define AOT_STACK_PATTERN 0xA5C35A3Cu

/* Weak: a link without it resolves the address to NULL instead of failing. */
extern uint32_t aot_stack_limit[] __attribute__((weak));

static uintptr_t g_reference; /* stack pointer of aot_stack_paint's caller */
static uintptr_t g_low;       /* lowest painted word */
static uintptr_t g_high;      /* one past the highest painted word */

/* noinline so the local lives in a frame just below the caller's. */
static __attribute__((noinline)) uintptr_t current_sp(void) {
  volatile uint32_t marker = 0;
  return (uintptr_t)&marker;
}

void __attribute__((noinline)) aot_stack_paint(void) {
  volatile uint32_t marker = 0;
  const uintptr_t here = (uintptr_t)&marker;
  g_reference = here;
  if (here < AOT_STACK_MARGIN) {
    return;
  }
  const uintptr_t high = (here - AOT_STACK_MARGIN) & ~(uintptr_t)3u;
  uintptr_t low = 0;
  if (aot_stack_limit != NULL) {
    low = ((uintptr_t)aot_stack_limit + 3u) & ~(uintptr_t)3u;
  } else if (AOT_APP_STACK_PAINT_BYTES > 0u && high > AOT_APP_STACK_PAINT_BYTES) {
    low = high - ((uintptr_t)AOT_APP_STACK_PAINT_BYTES & ~(uintptr_t)3u);
  }
  if (low == 0u || low >= high) {
    return;
  }
  /* Top-down, so a host OS grows its stack mapping page by page. */
  for (volatile uint32_t* p = (volatile uint32_t*)high; (uintptr_t)p > low;) {
    *--p = AOT_STACK_PATTERN;
  }
  g_low = low;
  g_high = high;
}

uint32_t aot_stack_painted_bytes(void) {
  return (uint32_t)(g_high - g_low);
}

uint32_t aot_stack_peak_bytes(void) {
  if (g_high == g_low) {
    return 0u;
  }
  const volatile uint32_t* p = (const volatile uint32_t*)g_low;
  while ((uintptr_t)p < g_high && *p == AOT_STACK_PATTERN) {
    ++p;
  }
  return (uint32_t)(g_reference - (uintptr_t)p);
}

uint32_t aot_stack_depth_here(void) {
  const uintptr_t sp = current_sp();
  return sp < g_reference ? (uint32_t)(g_reference - sp) : 0u;
}
