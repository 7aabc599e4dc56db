"""The port's copy hook: aot_platform_copy has a weak memcpy default a port can replace."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aot.building.toolchain import find_tool
from aot.library import RUNTIME_C_DIR

pytestmark = pytest.mark.toolchain

MAIN = r"""
#include <stdio.h>
#include "aot/platform.h"

int main(void) {
  const char src[6] = "hello";
  char dst[6] = {0};
  aot_platform_copy(dst, src, sizeof src);
  printf("%s\n", dst);
  return 0;
}
"""

PORT_COPY = r"""
#include "aot/platform.h"
/* A port's own copy (a DMA in real life): it marks what it moved. */
void aot_platform_copy(void* dst, const void* src, size_t n) {
  for (size_t i = 0; i < n; ++i) ((char*)dst)[i] = ((const char*)src)[i];
  ((char*)dst)[0] = 'J';
}
"""


def _run(tmp_path: Path, *extra: str) -> str:
    cc = find_tool("cc")
    sources = [tmp_path / "main.c", RUNTIME_C_DIR / "src" / "platform_defaults.c"]
    sources[0].write_text(MAIN)
    for i, text in enumerate(extra):
        path = tmp_path / f"port{i}.c"
        path.write_text(text)
        sources.append(path)
    exe = tmp_path / "copy_test"
    subprocess.run(
        [str(cc), "-std=c99", "-Wall", "-Werror", f"-I{RUNTIME_C_DIR / 'include'}"]
        + [str(s) for s in sources]
        + ["-o", str(exe)],
        check=True,
    )
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout


def test_default_copy_is_memcpy(tmp_path: Path) -> None:
    assert _run(tmp_path) == "hello\n"


def test_a_port_replaces_the_copy(tmp_path: Path) -> None:
    assert _run(tmp_path, PORT_COPY) == "Jello\n"
