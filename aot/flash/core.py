"""The flash runner interface, its registry, and the firmware a runner puts on a board.

A runner wraps one flash tool (west, pyOCD, OpenOCD, ...). It declares its capabilities
and builds the exact command line from the board's ``flash`` data, the firmware and the
user's options; :meth:`FlashRunner.flash` runs that command. Runners register by name in
``flash_runners``; out-of-tree ones add an entry point in the ``aot.flash_runners`` group
that names a :class:`FlashRunner` subclass.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from aot.artifacts import LibraryManifest
from aot.boards import Board
from aot.errors import ConfigError, FlashError, ToolchainError
from aot.registry import Registry

log = logging.getLogger(__name__)

# What a runner may declare. "flash" programs an image; "erase" can erase the whole chip
# first (--erase); "reset" starts the new firmware when done, so nobody presses a
# button; "probe" selects one of several connected probes by serial number (--probe).
CAPABILITIES = frozenset({"flash", "erase", "reset", "probe"})

DEFAULT_TIMEOUT_S = 300.0  # a full-chip erase plus a 2 MB image over SWD stays well below

# Where the user's west build puts its output, under the project folder: the zephyr
# template records its executable as build/zephyr/zephyr.elf (aot.project.zephyr).
WEST_BUILD_DIR = "build"


@dataclass(frozen=True)
class Firmware:
    """What a runner flashes: an ELF, and the project and build folders it came from."""

    elf: Path
    project_dir: Path
    build_dir: Path  # west flashes from here (it reads its runners.yaml, not the ELF)
    # The command that builds the ELF (from metadata.json), for a missing-firmware error.
    build_command: tuple[str, ...] = ()


@dataclass(frozen=True)
class FlashOptions:
    probe: str | None = None  # probe serial number / unique id
    erase: bool = False  # erase the whole chip first
    extra_args: tuple[str, ...] = ()  # appended verbatim to the tool's command line
    timeout: float = DEFAULT_TIMEOUT_S


class FlashRunner(ABC):
    """One flash tool. Subclasses set the class attributes and implement :meth:`build`."""

    name: ClassVar[str]
    tool: ClassVar[str]  # the program looked up on PATH
    install: ClassVar[str]  # how to install it, shown when it is missing
    env_var: ClassVar[str]  # overrides the PATH lookup, like AOT_QEMU does for QEMU
    capabilities: ClassVar[frozenset[str]]
    # What the board must give this runner in its YAML (flash.runners.<name>), e.g.
    # "-t <pyOCD target>"; None: the runner works without board arguments.
    board_args_hint: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        unknown = set(getattr(cls, "capabilities", ())) - CAPABILITIES
        if unknown:
            raise TypeError(f"{cls.__name__} declares unknown capabilities {sorted(unknown)}")

    # ---- the command line -----------------------------------------------------------

    def command(
        self, board: Board, firmware: Firmware, options: FlashOptions | None = None
    ) -> list[str]:
        """The exact argv that flashes ``firmware`` onto ``board`` (argv[0] is the tool's
        name; :meth:`flash` resolves it on PATH)."""
        options = options or FlashOptions()
        self.check_options(options)
        return [self.tool, *self.build(self.board_args(board), firmware, options)]

    @abstractmethod
    def build(
        self, board_args: Sequence[str], firmware: Firmware, options: FlashOptions
    ) -> list[str]:
        """The tool's arguments (without the program name)."""

    def board_args(self, board: Board) -> tuple[str, ...]:
        if board.flash is None:
            raise ConfigError(
                f"board '{board.name}' has no 'flash' entry in its YAML: aot does not know "
                "how to flash it"
            )
        args = board.flash.args_for(self.name)
        if args is not None:
            return args
        if self.board_args_hint is None:
            return ()
        where = board.path or f"aot/boards/{board.name}.yaml"
        raise ConfigError(
            f"board '{board.name}' has no arguments for flash runner '{self.name}' "
            f"({self.board_args_hint}); add them to {where} under flash: runners: "
            f"{self.name}: [...], or use the board's runner '{board.flash.runner}'"
        )

    def check_options(self, options: FlashOptions) -> None:
        for wanted, capability, flag in (
            (options.erase, "erase", "--erase"),
            (options.probe, "probe", "--probe"),
        ):
            if wanted and capability not in self.capabilities:
                raise ConfigError(
                    f"flash runner '{self.name}' cannot {capability} ({flag}); it supports: "
                    f"{', '.join(sorted(self.capabilities))}"
                )

    # ---- running it -----------------------------------------------------------------

    def find_tool(self) -> str:
        override = os.environ.get(self.env_var)
        if override:
            path = shutil.which(override)
            if path is None:
                raise ToolchainError(f"{self.env_var}={override} is not an executable program")
            return path
        path = shutil.which(self.tool)
        if path is None:
            raise ToolchainError(
                f"'{self.tool}' not found on PATH (needed by the '{self.name}' flash runner); "
                f"install it with `{self.install}`, or set {self.env_var} to its path"
            )
        return path

    def check_firmware(self, board: Board, firmware: Firmware) -> None:
        """Fails before running the tool if there is nothing to flash yet."""
        if not firmware.elf.is_file():
            raise ConfigError(missing_firmware_message(firmware))

    def flash(self, board: Board, firmware: Firmware, options: FlashOptions | None = None) -> None:
        """Flashes the board; FlashError with the tool's last error line if it fails."""
        options = options or FlashOptions()
        argv = self.command(board, firmware, options)
        self.check_firmware(board, firmware)
        argv[0] = self.find_tool()
        log.info("flashing %s: %s", board.name, shlex.join(argv))
        try:
            code, stdout, stderr = _run(argv, options.timeout)
        except subprocess.TimeoutExpired:
            raise FlashError(
                f"{self.tool} did not finish flashing {board.name} within "
                f"{options.timeout:g} s; is the board connected and powered?"
            ) from None
        except OSError as err:
            raise ToolchainError(f"cannot run {argv[0]}: {err.strerror}") from None
        log.debug("%s output:\n%s%s", self.tool, stdout, stderr)
        if code != 0:
            line = last_error_line(stderr, stdout) or "no output"
            raise FlashError(f"{self.tool} could not flash {board.name} (exit code {code}): {line}")


