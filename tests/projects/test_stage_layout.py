"""The project stage writes project files and the build stage only builds: no module of
aot/project imports a later stage, and how a template is built is template data."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from aot.project import BUILD_TOOLS, TEMPLATES_DIR, available_templates, load_template

pytestmark = pytest.mark.unit

AOT = Path(__file__).resolve().parents[2] / "aot"
LATER_STAGES = ("aot.building", "aot.runner", "aot.flash", "aot.device")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted((AOT / "project").glob("*.py")), ids=lambda p: p.name)
def test_project_stage_imports_no_later_stage(path: Path) -> None:
    later = {m for m in imported_modules(path) if m.startswith(LATER_STAGES)}
    assert not later, f"{path.name} imports {sorted(later)}"


def test_build_stage_renders_no_project_files() -> None:
    text = "".join(path.read_text() for path in sorted((AOT / "build").glob("*.py")))
    for renderer in ("csolution", "clayer", "render_config_mk", "render_zephyr", "prj.conf"):
        assert renderer not in text, renderer


@pytest.mark.parametrize("name", available_templates())
def test_every_template_says_how_it_is_built(name: str) -> None:
    template = load_template(name)
    assert template.build in BUILD_TOOLS
    assert template.firmware and not Path(template.firmware).is_absolute()


def test_nothing_guesses_the_build_from_a_makefile() -> None:
    for path in [*(AOT / "project").glob("*.py"), AOT / "cli" / "build.py"]:
        assert '"Makefile").is_file()' not in path.read_text(), path
    assert not (TEMPLATES_DIR / "zephyr" / "Makefile").exists()
