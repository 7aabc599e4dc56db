/* The scalar ADD: add_dsp.c built as plain C (AOT_K_SCALAR: 64-bit multiplies instead of
 * SMMLAR/SMMLA, a compare instead of SSAT) under the _scalar name. add_dsp.c is copied
 * beside this file. */
#define AOT_K_SCALAR 1
#include "add_dsp.c"
