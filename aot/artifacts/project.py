"""The project manifest (metadata.json's ``project``) and what building it made (``build``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from aot.artifacts.record import Record


@dataclass(frozen=True, kw_only=True)
class ProjectManifest(Record):
    """The board project of a build folder: its template, port and how it is built."""

    template: str
    port: str
    dir: str  # relative to the output folder
    executable: str  # relative to the output folder, once built
    # make (aot runs it), west (the user does) or none; folders written before it: make.
    build_tool: str = "make"
    # The command that builds the project, relative to the output folder (empty: none).
    build_command: tuple[str, ...] = ()
    built_by_aot: bool = True
    # The project holds its own copy of the model library (project/model).
    self_contained: bool = True


@dataclass(frozen=True, kw_only=True)
class ZephyrTreeInfo(Record):
    base: str
    version: str


@dataclass(frozen=True, kw_only=True)
class BuildManifest(Record):
    """The built firmware or program and its sections."""

    OMITTED: ClassVar[frozenset[str]] = frozenset({"zephyr", "log"})

    executable: str  # relative to the output folder
    # The command (make), or each command in turn (a Zephyr build's configure and build).
    command: tuple[Any, ...] = ()
    seconds: float = 0.0
    sections: Mapping[str, int] = field(default_factory=dict)  # text, rodata, data, bss
    reserved: Mapping[str, int] = field(default_factory=dict)  # stack, heap: parts of bss
    zephyr: ZephyrTreeInfo | None = None  # the tree a Zephyr project was built with
    log: str | None = None  # its build log, relative to the output folder
