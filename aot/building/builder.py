"""The build stage: a generated project folder -> an executable or firmware ELF."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from aot.artifacts.project import BuildManifest, ProjectManifest
from aot.building import toolchain
from aot.errors import PlanningError, ToolchainError

# Output sections holding read-only data rather than code (names the linker scripts use).
RODATA_MARKERS = ("rodata", "constants")
# Output sections that only reserve RAM for the runtime; arm-none-eabi-size counts them
# in bss, so the report names them as parts of it.
RESERVED_SECTIONS = (".stack", ".heap")


def section_sizes(elf: Path) -> tuple[dict[str, int], dict[str, int]]:
    """text / rodata / data / bss bytes of an ARM ELF, and the stack and heap inside bss.

    text + rodata, data and bss are exactly what ``arm-none-eabi-size`` prints (it sorts
    sections by their flags: read-only -> text, written and loaded -> data, not loaded ->
    bss, so bss includes the stack and heap reservations); rodata is split off text by
    section name. Empty without arm-none-eabi-size.
    """
    if shutil.which("arm-none-eabi-size") is None:
        return {}, {}
    berkeley = toolchain.elf_size(elf)
    result = subprocess.run(
        ["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True, check=False
    )
    rodata = 0
    reserved = {name.lstrip("."): 0 for name in RESERVED_SECTIONS}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) != 3 or not fields[1].isdigit() or not fields[0].startswith("."):
            continue
        name, size = fields[0], int(fields[1])
        if name in RESERVED_SECTIONS:
            reserved[name.lstrip(".")] += size
        elif any(marker in name for marker in RODATA_MARKERS) and not name.startswith(".debug"):
            rodata += size
    sections = {
        "text": berkeley.text - rodata,
        "rodata": rodata,
        "data": berkeley.data,
        "bss": berkeley.bss,
    }
    return sections, reserved


class MemoryOverflowError(PlanningError):
    """The linker found a memory too small. Only the caller knows what was placed there
    (aot.planning.memory_map.MemoryMap.link_overflow_message says it with the option that
    moves it), so the message here names the memory and no option that may not help."""

    def __init__(self, memory: str, over: int) -> None:
        super().__init__(
            f"the firmware does not fit memory '{memory}' of the board: {over} bytes over at "
            "link time"
        )
        self.memory = memory
        self.over = over


def run_make(project_dir: Path) -> tuple[str, ...]:
    """Run make in ``project_dir``; a failure raises one line with the compiler's words,
    and a linker region overflow a PlanningError naming the memory."""
    command, result = toolchain.run_make(project_dir)
    if result.returncode != 0:
        overflow = re.search(r"region [`'](\w+)' overflowed by (\d+) bytes", result.stderr)
        if overflow:
            region, over = overflow.groups()
            raise MemoryOverflowError(region, int(over))
        output = (result.stderr or result.stdout).strip().splitlines()
        first_error = next((line for line in output if "error" in line.lower()), None)
        detail = first_error or (output[-1] if output else "no output")
        raise ToolchainError(
            f"building {project_dir} failed (make exit {result.returncode}): {detail}"
        )
    return command


def build_project(
    output: Path, project: ProjectManifest, shown_as: Path | None = None
) -> BuildManifest:
    """Build the project in ``output``; errors name ``shown_as`` (the final folder, when
    ``output`` is a staging folder that is removed on failure)."""
    import time

    start = time.perf_counter()
    project_dir = output / project.dir
    if Path(project.executable).suffix == ".elf":
        # A cross build: name the missing compiler and its install command up front,
        # rather than make's "Error 127".
        toolchain.arm_gcc()
    try:
        command = run_make(project_dir)
    except ToolchainError as err:
        if shown_as is None:
            raise
        raise ToolchainError(str(err).replace(str(output), str(shown_as))) from err
    executable = output / project.executable
    if not executable.is_file():
        raise ToolchainError(
            f"make finished but {executable} was not produced; check {project_dir}/Makefile"
        )
    sections, reserved = section_sizes(executable) if executable.suffix == ".elf" else ({}, {})
    return BuildManifest(
        executable=project.executable,
        command=tuple(command),
        seconds=round(time.perf_counter() - start, 3),
        sections=sections,
        reserved=reserved,
    )
