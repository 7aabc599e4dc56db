"""``west flash``: for Zephyr projects the user built with ``west build``.

West picks the Zephyr runner (openocd, nrfjprog, stm32cubeprogrammer, ...) from the
board's arguments (``--runner NAME``) or from the build's runners.yaml, so aot passes the
build folder, not the ELF.
"""

from __future__ import annotations

from collections.abc import Sequence

from aot.flash.core import Firmware, FlashOptions, FlashRunner, flash_runners


@flash_runners.register("west")
class WestRunner(FlashRunner):
    name = "west"
    tool = "west"
    install = (
        "pip install 'aot[zephyr]' (west) and a Zephyr workspace (https://docs.zephyrproject.org)"
    )
    env_var = "AOT_WEST"
    # --erase and --dev-id reach the Zephyr runner; west rejects them if it lacks them.
    capabilities = frozenset({"flash", "erase", "reset", "probe"})

    def build(
        self, board_args: Sequence[str], firmware: Firmware, options: FlashOptions
    ) -> list[str]:
        argv = ["flash", "--build-dir", str(firmware.build_dir), *board_args]
        if options.probe:
            argv += ["--dev-id", options.probe]
        if options.erase:
            argv.append("--erase")
        return [*argv, *options.extra_args]
