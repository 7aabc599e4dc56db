"""The build stage of a zephyr-template project: ``west build`` in a west workspace, else
CMake + Ninja, with the Zephyr tree aot/project/zephyr_tree.py found and that version's
board name; a failed build is one line plus the log path, as the cmsis template's make.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from aot.artifacts.project import BuildManifest, ProjectManifest, ZephyrTreeInfo
from aot.errors import PlanningError, ToolchainError
from aot.project.zephyr_tree import BUILD_LOG, BUILD_TIMEOUT_S, ZephyrTarget


def toolchain_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for Zephyr's build: a toolchain the user chose (Zephyr SDK or
    ZEPHYR_TOOLCHAIN_VARIANT) is kept; otherwise the arm-none-eabi-gcc on PATH, as
    Zephyr's ``gnuarmemb`` variant."""
    env = dict(os.environ if environ is None else environ)
    if env.get("ZEPHYR_TOOLCHAIN_VARIANT") or env.get("ZEPHYR_SDK_INSTALL_DIR"):
        return env
    from aot.building.toolchain import arm_gcc

    gcc = arm_gcc().resolve()
    env["ZEPHYR_TOOLCHAIN_VARIANT"] = "gnuarmemb"
    env["GNUARMEMB_TOOLCHAIN_PATH"] = str(gcc.parent.parent)
    return env


@dataclass(frozen=True)
class BuildStep:
    """One command of a Zephyr build: what runs, where, and which stage it is."""

    stage: str  # configure | build (cmake + ninja) or build (west)
    command: tuple[str, ...]
    cwd: Path | None = None


def build_steps(
    target: ZephyrTarget, project: Path, *, use_west: bool | None = None
) -> list[BuildStep]:
    """The commands that build ``project`` into ``project/build`` for ``target``: ``west
    build`` when west is installed and the tree is in a west workspace, else ``cmake
    -GNinja`` and ``ninja``."""
    name = target.board
    workspace = target.tree.workspace
    build_dir = project / "build"
    defines = [f"-DZEPHYR_MODULES={';'.join(str(m) for m in target.modules)}"]
    if not target.modules:
        defines = []
    if use_west is None:
        use_west = shutil.which("west") is not None and workspace is not None
    if use_west:
        command = ("west", "build", "-b", name, str(project), "-d", str(build_dir))
        return [BuildStep("build", (*command, "--", *defines), workspace)]
    cmake = shutil.which("cmake") or "cmake"
    ninja = shutil.which("ninja") or "ninja"
    return [
        BuildStep(
            "configure",
            (
                cmake,
                "-GNinja",
                "-S",
                str(project),
                "-B",
                str(build_dir),
                f"-DBOARD={name}",
                *defines,
            ),
        ),
        BuildStep("build", (ninja, "-C", str(build_dir))),
    ]


def first_error(log: str) -> str:
    """The line of a Zephyr build log that says what went wrong: Zephyr's board lookup,
    a compiler or linker ``error:``, else the sentence after ``CMake Error``, else the
    last line."""
    lines = [line.rstrip() for line in log.splitlines()]
    for line in lines:  # Zephyr's own words before its CMake Error ("Invalid BOARD; see above")
        if line.startswith("No board named"):
            return line.strip()
    for line in lines:
        if re.search(r"\berror:", line) and "CMake Error" not in line:
            return line.strip()
    for index, line in enumerate(lines):
        if "CMake Error" in line:
            for detail in lines[index + 1 :]:
                if detail.strip():
                    return detail.strip()
            return line.strip()
    for line in lines:
        if line.startswith("FATAL ERROR"):
            return line.strip()
    tail = [line for line in lines if line.strip()]
    return tail[-1].strip() if tail else "no output"


@dataclass(frozen=True)
class ZephyrBuild:
    elf: Path
    commands: tuple[tuple[str, ...], ...]
    seconds: float
    log: Path


