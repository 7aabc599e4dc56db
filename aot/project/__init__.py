"""The project stage: model library + board -> a buildable project folder.

A template is a folder under ``aot/project/templates/``. Its ``template.yaml`` says how a
project made from it is built (``build: make``, ``west`` or ``none``) and where the
firmware appears; it is data, so nothing here guesses from which files a template has.
The other files are copied into ``DIR/project``; files ending in ``.in`` have
``@VARIABLE@`` placeholders filled and lose the suffix. The model library (``DIR/model``)
is copied into ``project/model`` and the runtime application (``aot/runtime_c/include``,
``aot/runtime_c/src`` and the board's port file) into ``project/runtime``, so the project
is self-contained: ``cp -r DIR/project elsewhere`` still builds. ``project/app/aot_app_model.c``
names the model the application serves.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aot.artifacts.manifest import LibraryManifest
from aot.artifacts.project import ProjectManifest
from aot.boards import Board, MemoryRegion
from aot.errors import ConfigError, InternalError
from aot.library import RUNTIME_C_DIR
from aot.naming import pool_section
from aot.planning.memory_map import io_arena_bytes  # the planner counts it too

# Templates ship inside the package (package data), beside this module.
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE_FILE = "template.yaml"  # the template's data; not copied into projects
PROJECT_DIR = "project"
# The project's own copy of the model library, so the project survives being moved.
PROJECT_LIBRARY_DIR = "model"
EXECUTABLE = "aot_app"
# What builds a project: make (aot runs it), west (the user runs it in a Zephyr
# workspace), none (the user integrates the files into their own build).
BUILD_TOOLS = ("make", "west", "none")

# Frame payload of the serial protocol; larger inputs arrive in chunks.
APP_MAX_PAYLOAD = 512
# Where no linker symbol bounds the stack (host builds), paint this much below main.
HOST_STACK_PAINT = 256 * 1024


@dataclass(frozen=True)
class TemplateInfo:
    """A template's ``template.yaml``."""

    name: str
    build: str  # one of BUILD_TOOLS
    firmware: str  # the build product, relative to the project folder


def load_template(name: str) -> TemplateInfo:
    import yaml  # lazy

    folder = TEMPLATES_DIR / name
    if not folder.is_dir():
        raise ConfigError(
            f"project template '{name}' does not exist; available: "
            f"{', '.join(available_templates())}"
        )
    path = folder / TEMPLATE_FILE
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise InternalError(f"template data {path} is missing or not YAML: {err}") from None
    if not isinstance(data, dict) or data.get("build") not in BUILD_TOOLS:
        raise InternalError(f"{path}: 'build' must be one of {', '.join(BUILD_TOOLS)}")
    if not isinstance(data.get("firmware"), str):
        raise InternalError(f"{path}: 'firmware' (the build product's path) is missing")
    return TemplateInfo(name, data["build"], data["firmware"])


def project_build_command(output: Path, project: ProjectManifest) -> list[str]:
    """The recorded build command (``metadata.json`` project.build_command, relative to
    the output folder) with paths under ``output``."""
    prefix = project.dir
    return [
        str(output / arg) if arg == prefix or arg.startswith(prefix + "/") else arg
        for arg in project.build_command
    ]


def build_command(
    tool: str, board: Board, project: str, zephyr_version: Any = None
) -> tuple[str, ...]:
    """The command that builds a project folder (``project`` as the caller names it);
    west's board name is that of ``zephyr_version`` (None: the newest aot knows)."""
    if tool == "make":
        return ("make", "-C", project)
    if tool == "west":
        from aot.project.zephyr_tree import board_name

        # -d matches where 'aot flash' and 'aot run' look (project/build).
        name = board_name(board, zephyr_version)
        return ("west", "build", "-b", name, project, "-d", f"{project}/build")
    return ()


@dataclass(frozen=True)
class ProjectContext:
    """What a template hook gets: the project folder (already holding the copied
    template and runtime) and the facts it may need."""

    project: Path
    board: Board
    manifest: LibraryManifest
    app_defines: Mapping[str, str]
    # The Zephyr tree's version (aot.project.zephyr_tree.ZephyrVersion) when one is
    # given: it picks the board's Zephyr name. None: the newest name aot knows.
    zephyr_version: Any = None

    @property
    def model_name(self) -> str:
        return self.manifest.name

    def sources(self) -> list[str]:
        """Every C file besides the template's own, relative to the project folder."""
        library = [
            f"{PROJECT_LIBRARY_DIR}/{Path(s).relative_to(self.manifest.library.dir).as_posix()}"
            for s in self.manifest.library.sources
        ]
        runtime = sorted(
            f"runtime/src/{p.name}" for p in (self.project / "runtime/src").glob("*.c")
        )
        return [*library, *runtime, "runtime/port/port.c", "app/aot_app_model.c"]

    def includes(self) -> list[str]:
        # Absolute folders a backend's runtime needs (a user-supplied driver's headers).
        external = [d for d in self.manifest.library.include_dirs if Path(d).is_absolute()]
        return [
            f"{PROJECT_LIBRARY_DIR}/include",
            f"{PROJECT_LIBRARY_DIR}/src",
            "runtime/include",
            "runtime/src",
            *external,
        ]


