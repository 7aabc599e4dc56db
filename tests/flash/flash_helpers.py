"""Shared pieces of the flash tests: a firmware layout, fake tools, crafted build folders."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from aot.boards import load_all_boards
from aot.flash import Firmware

# Where 'aot build --template zephyr -o /b/out' puts things (see aot.project.zephyr).
FIRMWARE = Firmware(
    elf=Path("/b/out/project/build/zephyr/zephyr.elf"),
    project_dir=Path("/b/out/project"),
    build_dir=Path("/b/out/project/build"),
    build_command=(
        "west", "build", "-b", "nucleo_f746zg", "/b/out/project", "-d", "/b/out/project/build"
    ),
)  # fmt: skip
ELF = str(FIRMWARE.elf)


def physical_boards() -> list[str]:
    return sorted(b.name for b in load_all_boards() if not b.emulated and not b.is_host)


def fake_tool(
    bin_dir: Path,
    name: str,
    *,
    stderr: str = "",
    stdout: str = "",
    code: int = 0,
    sleep: float = 0.0,
) -> Path:
    """An executable ``name`` in ``bin_dir`` that writes its arguments, one a line, to
    ``<name>.args`` next to it, prints the given text and exits with ``code``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    lines = ["#!/bin/sh", f'printf "%s\\n" "$@" > "{bin_dir / (name + ".args")}"']
    if sleep:  # a child process, as west starts openocd; PATH holds only bin_dir
        lines.append(f"{shutil.which('sleep', path=os.defpath)} {sleep}")
    for text, fd in ((stdout, 1), (stderr, 2)):
        for line in text.splitlines():
            lines.append(f"printf '%s\\n' '{line}' >&{fd}")
    lines.append(f"exit {code}")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def recorded_args(bin_dir: Path, name: str) -> list[str]:
    return (bin_dir / f"{name}.args").read_text().splitlines()


def only_path(monkeypatch: Any, bin_dir: Path) -> None:
    """PATH holds just ``bin_dir`` (so no real west/pyocd/openocd is found)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("PATH", str(bin_dir))
    for var in ("AOT_WEST", "AOT_PYOCD", "AOT_OPENOCD"):
        monkeypatch.delenv(var, raising=False)


def crafted_folder(
    folder: Path, board: str, *, built: bool = True, built_by_aot: bool = False
) -> Path:
    """A build folder with a hand-written metadata.json, as 'aot build' writes it for a
    Zephyr project (built by the user, so no "build" entry); ``built`` adds the ELF."""
    project: dict[str, Any] = {
        "template": "zephyr",
        "port": "zephyr",
        "dir": "project",
        "executable": "project/build/zephyr/zephyr.elf",
        "build_tool": "make" if built_by_aot else "west",
        "build_command": ["make", "-C", "project"]
        if built_by_aot
        else ["west", "build", "-b", board, "project", "-d", "project/build"],
        "built_by_aot": built_by_aot,
    }
    metadata = {
        "schema_version": 1,
        "model": {"name": "m"},
        "board": board,
        "project": project,
        "inputs": [{"name": "x", "dtype": "int8", "shape": [1, 4]}],
        "outputs": [{"name": "y", "dtype": "int8", "shape": [1, 4]}],
        "constants": {"bytes": 0},
        "memory": {"workspace_bytes": 64, "pools": []},
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metadata.json").write_text(json.dumps(metadata, indent=2))
    if built:
        elf = folder / project["executable"]
        elf.parent.mkdir(parents=True, exist_ok=True)
        elf.write_bytes(b"\x7fELF")
    return folder


__all__ = [
    "ELF",
    "FIRMWARE",
    "crafted_folder",
    "fake_tool",
    "only_path",
    "physical_boards",
    "recorded_args",
]
