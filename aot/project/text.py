"""Small text helpers shared by the project renderers (make and CMake lists)."""

from __future__ import annotations

from collections.abc import Iterable

from aot.errors import ConfigError


def check_word(value: str, what: str) -> str:
    """A value make and CMake read as one word: no spaces, quotes or shell characters."""
    if any(c.isspace() for c in value) or any(c in value for c in "\"'$#\\;"):
        raise ConfigError(f"{what} '{value}' has spaces or quote/shell characters")
    return value


def cmake_set(name: str, items: Iterable[str]) -> str:
    """``set(NAME item ...)``, one item a line."""
    values = [check_word(i, name) for i in items]
    return f"set({name}\n  " + "\n  ".join(values) + ")\n" if values else f"set({name})\n"