def pool_memories(board: Board, manifest: LibraryManifest) -> dict[str, MemoryRegion]:
    """Pool name -> the board memory it lives in: the memory the pool is named after
    (``--pool dtcm:16K``, or the board default, which is named after its memory), else
    the board's default workspace memory (e.g. a generic ``workspace`` pool)."""
    names = {region.name for region in board.memories}
    return {
        pool.name: (
            board.region(pool.name) if pool.name in names else board.default_region("workspace")
        )
        for pool in manifest.memory.pools
    }


def pool_regions(context: ProjectContext) -> dict[str, MemoryRegion]:
    """The library's pool sections (``.bss.aot.<model>.<pool>``) -> board memory."""
    return {
        pool_section(context.model_name, pool): region
        for pool, region in pool_memories(context.board, context.manifest).items()
    }


# A template's hook writes its generated files (build configuration, linker script).
# Templates register a hook by name; the generator never tests template or board names.
TemplateHook = Callable[[ProjectContext], None]
TEMPLATE_HOOKS: dict[str, TemplateHook] = {}


def template_hook(name: str) -> Callable[[TemplateHook], TemplateHook]:
    def decorator(func: TemplateHook) -> TemplateHook:
        TEMPLATE_HOOKS[name] = func
        return func

    return decorator


def available_templates() -> list[str]:
    return sorted(p.name for p in TEMPLATES_DIR.iterdir() if p.is_dir())


def app_defines(manifest: LibraryManifest) -> dict[str, str]:
    """-D macros of the runtime application, sized for this model."""
    return {
        "AOT_APP_IO_BYTES": f"{io_arena_bytes(manifest)}u",
        "AOT_APP_MAX_TENSORS": f"{max(1, len(manifest.tensors))}u",
        "AOT_APP_MAX_PAYLOAD": f"{APP_MAX_PAYLOAD}u",
        # Those of the backends' runtime sources (e.g. an NPU's register base).
        **manifest.library.defines,
    }


def common_variables(board: Board, manifest: LibraryManifest) -> dict[str, str]:
    defines = {**app_defines(manifest), "AOT_APP_STACK_PAINT_BYTES": f"{HOST_STACK_PAINT}u"}
    return {
        "MODEL_NAME": manifest.name,
        "MODEL_DIR": PROJECT_LIBRARY_DIR,
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
    output: Path,
    manifest: LibraryManifest,
    board: Board,
    template: str,
    port: str,
    zephyr_version: Any = None,
) -> ProjectManifest:
    """The project of a compiled model library (``output/model``) for ``board``, from
    ``template`` with the runtime port ``port`` (``Board.port_for``, looked up before the
    model is compiled), and its manifest."""
    info = load_template(template)
    template_dir = TEMPLATES_DIR / template
    project = output / PROJECT_DIR
    variables = common_variables(board, manifest)
    for source in sorted(template_dir.rglob("*")):
        if source.is_dir():
            continue
        relative = source.relative_to(template_dir)
        if relative == Path(TEMPLATE_FILE):
            continue
        if source.suffix == ".in":
            target = project / relative.with_suffix("")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(render(source.read_text(), variables, source))
        else:
            target = project / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    copy_runtime(project, port)
    library = output / manifest.library.dir
    if library.is_dir():
        shutil.copytree(library, project / PROJECT_LIBRARY_DIR)
    app = project / "app"
    app.mkdir(parents=True, exist_ok=True)
    (app / "aot_app_model.c").write_text(
        "/* Generated by aot: the model the runtime application serves. */\n"
        '#include "aot/app.h"\n'
        f'#include "{manifest.library.header_name}"\n\n'
        "const struct aot_model_desc* aot_app_model(void) {\n"
        f"  return &{manifest.library.descriptor};\n"
        "}\n"
    )
    hook = TEMPLATE_HOOKS.get(template)
    if hook is not None:
        hook(ProjectContext(project, board, manifest, app_defines(manifest), zephyr_version))
    return ProjectManifest(
        template=template,
        port=port,
        dir=PROJECT_DIR,
        executable=f"{PROJECT_DIR}/{info.firmware}",
        build_tool=info.build,
        build_command=build_command(info.build, board, PROJECT_DIR, zephyr_version),
        built_by_aot=info.build == "make",
    )


# Template hooks register themselves on import.
from aot.project import cmsis as _cmsis  # noqa: E402, F401
from aot.project import zephyr as _zephyr  # noqa: E402, F401
