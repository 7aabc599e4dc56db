"""The zephyr template: a Zephyr application built by the user with ``west build``."""

from __future__ import annotations

from aot.linker import render_zephyr_sections
from aot.project import ProjectContext, template_hook
from aot.toolchain import render_zephyr_files

# Zephyr projects are built by west in the user's Zephyr workspace, not by aot.
WEST_ELF = "build/zephyr/zephyr.elf"


@template_hook("zephyr")
def generate_zephyr(context: ProjectContext) -> str:
    board = context.board
    files = render_zephyr_files(
        board,
        sources=context.sources(),
        includes=context.includes(),
        defines=dict(context.app_defines),
    )
    name = context.model_name
    # Only memories that Zephyr's devicetree names as extra regions need a linker snippet;
    # the main RAM takes .bss.* through Zephyr's own script.
    movable = {region.name for region in board.memories if region.zephyr_region is not None}
    placements = {
        f".bss.aot.{name}.{pool['name']}": pool["name"]
        for pool in context.metadata["memory"]["pools"]
        if pool["name"] in movable
    }
    if placements:
        files["aot_sections.ld"] = render_zephyr_sections(board, placements)
    for file_name, text in files.items():
        (context.project / file_name).write_text(text)
    return WEST_ELF
