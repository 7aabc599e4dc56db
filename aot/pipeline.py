"""``aot build`` as one function: what the command line asked for -> the build folder.

The CLI parses its arguments into a :class:`BuildOptions` (``aot/cli/build.py``) and
calls :func:`build`, which only composes the stages: the board's memory map
(``aot.planning.memory_map``), the model library (``aot.compiler``), the project
(``aot.project``) and, unless ``no_build``, the firmware (``aot.building``), all written
into a staging folder that replaces the output only when complete (``aot.library``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from aot.artifacts import LibraryManifest
from aot.boards import Board
from aot.compiler import CompileOptions
from aot.planning.model import PoolSpec

Progress = Callable[[str], None]

PICTURE_FILE = "memory.svg"


@dataclass(frozen=True)
class BuildOptions:
    """One ``aot build``, parsed: the model, where the folder goes, the board and what the
    library, the project and the firmware are built with."""

    model: Path
    output: Path
    board: Board
    # The model library's options; its memory map is the board's, made by build() from
    # the pool and constants options below.
    library: CompileOptions
    # What metadata.json records for a board given as a file (--board path/b.yaml).
    board_file: str | None = None
    pools: tuple[PoolSpec, ...] | None = None  # --pool, --pool-file; None: the board's
    pool_file: Path | None = None  # read by the build: never inside what it replaces
    constants_memory: str | None = None  # --constants-memory
    template: str | None = None  # None: the board's first
    zephyr_base: str | None = None
    force: bool = False
    no_build: bool = False


@dataclass(frozen=True)
class BuiltFolder:
    """What build() made: the folder's manifest (as its metadata.json says) and, for a
    project west builds, the command that builds it, with the folder as given."""

    output: Path
    manifest: LibraryManifest
    west_command: tuple[str, ...] | None = None


def build(options: BuildOptions, progress: Progress) -> BuiltFolder:
    """The build folder of ``options``: library, project and firmware (see the module's
    docstring). Fails before the model compile, not after, when the firmware cannot be
    built (no cross compiler, a Zephyr tree without the board) or a pool does not fit."""
    # The stages are looked up when a build runs, as the CLI always did.
    from aot.artifacts import write_manifest
    from aot.building.builder import MemoryOverflowError, build_project
    from aot.building.toolchain import arm_gcc
    from aot.building.zephyr import build_output
    from aot.compiler import compile_model
    from aot.errors import PlanningError
    from aot.library import staged_output
    from aot.planning.loaded import plan_picture
    from aot.planning.memory_map import MemoryMap
    from aot.project import generate_project, load_template, project_build_command
    from aot.project.zephyr_tree import tree_for_build

    board, output = options.board, options.output
    template = load_template(options.template or board.templates[0])
    if not options.no_build and template.build == "make" and not board.is_host:
        arm_gcc()
    zephyr = tree_for_build(template.name, options.zephyr_base, board)
    memory = MemoryMap.for_build(
        board, options.library.accelerators, options.pools, options.constants_memory
    )
    port = board.port_for(template.name)
    reads = (options.model, options.pool_file)
    with staged_output(output, options.force, reads=reads) as staging:
        library = replace(options.library, memory=memory)
        compiled = compile_model(options.model, staging, library, progress=progress, board=board)
        manifest = replace(compiled.manifest, board=board.name, board_file=options.board_file)
        # Where the constants go, now that their size is known; checked with the rest.
        constants = replace(manifest.constants, memory=memory.constants_placement(manifest))
        manifest = replace(manifest, constants=constants)
        progress(f"generating the {template.name} project for {board.name}")
        project = generate_project(
            staging, manifest, board, template.name, port, zephyr.tree.version if zephyr else None
        )
        manifest = replace(manifest, project=project)
        if not options.no_build and project.built_by_aot:
            progress("compiling the project")
            try:
                built = build_project(staging, project, shown_as=output)
            except MemoryOverflowError as err:
                raise PlanningError(
                    memory.link_overflow_message(err.memory, err.over, manifest)
                ) from err
            manifest = replace(manifest, build=built)
        # The plan's picture, the same one 'aot inspect' draws from metadata.json.
        (staging / PICTURE_FILE).write_text(plan_picture(manifest))
        write_manifest(staging, manifest)
    if zephyr is not None and not options.no_build:
        # In the final folder, not the staging one: CMake's cache records absolute paths,
        # and a failed build leaves the project and its log to look at.
        progress(f"building the Zephyr project with Zephyr {zephyr.tree.version}")
        manifest = replace(manifest, build=build_output(output, project, zephyr))
        write_manifest(output, manifest)
    west = project_build_command(output, project) if project.build_tool == "west" else None
    return BuiltFolder(output, manifest, tuple(west) if west is not None else None)
