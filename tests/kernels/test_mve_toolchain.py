"""arm-none-eabi-gcc 12.2 compiles the Helium intrinsics the MVE kernels use, and QEMU's
mps3-an547 executes them with the results the kernels rely on (checked in C against
plain scalar formulas, one line per intrinsic)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.toolchain, pytest.mark.emulator]

PROGRAM = r"""
#include <arm_mve.h>
#include <stdint.h>
static int semihost(int op, const void* arg) {
  register int r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}
static int8_t a[37], b[37];
static const int32_t x[4] = {100000, -100000, -2147483647 - 1, -12};
static const int32_t m[4] = {1 << 30, 1518500250, -2147483647 - 1, 1 << 30};
static int check(void) {
  int32_t ref = 0, acc = 0, got[4];
  for (int i = 0; i < 37; ++i) {
    a[i] = (int8_t)(i * 7 - 100);
    b[i] = (int8_t)(50 - i * 3);
    ref += a[i] * b[i];
  }
  for (int i = 0; i < 37; i += 16) {  /* tail predication: 16 + 16 + 5 lanes */
    mve_pred16_t p = vctp8q(37 - i);
    acc = vmladavaq_s8(acc, vldrbq_z_s8(a + i, p), vldrbq_z_s8(b + i, p));
  }
  if (acc != ref) return 1;
  vstrwq_s32(got, vqrdmulhq_s32(vldrwq_s32(x), vldrwq_s32(m)));  /* gemmlowp SRDHM */
  for (int i = 0; i < 4; ++i) {
    int64_t e = ((int64_t)x[i] * m[i] + (1LL << 30)) >> 31;
    if (e > 2147483647) e = 2147483647;
    if (got[i] != (int32_t)e) return 2 + i;
  }
  vstrwq_s32(got, vrshlq_s32(vldrwq_s32(x), vdupq_n_s32(-3)));  /* halves round up */
  for (int i = 0; i < 4; ++i) if (got[i] != (int32_t)(((int64_t)x[i] + 4) >> 3)) return 6 + i;
  int8_t out[16] = {0};
  uint32x4_t every_third = vmulq_n_u32(vidupq_n_u32(0, 1), 3);
  vstrbq_scatter_offset_p_s32(out + 1, every_third, vdupq_n_s32(-5), vctp32q(3));
  if (out[1] != -5 || out[4] != -5 || out[7] != -5 || out[10] != 0 || out[2] != 0) return 10;
  int32x4_t w = vaddq_s32(vdupq_n_s32(7), vmulq_s32(vldrbq_s32(a), vldrbq_s32(b)));
  if (vgetq_lane_s32(w, 3) != 7 + a[3] * b[3]) return 11;
  return 0;
}
void reset(void) {
  *(volatile uint32_t*)0xE000ED88 |= 0xFu << 20;  /* CP10/CP11: FPU and MVE on */
  __asm__ volatile("dsb\n isb");
  static char msg[] = "mve-check 0\n";
  msg[10] = (char)('a' + check());
  semihost(4, msg);
  semihost(0x18, (const void*)0x20026);
  for (;;) {
  }
}
__attribute__((section(".vectors"), used))
static const void* const v[2] = {(void*)0x30080000, (void*)reset};
"""

LINK = """MEMORY {
  ITCM (rx) : ORIGIN = 0x10000000, LENGTH = 512K
  DTCM (rw) : ORIGIN = 0x30000000, LENGTH = 512K
}
SECTIONS { .text : { KEEP(*(.vectors)) *(.text*) *(.rodata*) } > ITCM
  .data : { *(.data*) } > DTCM  .bss : { *(.bss*) *(COMMON) } > DTCM }
"""


def test_gcc_and_qemu_run_the_helium_intrinsics(tmp_path: Path) -> None:
    from aot.building.toolchain import arm_gcc, qemu_system_arm

    (tmp_path / "t.c").write_text(PROGRAM)
    (tmp_path / "l.ld").write_text(LINK)
    elf = tmp_path / "t.elf"
    subprocess.run(
        [str(arm_gcc()), "-mcpu=cortex-m55", "-mfloat-abi=hard", "-mthumb", "-O2", "-Wall",
         "-Werror", "-nostdlib", "-nostartfiles", "-T", str(tmp_path / "l.ld"),
         str(tmp_path / "t.c"), "-o", str(elf)],
        check=True,
    )  # fmt: skip
    run = subprocess.run(
        [str(qemu_system_arm()), "-M", "mps3-an547", "-nographic", "-semihosting", "-kernel",
         str(elf)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    # 'a' is success; 'b'.. names the failed check (see check() above)
    assert "mve-check a" in run.stdout + run.stderr, run.stdout + run.stderr
