"""The data of memory planning: buffers with lifetimes, pools, and the resulting plan.

Steps are the positions of the operators in execution order (0, 1, ...). A buffer is live
from ``start`` to ``end`` inclusive; two buffers whose lifetimes share a step must not
share bytes when they are in the same pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from aot.errors import ConfigError, InternalError

DEFAULT_ALIGNMENT = 16

# What may access a pool, and what accesses a buffer, unless told otherwise
# (--pool NAME:SIZE:TARGETS, --pool-file; steps name their target).
DEFAULT_TARGETS: tuple[str, ...] = ("cpu",)


def align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


@dataclass(frozen=True)
class Buffer:
    """A block of working memory needed from step ``start`` to step ``end`` (inclusive)."""

    name: str
    size: int  # bytes, > 0
    start: int  # first step where it is live
    end: int  # last step where it is live
    alignment: int = DEFAULT_ALIGNMENT
    pools: tuple[str, ...] | None = None  # pools it may live in; None means any
    # What reads or writes it (the CPU, an accelerator): only pools all of them reach fit.
    targets: tuple[str, ...] = DEFAULT_TARGETS
    # (step, target) of every access, for errors and reports; may be empty.
    users: tuple[tuple[int, str], ...] = ()

    def __post_init__(self) -> None:
        # Buffers come from lowering, not from the user: a bad one is a bug in aot.
        if self.size <= 0:
            raise InternalError(f"buffer '{self.name}' has size {self.size}; expected > 0")
        if not 0 <= self.start <= self.end:
            raise InternalError(
                f"buffer '{self.name}' has lifetime [{self.start}, {self.end}]; "
                "expected 0 <= start <= end"
            )
        if self.alignment <= 0 or self.alignment & (self.alignment - 1):
            # Powers of two only: pool sizes are rounded to the largest alignment in them.
            raise InternalError(
                f"buffer '{self.name}' has alignment {self.alignment}; expected a power of two"
            )
        if self.pools is not None:
            object.__setattr__(self, "pools", tuple(self.pools))
        # Sorted and unique, so equal target sets compare equal.
        object.__setattr__(self, "targets", tuple(sorted(set(self.targets))))
        object.__setattr__(self, "users", tuple((int(s), str(t)) for s, t in self.users))
        if not self.targets:
            raise InternalError(f"buffer '{self.name}' has no targets; expected at least one")
        stray = sorted({t for _, t in self.users} - set(self.targets))
        if stray:
            raise InternalError(
                f"buffer '{self.name}' is used by {', '.join(stray)} outside its targets"
            )

    def overlaps(self, other: Buffer) -> bool:
        """True when both are live at some step, so they may not share memory."""
        return self.start <= other.end and other.start <= self.end


@dataclass(frozen=True)
class Pool:
    """A memory region the planner may use; pools are given fastest first."""

    name: str
    size: int | None  # byte limit; None means unbounded
    # What can read and write it; None means every target (planner-level use).
    targets: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        # Pool sizes come from the user (--pool NAME:SIZE) or board data.
        if self.size is not None and self.size < 0:
            raise ConfigError(f"pool '{self.name}' has size {self.size}; expected >= 0 bytes")
        if self.targets is not None:
            object.__setattr__(self, "targets", tuple(sorted(set(self.targets))))

    def reaches(self, buffer: Buffer) -> bool:
        """True when every target that touches ``buffer`` can access this pool."""
        return self.targets is None or set(buffer.targets) <= set(self.targets)


@dataclass(frozen=True)
class PoolSpec:
    """A workspace pool as the user asks for it: a name, a byte limit (None: unbounded)
    and what may access it.

    ``targets`` names what accesses the pool (the CPU, an accelerator); a buffer goes
    only into pools that all its targets reach. ``pool()`` is what the planners see.
    """

    name: str
    size: int | None
    targets: tuple[str, ...] = DEFAULT_TARGETS

    def pool(self) -> Pool:
        return Pool(self.name, self.size, self.targets)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "size_limit": self.size, "targets": list(self.targets)}


@dataclass(frozen=True)
class Placement:
    """Where one buffer lives: ``offset`` bytes from the start of ``pool``."""

    buffer: str
    pool: str
    offset: int

    def to_json(self) -> dict[str, Any]:
        return {"buffer": self.buffer, "pool": self.pool, "offset": self.offset}


@dataclass(frozen=True)
class Copy:
    """A copy step: ``size`` bytes from ``src`` (a buffer, or a constant in flash) into
    the staging buffer ``dst``, run just before the original step ``before``
    (``aot.planning.copies``; the port's ``aot_platform_copy`` does it)."""

    name: str
    src: str
    dst: str
    size: int
    before: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "src": self.src,
            "dst": self.dst,
            "size": self.size,
            "before_step": self.before,
        }


@dataclass(frozen=True)
class MemoryPlan:
    """The output of the planning stage: a pool and an offset for every buffer."""

    algorithm: str
    placements: tuple[Placement, ...]
    # Bytes used per pool: the largest end offset rounded up to the largest alignment of the
    # buffers in it (never beyond the pool's limit). Read-only; left out of the hash.
    pool_sizes: Mapping[str, int] = field(hash=False)
    lower_bound: int  # activation lower bound of the buffers, see activation_lower_bound()
    # Per pool: the live-bytes peak of the buffers that can go nowhere else (reachability
    # or an explicit pool list); the pool can never be smaller. Left out of the hash.
    pool_lower_bounds: Mapping[str, int] = field(default_factory=dict, hash=False)
    # Copy steps (--allow-copies) and, per (step index, buffer or constant), the staging
    # buffer that step uses instead; empty without copies.
    copies: tuple[Copy, ...] = ()
    reads: Mapping[tuple[int, str], str] = field(default_factory=dict, hash=False)
    # Pools holding state kept between inferences (aot.planning.persistent), never reused
    # for activations; their sizes are in ``pool_sizes`` too.
    persistent: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "copies", tuple(self.copies))
        object.__setattr__(self, "persistent", tuple(self.persistent))
        object.__setattr__(self, "reads", MappingProxyType(dict(self.reads)))
        object.__setattr__(self, "placements", tuple(self.placements))
        object.__setattr__(self, "pool_sizes", MappingProxyType(dict(self.pool_sizes)))
        object.__setattr__(
            self, "pool_lower_bounds", MappingProxyType(dict(self.pool_lower_bounds))
        )

    @property
    def total_size(self) -> int:
        """Bytes used over all pools; what the planners minimize."""
        return sum(self.pool_sizes.values())

    @property
    def workspace_size(self) -> int:
        """Bytes of the pools one inference reuses (all but the persistent ones)."""
        return sum(v for k, v in self.pool_sizes.items() if k not in self.persistent)

    def buffer_for(self, step: int, name: str) -> str:
        """The buffer (or constant) step ``step`` uses for ``name``: a staging copy or itself."""
        return self.reads.get((step, name), name)

    def copies_before(self, step: int) -> tuple[Copy, ...]:
        return tuple(c for c in self.copies if c.before == step)

    def placement(self, name: str) -> Placement:
        for placement in self.placements:
            if placement.buffer == name:
                return placement
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm,
            "lower_bound": self.lower_bound,
            "total_size": self.total_size,
            "pool_sizes": dict(self.pool_sizes),
            "pool_lower_bounds": dict(self.pool_lower_bounds),
            "placements": [p.to_json() for p in self.placements],
            "copies": [c.to_json() for c in self.copies],
            "persistent_pools": list(self.persistent),
        }
