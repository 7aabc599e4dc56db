"""``openocd ... -c "program firmware.elf verify reset exit"``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aot.errors import ConfigError
from aot.flash.core import Firmware, FlashOptions, FlashRunner, flash_runners

_TCL_PLAIN = re.compile(r"^[A-Za-z0-9_./:+-]+$")


def tcl_word(text: str) -> str:
    """``text`` as one Tcl word: braces keep spaces and backslashes (Windows paths)."""
    if _TCL_PLAIN.match(text):
        return text
    if "{" in text or "}" in text:
        raise ConfigError(f"cannot pass {text!r} to OpenOCD: it contains braces")
    return "{" + text + "}"


@flash_runners.register("openocd")
class OpenocdRunner(FlashRunner):
    name = "openocd"
    tool = "openocd"
    install = "sudo apt-get install openocd"
    env_var = "AOT_OPENOCD"
    # 'program' erases only the sectors it writes; there is no whole-chip erase here.
    capabilities = frozenset({"flash", "reset", "probe"})
    board_args_hint = "-f <board config>, or -f <interface config> -f <target config>"

    def build(
        self, board_args: Sequence[str], firmware: Firmware, options: FlashOptions
    ) -> list[str]:
        argv = list(board_args)
        if options.probe:
            # After the configs (the interface picks the adapter), before 'program' inits.
            argv += ["-c", f"adapter serial {tcl_word(options.probe)}"]
        return [
            *argv,
            *options.extra_args,
            "-c",
            f"program {tcl_word(str(firmware.elf))} verify reset exit",
        ]
