/*
 * Port for Arm MPS2/MPS3 FPGA images (and their QEMU models): CMSDK APB UART, polled,
 * for the serial line; for ticks the core's DWT cycle counter where it runs (the FPGA),
 * else the FPGAIO free-running COUNTER (QEMU, which models no DWT).
 *
 * Addresses come from -D macros generated from the board YAML (aot.boards.Board.c_defines):
 *   AOT_UART_BASE, AOT_UART_BAUD, AOT_UART_RX_IRQ, AOT_CLOCK_HZ,
 *   AOT_TICKS_COUNTER_ADDR, AOT_TICKS_PER_SECOND.
 *
 * Optional: AOT_TICKS_INSTRUCTIONS_PER_TICK (boards whose ticks count instructions, i.e.
 * QEMU -icount) makes every tick read phase-locked, see phase_locked_ticks().
 *
 * Waiting for input uses WFI with interrupts masked (PRIMASK=1): the UART's RX interrupt
 * only wakes the core, no handler runs, and the application keeps running with
 * interrupts masked. Under QEMU `-icount shift=0,sleep=off` the instruction count then
 * does not depend on when the host sends its bytes; with the phase-locked reads, two runs
 * give identical tick differences (docs/boards.md, "Instructions, not cycles").
 */
#include <stddef.h>
#include <stdint.h>

#include "aot/platform.h"

#if !defined(AOT_UART_BASE) || !defined(AOT_UART_RX_IRQ) || !defined(AOT_CLOCK_HZ)
#error "cmsdk port: define AOT_UART_BASE, AOT_UART_RX_IRQ and AOT_CLOCK_HZ (from board data)"
#endif
#if !defined(AOT_TICKS_COUNTER_ADDR) || !defined(AOT_TICKS_PER_SECOND)
#error "cmsdk port: define AOT_TICKS_COUNTER_ADDR and AOT_TICKS_PER_SECOND (from board data)"
#endif
#ifndef AOT_UART_BAUD
#define AOT_UART_BAUD 115200u
#endif

/* CMSDK APB UART registers (Arm Cortex-M System Design Kit TRM, section 4.3). */
#define UART_REG(offset) (*(volatile uint32_t*)((uintptr_t)(AOT_UART_BASE) + (offset)))
#define UART_DATA UART_REG(0x00u)
#define UART_STATE UART_REG(0x04u)
#define UART_CTRL UART_REG(0x08u)
#define UART_INTSTATUS UART_REG(0x0Cu)
#define UART_BAUDDIV UART_REG(0x10u)

#define UART_STATE_TX_FULL (1u << 0)
#define UART_STATE_RX_FULL (1u << 1)
#define UART_CTRL_TX_EN (1u << 0)
#define UART_CTRL_RX_EN (1u << 1)
#define UART_CTRL_RX_INT_EN (1u << 3)
#define UART_INT_RX (1u << 1)
#define UART_MIN_BAUDDIV 16u /* the TRM's minimum divider */

/* NVIC: enable the UART RX line (a wake-up source for WFI) and clear it when pending. */
#define NVIC_ISER(n) (*(volatile uint32_t*)(0xE000E100u + 4u * (n)))
#define NVIC_ICER(n) (*(volatile uint32_t*)(0xE000E180u + 4u * (n)))
#define NVIC_ICPR(n) (*(volatile uint32_t*)(0xE000E280u + 4u * (n)))
#define RX_IRQ_WORD ((AOT_UART_RX_IRQ) / 32u)
#define RX_IRQ_BIT (1u << ((AOT_UART_RX_IRQ) % 32u))

#define TICKS_COUNTER (*(volatile const uint32_t*)(uintptr_t)(AOT_TICKS_COUNTER_ADDR))

/* Same layout as in aot/project/templates/cmsis/startup/startup.c; weak so the port also
 * links into a project with another startup file. */
struct aot_fault_info {
  uint32_t ipsr;
  uint32_t pc;
  uint32_t lr;
  uint32_t cfsr;
  uint32_t hfsr;
  uint32_t fault_address;
};
extern volatile struct aot_fault_info aot_last_fault __attribute__((weak));

