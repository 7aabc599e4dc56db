"""``pyocd flash``: CMSIS-DAP, ST-LINK and J-Link probes through pyOCD."""

from __future__ import annotations

from collections.abc import Sequence

from aot.flash.core import Firmware, FlashOptions, FlashRunner, flash_runners


@flash_runners.register("pyocd")
class PyocdRunner(FlashRunner):
    name = "pyocd"
    tool = "pyocd"
    install = "pip install 'aot[pyocd]'"
    env_var = "AOT_PYOCD"
    capabilities = frozenset({"flash", "erase", "reset", "probe"})
    # Most parts come from CMSIS packs: the board's YAML notes the pack to install.
    board_args_hint = "-t <pyOCD target>, e.g. -t stm32f746zgtx"

    def build(
        self, board_args: Sequence[str], firmware: Firmware, options: FlashOptions
    ) -> list[str]:
        # pyocd flash resets the target after programming unless --no-reset is given.
        argv = ["flash", *board_args]
        if options.probe:
            argv += ["--uid", options.probe]
        if options.erase:
            argv += ["--erase", "chip"]
        return [*argv, *options.extra_args, str(firmware.elf)]
