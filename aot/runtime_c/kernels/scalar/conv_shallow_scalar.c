/* The scalar conv2d over few input channels: conv_shallow_dsp.c built as plain C under
 * the _scalar name (see conv_scalar.c). */
#define AOT_K_SCALAR 1
#include "conv_shallow_dsp.c"