def _run(argv: list[str], timeout: float) -> tuple[int, str, str]:
    """Runs a tool in its own process group and kills the whole group on a timeout or an
    interrupt: tools start helpers (west runs openocd) that would outlive a plain kill and
    keep our pipes open."""
    with subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    return process.returncode, stdout, stderr


flash_runners: Registry[type[FlashRunner]] = Registry("flash runner", "aot.flash_runners")

_ERROR_RE = re.compile(r"error|fatal|fail|not found|no .*(probe|device|target)", re.IGNORECASE)


def last_error_line(*outputs: str, limit: int = 300) -> str:
    """The tool's last line that reads like an error (else its last line), one line."""
    lines = [line.strip() for out in outputs for line in (out or "").splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    errors = [line for line in lines if _ERROR_RE.search(line)]
    line = (errors or lines)[-1]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def runner_for(board: Board, name: str | None = None) -> FlashRunner:
    """The runner called ``name``, or the board's default one."""
    if name is None:
        if board.flash is None:
            raise ConfigError(
                f"board '{board.name}' has no 'flash' entry in its YAML: aot does not know "
                "how to flash it"
            )
        name = board.flash.runner
    cls = flash_runners.get(name)
    if not (isinstance(cls, type) and issubclass(cls, FlashRunner)):
        # An entry point of another package named something else.
        raise ConfigError(f"flash runner '{name}' is {cls!r}, not a FlashRunner subclass")
    return cls()


def missing_firmware_message(firmware: Firmware) -> str:
    """The path that is missing and the command that makes it."""
    if firmware.build_command:
        how = f"build the project with `{shlex.join(firmware.build_command)}`"
    else:
        how = f"build the project in {firmware.project_dir} (see its README.md)"
    return f"firmware {firmware.elf} not found; {how}, or rerun 'aot build' without --no-build"


def firmware_from_metadata(output: Path, manifest: LibraryManifest) -> Firmware:
    """The firmware of a folder made by 'aot build', from its manifest: where the
    project's build puts it, whoever ran that build (aot, make, cmake, west)."""
    from aot.project import project_build_command

    project = manifest.project
    if project is None:
        raise ConfigError(f"{output} has no project in its metadata.json; run 'aot build'")
    project_dir = output / project.dir
    executable = manifest.executable or project.executable
    command = project_build_command(output, project)
    if not command and project.build_tool == "make":
        command = ["make", "-C", str(project_dir)]  # folders written before build_command
    return Firmware(
        elf=output / executable,
        project_dir=project_dir,
        build_dir=project_dir / WEST_BUILD_DIR,
        build_command=tuple(command),
    )
