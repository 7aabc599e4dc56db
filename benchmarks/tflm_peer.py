"""TensorFlow Lite Micro as the peer of aot: built here, run under the same QEMU.

    python3 benchmarks/tflm_peer.py build mps2_an386 cmsis_nn    # one cached library
    python3 benchmarks/tflm_peer.py run MODEL.tflite mps2_an386 cmsis_nn

The library. ``../shared/tflm/tflite-micro`` (commit ``TFLM_COMMIT``, every third-party
download in place, so its Makefile needs no network) is copied once into the cache
(``$AOT_TFLM_CACHE``, default ``~/.cache/aot/tflm``), because its Makefile writes
``gen/`` inside the tree. ``libtensorflow-microlite.a`` is built there per core and kernel
set with TFLM's own Makefile (``TARGET=cortex_m_generic BUILD_TYPE=release``, the
``TARGET_ARCH`` of ``TFLM_ARCH``, ``OPTIMIZED_KERNEL_DIR=cmsis_nn`` or none for the
reference kernels) and kept under ``<commit>-<arch>-<kernels>-<hash>/``; the hash covers
the make arguments and the compiler's version, so a changed flag builds anew.

The runner (``benchmarks/tflm/runner.cc``) is linked with aot's own startup
(``aot/project/templates/cmsis/startup``), port (``aot/runtime_c/ports/cmsdk``: UART and
the phase-locked tick counter) and a linker script from ``aot.project.linker`` for the
board, and runs under ``aot.emulator.qemu.QemuInstance`` (``-icount shift=0,sleep=off``),
exactly as aot's firmware. It times ``MicroInterpreter::Invoke()`` with ``aot_platform_ticks()`` and
prints its arena use and outputs as text lines (``tflm <key> <values>``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aot.testing.shared import shared_dir

ROOT = Path(__file__).resolve().parent.parent
RUNNER_DIR = Path(__file__).resolve().parent / "tflm"
TFLM_COMMIT = "90b983c2"  # what ../shared/tflm holds (its README.md)
KERNELS = ("reference", "cmsis_nn")
# TFLM's TARGET_ARCH per core (tensorflow/lite/micro/tools/make/targets/
# cortex_m_generic_makefile.inc), with the float ABI of aot's board flags: "+fp" gives
# -mfloat-abi=hard as aot's M4/M7 boards; the M33 of QEMU's AN521 has no DSP (and no FPU);
# "cortex-m55" is hard float with MVE, CMSIS-NN's Helium kernels.
TFLM_ARCH = {
    "cortex-m3": "cortex-m3",
    "cortex-m4": "cortex-m4+fp",
    "cortex-m7": "cortex-m7+fp",
    "cortex-m33": "cortex-m33+nodsp",
    "cortex-m55": "cortex-m55",
}
LIBRARY = "libtensorflow-microlite.a"
MAKE_JOBS = int(os.environ.get("AOT_TFLM_JOBS", "2"))
BUILD_TIMEOUT_S = 3600.0


class CannotRun(RuntimeError):
    """TFLM has no kernel for one of the model's operators: the row says so instead."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def tflm_source() -> Path:
    return shared_dir() / "tflm" / "tflite-micro"


def cache_root() -> Path:
    configured = os.environ.get("AOT_TFLM_CACHE")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "aot" / "tflm"


def arm_gcc() -> Path:
    found = shutil.which(os.environ.get("AOT_ARM_GCC", "arm-none-eabi-gcc"))
    if found is None:
        raise RuntimeError("arm-none-eabi-gcc not found: run `bash scripts/setup.sh`")
    return Path(found)