#ifdef AOT_TICKS_INSTRUCTIONS_PER_TICK
/*
 * Phase-locked counter reads for QEMU -icount (boards whose ticks are instructions).
 *
 * QEMU anchors the COUNTER's ticks to a virtual time that is not a fixed number of
 * instructions away from the guest's (the device reset; and, as observed with QEMU 7.2,
 * sometimes a wake-up from WFI), so a plain read has a random sub-tick phase and
 * differences jitter by one tick from run to run. This loop reads the counter every N+1
 * instructions (N instructions per tick): each read lands one instruction later in the
 * tick, and the read that sees the counter advance by 2 sits exactly on a tick edge.
 * The value returned is that read minus all loop iterations spent in such reads so far
 * (each iteration is one tick plus one instruction), so the time spent locking is not
 * counted: the difference of two calls with only computation in between is
 * ceil(instructions between them / N) and the same in every run. Costs up to N*(N+1)
 * instructions per call; bounded on real hardware, where the edge is never seen.
 */
#define PHASE_LOOP_FIXED 8u /* instructions in the loop body besides the padding nops */
#if AOT_TICKS_INSTRUCTIONS_PER_TICK + 1 <= PHASE_LOOP_FIXED
#error "AOT_TICKS_INSTRUCTIONS_PER_TICK too small for the phase lock loop"
#endif
#define PHASE_LOOP_BUDGET (2u * (AOT_TICKS_INSTRUCTIONS_PER_TICK) + 2u)

static uint32_t g_lock_iterations; /* all iterations so far; wraps like the counter */

static uint32_t phase_locked_ticks(void) {
  uint32_t previous = TICKS_COUNTER;
  uint32_t current;
  uint32_t delta;
  uint32_t budget = PHASE_LOOP_BUDGET;
  __asm volatile(
      "1:\n"
      "ldr %[cur], [%[counter]]\n"      /* 1 */
      "subs %[delta], %[cur], %[prev]\n" /* 2 */
      "mov %[prev], %[cur]\n"           /* 3 */
      "cmp %[delta], #2\n"              /* 4 */
      "beq 2f\n"                        /* 5 (not taken) */
      "subs %[budget], %[budget], #1\n" /* 6 */
      "beq 2f\n"                        /* 7 (not taken) */
      ".rept %c[pad]\n"
      "nop\n"
      ".endr\n"
      "b 1b\n" /* 8 */
      "2:\n"
      : [cur] "=&r"(current), [delta] "=&r"(delta), [prev] "+r"(previous),
        [budget] "+r"(budget)
      : [counter] "r"((uintptr_t)(AOT_TICKS_COUNTER_ADDR)),
        [pad] "i"((AOT_TICKS_INSTRUCTIONS_PER_TICK) + 1 - PHASE_LOOP_FIXED)
      : "cc", "memory");
  (void)delta;
  g_lock_iterations += PHASE_LOOP_BUDGET - budget;
  return current - g_lock_iterations;
}
#endif

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__) || \
    defined(__ARM_ARCH_8_1M_MAIN__)
/* On the FPGA the core's DWT cycle counter times in CPU cycles. QEMU models no DWT (its
 * registers read as zero), so there CYCCNT does not advance and the FPGAIO counter, which
 * -icount turns into an instruction count, stays the clock. ARMv7-M/ARMv8-M ARM C1.8. */
#define DEMCR (*(volatile uint32_t*)0xE000EDFCu)
#define DWT_CTRL (*(volatile uint32_t*)0xE0001000u)
#define DWT_CYCCNT (*(volatile uint32_t*)0xE0001004u)
#define DWT_LAR (*(volatile uint32_t*)0xE0001FB0u) /* Cortex-M7: locked until keyed */
static int g_dwt_running;

static void dwt_start(void) {
  DEMCR |= 1u << 24;       /* TRCENA */
  DWT_LAR = 0xC5ACCE55u;   /* the CoreSight unlock key */
  if ((DWT_CTRL & (1u << 25)) != 0u) {
    return; /* NOCYCCNT: no cycle counter */
  }
  DWT_CYCCNT = 0u;
  DWT_CTRL |= 1u; /* CYCCNTENA */
  const uint32_t first = DWT_CYCCNT;
  for (volatile int spin = 0; spin < 16; ++spin) {
  }
  g_dwt_running = DWT_CYCCNT != first;
}
#else
#define g_dwt_running 0
#define DWT_CYCCNT 0u
static void dwt_start(void) {}
#endif

