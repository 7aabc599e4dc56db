/*
 * Test firmware for the board tests: speaks a tiny byte protocol over the platform hooks.
 *   'T' -> 'T' + ticks of a fixed workload (u32 LE) + ticks per second (u32 LE) + the
 *          tick counter before the workload (u32 LE)
 *   'C' -> 'C' + ticks of exactly CALIBRATION_INSTRUCTIONS instructions (u32 LE), to
 *          check the board's instructions_per_tick under QEMU -icount
 *   'V' -> 'V' + float32 bits of sum(a[i] * b[i]) over 64 elements, a[i] = i, b[i] = 0.5
 *          (hard-float and, on the M55, MVE code: checks that startup enabled the FPU)
 *   'I' -> 'I' + addresses (u32 LE) of: a placed pool, a placed constant array, an
 *          initialised global, a zeroed global; then their check values (u32 LE each):
 *          initialised global value, zeroed global value, constant[1], pool[0]
 *   'A' -> aot_platform_abort(AOT_ERR_APP_NO_MODEL)
 *   'F' -> a bus fault (load from an unmapped address): the startup's fault handler aborts
 *   'Q' -> 'Q', then main returns
 *   anything else is echoed back.
 * Sends "READY\n" once the host's first byte (any) arrives: pyserial's open() discards
 * whatever is already waiting on a socket, so the board must not speak first.
 */
#include <stdint.h>

#include "aot/platform.h"

/* Named like model-library sections, so the linker-script placement is exercised. */
__attribute__((section(".bss.aot.echo.pool"))) uint32_t echo_pool[256];
__attribute__((section(".rodata.aot.echo.constants"))) const uint32_t echo_constants[4] = {
    0x11111111u, 0x22222222u, 0x33333333u, 0x44444444u};
uint32_t echo_initialised = 0xC0FFEE42u;
uint32_t echo_zeroed;

static void put_u32(uint32_t v) {
  const uint8_t bytes[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                            (uint8_t)(v >> 24)};
  (void)aot_platform_serial_write(bytes, 4);
}

static void put_str(const char* s) {
  while (*s != '\0') {
    (void)aot_platform_serial_write((const uint8_t*)s++, 1);
  }
}

/* A fixed amount of work: the same instruction count every time. */
static __attribute__((noinline)) uint32_t workload(uint32_t n) {
  volatile uint32_t acc = 1u;
  for (uint32_t i = 0; i < n; ++i) {
    acc = acc * 1664525u + 1013904223u;
  }
  return acc;
}

/* Nothing answers here on any MPS2/MPS3 image (vendor system space, above the PPB). */
#define UNMAPPED_ADDRESS 0xF0000000u

#define CALIBRATION_LOOPS 100000u
#define CALIBRATION_INSTRUCTIONS (2u * CALIBRATION_LOOPS) /* subs + bne per loop */

/* Exactly two instructions per iteration whatever the compiler does. */
static __attribute__((noinline)) void calibration_loop(uint32_t n) {
  __asm volatile(
      "1:\n"
      "subs %0, %0, #1\n"
      "bne 1b\n"
      : "+r"(n)
      :
      : "cc");
}

static float dot_a[64];
static float dot_b[64];

/* Written so gcc can vectorise it (MVE on Cortex-M55 at -O2 with GCC 12). */
static __attribute__((noinline)) float dot(const float* a, const float* b, uint32_t n) {
  float acc = 0.0f;
  for (uint32_t i = 0; i < n; ++i) {
    acc += a[i] * b[i];
  }
  return acc;
}

int main(void) {
  if (aot_platform_init() != AOT_OK) {
    aot_platform_abort(AOT_ERR_PLATFORM_INIT_FAILED);
  }
  {
    uint8_t hello;
    size_t got = 0;
    if (aot_platform_serial_read(&hello, 1, &got) != AOT_OK || got != 1u) {
      aot_platform_abort(AOT_ERR_PLATFORM_SERIAL_READ);
    }
  }
  put_str("READY\n");
  for (;;) {
    uint8_t c;
    size_t n = 0;
    if (aot_platform_serial_read(&c, 1, &n) != AOT_OK || n != 1u) {
      aot_platform_abort(AOT_ERR_PLATFORM_SERIAL_READ);
    }
    if (c == 'T') {
      const uint32_t t0 = aot_platform_ticks();
      (void)workload(20000u);
      const uint32_t t1 = aot_platform_ticks();
      put_str("T");
      put_u32(t1 - t0);
      put_u32(aot_platform_ticks_per_second());
      put_u32(t0);
    } else if (c == 'C') {
      const uint32_t t0 = aot_platform_ticks();
      calibration_loop(CALIBRATION_LOOPS);
      const uint32_t t1 = aot_platform_ticks();
      put_str("C");
      put_u32(t1 - t0);
    } else if (c == 'V') {
      for (uint32_t i = 0; i < 64u; ++i) {
        dot_a[i] = (float)i;
        dot_b[i] = 0.5f;
      }
      const float result = dot(dot_a, dot_b, 64u);
      uint32_t bits;
      __builtin_memcpy(&bits, &result, sizeof bits);
      put_str("V");
      put_u32(bits);
    } else if (c == 'I') {
      echo_pool[0] += 7u;
      put_str("I");
      put_u32((uint32_t)(uintptr_t)echo_pool);
      put_u32((uint32_t)(uintptr_t)echo_constants);
      put_u32((uint32_t)(uintptr_t)&echo_initialised);
      put_u32((uint32_t)(uintptr_t)&echo_zeroed);
      put_u32(echo_initialised);
      put_u32(echo_zeroed);
      put_u32(echo_constants[1]);
      put_u32(echo_pool[0]);
    } else if (c == 'A') {
      aot_platform_abort(AOT_ERR_APP_NO_MODEL);
    } else if (c == 'F') {
      (void)*(volatile const uint32_t*)UNMAPPED_ADDRESS;
    } else if (c == 'Q') {
      put_str("Q");
      return 0;
    } else {
      (void)aot_platform_serial_write(&c, 1);
    }
  }
}
