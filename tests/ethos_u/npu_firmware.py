"""Build-time verification of Ethos-U firmware: Vela's output embedded as C, aot's glue and
the user's Ethos-U core driver compiled for the board's core, linked with aot's startup code
and a linker script generated from the board's memories. QEMU models no Ethos-U, so what
can be checked here is that it links and where every NPU buffer landed.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from aot.backends.ethos_u import driver, emit
from aot.backends.ethos_u.vela import VelaResult
from aot.boards import Board
from aot.building.toolchain import find_tool
from aot.project.linker import render_linker_script

STARTUP = Path(driver.__file__).resolve().parents[2] / "project/templates/cmsis/startup"
RUNTIME_INCLUDE = Path(driver.__file__).resolve().parents[2] / "runtime_c/include"


@dataclass(frozen=True)
class Symbol:
    name: str
    address: int
    size: int


def model_sources(name: str, vela: VelaResult) -> str:
    """The model's C: per NPU subgraph its command stream and read-only data (in
    ``.rodata.aot.<name>.npu``), its arena (``.bss.aot.<name>.npu_arena``) and its function,
    plus ``run()`` chaining them through the model's input and output buffers."""
    lines = [
        "#include <stdint.h>",
        "#include <string.h>",
        f'#include "{emit.GLUE_HEADER}"',
        "",
    ]
    for sg in vela.subgraphs:
        symbol = f"npu{sg.index}"
        lines.append(
            emit.byte_array(
                f"aot_{name}_{symbol}_command_stream",
                sg.command_stream,
                section=f".rodata.aot.{name}.npu",
            )
        )
        lines.append(
            emit.byte_array(
                f"aot_{name}_{symbol}_read_only", sg.read_only, section=f".rodata.aot.{name}.npu"
            )
        )
        lines.append(
            f"uint8_t aot_{name}_{symbol}_arena[{sg.scratch_bytes}] __attribute__((aligned(16), "
            f'section(".bss.aot.{name}.npu_arena")));'
        )
        lines.append(emit.subgraph_function(name, symbol, sg)[1])
    return "\n".join(lines) + "\n"


def main_source(name: str, vela: VelaResult) -> str:
    """A main() that runs every NPU subgraph once on static feature maps."""
    lines = ["#include <stdint.h>", '#include "aot_ethos_u.h"', ""]
    calls = []
    for sg in vela.subgraphs:
        symbol = f"npu{sg.index}"
        args = []
        for kind, fms in (("in", sg.inputs), ("out", sg.outputs)):
            for i, fm in enumerate(fms):
                buf = f"{symbol}_{kind}{i}"
                lines.append(f"static {emit.c_type(fm.dtype)} {buf}[{fm.size_bytes}];")
                args.append(buf)
        params = ", ".join(["const int8_t *"] * len(sg.inputs) + ["int8_t *"] * len(sg.outputs))
        lines.append(
            f"int32_t aot_{name}_{symbol}({params}, const uint8_t *, const uint8_t *, uint8_t *);"
        )
        lines.append(f"extern const uint8_t aot_{name}_{symbol}_command_stream[];")
        lines.append(f"extern const uint8_t aot_{name}_{symbol}_read_only[];")
        lines.append(f"extern uint8_t aot_{name}_{symbol}_arena[];")
        calls.append(
            f"  if (aot_{name}_{symbol}({', '.join(args)}, aot_{name}_{symbol}_command_stream, "
            f"aot_{name}_{symbol}_read_only, aot_{name}_{symbol}_arena) != 0) return 1;"
        )
    lines += [
        "void aot_platform_abort(int32_t code) { (void)code; for (;;) {} }",
        "int main(void) {",
        *calls,
        "  return 0;",
        "}",
    ]
    return "\n".join(lines) + "\n"


def build_firmware(
    board: Board,
    name: str,
    vela: VelaResult,
    paths: driver.DriverPaths,
    out: Path,
    *,
    constants: str,
    arena: str,
) -> Path:
    """Compile and link, with Vela's constants in memory ``constants`` and the arenas in
    ``arena``; returns the ELF."""
    accelerator = board.accelerator(vela.accelerator)
    out.mkdir(parents=True, exist_ok=True)
    (out / "model.c").write_text(model_sources(name, vela))
    (out / "main.c").write_text(main_source(name, vela))
    placements = {f".rodata.aot.{name}.npu": constants, f".bss.aot.{name}.npu_arena": arena}
    (out / "board.ld").write_text(render_linker_script(board, placements))
    defines = driver.driver_defines(
        vela.accelerator, accelerator.base, accelerator.irq, secure=board.has("secure_state")
    )
    includes = [*driver.include_dirs(paths), driver.NPU_RUNTIME_DIR, RUNTIME_INCLUDE]
    sources = [
        out / "model.c",
        out / "main.c",
        *driver.glue_sources(),
        STARTUP / "startup.c",
        STARTUP / "syscalls.c",
    ]
    gcc = find_tool("arm-none-eabi-gcc")
    elf = out / "firmware.elf"
    cmd = [
        str(gcc),
        *board.gcc_flags(),
        "-O2",
        "-std=gnu11",
        "-Wall",
        "-Wextra",
        "-Werror",  # the driver's own build adds -Werror; ours must hold too
        "-ffunction-sections",
        "-fdata-sections",
        *(f"-D{k}={v}" for k, v in defines.items()),
        *(f"-I{d}" for d in includes),
        *map(str, sources),
        "-nostartfiles",
        "--specs=nano.specs",
        f"-T{out / 'board.ld'}",
        "-Wl,--gc-sections",
        "-o",
        str(elf),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    if result.returncode != 0:
        raise AssertionError(f"link failed:\n{' '.join(cmd)}\n{result.stderr}")
    return elf


def symbols(elf: Path) -> dict[str, Symbol]:
    nm = find_tool("arm-none-eabi-gcc").with_name("arm-none-eabi-nm")
    text = subprocess.run(
        [str(nm), "-S", "--defined-only", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    table: dict[str, Symbol] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            table[parts[3]] = Symbol(parts[3], int(parts[0], 16), int(parts[1], 16))
    return table
