"""One JSON object as a frozen dataclass: its fields, in order, are the object's keys.

A :class:`Record` writes itself with :meth:`Record.to_json` (fields in declaration order,
nested records and tuples as JSON objects and lists) and reads itself with
:meth:`Record.from_json`, which follows the field annotations: a nested record, a tuple
of them, ``X | None``, a ``Mapping`` (kept as a dict) or a JSON scalar. A key that is
absent takes the field's default; a field without a default must be there. Fields named
in ``OMITTED`` are left out of the JSON while None or an empty mapping, as the
manifests have always done for what a build does not have (a trace, a backend's report).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from aot.errors import ModelError

R = TypeVar("R", bound="Record")

REBUILD = "rebuild the folder with 'aot build'"


class Record:
    """Base of the manifests' frozen dataclasses (see the module's docstring)."""

    OMITTED: ClassVar[frozenset[str]] = frozenset()

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name in self.OMITTED and _absent(value):
                continue
            document[f.name] = dump(value)
        return document

    @classmethod
    def from_json(cls: type[R], data: Any, where: str = "metadata.json") -> R:
        if not isinstance(data, dict):
            raise ModelError(f"{where} is not a JSON object; {REBUILD}")
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    # Folders from an older or foreign tool: say what is missing, and the fix.
                    raise ModelError(f"{where} has no '{f.name}'; {REBUILD}")
                continue
            values[f.name] = parse(hints[f.name], data[f.name], f"{where} {f.name}")
        return cls(**values)


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, Mapping) and not value)


def dump(value: Any) -> Any:
    """A field's value as JSON data."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [dump(v) for v in value]
    if isinstance(value, Mapping):
        return {k: dump(v) for k, v in value.items()}
    return value


def parse(hint: Any, value: Any, where: str) -> Any:
    """JSON data as a value of the annotation ``hint``."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin is typing.Union or origin is types.UnionType:
        if value is None and type(None) in typing.get_args(hint):
            return None
        (inner,) = [a for a in typing.get_args(hint) if a is not type(None)]
        return parse(inner, value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise ModelError(f"{where} is {value!r}, not a list; {REBUILD}")
        item = typing.get_args(hint)[0]
        return tuple(parse(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is Mapping or origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise ModelError(f"{where} is {value!r}, not an object; {REBUILD}")
        return dict(value)
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_json(value, where)
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if hint in (int, str, bool) and type(value) is hint:
        return value
    raise ModelError(f"{where} is {value!r}, not a {getattr(hint, '__name__', hint)}; {REBUILD}")
