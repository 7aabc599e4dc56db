"""The cmsis template: bare metal with arm-none-eabi-gcc (see aot/project/templates/cmsis)."""

from __future__ import annotations

from aot.linker import render_linker_script
from aot.project import ProjectContext, template_hook
from aot.toolchain import cmsis_build_config, write_build_config

FIRMWARE = "firmware"


def section_placements(context: ProjectContext) -> dict[str, str]:
    """Constants to the board's constants region; each pool to the region of its name,
    or to the default workspace region."""
    board = context.board
    name = context.model_name
    region_names = {region.name for region in board.memories}
    constants = context.metadata["constants"].get("memory")
    placements = {
        f".rodata.aot.{name}.constants": constants or board.default_region("constants").name
    }
    workspace = board.default_region("workspace").name
    for pool in context.metadata["memory"]["pools"]:
        region = pool["name"] if pool["name"] in region_names else workspace
        placements[f".bss.aot.{name}.{pool['name']}"] = region
    return placements


@template_hook("cmsis")
def generate_cmsis(context: ProjectContext) -> str:
    board = context.board
    (context.project / "board.ld").write_text(
        render_linker_script(board, section_placements(context))
    )
    config = cmsis_build_config(
        board,
        sources=context.sources(),
        includes=context.includes(),
        defines=dict(context.app_defines),
        target=FIRMWARE,
    )
    write_build_config(context.project, config, board)
    return f"build/{FIRMWARE}.elf"
