/*
 * Bare-metal startup for Arm Cortex-M (v7-M, v8-M, v8.1-M) built with arm-none-eabi-gcc.
 *
 * Reset_Handler enables the FPU/MVE coprocessors (before any C that may use them),
 * sets the v8-M stack limit, copies initialised sections and zeroes NOLOAD ones through
 * the tables the generated linker script emits, runs C++/constructor init, then main().
 * Faults end in aot_platform_abort(AOT_FAULT_ERROR); aot_last_fault keeps the
 * fault registers for the port to print and for a debugger.
 */
#include <stdint.h>
#include <stdlib.h>

#include "aot/platform.h"

/* AOT_ERR_PLATFORM_FAULT (0x0305) is not in aot/error.h yet; override with -D if the
 * enum gets another value. */
#ifndef AOT_FAULT_ERROR
#define AOT_FAULT_ERROR ((aot_error_t)0x0305)
#endif

#ifndef AOT_NUM_IRQS
#define AOT_NUM_IRQS 96 /* covers SSE-200/SSE-300 expansion interrupts */
#endif

/* From the generated linker script. */
extern uint32_t __aot_stack_top[];
extern uint32_t aot_stack_limit[];
extern const uint32_t __aot_copy_table_start[];
extern const uint32_t __aot_copy_table_end[];
extern const uint32_t __aot_zero_table_start[];
extern const uint32_t __aot_zero_table_end[];

extern int main(void);
extern void __libc_init_array(void);

/* Architectural System Control Block registers (same address on every M profile). */
#define SCB_VTOR (*(volatile uint32_t*)0xE000ED08u)
#define SCB_CFSR (*(volatile uint32_t*)0xE000ED28u)
#define SCB_HFSR (*(volatile uint32_t*)0xE000ED2Cu)
#define SCB_MMFAR (*(volatile uint32_t*)0xE000ED34u)
#define SCB_BFAR (*(volatile uint32_t*)0xE000ED38u)

/* Filled by the fault handler before it aborts; read by ports and debuggers. */
struct aot_fault_info {
  uint32_t ipsr; /* exception number: 3 HardFault, 4 MemManage, 5 BusFault, 6 Usage, 7 Secure */
  uint32_t pc;   /* stacked PC of the faulting instruction */
  uint32_t lr;
  uint32_t cfsr;
  uint32_t hfsr;
  uint32_t fault_address; /* BFAR or MMFAR when valid, else 0 */
};
volatile struct aot_fault_info aot_last_fault;

void Reset_Handler(void);
void aot_reset_c(void);
void aot_fault_c(const uint32_t* frame, uint32_t ipsr);
void Fault_Handler(void);
void Default_Handler(void);

/* Weak aliases so an application may define any handler by its CMSIS name. */
#define AOT_WEAK_ALIAS(name, target) void name(void) __attribute__((weak, alias(#target)))
AOT_WEAK_ALIAS(NMI_Handler, Fault_Handler);
AOT_WEAK_ALIAS(HardFault_Handler, Fault_Handler);
AOT_WEAK_ALIAS(MemManage_Handler, Fault_Handler);
AOT_WEAK_ALIAS(BusFault_Handler, Fault_Handler);
AOT_WEAK_ALIAS(UsageFault_Handler, Fault_Handler);
AOT_WEAK_ALIAS(SecureFault_Handler, Fault_Handler);
AOT_WEAK_ALIAS(SVC_Handler, Default_Handler);
AOT_WEAK_ALIAS(DebugMon_Handler, Default_Handler);
AOT_WEAK_ALIAS(PendSV_Handler, Default_Handler);
AOT_WEAK_ALIAS(SysTick_Handler, Default_Handler);

typedef void (*aot_vector_t)(void);

/* Placed first in the boot region by the linker script (.vectors). */
__attribute__((section(".vectors"), used)) const aot_vector_t aot_vector_table[16 + AOT_NUM_IRQS] = {
    (aot_vector_t)__aot_stack_top,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    SecureFault_Handler, /* reserved before v8-M */
    0,
    0,
    0,
    SVC_Handler,
    DebugMon_Handler,
    0,
    PendSV_Handler,
    SysTick_Handler,
    /* IRQs: Default_Handler (filled below by the range designator). */
    [16 ... 16 + AOT_NUM_IRQS - 1] = Default_Handler,
};

/* Naked: no C may run before CPACR enables the FPU, since gcc may emit FP or MVE
 * instructions (e.g. vectorised copies) in any C function. */
__attribute__((naked, noreturn)) void Reset_Handler(void) {
  __asm volatile(
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
      "ldr r0, =0xE000ED88\n" /* CPACR: full access to CP10 and CP11 */
      "ldr r1, [r0]\n"
      "orr r1, r1, #0x00F00000\n"
      "str r1, [r0]\n"
      "dsb\n"
      "isb\n"
#endif
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
      "ldr r0, =aot_stack_limit\n" /* a stack overflow now faults instead of corrupting */
      "msr msplim, r0\n"
#endif
      "bl aot_reset_c\n"
      "b .\n"
      ".ltorg\n");
}

void aot_reset_c(void) {
  /* VTOR may reset to another alias of the boot memory (e.g. SSE-300). */
  SCB_VTOR = (uint32_t)(uintptr_t)aot_vector_table;

  /* Rows of {load address, run address, bytes}. */
  for (const uint32_t* row = __aot_copy_table_start; row < __aot_copy_table_end; row += 3) {
    const volatile uint32_t* src = (const volatile uint32_t*)row[0];
    volatile uint32_t* dst = (volatile uint32_t*)row[1];
    for (uint32_t n = row[2] / 4u; n > 0u; --n) {
      *dst++ = *src++;
    }
  }
  /* Rows of {run address, bytes}; volatile keeps gcc from turning the loop into memset,
   * which is fine but would hide the table walk from a debugger step. */
  for (const uint32_t* row = __aot_zero_table_start; row < __aot_zero_table_end; row += 2) {
    volatile uint32_t* dst = (volatile uint32_t*)row[0];
    for (uint32_t n = row[1] / 4u; n > 0u; --n) {
      *dst++ = 0u;
    }
  }
  __libc_init_array();
  exit(main());
}

/* Finds which stack the exception frame is on, then continues in C. */
__attribute__((naked)) void Fault_Handler(void) {
  __asm volatile(
      "tst lr, #4\n"
      "ite eq\n"
      "mrseq r0, msp\n"
      "mrsne r0, psp\n"
      "mrs r1, ipsr\n"
      "b aot_fault_c\n");
}

void aot_fault_c(const uint32_t* frame, uint32_t ipsr) {
  aot_last_fault.ipsr = ipsr & 0x1FFu;
  aot_last_fault.lr = frame[5];
  aot_last_fault.pc = frame[6];
  aot_last_fault.cfsr = SCB_CFSR;
  aot_last_fault.hfsr = SCB_HFSR;
  const uint32_t cfsr = aot_last_fault.cfsr;
  aot_last_fault.fault_address = (cfsr & (1u << 15)) ? SCB_BFAR : (cfsr & (1u << 7)) ? SCB_MMFAR : 0u;
  aot_platform_abort(AOT_FAULT_ERROR);
}

/* An interrupt nobody installed a handler for: also fatal, but a different exception
 * number in aot_last_fault tells them apart. */
void Default_Handler(void) {
  uint32_t ipsr;
  __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
  aot_last_fault.ipsr = ipsr & 0x1FFu;
  aot_platform_abort(AOT_FAULT_ERROR);
}
