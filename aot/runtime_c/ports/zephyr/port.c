/*
 * Zephyr port: the serial line is the devicetree's `zephyr,console` UART, used with the
 * polling API (no interrupts, no console driver: prj.conf turns the console off so only
 * protocol bytes go out); ticks are the kernel's hardware cycle counter.
 *
 * k_cycle_get_32() counts at sys_clock_hw_cycles_per_sec(): the CPU clock on boards
 * whose system timer is SysTick (STM32 Nucleo/Discovery), 32768 Hz on nRF (RTC).
 * The board YAML's `ticks` entry documents which.
 */
#include <zephyr/device.h>
#include <zephyr/devicetree.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/irq.h>
#include <zephyr/kernel.h>

#include "aot/platform.h"

#if DT_HAS_CHOSEN(aot_serial)
#define AOT_SERIAL_NODE DT_CHOSEN(aot_serial) /* a board overlay may pick another UART */
#else
#define AOT_SERIAL_NODE DT_CHOSEN(zephyr_console)
#endif

static const struct device* const serial_dev = DEVICE_DT_GET(AOT_SERIAL_NODE);

aot_error_t aot_platform_init(void) {
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
  return k_cycle_get_32();
}

uint32_t aot_platform_ticks_per_second(void) {
  return (uint32_t)sys_clock_hw_cycles_per_sec();
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
