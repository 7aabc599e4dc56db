#include "tinyacc.h"

#define TINYACC_MAGIC 0x7A11AC

static uint32_t steps_run;
static int32_t active;

int32_t tinyacc_begin(const int32_t* descriptor) {
  /* A descriptor that is not the backend's constant means a wrong pointer. */
  if (descriptor == 0 || descriptor[0] != TINYACC_MAGIC || descriptor[1] <= 0 || active) {
    return -1;
  }
  active = 1;
  return 0;
}

void tinyacc_end(void) {
  active = 0;
  steps_run++;
}

uint32_t tinyacc_steps_run(void) { return steps_run; }
