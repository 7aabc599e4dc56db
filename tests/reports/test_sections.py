"""The ELF sizes 'aot run' reports agree with arm-none-eabi-size, and say what bss holds."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from aot.cli.run import section_lines

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_kws_int8.tflite"


@pytest.mark.toolchain
def test_sections_agree_with_arm_none_eabi_size(tmp_path: Path) -> None:
    if not (shutil.which("arm-none-eabi-gcc") and shutil.which("arm-none-eabi-size")):
        pytest.skip("arm-none-eabi-gcc / arm-none-eabi-size not installed")
    from aot.testing.harness import build

    folder = build(EXAMPLE, tmp_path / "out", "mps2_an386")
    build_info = json.loads((folder / "metadata.json").read_text())["build"]
    elf = folder / build_info["executable"]
    berkeley = (
        subprocess.run(["arm-none-eabi-size", str(elf)], capture_output=True, text=True, check=True)
        .stdout.splitlines()[1]
        .split()
    )
    text, data, bss = (int(field) for field in berkeley[:3])
    sections, reserved = build_info["sections"], build_info["reserved"]
    assert sections["text"] + sections["rodata"] == text
    assert (sections["data"], sections["bss"]) == (data, bss)
    # bss holds the stack and heap the linker script reserves, besides pools and statics.
    assert reserved["stack"] > 0 and reserved["heap"] >= 0
    assert sections["bss"] - reserved["stack"] - reserved["heap"] >= 1536  # the workspace
    lines = section_lines(sections, reserved)
    assert f"bss            {bss} B  (stack {reserved['stack']} B" in lines[3]
    assert f"(text + rodata = {text} B)" in lines[1]
    assert "arm-none-eabi-size" in lines[-1]


@pytest.mark.unit
def test_no_sections_no_lines() -> None:
    assert section_lines({}, None) == []  # the host build has no ELF sections
