"""Byte sizes as people write them: ``16384``, ``16K``, ``16KiB``, ``1M``, ``2G``.

One grammar for every size aot reads (--pool, --pool-file, board YAML memories), at the
bottom of the house so the CLI, planning and board data all import it and nothing else.
K, M and G are binary (KiB, MiB, GiB): memory sizes on microcontrollers are.
"""

from __future__ import annotations

import re

from aot.errors import ConfigError

# "16", "16B", "16K", "16KB", "16KiB" (any case for the unit letters).
SIZE_PATTERN = re.compile(r"(\d+)(?:([kKmMgG])(?:i?[bB])?|[bB])?")
SIZE_EXAMPLES = "bytes or a number with K, M or G (e.g. 16384, 16K, 16KiB, 1M)"
_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30}


def size_or_none(text: str) -> int | None:
    """Bytes of ``text``, or None when it is not a size (callers word their own error)."""
    match = SIZE_PATTERN.fullmatch(text.strip())
    if not match:
        return None
    number, unit = match.groups()
    return int(number) << _SHIFT[(unit or "").lower()]


def parse_size(value: int | str, what: str = "size") -> int:
    """Bytes of an int or a size string; a ConfigError naming ``what`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"bad {what} {value!r}: expected {SIZE_EXAMPLES}")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"bad {what} {value}: expected >= 0 bytes")
        return value
    size = size_or_none(value)
    if size is None:
        raise ConfigError(f"bad {what} '{value}': expected {SIZE_EXAMPLES}")
    return size
