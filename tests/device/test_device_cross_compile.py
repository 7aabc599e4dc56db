"""Every runtime C file builds for Cortex-M (compile only) and the headers stand alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from device_c_build import C_FLAGS, FIXTURES, INCLUDES, RUNTIME, compile_c, runtime_sources

pytestmark = pytest.mark.toolchain

TARGETS = {
    "cortex-m4-hard": ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
    "cortex-m3-soft": ["-mcpu=cortex-m3", "-mthumb", "-mfloat-abi=soft"],
}
SOURCES = [*runtime_sources(), *sorted(FIXTURES.glob("*.c"))]


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("source", SOURCES, ids=[s.name for s in SOURCES])
@pytest.mark.parametrize("opt", ["-O2", "-Os"])
def test_cross_compiles(target: str, source: Path, opt: str, tmp_path: Path) -> None:
    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        pytest.skip(
            "arm-none-eabi-gcc not found; install it with: apt-get install gcc-arm-none-eabi"
        )
    flags = [*C_FLAGS, opt, *TARGETS[target], *INCLUDES, "-ffunction-sections", "-fdata-sections"]
    compile_c([gcc, *flags, "-c", str(source), "-o", str(tmp_path / "out.o")])


HEADERS = sorted((RUNTIME / "include" / "aot").glob("*.h"))


@pytest.mark.parametrize("header", HEADERS, ids=[h.name for h in HEADERS])
def test_public_header_compiles_on_its_own(header: Path, tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("host gcc not found")
    unit = tmp_path / "unit.c"
    unit.write_text(f'#include "aot/{header.name}"\n#include "aot/{header.name}"\n')
    compile_c([gcc, *C_FLAGS, "-pedantic", *INCLUDES, "-c", str(unit), "-o", str(tmp_path / "u.o")])
    gxx = shutil.which("g++")
    if gxx is not None:  # the extern "C" guards must hold too
        cxx = ["-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-Werror"]
        compile_c([gxx, *cxx, *INCLUDES, "-c", str(unit), "-o", str(tmp_path / "u.o")])
