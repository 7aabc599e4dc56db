"""Flashing physical boards: one small runner class per flash tool, found by name.

``flash_runners`` holds the built-in runners (west, pyocd, openocd); out-of-tree packages
add theirs through the ``aot.flash_runners`` entry-point group. A board's YAML
(``flash: {runner, args, runners}``) says which runner to use and with which arguments.
See docs/boards.md, "Flashing physical boards".
"""

from __future__ import annotations

from aot.flash import openocd as _openocd  # noqa: F401  (registers the runner)
from aot.flash import pyocd as _pyocd  # noqa: F401  (registers the runner)
from aot.flash import west as _west  # noqa: F401  (registers the runner)
from aot.flash.core import (
    CAPABILITIES,
    Firmware,
    FlashOptions,
    FlashRunner,
    firmware_from_metadata,
    flash_runners,
    last_error_line,
    runner_for,
)
from aot.flash.session import open_board, require_port, wait_for_hello

__all__ = [
    "CAPABILITIES",
    "Firmware",
    "FlashOptions",
    "FlashRunner",
    "firmware_from_metadata",
    "flash_runners",
    "last_error_line",
    "open_board",
    "require_port",
    "runner_for",
    "wait_for_hello",
]
