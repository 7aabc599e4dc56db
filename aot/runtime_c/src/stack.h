/*
 * Peak stack measurement by painting: at startup the free stack below the caller is
 * filled with a pattern; later the lowest overwritten word gives the high-water mark.
 *
 * Bounds: if the link defines `aot_stack_limit` (lowest stack address, e.g. in a
 * linker script `aot_stack_limit = __StackLimit;`) painting goes down to it. Otherwise
 * -DAOT_APP_STACK_PAINT_BYTES=n paints n bytes below the current stack pointer (the
 * host build uses this). With neither, nothing is painted and STATS reports 0.
 */
#ifndef AOT_STACK_H_
#define AOT_STACK_H_

#include <stdint.h>

/* Paints the stack below the caller's frame. Call once, early in main(). */
void aot_stack_paint(void);

/* Bytes painted at startup (0: stack not measured). */
uint32_t aot_stack_painted_bytes(void);

/* Deepest stack use since aot_stack_paint(), in bytes below the reference point
 * (the frame of aot_stack_paint's caller). Equals painted bytes + margin if the
 * whole painted region was used, i.e. the stack may have overflowed. */
uint32_t aot_stack_peak_bytes(void);

/* Depth of the current stack pointer below the reference point, in bytes. */
uint32_t aot_stack_depth_here(void);

#endif /* AOT_STACK_H_ */
