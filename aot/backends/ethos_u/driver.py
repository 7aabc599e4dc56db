"""Where the user's Ethos-U core driver and CMSIS-Core headers are, and how firmware builds them.

Both are the user's, like any vendor driver: aot never ships or copies them. It finds them
through ``ETHOSU_DRIVER_DIR`` (Arm's ethos-u-core-driver, or Zephyr's hal_ethos_u, which
carries it unchanged) and ``CMSIS_CORE_DIR`` (CMSIS/Core: the folder holding
``Include/cmsis_compiler.h``); explicit options override the variables. The driver is
compiled in place through ``aot/runtime_c/npu/ethos_u_driver.c``, which includes its
sources, so the project only adds include paths.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aot.errors import ConfigError, ToolchainError

DRIVER_ENV = "ETHOSU_DRIVER_DIR"
CMSIS_CORE_ENV = "CMSIS_CORE_DIR"
NPU_RUNTIME_DIR = Path(__file__).resolve().parents[2] / "runtime_c" / "npu"
GLUE_SOURCES = ("ethos_u.c", "ethos_u_driver.c")
GLUE_HEADERS = ("aot_ethos_u.h",)
# What each folder must hold: the check that it is the right one.
_DRIVER_MARKERS = ("include/ethosu_driver.h", "src/ethosu_driver.c")
_CMSIS_MARKER = "cmsis_compiler.h"
_NPU_NAME = re.compile(r"^ethos-(u\d+)-(\d+)$")


@dataclass(frozen=True)
class DriverPaths:
    driver: Path  # holds include/ethosu_driver.h and src/
    cmsis_include: Path  # holds cmsis_compiler.h


def _given(option: str | os.PathLike[str] | None, env: str, env_map: Mapping[str, str]) -> Path:
    value = os.fspath(option) if option is not None else env_map.get(env, "")
    if not value:
        what = (
            "Arm's Ethos-U core driver (ethos-u-core-driver)"
            if env == DRIVER_ENV
            else "the CMSIS-Core headers (CMSIS/Core)"
        )
        raise ToolchainError(
            f"{env} is not set: point it at {what}, e.g. `export {env}=/path/to/it`"
        )
    return Path(value).expanduser()


def find_driver(
    driver_dir: str | os.PathLike[str] | None = None,
    cmsis_core_dir: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> DriverPaths:
    """The driver and CMSIS-Core folders: the options, else the environment variables."""
    env_map = os.environ if env is None else env
    driver = _given(driver_dir, DRIVER_ENV, env_map)
    missing = [m for m in _DRIVER_MARKERS if not (driver / m).is_file()]
    if missing:
        raise ToolchainError(
            f"{DRIVER_ENV}={driver} is not an Ethos-U core driver: it has no {missing[0]}"
        )
    cmsis = _given(cmsis_core_dir, CMSIS_CORE_ENV, env_map)
    # Accept CMSIS/Core itself or its Include folder.
    include = next((d for d in (cmsis / "Include", cmsis) if (d / _CMSIS_MARKER).is_file()), None)
    if include is None:
        raise ToolchainError(
            f"{CMSIS_CORE_ENV}={cmsis} holds no Include/{_CMSIS_MARKER}: point it at CMSIS/Core"
        )
    return DriverPaths(driver=driver.resolve(), cmsis_include=include.resolve())


def npu_arch(accelerator: str) -> tuple[str, int]:
    """``ethos-u55-128`` -> (``u55``, 128)."""
    match = _NPU_NAME.match(accelerator)
    if not match:
        raise ConfigError(f"'{accelerator}' is not an Ethos-U name such as ethos-u55-128")
    return match.group(1), int(match.group(2))


def driver_defines(accelerator: str, base: int, irq: int, *, secure: bool = True) -> dict[str, str]:
    """The -D macros the driver (as its CMake sets them) and aot's glue need."""
    arch, macs = npu_arch(accelerator)
    return {
        "ETHOSU": "1",
        f"ETHOS{arch.upper()}": "1",
        "ETHOSU_ARCH": arch,
        "ETHOSU_MACS": str(macs),
        # The driver logs through printf; firmware output is aot's serial protocol.
        "ETHOSU_LOG_ENABLE": "0",
        "ETHOSU_LOG_SEVERITY": "0",
        "AOT_ETHOSU_BASE": f"0x{base:08X}u",
        "AOT_ETHOSU_IRQ": str(irq),
        "AOT_ETHOSU_SECURE": "1" if secure else "0",
    }


def include_dirs(paths: DriverPaths) -> tuple[Path, ...]:
    return (paths.driver / "include", paths.driver / "src", paths.cmsis_include)


def glue_sources() -> tuple[Path, ...]:
    return tuple(NPU_RUNTIME_DIR / name for name in GLUE_SOURCES)


def glue_headers() -> tuple[Path, ...]:
    return tuple(NPU_RUNTIME_DIR / name for name in GLUE_HEADERS)
