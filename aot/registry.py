"""Named plug-in registries (planners, flash runners, accelerator backends).

Built-in implementations register with ``@registry.register("name")``. Out-of-tree
packages declare an entry point in the registry's group (for example ``aot.planners``);
it is loaded the first time the registry is asked for names or an item.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from aot.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, entry_point_group: str, hint: str = "") -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self.hint = hint  # what to do about an unknown name, appended to the error
        self._items: dict[str, T] = {}
        self._entry_points_loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(item: T) -> T:
            self.add(name, item)
            return item

        return decorator

    def add(self, name: str, item: T) -> None:
        if name in self._items and self._items[name] is not item:
            raise ConfigError(f"{self.kind} '{name}' is registered twice")
        self._items[name] = item

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        for ep in entry_points(group=self.entry_point_group):
            if ep.name not in self._items:
                try:
                    self._items[ep.name] = ep.load()
                except Exception as exc:
                    # A broken plug-in names itself; aot's own code is not at fault.
                    raise ConfigError(
                        f"the {self.entry_point_group} entry point '{ep.name}' ({ep.value}) "
                        f"failed to load ({type(exc).__name__}); reinstall or fix the package "
                        "that declares it"
                    ) from exc

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._items)

    def get(self, name: str) -> T:
        self._load_entry_points()
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(self.names()) or "none"
            hint = f"; {self.hint}" if self.hint else ""
            raise ConfigError(f"unknown {self.kind} '{name}'; known: {known}{hint}") from None

    def __iter__(self) -> Iterator[tuple[str, T]]:
        self._load_entry_points()
        return iter(sorted(self._items.items()))
