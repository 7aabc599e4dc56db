"""Run many hand-written kernel calls in one bare-metal firmware under QEMU.

A :class:`KernelCase` is one operator (from a one-operator TFLite model, imported by the
int8 importer into its :class:`OperatorInfo`), one input and LiteRT's reference output.
:func:`run_cases` prepares every case with its ISA's variant, writes one C file that calls
each kernel on its constant input and prints the outputs in hex over semihosting, builds
it with arm-none-eabi-gcc for the ISA's core and runs it once on QEMU: hundreds of cases
cost one compile and one boot.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aot.backends.base import OperatorInfo
from aot.kernels import KERNELS_C, select
from aot.kernels.spec import PreparedKernel


@dataclass(frozen=True)
class Core:
    machine: str  # QEMU machine
    cflags: tuple[str, ...]
    code: int  # base of a loadable code memory (the boot vector table goes here)
    ram: int  # base of a data memory
    ram_size: int
    code_size: int = 2 * 1024 * 1024
    # a second loadable memory for the cases' constants (None: after the code)
    rodata: int | None = None


# The core each ISA's kernels run on in these tests (Helium, and the DSP/scalar ADD in the
# rounding mode LiteRT does not use; the per-ISA suites build through aot,
# tests/kernels/test_bit_exact.py).
CORES = {
    # ITCM is 512 KB; the constants (ADD's tables are 2 KB a case) go to the 2 MB SRAM
    "mve": Core("mps3-an547", ("-mcpu=cortex-m55", "-mfloat-abi=hard"), 0x10000000,
                0x30000000, 512 * 1024, code_size=512 * 1024, rodata=0x11000000),
    # -fbuiltin after -ffreestanding: the kernels' packed loads are memcpy, one LDR inlined.
    "dsp": Core("mps2-an386", ("-mcpu=cortex-m4", "-fbuiltin"), 0x0, 0x20000000, 512 * 1024),
    # The scalar sources include the DSP ones, which aot copies beside them.
    "scalar": Core("mps2-an385", ("-mcpu=cortex-m3", "-fbuiltin", f"-I{KERNELS_C / 'dsp'}"),
                   0x0, 0x20000000, 512 * 1024),
}  # fmt: skip


@dataclass(frozen=True)
class KernelCase:
    name: str
    info: OperatorInfo
    input: np.ndarray
    expected: np.ndarray
    more_inputs: tuple[np.ndarray, ...] = ()  # operands 1, 2, ... that are not constants


def operator_of(model: bytes, rounding: str = "litert") -> OperatorInfo:
    """The OperatorInfo of the one annotated operator of a one-operator TFLite model."""
    import tvm
    from tvm import relax

    from aot.frontend.tflite_int8 import import_tflite_int8
    from aot.partition import operator_info

    module = import_tflite_int8(model, rounding=rounding).relax_module
    call_tir = tvm.ir.Op.get("relax.call_tir")
    found = []
    for block in module["main"].body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Call) and value.op == call_tir:
                info = operator_info(module, value)
                if info is not None:
                    found.append(info)
    assert len(found) == 1, f"expected one operator, found {len(found)}"
    return found[0]


_C_TYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "uint8": "uint8_t"}


def _array(name: str, values: np.ndarray, const: bool = True) -> str:
    flat = np.ascontiguousarray(values).reshape(-1)
    ctype = _C_TYPES[str(flat.dtype)]
    body = ",".join(str(int(v)) for v in flat) if flat.size else "0"
    qual = "static const" if const else "static"
    size = max(flat.size, 1)
    return f"{qual} {ctype} {name}[{size}] __attribute__((aligned(16))) = {{{body}}};\n"


def _call(index: int, case: KernelCase, prepared: PreparedKernel) -> tuple[str, str]:
    """The case's data (C definitions) and its call statements."""
    lines = []
    args = []
    for position, operand in enumerate(prepared.inputs):
        if operand == 0:
            value = case.input
        elif case.info.inputs[operand].is_constant:
            value = case.info.inputs[operand].data
        else:
            value = case.more_inputs[operand - 1]
        lines.append(_array(f"c{index}_in{position}", value))
        args.append(f"c{index}_in{position}")
    for position, constant in enumerate(prepared.constants):
        lines.append(_array(f"c{index}_k{position}", constant.data))
        args.append(f"c{index}_k{position}")
    fields = ", ".join(f".{k} = {int(v)}" for k, v in prepared.params.items())
    lines.append(f"static const {prepared.params_struct} c{index}_p = {{{fields}}};\n")
    size = int(case.expected.size)
    scratch = "scratch" if prepared.scratch_bytes else "0"
    call = (
        f"  {prepared.function}(&c{index}_p, {', '.join(args)}, (int8_t*)out, {scratch});\n"
        f"  dump({index}, out, {size});\n"
    )
    return "".join(lines), call


