"""Named plug-in registries (planners, flash runners, accelerator backends).

Built-in implementations register with ``@registry.register("name")``. Out-of-tree
packages declare an entry point in the registry's group (for example ``aot.planners``).
Entry points are found the first time the registry is asked for names or an item, and
each is imported only when its name is asked for: a broken plug-in fails the commands
that name it, not every command (``aot backends`` lists it with its error).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from aot.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, entry_point_group: str, hint: str = "") -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self.hint = hint  # what to do about an unknown name, appended to the error
        self._items: dict[str, T] = {}
        self._entry_points: dict[str, EntryPoint] | None = None  # found, not yet imported
        self._failures: dict[str, ConfigError] = {}  # entry points that failed to import

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(item: T) -> T:
            self.add(name, item)
            return item

        return decorator

    def add(self, name: str, item: T) -> None:
        if name in self._items and self._items[name] is not item:
            raise ConfigError(f"{self.kind} '{name}' is registered twice")
        self._items[name] = item

    def _found(self) -> dict[str, EntryPoint]:
        """The group's entry points not shadowed by a built-in, found once, not imported."""
        if self._entry_points is None:
            self._entry_points = {ep.name: ep for ep in entry_points(group=self.entry_point_group)}
        return {n: ep for n, ep in self._entry_points.items() if n not in self._items}

    def _load(self, ep: EntryPoint) -> T:
        if ep.name in self._failures:
            raise self._failures[ep.name]
        try:
            item = ep.load()
        except Exception as exc:
            # A broken plug-in names itself; aot's own code is not at fault.
            failure = ConfigError(
                f"the {self.entry_point_group} entry point '{ep.name}' ({ep.value}) "
                f"failed to load ({type(exc).__name__}); reinstall or fix the package "
                "that declares it"
            )
            failure.__cause__ = exc
            self._failures[ep.name] = failure
            raise failure from exc
        self._items[ep.name] = item
        return item

    def names(self) -> list[str]:
        """Every name, built in or declared by an entry point (none is imported here)."""
        return sorted({*self._items, *self._found()})

    def get(self, name: str) -> T:
        if name in self._items:
            return self._items[name]
        ep = self._found().get(name)
        if ep is not None:
            return self._load(ep)
        known = ", ".join(self.names()) or "none"
        hint = f"; {self.hint}" if self.hint else ""
        raise ConfigError(f"unknown {self.kind} '{name}'; known: {known}{hint}")

    def __iter__(self) -> Iterator[tuple[str, T]]:
        """Every item that loads, by name (a broken entry point is skipped: ``get`` it
        for its error)."""
        loaded = []
        for name in self.names():
            try:
                loaded.append((name, self.get(name)))
            except ConfigError:
                continue
        return iter(loaded)
