"""Data flows one way: no stage module imports a later stage (lazy imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

AOT = Path(__file__).resolve().parents[2] / "aot"
ORDER = ["frontend", "partition", "lowering", "planning", "codegen", "project"]
BOTTOM = ["naming.py", "errors.py", "registry.py", "sizes.py"]  # import no stage at all


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("stage", ORDER)
def test_no_stage_imports_a_later_one(stage: str) -> None:
    later = ORDER[ORDER.index(stage) + 1 :]
    offenders = [
        f"{path.relative_to(AOT)} imports {module}"
        for path in sorted((AOT / stage).rglob("*.py"))
        for module in imported_modules(path)
        if any(module == f"aot.{s}" or module.startswith(f"aot.{s}.") for s in later)
    ]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("name", [*BOTTOM, "backends/base.py"])
def test_the_bottom_of_the_house_imports_no_stage(name: str) -> None:
    stages = [f"aot.{s}" for s in ORDER]
    modules = imported_modules(AOT / name)
    assert not [m for m in modules if any(m == s or m.startswith(s + ".") for s in stages)]