_RUNTIME = r"""
static int semihost(int op, const void* arg) {
  register int r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}
static char line[4096];
static void dump(int index, const int8_t* data, int n) {
  static const char hex[] = "0123456789abcdef";
  int at = 0;
  line[at++] = 'C';
  for (int shift = 12; shift >= 0; shift -= 4) line[at++] = hex[(index >> shift) & 15];
  line[at++] = ' ';
  for (int i = 0; i < n; ++i) {
    line[at++] = hex[((uint8_t)data[i]) >> 4];
    line[at++] = hex[((uint8_t)data[i]) & 15];
    if (at > (int)sizeof(line) - 4) { line[at] = 0; semihost(4, line); at = 0; }
  }
  line[at++] = '\n';
  line[at] = 0;
  semihost(4, line);
}
extern int main(void);
void reset(void) {
  /* CP10/CP11 full access: the FPU and Helium share them */
  *(volatile uint32_t*)0xE000ED88 |= 0xFu << 20;
  __asm__ volatile("dsb\n isb");
  main();
  /* SYS_EXIT: on AArch32 the reason itself is the argument (ADP_Stopped_ApplicationExit) */
  semihost(0x18, (const void*)0x20026);
  for (;;) {
  }
}
"""


def _program(cases: Sequence[KernelCase], prepared: Sequence[PreparedKernel], core: Core) -> str:
    data, calls = [], []
    for i, (case, kernel) in enumerate(zip(cases, prepared)):
        d, c = _call(i, case, kernel)
        data.append(d)
        calls.append(c)
    out_size = max(int(c.expected.size) for c in cases)
    scratch = max([k.scratch_bytes for k in prepared] + [1])
    stack_top = core.ram + core.ram_size
    return (
        '#include <stdint.h>\n#include "aot_kernels.h"\n'
        + _RUNTIME
        + f"static int8_t out[{out_size}] __attribute__((aligned(16)));\n"
        + f"static int8_t scratch[{scratch}] __attribute__((aligned(16), unused));\n"
        + "".join(data)
        + "int main(void) {\n"
        + "".join(calls)
        + "  return 0;\n}\n"
        + f'__attribute__((section(".vectors"), used)) static const void* const vectors[2] = '
        f"{{(void*){stack_top:#x}, (void*)reset}};\n"
    )


def _linker_script(core: Core) -> str:
    regions = f"  CODE (rx) : ORIGIN = {core.code:#x}, LENGTH = {core.code_size}\n"
    rodata = "CODE"
    if core.rodata is not None:
        regions += f"  CONST (r) : ORIGIN = {core.rodata:#x}, LENGTH = 2M\n"
        rodata = "CONST"
    return (
        f"MEMORY {{\n{regions}  RAM (rw) : ORIGIN = {core.ram:#x}, LENGTH = {core.ram_size}\n}}\n"
        "SECTIONS {\n  .text : { KEEP(*(.vectors)) *(.text*) } > CODE\n"
        f"  .rodata : {{ *(.rodata*) }} > {rodata}\n"
        "  .data : { *(.data*) } > RAM\n  .bss : { *(.bss*) *(COMMON) } > RAM\n}\n"
    )


def run_cases(
    cases: Sequence[KernelCase], isa: str, workdir: Path, timeout: float = 300.0
) -> list[np.ndarray]:
    """Every case's output from its ISA's kernel on QEMU, in order."""
    from aot.building.toolchain import arm_gcc, qemu_system_arm

    core = CORES[isa]
    variants = [select(c.info, (isa,)) for c in cases]
    missing = [c.name for c, v in zip(cases, variants) if v is None]
    assert not missing, f"no {isa} kernel takes {missing}"
    prepared = [v.prepare(c.info) for c, v in zip(cases, variants)]
    sources = sorted({KERNELS_C / s for v in variants for s in v.sources})
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "cases.c").write_text(_program(cases, prepared, core))
    (workdir / "link.ld").write_text(_linker_script(core))
    elf = workdir / "cases.elf"
    subprocess.run(
        [str(arm_gcc()), "-mthumb", "-O2", "-Wall", "-Werror", "-ffreestanding", *core.cflags,
         "-nostdlib", "-nostartfiles", f"-I{KERNELS_C / 'include'}", "-T", str(workdir / "link.ld"),
         str(workdir / "cases.c"), *map(str, sources), "-lgcc", "-o", str(elf)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    run = subprocess.run(
        [str(qemu_system_arm()), "-M", core.machine, "-nographic", "-semihosting",
         "-icount", "shift=0", "-kernel", str(elf)],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    # QEMU writes semihosting output to stderr when stdout is not a terminal
    assert run.returncode == 0, f"QEMU exited with {run.returncode}: {run.stderr[-2000:]}"
    return _parse(run.stdout + run.stderr, cases)


def _parse(stdout: str, cases: Sequence[KernelCase]) -> list[np.ndarray]:
    by_index = {}
    for record in stdout.splitlines():  # a long record is several writes, one line
        if not record.startswith("C"):
            continue
        index, _, payload = record[1:].partition(" ")
        by_index[int(index, 16)] = bytes.fromhex(payload)
    outputs = []
    for i, case in enumerate(cases):
        assert i in by_index, f"case {case.name}: no output (QEMU printed {len(stdout)} chars)"
        raw = np.frombuffer(by_index[i], np.int8)
        outputs.append(raw.reshape(case.expected.shape))
    return outputs
