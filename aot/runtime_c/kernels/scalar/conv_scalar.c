/* The scalar conv2d and fully connected: conv_dsp.c built as plain C (AOT_K_SCALAR turns
 * off the DSP intrinsics in aot_kernels_simd.h, whose C equivalents give the same results)
 * under the _scalar names. The same 2x2 blocking, folding and layouts; on the Cortex-M3
 * it beats TVM's kernels (docs/kernels.md). conv_dsp.c is copied beside this file. */
#define AOT_K_SCALAR 1
#include "conv_dsp.c"
