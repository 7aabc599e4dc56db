/* The scalar depthwise conv2d: dwconv_dsp.c built as plain C under the _scalar name (see
 * conv_scalar.c). */
#define AOT_K_SCALAR 1
#include "dwconv_dsp.c"
