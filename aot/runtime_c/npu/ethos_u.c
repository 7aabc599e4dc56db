/*
 * aot's glue to Arm's Ethos-U core driver: initialisation, the NPU interrupt, and one
 * ethosu_invoke_v3() per NPU subgraph.
 *
 * Board data gives the NPU's register base and interrupt number (AOT_ETHOSU_BASE,
 * AOT_ETHOSU_IRQ) and whether it runs Secure (AOT_ETHOSU_SECURE). aot's startup code has
 * one shared default handler for every IRQ, so the first call copies the vector table to
 * RAM with the NPU's handler in its slot and points VTOR at the copy.
 */
#include "aot_ethos_u.h"

#include <string.h>

#include "aot/error.h"
#include "ethosu_driver.h"

#ifndef AOT_ETHOSU_BASE
#error "AOT_ETHOSU_BASE (the Ethos-U register base address) must come from the board data"
#endif
#ifndef AOT_ETHOSU_IRQ
#error "AOT_ETHOSU_IRQ (the Ethos-U interrupt number) must come from the board data"
#endif
#ifndef AOT_ETHOSU_SECURE
#define AOT_ETHOSU_SECURE 1
#endif
#ifndef AOT_ETHOSU_PRIVILEGED
#define AOT_ETHOSU_PRIVILEGED 1
#endif
#ifndef AOT_ETHOSU_VECTORS
#define AOT_ETHOSU_VECTORS (16 + 96) /* at least the startup code's table */
#endif

/* Architectural Armv7-M/v8-M registers (no device header needed). */
#define AOT_SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)
#define AOT_NVIC_ISER ((volatile uint32_t *)0xE000E100u)

typedef void (*aot_vector_fn)(void);

static struct ethosu_driver aot_ethosu_driver;
static int aot_ethosu_ready;
static int aot_ethosu_error;
/* VTOR needs the table aligned to its size rounded up to a power of two (512 bytes here). */
static aot_vector_fn aot_ethosu_vectors[AOT_ETHOSU_VECTORS] __attribute__((aligned(512)));

static void aot_ethosu_irq(void) { ethosu_irq_handler(&aot_ethosu_driver); }

/* The driver's bare-metal semaphore default mallocs; aot firmware has no heap to spare. */
struct aot_ethosu_semaphore {
  volatile uint32_t count;
};
static struct aot_ethosu_semaphore aot_ethosu_semaphores[2];
static unsigned aot_ethosu_semaphores_used;

void *ethosu_semaphore_create(void) {
  if (aot_ethosu_semaphores_used >= sizeof(aot_ethosu_semaphores) / sizeof(aot_ethosu_semaphores[0])) {
    return NULL;
  }
  struct aot_ethosu_semaphore *s = &aot_ethosu_semaphores[aot_ethosu_semaphores_used++];
  s->count = 0;
  return s;
}

void ethosu_semaphore_destroy(void *sem) { (void)sem; }

int ethosu_semaphore_take(void *sem, uint64_t timeout) {
  struct aot_ethosu_semaphore *s = sem;
  (void)timeout;
  while (s->count == 0) {
    __asm volatile("wfe");
  }
  s->count--;
  return 0;
}

int ethosu_semaphore_give(void *sem) {
  struct aot_ethosu_semaphore *s = sem;
  s->count++;
  __asm volatile("sev");
  return 0;
}

static int32_t aot_ethosu_setup(void) {
  const aot_vector_fn *current = (const aot_vector_fn *)AOT_SCB_VTOR;
  memcpy(aot_ethosu_vectors, current, sizeof(aot_ethosu_vectors));
  aot_ethosu_vectors[16 + AOT_ETHOSU_IRQ] = aot_ethosu_irq;
  __asm volatile("dsb" ::: "memory");
  AOT_SCB_VTOR = (uint32_t)(uintptr_t)aot_ethosu_vectors;
  __asm volatile("dsb\n isb" ::: "memory");
  int rc = ethosu_init(&aot_ethosu_driver, (void *)(uintptr_t)AOT_ETHOSU_BASE, NULL, 0,
                       AOT_ETHOSU_SECURE, AOT_ETHOSU_PRIVILEGED);
  if (rc != 0) {
    aot_ethosu_error = rc;
    return AOT_ERR_MODEL_KERNEL_FAILED;
  }
  AOT_NVIC_ISER[AOT_ETHOSU_IRQ / 32] = 1u << (AOT_ETHOSU_IRQ % 32);
  aot_ethosu_ready = 1;
  return AOT_OK;
}

int32_t aot_ethosu_invoke(const uint8_t *command_stream, size_t command_stream_size,
                          const uint8_t *read_only, size_t read_only_size, uint8_t *arena,
                          size_t arena_size) {
  if (!aot_ethosu_ready) {
    int32_t err = aot_ethosu_setup();
    if (err != AOT_OK) {
      return err;
    }
  }
  /* Vela's regions: 0 read-only data, 1 scratch, 2 fast scratch (the same arena). */
  uint64_t base[3] = {(uint64_t)(uintptr_t)read_only, (uint64_t)(uintptr_t)arena,
                      (uint64_t)(uintptr_t)arena};
  size_t sizes[3] = {read_only_size, arena_size, arena_size};
  struct ethosu_driver *drv = ethosu_reserve_driver();
  if (drv == NULL) {
    return AOT_ERR_MODEL_KERNEL_FAILED;
  }
  int rc = ethosu_invoke_v3(drv, command_stream, (int)command_stream_size, base, sizes, 3, NULL);
  ethosu_release_driver(drv);
  if (rc != 0) {
    aot_ethosu_error = rc;
    return AOT_ERR_MODEL_KERNEL_FAILED;
  }
  return AOT_OK;
}

int aot_ethosu_last_driver_error(void) { return aot_ethosu_error; }
