"""Docs that drifted: architecture.md's file list and memory_planning.md's default planner."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aot.compiler import DEFAULT_PLANNER
from aot.planning import DEFAULT_ALGORITHM

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_architecture_names_every_module_and_only_real_paths() -> None:
    text = (DOCS / "architecture.md").read_text()
    for path in re.findall(r"`(aot/[^`\s]*)`", text):
        real = re.sub(r"<[^>]+>.*$", "", path)  # `templates/<name>/` -> `templates/`
        assert (ROOT / real).exists(), f"architecture.md names {path}, which does not exist"
    for entry in sorted((ROOT / "aot").iterdir()):
        if entry.name.startswith(("_", ".")) or entry.suffix not in (".py", ""):
            continue
        shown = f"aot/{entry.name}" + ("/" if entry.is_dir() else "")
        assert f"`{shown}" in text, f"architecture.md does not list {shown}"


def test_memory_planning_states_the_real_defaults() -> None:
    text = " ".join((DOCS / "memory_planning.md").read_text().split())
    assert f"`aot build` plans with `{DEFAULT_PLANNER}`" in text
    assert f"`plan_memory()` called directly defaults to `{DEFAULT_ALGORITHM}`" in text
    assert "`greedy_by_size` (default, reference)" not in text
    assert "images/memory_vww_two_pools.png" in text
    assert (DOCS / "images" / "memory_vww_two_pools.png").is_file()
