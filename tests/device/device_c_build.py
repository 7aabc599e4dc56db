"""Compiler helpers shared by the toolchain tests of the C runtime."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "aot" / "runtime_c"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
C_FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror"]
# build(model, *flags) -> host executable serving fixtures/<model>.c (conftest.host_app)
HostBuilder = Callable[..., Path]

INCLUDES = [f"-I{RUNTIME / 'include'}", f"-I{RUNTIME / 'src'}"]


def runtime_sources() -> list[Path]:
    return sorted((RUNTIME / "src").glob("*.c"))


def compile_c(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"compile failed: {' '.join(argv)}\n{result.stderr}")
