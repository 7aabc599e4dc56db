"""The project stage: model library + board -> a buildable project folder.

A template is a folder under ``aot/project/templates/``. Its files are copied into
``DIR/project``; files ending in ``.in`` have ``@VARIABLE@`` placeholders filled and lose
the suffix. The runtime application (``aot/runtime_c/include``, ``aot/runtime_c/src`` and the
board's port file) is copied into ``project/runtime`` so the project builds on its own,
and ``project/app/aot_app_model.c`` names the model the application serves.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aot.boards import Board
from aot.errors import ConfigError, InternalError
from aot.library import LIBRARY_DIR, RUNTIME_C_DIR

# Templates ship inside the package (package data), beside this module.
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
PROJECT_DIR = "project"
EXECUTABLE = "aot_app"

# Frame payload of the serial protocol; larger inputs arrive in chunks.
APP_MAX_PAYLOAD = 512
# Where no linker symbol bounds the stack (host builds), paint this much below main.
HOST_STACK_PAINT = 256 * 1024


@dataclass(frozen=True)
class ProjectInfo:
    template: str
    port: str
    dir: str  # relative to the output folder
    executable: str  # relative to the output folder, once built
    built_by_aot: bool  # False: the user builds it (e.g. west build for Zephyr)
    variables: Mapping[str, str] = field(repr=False, default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "port": self.port,
            "dir": self.dir,
            "executable": self.executable,
            "built_by_aot": self.built_by_aot,
        }


@dataclass(frozen=True)
class ProjectContext:
    """What a template hook gets: the project folder (already holding the copied
    template and runtime) and the facts it may need."""

    project: Path
    board: Board
    metadata: dict[str, Any]
    app_defines: Mapping[str, str]

    @property
    def model_name(self) -> str:
        return str(self.metadata["model"]["name"])

    def sources(self) -> list[str]:
        """Every C file besides the template's own, relative to the project folder."""
        library = [f"../{s}" for s in self.metadata["library"]["sources"]]
        runtime = sorted(
            f"runtime/src/{p.name}" for p in (self.project / "runtime/src").glob("*.c")
        )
        return [*library, *runtime, "runtime/port/port.c", "app/aot_app_model.c"]

    def includes(self) -> list[str]:
        return [
            f"../{LIBRARY_DIR}/include",
            f"../{LIBRARY_DIR}/src",
            "runtime/include",
            "runtime/src",
        ]


# A template's hook writes its generated files (build configuration, linker script) and
# returns the path of the build product relative to the project. Templates register a
# hook by name; the generator never tests template or board names.
TemplateHook = Callable[[ProjectContext], str]
TEMPLATE_HOOKS: dict[str, TemplateHook] = {}


def template_hook(name: str) -> Callable[[TemplateHook], TemplateHook]:
    def decorator(func: TemplateHook) -> TemplateHook:
        TEMPLATE_HOOKS[name] = func
        return func

    return decorator


def available_templates() -> list[str]:
    return sorted(p.name for p in TEMPLATES_DIR.iterdir() if p.is_dir())


def default_template(board: Board) -> str:
    return board.templates[0]


def io_arena_bytes(metadata: dict[str, Any]) -> int:
    # Each tensor is aligned to 16 bytes inside the application's I/O arena; a model
    # built with --io-in-pool brings its own buffers.
    if metadata["memory"].get("io_in_pool"):
        return 16
    total = 0
    for tensor in [*metadata["inputs"], *metadata["outputs"]]:
        total += (int(tensor["size_bytes"]) + 15) // 16 * 16
    return max(total, 16)


def app_defines(metadata: dict[str, Any]) -> dict[str, str]:
    """-D macros of the runtime application, sized for this model."""
    return {
        "AOT_APP_IO_BYTES": f"{io_arena_bytes(metadata)}u",
        "AOT_APP_MAX_TENSORS": f"{max(1, len(metadata['inputs']) + len(metadata['outputs']))}u",
        "AOT_APP_MAX_PAYLOAD": f"{APP_MAX_PAYLOAD}u",
    }


def common_variables(board: Board, metadata: dict[str, Any]) -> dict[str, str]:
    name = metadata["model"]["name"]
    defines = {**app_defines(metadata), "AOT_APP_STACK_PAINT_BYTES": f"{HOST_STACK_PAINT}u"}
    return {
        "MODEL_NAME": name,
        "MODEL_DIR": f"../{LIBRARY_DIR}",
        "EXECUTABLE": EXECUTABLE,
        "BOARD": board.name,
        "APP_DEFINES": " ".join(f"-D{k}={v}" for k, v in defines.items()),
    }


_PLACEHOLDER = re.compile(r"@([A-Z][A-Z0-9_]*)@")


def render(text: str, variables: Mapping[str, str], source: Path) -> str:
    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in variables:
            raise InternalError(f"template {source} uses @{key}@ which aot does not define")
        return variables[key]

    return _PLACEHOLDER.sub(substitute, text)


def copy_runtime(project: Path, port: str) -> None:
    runtime = project / "runtime"
    shutil.copytree(RUNTIME_C_DIR / "include", runtime / "include")
    shutil.copytree(RUNTIME_C_DIR / "src", runtime / "src")
    port_file = RUNTIME_C_DIR / "ports" / port / "port.c"
    if not port_file.is_file():
        raise ConfigError(f"runtime port '{port}' does not exist ({port_file} is missing)")
    (runtime / "port").mkdir(parents=True)
    shutil.copy2(port_file, runtime / "port" / "port.c")


def generate_project(
    output: Path, metadata: dict[str, Any], board: Board, template: str | None = None
) -> ProjectInfo:
    template = template or default_template(board)
    template_dir = TEMPLATES_DIR / template
    if not template_dir.is_dir():
        raise ConfigError(
            f"project template '{template}' does not exist; available: "
            f"{', '.join(available_templates())}"
        )
    port = board.port_for(template)
    project = output / PROJECT_DIR
    variables = common_variables(board, metadata)
    for source in sorted(template_dir.rglob("*")):
        if source.is_dir():
            continue
        relative = source.relative_to(template_dir)
        if source.suffix == ".in":
            target = project / relative.with_suffix("")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(render(source.read_text(), variables, source))
        else:
            target = project / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    copy_runtime(project, port)
    name = metadata["model"]["name"]
    app = project / "app"
    app.mkdir(parents=True, exist_ok=True)
    (app / "aot_app_model.c").write_text(
        "/* Generated by aot: the model the runtime application serves. */\n"
        '#include "aot/app.h"\n'
        f'#include "aot_{name}.h"\n\n'
        "const struct aot_model_desc* aot_app_model(void) {\n"
        f"  return &aot_{name}_model;\n"
        "}\n"
    )
    executable = f"build/{EXECUTABLE}"
    hook = TEMPLATE_HOOKS.get(template)
    if hook is not None:
        executable = hook(ProjectContext(project, board, metadata, app_defines(metadata)))
    return ProjectInfo(
        template=template,
        port=port,
        dir=PROJECT_DIR,
        executable=f"{PROJECT_DIR}/{executable}",
        # aot builds what make builds; other templates name their tool in their README.
        built_by_aot=(project / "Makefile").is_file(),
        variables=variables,
    )


# Template hooks register themselves on import.
from aot.project import cmsis as _cmsis  # noqa: E402, F401
from aot.project import zephyr as _zephyr  # noqa: E402, F401