def gcc_version(gcc: Path) -> str:
    out = subprocess.run([str(gcc), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()[0].strip()


def tflm_arch(core: str) -> str:
    try:
        return TFLM_ARCH[core]
    except KeyError:
        raise RuntimeError(f"no TFLM TARGET_ARCH known for {core}") from None


@dataclass(frozen=True)
class Library:
    """One built TFLM library: the archive, the tree its headers come from, the flags."""

    archive: Path
    tree: Path  # the cached copy of tflite-micro (headers, downloads)
    arch: str
    kernels: str
    make_args: tuple[str, ...]

    @property
    def defines(self) -> tuple[str, ...]:
        """The -D flags of the library build that its headers' layouts depend on."""
        base = ("TF_LITE_STATIC_MEMORY", "NDEBUG", "TF_LITE_STRIP_ERROR_STRINGS")
        return base + (("CMSIS_NN",) if self.kernels == "cmsis_nn" else ())

    @property
    def includes(self) -> tuple[Path, ...]:
        downloads = self.tree / "tensorflow/lite/micro/tools/make/downloads"
        return (self.tree, downloads / "flatbuffers/include", downloads / "gemmlowp")


def source_copy() -> Path:
    """The cache's writable copy of the shared tree, made once."""
    tree = cache_root() / f"src-{TFLM_COMMIT}"
    if (tree / ".aot-copied").is_file():
        return tree
    source = tflm_source()
    if not (source / "tensorflow/lite/micro/tools/make/Makefile").is_file():
        raise RuntimeError(f"TensorFlow Lite Micro is not at {source} (../shared/tflm)")
    log(f"tflm: copying {source} into {tree}")
    partial = tree.with_name(tree.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial, symlinks=True, ignore=shutil.ignore_patterns("gen"))
    for folder, _dirs, files in os.walk(partial):  # the shared tree is read-only
        os.chmod(folder, 0o755)
        for name in files:
            path = Path(folder, name)
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o200)
    # Only TFLM's own tests use pigweed; an empty folder tells its Makefile not to clone it
    # (the shared tree's README names one, but an empty folder may not survive a copy).
    (partial / "tensorflow/lite/micro/tools/make/downloads/pigweed").mkdir(exist_ok=True)
    (partial / ".aot-copied").write_text(TFLM_COMMIT + "\n")
    shutil.rmtree(tree, ignore_errors=True)
    partial.rename(tree)
    return tree


def make_args(arch: str, kernels: str, gcc: Path) -> tuple[str, ...]:
    if kernels not in KERNELS:
        raise RuntimeError(f"kernels {kernels!r} is not one of {', '.join(KERNELS)}")
    args = [
        "TARGET=cortex_m_generic",
        f"TARGET_ARCH={arch}",
        f"TARGET_TOOLCHAIN_ROOT={gcc.parent}/",
        "BUILD_TYPE=release",
    ]
    if kernels == "cmsis_nn":
        args.append("OPTIMIZED_KERNEL_DIR=cmsis_nn")
    return tuple(args)


def library_folder(arch: str, kernels: str, args: tuple[str, ...], gcc: str) -> Path:
    """Where the library of these make arguments and this compiler is cached."""
    key = hashlib.sha256(json.dumps([list(args), gcc]).encode()).hexdigest()[:10]
    return cache_root() / f"{TFLM_COMMIT}-{arch}-{kernels}-{key}"


@contextlib.contextmanager
def cache_lock() -> Iterator[None]:
    """One process at a time copies the tree or builds in it (pytest -n, two benchmarks)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def library(core: str, kernels: str) -> Library:
    """The cached library for ``core`` and ``kernels``, built first if it is not there."""
    gcc = arm_gcc()
    arch = tflm_arch(core)
    args = make_args(arch, kernels, gcc)
    folder = library_folder(arch, kernels, args, gcc_version(gcc))
    archive = folder / LIBRARY
    tree = cache_root() / f"src-{TFLM_COMMIT}"
    if archive.is_file() and (tree / ".aot-copied").is_file():
        return Library(archive, tree, arch, kernels, args)
    with cache_lock():
        return _build_library(folder, arch, kernels, args, gcc)


def _build_library(
    folder: Path, arch: str, kernels: str, args: tuple[str, ...], gcc: Path
) -> Library:
    archive = folder / LIBRARY
    tree = source_copy()
    if archive.is_file():  # another process built it while this one waited
        return Library(archive, tree, arch, kernels, args)
    makefile = "tensorflow/lite/micro/tools/make/Makefile"
    command = ["make", "-f", makefile, *args, f"-j{MAKE_JOBS}", "microlite"]
    log(f"tflm: building {LIBRARY} for {arch}, {kernels} kernels (6-12 min on 2 cores)")
    log(f"tflm:   cd {tree} && {' '.join(command)}")
    start = time.monotonic()
    with tempfile.TemporaryFile() as output:
        done = subprocess.run(
            command, cwd=tree, stdout=output, stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S
        )
        if done.returncode != 0:
            output.seek(0)
            tail = output.read().decode(errors="replace").strip().splitlines()[-30:]
            raise RuntimeError(f"TFLM build failed ({' '.join(command)}):\n" + "\n".join(tail))
    gendir = subprocess.run(
        ["make", "-s", "-f", makefile, *args, "list_gendir"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[-1]
    seconds = time.monotonic() - start
    partial = folder.with_name(folder.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    shutil.copy2(tree / gendir / "lib" / LIBRARY, partial / LIBRARY)
    record = {
        "commit": TFLM_COMMIT,
        "command": command,
        "gcc": gcc_version(gcc),
        "seconds": round(seconds, 1),
    }
    (partial / "build.json").write_text(json.dumps(record, indent=2) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    log(f"tflm: built {archive} in {seconds / 60:.1f} min")
    return Library(archive, tree, arch, kernels, args)


# ---------------------------------------------------------------------------------------
# The runner: model data, firmware, one run under QEMU.

# "TfLiteStatus AddConv2D(...) { return AddBuiltin(BuiltinOperator_CONV_2D, ...": the
# method that registers each builtin (AddCustom and helpers register none).
_ADD_METHOD = re.compile(
    r"TfLiteStatus (Add\w+)\((?:(?!TfLiteStatus Add).)*?AddBuiltin\(\s*BuiltinOperator_(\w+)",
    re.S,
)


def resolver_methods(lib: Library) -> dict[str, str]:
    """Builtin operator name -> the MicroMutableOpResolver method that registers it."""
    header = lib.tree / "tensorflow/lite/micro/micro_mutable_op_resolver.h"
    return {name: method for method, name in _ADD_METHOD.findall(header.read_text())}


def model_operators(model: bytes) -> list[str]:
    """The builtin operators a .tflite file uses, in its operator-code order."""
    import tflite

    flat = tflite.Model.GetRootAs(model, 0)
    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    used = []
    for index in range(flat.OperatorCodesLength()):
        code = flat.OperatorCodes(index)
        number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if code.CustomCode():
            raise CannotRun(f"custom operator {code.CustomCode()!r}: the runner has none")
        if names[number] not in used:
            used.append(names[number])
    return used


def _c_bytes(data: bytes) -> str:
    rows = (", ".join(f"0x{b:02x}" for b in data[i : i + 16]) for i in range(0, len(data), 16))
    return ",\n  ".join(rows)


def _write(path: Path, text: str) -> None:
    """Write only a changed file, so make rebuilds only what changed."""
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


HEADER = """/* Generated by benchmarks/tflm_peer.py; do not edit. */
#ifndef AOT_TFLM_MODEL_DATA_H_
#define AOT_TFLM_MODEL_DATA_H_
#include <stddef.h>
#include <stdint.h>

#include "tensorflow/lite/micro/micro_op_resolver.h"

extern const uint8_t aot_tflm_model[];
extern const size_t aot_tflm_num_inputs;
extern const uint8_t* const aot_tflm_inputs[];
extern const size_t aot_tflm_input_bytes[];
/* The model's operators, registered once; *failed = 1 + the index of one that failed. */
const tflite::MicroOpResolver& aot_tflm_resolver(int* failed);
/* In its own section, which the linker script puts where aot puts its workspace. */
extern uint8_t aot_tflm_arena[];
extern const size_t aot_tflm_arena_bytes;
#endif
"""


def write_model_data(folder: Path, lib: Library, model: bytes, inputs: list[np.ndarray]) -> None:
    """tflm_model_data.h and model_data.cc: the model, its inputs and a resolver with
    exactly the model's operators (as an application would register them)."""
    methods = resolver_methods(lib)
    operators = model_operators(model)
    missing = [op for op in operators if op not in methods]
    if missing:
        raise CannotRun(f"TFLM's resolver has no method for {', '.join(missing)}")
    lines = [
        "/* Generated by benchmarks/tflm_peer.py; do not edit. */",
        '#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"',
        '#include "tflm_model_data.h"',
        "",
        f"/* {len(model)} bytes; TFLM reads the flatbuffer in place, 16-byte aligned. */",
        f"alignas(16) const uint8_t aot_tflm_model[] = {{\n  {_c_bytes(model)}\n}};",
    ]
    for index, array in enumerate(inputs):
        raw = np.ascontiguousarray(array).tobytes()
        array_text = f"static const uint8_t input_{index}[] = {{\n  {_c_bytes(raw)}\n}};"
        lines.append("alignas(16) " + array_text)
    names = ", ".join(f"input_{i}" for i in range(len(inputs)))
    lines += [
        f"const size_t aot_tflm_num_inputs = {len(inputs)};",
        f"const uint8_t* const aot_tflm_inputs[] = {{{names}}};",
        "const size_t aot_tflm_input_bytes[] = {" + ", ".join(str(a.nbytes) for a in inputs) + "};",
        "",
        "const tflite::MicroOpResolver& aot_tflm_resolver(int* failed) {",
        f"  static tflite::MicroMutableOpResolver<{len(operators)}> resolver;",
        "  *failed = 0;",
    ]
    for number, op in enumerate(operators, 1):
        lines.append(
            f"  if (*failed == 0 && resolver.{methods[op]}() != kTfLiteOk) *failed = {number};"
        )
    lines += ["  return resolver;", "}", ""]
    _write(folder / "tflm_model_data.h", HEADER)
    _write(folder / "model_data.cc", "\n".join(lines))


def write_arena(folder: Path, arena_bytes: int) -> None:
    _write(
        folder / "arena.cc",
        "/* Generated by benchmarks/tflm_peer.py; do not edit. */\n"
        '#include "tflm_model_data.h"\n\n'
        f"const size_t aot_tflm_arena_bytes = {arena_bytes};\n"
        '__attribute__((section(".bss.aot_tflm_arena"), aligned(16)))\n'
        f"uint8_t aot_tflm_arena[{arena_bytes}];\n",
    )


def _aot_package() -> Path:
    import aot

    return Path(aot.__file__).resolve().parent


def build_runner(folder: Path, board, lib: Library) -> Path:
    """Compile and link the runner in ``folder`` (model data already written there)."""
    from aot.project.linker import render_linker_script

    arena_region = board.default_region("workspace").name
    (folder / "board.ld").write_text(
        render_linker_script(board, {".bss.aot_tflm_arena": arena_region})
    )
    defines = [f"{k}={v}" for k, v in board.c_defines().items() if not v.startswith('"')]
    command = [
        "make",
        "-s",
        "-f",
        str(RUNNER_DIR / "Makefile"),
        f"BUILD={folder}",
        f"AOT={_aot_package()}",
        f"CROSS={arm_gcc().parent}/arm-none-eabi-",
        "CPU_FLAGS=" + " ".join(board.gcc_flags()),
        "DEFINES=" + " ".join(defines),
        "TFLM_DEFINES=" + " ".join(lib.defines),
        "TFLM_INCLUDES=" + " ".join(str(p) for p in lib.includes),
        f"TFLM_LIBRARY={lib.archive}",
        f"-j{MAKE_JOBS}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if done.returncode != 0:
        text = done.stdout + done.stderr
        overflow = re.search(r"region `([^']+)' overflowed by (\d+) bytes", text)
        if overflow:  # the model and library are larger than the board's memory
            raise CannotRun(
                f"its runner does not fit {overflow.group(1)} (over by {overflow.group(2)} B)"
            )
        tail = text.strip().splitlines()[-30:]
        raise RuntimeError("TFLM runner build failed:\n" + "\n".join(tail))
    return folder / "runner.elf"


def elf_sections(elf: Path) -> dict[str, int]:
    """Bytes of the runner's output sections, as aot's firmware reports them
    (``arm-none-eabi-size -A``)."""
    size = arm_gcc().with_name("arm-none-eabi-size")
    out = subprocess.run([str(size), "-A", str(elf)], capture_output=True, text=True, check=True)
    sections = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
            sections[parts[0]] = int(parts[1])
    return sections


@dataclass(frozen=True)
class RunnerResult:
    ticks: tuple[int, ...]  # per Invoke()
    ticks_per_second: int
    arena_bytes: int  # the smallest arena that allocates
    arena_used: int  # arena_used_bytes() with it
    outputs: tuple[bytes, ...]
    lines: tuple[str, ...]


def run_runner(board, elf: Path, timeout: float = 600.0) -> RunnerResult:
    """Run the runner under QEMU as aot runs its firmware; read its lines to 'tflm done'."""
    from aot.emulator.qemu import LOOPBACK, QemuInstance

    text = b""
    with QemuInstance(board, elf) as qemu:
        assert qemu.port is not None
        with socket.create_connection((LOOPBACK, qemu.port), timeout=timeout) as sock:
            deadline = time.monotonic() + timeout
            while b"tflm done\n" not in text:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the TFLM runner did not finish within {timeout:.0f} s")
                chunk = sock.recv(65536)
                if not chunk:
                    break
                text += chunk
    return parse_lines(board.name, text.decode(errors="replace").splitlines())


def parse_lines(board_name: str, text: Sequence[str]) -> RunnerResult:
    """The runner's report from its lines (benchmarks/tflm/runner.cc lists them)."""
    lines = tuple(line for line in text if line)
    errors = [line for line in lines if line.startswith("tflm error") or "abort" in line]
    if errors or "tflm done" not in lines:
        raise RuntimeError(f"the TFLM runner failed on {board_name}: " + " | ".join(lines[-5:]))
    ticks, outputs, arena, used, per_second = [], [], 0, 0, 0
    for line in lines:
        words = line.split()
        if words[:2] == ["tflm", "ticks"]:
            ticks.append(int(words[2]))
        elif words[:2] == ["tflm", "ticks_per_second"]:
            per_second = int(words[2])
        elif words[:2] == ["tflm", "arena_bytes"]:
            arena, used = int(words[2]), int(words[4])  # then arena_given
        elif words[:2] == ["tflm", "output"]:
            outputs.append(bytes.fromhex(words[3] if len(words) > 3 else ""))
    return RunnerResult(tuple(ticks), per_second, arena, used, tuple(outputs), lines)


@dataclass(frozen=True)
class PeerResult:
    """One model on one board with one TFLM kernel set."""

    kernels: str
    instructions: int  # per Invoke(), from the board's ticks
    arena_bytes: int  # the smallest arena AllocateTensors takes (16-byte steps)
    arena_used_bytes: int  # what arena_used_bytes() reports with that arena
    text_bytes: int
    model_bytes: int  # the .tflite flatbuffer in flash: TFLM's constants
    rodata_bytes: int
    outputs: tuple[bytes, ...]


def first_arena(board) -> int:
    """The runner's whole arena: half the memory aot puts its workspace in, at most 1 MiB."""
    return min(board.default_region("workspace").size // 2, 1 << 20)


def measure(model: Path, board, kernels: str, inputs: list[np.ndarray], folder: Path) -> PeerResult:
    """Build and run the runner: its arena is half the memory aot puts its workspace in
    (at most 1 MiB), inside which it finds the smallest arena TFLM allocates in."""
    lib = library(board.core, kernels)
    data = model.read_bytes()
    folder.mkdir(parents=True, exist_ok=True)
    write_model_data(folder, lib, data, inputs)
    write_arena(folder, first_arena(board))
    elf = build_runner(folder, board, lib)
    result = run_runner(board, elf)
    if len(set(result.ticks)) != 1:
        raise RuntimeError(f"TFLM runs differ on {board.name}: ticks {result.ticks}")
    if board.ticks is None or not board.ticks.instructions_per_tick:
        raise RuntimeError(f"{board.name}: its ticks do not count instructions")
    if result.ticks_per_second != board.ticks.hz:
        raise RuntimeError(f"{board.name}: runner announced {result.ticks_per_second} ticks/s")
    sections = elf_sections(elf)
    return PeerResult(
        kernels=kernels,
        instructions=result.ticks[0] * board.ticks.instructions_per_tick,
        arena_bytes=result.arena_bytes,
        arena_used_bytes=result.arena_used,
        text_bytes=sections.get(".text", 0),
        model_bytes=len(data),
        rodata_bytes=sections.get(".rodata", 0),
        outputs=result.outputs,
    )


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build (or find) the cached library")
    build.add_argument("board")
    build.add_argument("kernels", choices=KERNELS)
    run = sub.add_parser("run", help="one model on one board, its input from X.input.npy")
    run.add_argument("model", type=Path)
    run.add_argument("board")
    run.add_argument("kernels", choices=KERNELS)
    args = parser.parse_args(argv)
    from aot.boards import load_board

    board = load_board(args.board)
    if args.command == "build":
        print(library(board.core, args.kernels).archive)
        return 0
    x = np.load(args.model.with_suffix(".input.npy"))
    with tempfile.TemporaryDirectory(prefix="aot-tflm-") as tmp:
        result = measure(args.model, board, args.kernels, [x], Path(tmp))
    print(json.dumps({**result.__dict__, "outputs": [o.hex() for o in result.outputs]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
