/*
 * Zephyr port: the serial line is the devicetree's `zephyr,console` UART, used with the
 * polling API (no interrupts, no console driver: prj.conf turns the console off so only
 * protocol bytes go out).
 *
 * Ticks, from the first clock the project's defines (aot.project.zephyr) name:
 *   AOT_TICKS_COUNTER_ADDR  a board counter (the MPS2/MPS3 FPGAIO counter, the one the
 *                           cmsis port reads): under QEMU -icount it counts instructions,
 *                           so both ports report the same figures;
 *   AOT_TICKS_DWT           the core's DWT cycle counter (M3/M4/M7/M33/M55) at
 *                           AOT_CLOCK_HZ: CPU cycles on hardware, checked to run at init;
 *   otherwise               k_cycle_get_32() at sys_clock_hw_cycles_per_sec(), the system
 *                           timer (the CPU clock with SysTick, 32768 Hz on nRF's RTC).
 * Zephyr's own idea of the SysTick rate need not be the emulator's (mps3_an547: Zephyr
 * says 25 MHz, QEMU runs it at 32 MHz), hence the board counter first.
 */
#include <zephyr/device.h>
#include <zephyr/devicetree.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/irq.h>
#include <zephyr/kernel.h>

#include <stdbool.h>

#include "aot/platform.h"

#if DT_HAS_CHOSEN(aot_serial)
#define AOT_SERIAL_NODE DT_CHOSEN(aot_serial) /* a board overlay may pick another UART */
#else
#define AOT_SERIAL_NODE DT_CHOSEN(zephyr_console)
#endif

static const struct device* const serial_dev = DEVICE_DT_GET(AOT_SERIAL_NODE);

#if defined(AOT_TICKS_COUNTER_ADDR) && defined(AOT_TICKS_PER_SECOND)
#define BOARD_COUNTER (*(volatile const uint32_t*)(uintptr_t)(AOT_TICKS_COUNTER_ADDR))
#elif defined(AOT_TICKS_DWT) && defined(AOT_CLOCK_HZ)
/* ARMv7-M / ARMv8-M debug registers (Architecture Reference Manuals, C1.8 / B13). */
#define DEMCR (*(volatile uint32_t*)0xE000EDFCu)
#define DEMCR_TRCENA (1u << 24)
#define DWT_CTRL (*(volatile uint32_t*)0xE0001000u)
#define DWT_CTRL_CYCCNTENA 1u
#define DWT_CTRL_NOCYCCNT (1u << 25)
#define DWT_CYCCNT (*(volatile uint32_t*)0xE0001004u)
#define DWT_LAR (*(volatile uint32_t*)0xE0001FB0u) /* Cortex-M7: write-locked until keyed */
#define DWT_LAR_KEY 0xC5ACCE55u
static bool dwt_running;

/* Starts the cycle counter; false where the core has none or it does not advance. */
static bool dwt_start(void) {
  DEMCR |= DEMCR_TRCENA;
  DWT_LAR = DWT_LAR_KEY;
  if ((DWT_CTRL & DWT_CTRL_NOCYCCNT) != 0u) {
    return false;
  }
  DWT_CYCCNT = 0u;
  DWT_CTRL |= DWT_CTRL_CYCCNTENA;
  const uint32_t first = DWT_CYCCNT;
  for (volatile int spin = 0; spin < 16; ++spin) {
  }
  return DWT_CYCCNT != first;
}
#endif

aot_error_t aot_platform_init(void) {
#if !defined(BOARD_COUNTER) && defined(AOT_TICKS_DWT) && defined(AOT_CLOCK_HZ)
  dwt_running = dwt_start();
#endif
  return device_is_ready(serial_dev) ? AOT_OK : AOT_ERR_PLATFORM_INIT_FAILED;
}

static void put_text(const char* text) {
  while (*text != '\0') {
    uart_poll_out(serial_dev, (unsigned char)*text++);
  }
}

/* Same line as the cmsdk port: "\0aot: abort 0x%04x\n\0", zero bytes delimiting it as a
 * frame the host cannot decode but can show. Then idle forever with interrupts off. */
void aot_platform_abort(aot_error_t error) {
  static const char hex[] = "0123456789abcdef";
  char code[7] = {'0', 'x', 0, 0, 0, 0, '\0'};
  for (int i = 0; i < 4; ++i) {
    code[2 + i] = hex[((unsigned)error >> (12 - 4 * i)) & 0xFu];
  }
  (void)irq_lock();
  uart_poll_out(serial_dev, 0u);
  put_text("aot: abort ");
  put_text(code);
  put_text("\n");
  uart_poll_out(serial_dev, 0u);
  for (;;) {
    k_cpu_idle();
  }
}

uint32_t aot_platform_ticks(void) {
#if defined(BOARD_COUNTER)
  return BOARD_COUNTER;
#elif defined(AOT_TICKS_DWT) && defined(AOT_CLOCK_HZ)
  if (dwt_running) {
    return DWT_CYCCNT;
  }
  return k_cycle_get_32();
#else
  return k_cycle_get_32();
#endif
}

uint32_t aot_platform_ticks_per_second(void) {
#if defined(BOARD_COUNTER)
  return AOT_TICKS_PER_SECOND;
#elif defined(AOT_TICKS_DWT) && defined(AOT_CLOCK_HZ)
  return dwt_running ? (uint32_t)(AOT_CLOCK_HZ) : (uint32_t)sys_clock_hw_cycles_per_sec();
#else
  return (uint32_t)sys_clock_hw_cycles_per_sec();
#endif
}

aot_error_t aot_platform_serial_read(uint8_t* buf, size_t capacity, size_t* n_read) {
  if (capacity == 0u) {
    *n_read = 0u;
    return AOT_OK;
  }
  unsigned char c;
  int rc;
  while ((rc = uart_poll_in(serial_dev, &c)) == -1) {
    /* -1: nothing received yet; the only thread, so spinning costs nothing else. */
  }
  if (rc != 0) {
    return AOT_ERR_PLATFORM_SERIAL_READ; /* -ENOSYS, -EBUSY or a line error */
  }
  buf[0] = c;
  *n_read = 1u;
  return AOT_OK;
}

aot_error_t aot_platform_serial_write(const uint8_t* data, size_t len) {
  for (size_t i = 0; i < len; ++i) {
    uart_poll_out(serial_dev, data[i]);
  }
  return AOT_OK;
}
