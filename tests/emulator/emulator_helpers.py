"""Shared data and helpers for the emulator tests: the MLPerf Tiny models, the emulated
boards, and a prediction of whether a model fits a board, made from memory sizes only."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from aot.boards import Board, load_all_boards
from aot.project.linker import DEFAULT_HEAP_SIZE, DEFAULT_STACK_SIZE
from aot.testing.shared import mlperf_tiny, shared_dir

REPO = Path(__file__).resolve().parents[2]
MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = ["ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"]
EMULATED = [board.name for board in load_all_boards() if board.emulated]
EXAMPLE_MODEL = REPO / "examples" / "tiny_kws_int8.tflite"
EXAMPLE_INPUT = REPO / "examples" / "tiny_kws_int8.input.npy"

# Allowances for what the compile stage does not report. Both are generous upper bounds
# (measured: .text <= 17 KiB, runtime .data + .bss besides pools and I/O <= 2 KiB), so a
# "fits" prediction is safe; a "does not fit" one is only made when the model's own
# constants or workspace exceed a region, never by a margin of a few KiB.
CODE_ALLOWANCE = 64 * 1024
RUNTIME_RAM_ALLOWANCE = 8 * 1024


@dataclass(frozen=True)
class ModelNeeds:
    """Board-independent sizes from the compile stage (metadata.json)."""

    constants_bytes: int
    workspace_bytes: int
    io_bytes: int


def model_path(name: str) -> Path:
    return mlperf_tiny(name)


def region_demand(board: Board, needs: ModelNeeds) -> dict[str, int]:
    """Bytes each memory region must hold with the cmsis template's default placement
    (aot.project.cmsis.section_placements and aot.project.linker.render_linker_script): code and
    constants in their default regions, the single default pool in the default workspace
    region, .data/.bss (I/O arena, frame buffers) and heap in the data region, the stack
    in the stack region. The constants go to the first region that may hold them and
    has room beside the pool and the I/O arena placed there (aot/planning/memory_map.py,
    which knows no code size before the link), else to the default one."""
    demand: dict[str, int] = {}
    placed: dict[str, int] = {}  # what aot itself places, as the plan-time check counts

    def add(kind: str, size: int, region: str | None = None, by_aot: bool = False) -> None:
        region = region or board.default_region(kind).name
        demand[region] = demand.get(region, 0) + size
        if by_aot:
            placed[region] = placed.get(region, 0) + size

    add("code", CODE_ALLOWANCE)
    add("workspace", needs.workspace_bytes, by_aot=True)
    add("data", needs.io_bytes, by_aot=True)
    add("data", RUNTIME_RAM_ALLOWANCE + DEFAULT_HEAP_SIZE)
    add("stack", DEFAULT_STACK_SIZE)
    fits = [
        m.name
        for m in board.memories
        if m.may_hold("constants") and placed.get(m.name, 0) + needs.constants_bytes <= m.size
    ]
    add("constants", needs.constants_bytes, fits[0] if fits else None)
    return demand


def overflowing_regions(board: Board, needs: ModelNeeds) -> list[str]:
    """Regions the model cannot fit into on ``board``; empty = it fits."""
    return [
        name for name, size in region_demand(board, needs).items() if size > board.region(name).size
    ]


def require_tools(*names: str) -> None:
    for name in names:
        if shutil.which(name) is None:
            pytest.skip(f"{name} not found on PATH (bash scripts/setup.sh installs it)")


def path_without(tmp_dir: Path, hidden_prefixes: Iterable[str]) -> str:
    """A PATH of one folder mirroring every program on the current PATH except those
    whose names start with one of ``hidden_prefixes`` (first match on PATH wins, as in a
    shell). Programs the build needs besides the hidden ones (make, sh, mkdir) stay."""
    prefixes = tuple(hidden_prefixes)
    tmp_dir.mkdir(parents=True, exist_ok=True)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            target = Path(folder) / name
            link = tmp_dir / name
            if name.startswith(prefixes) or link.exists() or link.is_symlink():
                continue
            if target.is_file() and os.access(target, os.X_OK):
                link.symlink_to(target)
    return str(tmp_dir)


def qemu_processes_running(marker: str) -> list[int]:
    """PIDs of live qemu-system-* processes whose command line contains ``marker`` (a
    test's unique temporary path, so parallel test workers do not see each other's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # exited while we looked
        if not os.path.basename(argv[0]).startswith(b"qemu-system"):
            continue
        if state != "Z" and any(marker.encode() in arg for arg in argv):
            found.append(int(entry.name))
    return found