aot_error_t aot_platform_init(void) {
  dwt_start();
  uint32_t div = (uint32_t)(AOT_CLOCK_HZ) / (uint32_t)(AOT_UART_BAUD);
  UART_BAUDDIV = div < UART_MIN_BAUDDIV ? UART_MIN_BAUDDIV : div;
  UART_CTRL = UART_CTRL_TX_EN | UART_CTRL_RX_EN | UART_CTRL_RX_INT_EN;
  __asm volatile("cpsid i" ::: "memory"); /* interrupts only wake WFI, see above */
  NVIC_ICPR(RX_IRQ_WORD) = RX_IRQ_BIT;
  NVIC_ISER(RX_IRQ_WORD) = RX_IRQ_BIT;
#ifdef AOT_TICKS_INSTRUCTIONS_PER_TICK
  /* The first reads after reset can see the counter's anchor move; settle it here. */
  (void)phase_locked_ticks();
#endif
  return AOT_OK;
}

static void uart_put(uint8_t byte) {
  while (UART_STATE & UART_STATE_TX_FULL) {
  }
  UART_DATA = byte;
}

static void uart_puts(const char* text) {
  while (*text != '\0') {
    uart_put((uint8_t)*text++);
  }
}

static void uart_put_hex(uint32_t value, unsigned digits) {
  static const char hex[] = "0123456789abcdef";
  for (unsigned i = digits; i > 0u; --i) {
    uart_put((uint8_t)hex[(value >> (4u * (i - 1u))) & 0xFu]);
  }
}

/* Prints "\0aot: abort 0x0305 ...\n\0": the zero bytes are protocol frame delimiters,
 * so the host's frame reader sees the text as one undecodable frame it can show as
 * is, and a human on a terminal reads the line. Then sleeps forever: MPS2/MPS3 (and
 * QEMU's models of them) have no power-off register and semihosting is not used. */
void aot_platform_abort(aot_error_t error) {
  __asm volatile("cpsid i" ::: "memory");
  uart_put(0u);
  uart_puts("aot: abort 0x");
  uart_put_hex((uint32_t)error, 4u);
  if (&aot_last_fault != NULL && aot_last_fault.ipsr != 0u) {
    uart_puts(" exception ");
    uart_put_hex(aot_last_fault.ipsr, 2u);
    uart_puts(" pc 0x");
    uart_put_hex(aot_last_fault.pc, 8u);
    uart_puts(" cfsr 0x");
    uart_put_hex(aot_last_fault.cfsr, 8u);
    uart_puts(" address 0x");
    uart_put_hex(aot_last_fault.fault_address, 8u);
  }
  uart_puts("\n");
  uart_put(0u);
  NVIC_ICER(RX_IRQ_WORD) = RX_IRQ_BIT; /* nothing may wake us any more */
  for (;;) {
    __asm volatile("wfi");
  }
}

uint32_t aot_platform_ticks(void) {
  if (g_dwt_running) {
    return DWT_CYCCNT;
  }
#ifdef AOT_TICKS_INSTRUCTIONS_PER_TICK
  return phase_locked_ticks();
#else
  return TICKS_COUNTER;
#endif
}

uint32_t aot_platform_ticks_per_second(void) {
  return g_dwt_running ? (uint32_t)(AOT_CLOCK_HZ) : (uint32_t)(AOT_TICKS_PER_SECOND);
}

aot_error_t aot_platform_serial_read(uint8_t* buf, size_t capacity, size_t* n_read) {
  if (capacity == 0u) {
    *n_read = 0u;
    return AOT_OK;
  }
  /* Always exactly one WFI before the byte is taken, whether it is already waiting or
   * still to come: the instruction count, hence the tick phase, must not depend on how
   * fast the host sends. This works because every byte leaves the IRQ pending (the
   * interrupt is cleared before DATA is read, see below), so WFI returns at once when
   * the byte is already there. */
  do {
    __asm volatile("wfi" ::: "memory");
  } while ((UART_STATE & UART_STATE_RX_FULL) == 0u);
  /* Clear first, then read: the next byte can only arrive once DATA is read, and its
   * interrupt then stays pending for the next call. */
  UART_INTSTATUS = UART_INT_RX; /* write-one-to-clear */
  NVIC_ICPR(RX_IRQ_WORD) = RX_IRQ_BIT;
  buf[0] = (uint8_t)UART_DATA;
  *n_read = 1u;
  return AOT_OK;
}

aot_error_t aot_platform_serial_write(const uint8_t* data, size_t len) {
  for (size_t i = 0; i < len; ++i) {
    uart_put(data[i]);
  }
  return AOT_OK;
}
