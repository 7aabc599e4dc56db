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
PYPROJECT = ROOT / "pyproject.toml"


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


def _paragraphs(text: str) -> list[str]:
    """Table rows and paragraphs: the units within which a bare file name belongs to the
    folder named beside it."""
    units, current = [], []
    for line in text.splitlines():
        if line.startswith("|") or not line.strip():
            units += [" ".join(current)] if current else []
            current = []
            if line.startswith("|"):
                units.append(line)
        else:
            current.append(line)
    return units + ([" ".join(current)] if current else [])


def test_architecture_names_only_files_that_exist_where_it_says() -> None:
    """A bare name (`importer.py`, `tflite_int8/`) is a file of a folder its row or
    paragraph names (`aot/frontend/`), and a dotted name in a module of the tree
    (`aot.planning.core.Planner`) is one that defines what follows it."""
    text = (DOCS / "architecture.md").read_text()
    for unit in _paragraphs(text):
        quoted = re.findall(r"`([^`\s]+)`", unit)
        folders = [ROOT / q for q in quoted if re.fullmatch(r"aot/[\w/]*/", q)]
        for name in quoted:
            if "/" in name.rstrip("/") or not re.fullmatch(r"\w+(\.py|/)", name):
                continue  # whole paths are the test above's
            found = [f / name for f in folders if (f / name).exists()]
            assert found, f"architecture.md names {name} beside {quoted[:3]}; it is in none of them"
            folders += [f for f in found if f.is_dir()]  # `tflite_int8/`: `importer.py`
    # Entry-point groups (pyproject.toml) are names, not modules.
    groups = set(re.findall(r'^\[project\.entry-points\."([^"]+)"\]', PYPROJECT.read_text(), re.M))
    for dotted in sorted(set(re.findall(r"`(aot(?:\.\w+)+)(?:\(\))?`", text)) - groups):
        parts = dotted.split(".")
        if not any((ROOT / "aot" / f"{parts[1]}{end}").exists() for end in ("", ".py")):
            continue  # an attribute's name (`aot.operator` on a PrimFunc), not a module
        for cut in range(len(parts), 1, -1):
            module = ROOT.joinpath(*parts[:cut])
            source = module / "__init__.py" if module.is_dir() else module.with_suffix(".py")
            if source.is_file():
                break
        else:
            raise AssertionError(f"architecture.md names {dotted}: no such module")
        for name in parts[cut : cut + 1]:
            defined = rf"^\s*(def|class) {name}\b|^{name}\b.*=|import.*\b{name}\b"
            assert re.search(defined, source.read_text(), re.M), f"{dotted}: {source} has no {name}"


def test_memory_planning_states_the_real_defaults() -> None:
    text = " ".join((DOCS / "memory_planning.md").read_text().split())
    assert f"`aot build` plans with `{DEFAULT_PLANNER}`" in text
    assert f"`plan_memory()` called directly defaults to `{DEFAULT_ALGORITHM}`" in text
    assert "`greedy_by_size` (default, reference)" not in text
    assert "images/memory_vww_two_pools.png" in text
    assert (DOCS / "images" / "memory_vww_two_pools.png").is_file()