def build(target: ZephyrTarget, project: Path) -> ZephyrBuild:
    """Build ``project`` for ``target``; a failure raises one line with Zephyr's words and
    the path of the full log (``project/build/aot_build.log``)."""
    steps = build_steps(target, project)
    env = toolchain_environment()
    env["ZEPHYR_BASE"] = str(target.tree.base)
    build_dir = project / "build"
    build_dir.mkdir(parents=True, exist_ok=True)
    log_path = build_dir / BUILD_LOG
    start = time.perf_counter()
    with log_path.open("w") as log:
        for step in steps:
            log.write("$ " + " ".join(step.command) + "\n")
            log.flush()
            try:
                result = subprocess.run(
                    step.command,
                    cwd=step.cwd,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=BUILD_TIMEOUT_S,
                    check=False,
                )
            except FileNotFoundError as err:
                raise ToolchainError(
                    f"cannot run {step.command[0]} for the Zephyr build: {err.strerror}; "
                    "install cmake and ninja-build (scripts/setup.sh)"
                ) from None
            except subprocess.TimeoutExpired:
                raise ToolchainError(
                    f"the Zephyr build of {project} took longer than {BUILD_TIMEOUT_S:.0f} s; "
                    f"log: {log_path}"
                ) from None
            log.write(result.stdout)
            if result.returncode != 0:
                overflow = re.search(r"region [`'](\w+)' overflowed by (\d+) bytes", result.stdout)
                if overflow:
                    region, over = overflow.groups()
                    raise PlanningError(
                        f"the Zephyr firmware does not fit memory '{region}': {over} bytes "
                        f"over; use smaller pools (--pool) or a board with more memory; log: "
                        f"{log_path}"
                    )
                # west configures and builds in one step: say which part failed.
                stage = "configure" if "Configuring incomplete" in result.stdout else step.stage
                raise ToolchainError(
                    f"the Zephyr build of {project} failed at {stage} "
                    f"({Path(step.command[0]).name} exit {result.returncode}): "
                    f"{first_error(result.stdout).rstrip('.')}; log: {log_path}"
                )
    elf = build_dir / "zephyr" / "zephyr.elf"
    if not elf.is_file():
        raise ToolchainError(f"the Zephyr build finished but {elf} is missing; log: {log_path}")
    return ZephyrBuild(elf, tuple(s.command for s in steps), time.perf_counter() - start, log_path)


def build_output(output: Path, project: ProjectManifest, target: ZephyrTarget) -> BuildManifest:
    """Build the project of an ``aot build`` folder for ``target``; what metadata.json
    records under ``build`` (as the cmsis template's make build)."""
    from aot.building.builder import section_sizes

    folder = output / project.dir
    result = build(target, folder)
    sections, reserved = section_sizes(result.elf)
    # Zephyr's linker script names its read-only data section "rodata", without the dot
    # aot.building.builder.section_sizes looks for: move it from text to rodata here.
    rodata = zephyr_rodata_bytes(result.elf)
    if sections and rodata:
        sections = {**sections, "text": sections["text"] - rodata, "rodata": rodata}
    return BuildManifest(
        executable=result.elf.relative_to(output).as_posix(),
        command=tuple(tuple(command) for command in result.commands),
        seconds=round(result.seconds, 3),
        sections=sections,
        reserved=reserved,
        zephyr=ZephyrTreeInfo(base=str(target.tree.base), version=str(target.tree.version)),
        log=result.log.relative_to(output).as_posix(),
    )


def zephyr_rodata_bytes(elf: Path) -> int:
    """Bytes of the ``rodata`` output section of a Zephyr ELF (0 without binutils)."""
    if shutil.which("arm-none-eabi-size") is None:
        return 0
    listing = subprocess.run(
        ["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True, check=False
    ).stdout
    return sum(
        int(fields[1])
        for fields in (line.split() for line in listing.splitlines())
        if len(fields) == 3 and fields[0] == "rodata" and fields[1].isdigit()
    )
