"""External tools: find them, say how to install a missing one, run a build.

This is the build stage: it only runs tools. The files a build reads (``config.mk``,
linker scripts, CMSIS-Toolbox and Zephyr files) are written by the project stage
(``aot/project/``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aot.errors import ToolchainError

SETUP_HINT = "or run `bash scripts/setup.sh`"
INSTALL_HINTS: Mapping[str, str] = {
    "arm-none-eabi-gcc": "sudo apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi",
    "arm-none-eabi-size": "sudo apt-get install binutils-arm-none-eabi",
    "arm-none-eabi-objcopy": "sudo apt-get install binutils-arm-none-eabi",
    "make": "sudo apt-get install make",
    "cmake": "sudo apt-get install cmake",
    "qemu-system-arm": "sudo apt-get install qemu-system-arm",
    "gcc": "sudo apt-get install gcc",
    "west": "pip install 'aot[zephyr]'",
}

BUILD_TIMEOUT_S = 600.0


def find_tool(name: str, env_var: str | None = None) -> Path:
    """Path of an executable; ``env_var`` (e.g. AOT_QEMU) overrides the PATH lookup."""
    override = os.environ.get(env_var) if env_var else None
    if override:
        path = shutil.which(override)
        if path is None:
            raise ToolchainError(f"{env_var}={override} is not an executable program")
        return Path(path)
    path = shutil.which(name)
    if path is None:
        hint = INSTALL_HINTS.get(name, f"install {name}")
        raise ToolchainError(f"'{name}' not found on PATH; install it with `{hint}` {SETUP_HINT}")
    return Path(path)


def arm_gcc() -> Path:
    return find_tool("arm-none-eabi-gcc", "AOT_ARM_GCC")


def make_tool() -> Path:
    return find_tool("make", "AOT_MAKE")


def qemu_system_arm() -> Path:
    return find_tool("qemu-system-arm", "AOT_QEMU")


def tool_version(tool: Path) -> str:
    """First line of ``tool --version`` (recorded in metadata)."""
    try:
        out = subprocess.run(
            [str(tool), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as err:
        raise ToolchainError(f"cannot run {tool}: {err.strerror}") from None
    return (out.stdout or out.stderr).splitlines()[0].strip() if (out.stdout or out.stderr) else ""


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def run_make(
    project_dir: Path, *, jobs: int | None = None, timeout: float = BUILD_TIMEOUT_S
) -> tuple[tuple[str, ...], subprocess.CompletedProcess[str]]:
    """Run make in ``project_dir``: the command and its result (callers word failures)."""
    make = make_tool()
    cmd = (str(make), "-C", str(project_dir), f"-j{jobs or os.cpu_count() or 1}")
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"build of {project_dir} took longer than {timeout:.0f} s") from None
    return cmd, result


def build_with_make(
    project_dir: Path,
    *,
    target: str = "firmware",
    jobs: int | None = None,
    timeout: float = BUILD_TIMEOUT_S,
) -> Path:
    """Run make in a cmsis project folder; returns the ELF path (``build/<target>.elf``,
    ``target`` being the one given to the project's build configuration)."""
    make_tool()
    arm_gcc()  # fail early with the install hint rather than a make error
    _, result = run_make(project_dir, jobs=jobs, timeout=timeout)
    if result.returncode != 0:
        raise ToolchainError(
            f"build of {project_dir} failed (make exit {result.returncode}):\n"
            f"{_tail(result.stderr or result.stdout)}"
        )
    elf = project_dir / "build" / f"{target}.elf"
    if not elf.is_file():
        raise ToolchainError(f"make succeeded but {elf} was not produced")
    return elf


@dataclass(frozen=True)
class ElfSize:
    text: int  # code + constants (+ .data load image)
    data: int
    bss: int


def elf_size(elf: Path) -> ElfSize:
    size_tool = find_tool("arm-none-eabi-size", "AOT_ARM_SIZE")
    result = subprocess.run(
        [str(size_tool), "-B", str(elf)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise ToolchainError(f"arm-none-eabi-size failed on {elf}: {_tail(result.stderr)}")
    fields = result.stdout.splitlines()[1].split()
    return ElfSize(text=int(fields[0]), data=int(fields[1]), bss=int(fields[2]))
