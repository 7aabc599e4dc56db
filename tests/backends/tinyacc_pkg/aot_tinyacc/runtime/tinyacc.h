/* The test backend's runtime: checks a step's descriptor and counts the steps it ran. */
#ifndef TINYACC_H_
#define TINYACC_H_

#include <stdint.h>

int32_t tinyacc_begin(const int32_t* descriptor);
void tinyacc_end(void);
uint32_t tinyacc_steps_run(void);

#endif /* TINYACC_H_ */
