"""The board's memories as the planner sees them: what reaches each memory, what each may
hold in the board's order of preference (fast first: the order of ``memories:`` in its
YAML), the workspace pools in them, and what a build puts in each, so that a layout the
linker would refuse fails at plan time, naming the memory, what went there with its size
and the option that fixes it.

``MemoryMap.for_build`` makes the map of one build from a ``Board``, the ``--accelerator``
backends and the user's pool and constants options: it checks the pools against the
board's memories, gives an accelerator that reaches none of them a pool of its own, and
says which targets reach each pool, the constants and the caller's inputs and outputs.
A board without a memory map (the host) takes any pool, and every target reaches its
constants and its inputs and outputs.

Only what aot places is known before the firmware is compiled: the constants section,
each workspace pool (with the staging buffers of ``--allow-copies`` in it) and the
caller's inputs and outputs. The code, the C runtime's own data, the stack and the heap
are only measured by the linker; when they are what overflows, ``link_overflow_message``
says which of aot's placements in that memory can move (docs/memory_planning.md).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from aot.artifacts.manifest import LibraryManifest
from aot.boards import Board, MemoryRegion
from aot.errors import ConfigError, PlanningError
from aot.planning.model import DEFAULT_TARGETS, Pool, PoolSpec
from aot.planning.pools_file import targets_reaching, with_reach

# The pool of a build without a memory map: unbounded, the CPU's.
UNMAPPED_POOLS = (PoolSpec("workspace", None),)


@dataclass(frozen=True)
class Placed:
    """One thing aot puts in a memory: what it is, in the words of a message, and bytes."""

    what: str  # "constants", "pool 'dtcm'", "inputs and outputs"
    size: int


@dataclass(frozen=True)
class BoardMemories:
    """What the memory map takes from a ``Board``, once, as plain data: its name, its
    memories in the board's order of preference (fast first), the memories each of its
    accelerators reaches, and whether it has a memory map at all (the host has none)."""

    name: str
    memories: tuple[MemoryRegion, ...] = ()
    accelerators: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    mapped: bool = False

    @classmethod
    def of(cls, board: Board) -> BoardMemories:
        accelerators = MappingProxyType({a.name: a.memories for a in board.accelerators})
        mapped = not board.is_host and bool(board.memories)
        return cls(board.name, board.memories, accelerators, mapped)

    # region and default_region repeat Board's on purpose: the planner works on the data it
    # took from the board once, without calling back into it.
    def region(self, name: str) -> MemoryRegion:
        for region in self.memories:
            if region.name == name:
                return region
        known = ", ".join(r.name for r in self.memories) or "none"
        raise ConfigError(f"board '{self.name}' has no memory region '{name}'; regions: {known}")

    def default_region(self, kind: str) -> MemoryRegion:
        """The first memory (in board order) that may hold ``kind``."""
        for region in self.memories:
            if region.may_hold(kind):
                return region
        raise ConfigError(f"board '{self.name}' has no memory region that may hold {kind}")

    def reached_by(self, accelerator: str) -> tuple[str, ...]:
        """The memories the accelerator named ``accelerator`` reaches; a one-line error
        naming the ones the board has."""
        if accelerator in self.accelerators:
            return self.accelerators[accelerator]
        have = ", ".join(self.accelerators) or "none"
        raise ConfigError(
            f"board {self.name} has no accelerator '{accelerator}' (it has: {have}); pick "
            "another --board, drop --accelerator, or declare it under 'accelerators:' in the "
            "board's YAML"
        )

    def holding(self, kind: str) -> tuple[MemoryRegion, ...]:
        """The memories that may hold ``kind``, in the board's order of preference."""
        return tuple(m for m in self.memories if m.may_hold(kind))


def constants_section_bytes(sizes_and_alignments: Iterable[tuple[int, int]]) -> int:
    """The constants section's size: each array starts aligned, as the C file declares it
    (``AOT_ALIGNED``), one after the other."""
    offset = 0
    for size, alignment in sizes_and_alignments:
        offset = -(-offset // alignment) * alignment + size
    return offset


@dataclass(frozen=True)
class MemoryMap:
    """A build's memories and who reaches them: ``reaches`` maps each accelerator target
    to the memories it reads and writes (the board's ``accelerators:``); the CPU reaches
    every memory. ``pools`` are the workspace pools, fastest first, each with the targets
    that reach it; ``constants_memory`` is the memory the plan assumes for the constants
    (errors name it) and ``constants_targets`` what reaches it, ``io_targets`` what
    reaches the caller's inputs and outputs (None: every target).
    ``constants_requested`` is --constants-memory, or the memory every accelerator
    reaches when aot chose the pools; None lets the constants go where they fit.

    ``board`` is what the map took from the board (``BoardMemories.of``), None for a plan
    without a board (tests, benchmarks); a board without a memory map (``mapped`` is
    false, the host) takes any pool."""

    board: BoardMemories | None = None
    reaches: Mapping[str, Sequence[str]] = field(default_factory=lambda: MappingProxyType({}))
    pools: tuple[PoolSpec, ...] = UNMAPPED_POOLS
    constants_memory: str = "constants"
    constants_targets: tuple[str, ...] | None = None
    io_targets: tuple[str, ...] | None = DEFAULT_TARGETS
    constants_requested: str | None = None

    @classmethod
    def for_build(
        cls,
        board: Board,
        accelerators: Sequence[str],
        pools: Sequence[PoolSpec] | None = None,
        constants: str | None = None,
    ) -> MemoryMap:
        """The map of a build with these ``--accelerator`` backends (checked: installed,
        and on the board unless they run on the CPU), the user's ``pools`` (--pool,
        --pool-file; None: the board's default, chosen so that the accelerators reach
        one) and ``constants`` (--constants-memory). Before any compile: a pool that is
        no memory of the board, may not hold workspace or is larger than its memory is a
        one-line error."""
        memories = BoardMemories.of(board)
        defaulted = pools is None
        pools = check_pools(tuple(default_pools(memories) if pools is None else pools), memories)
        reaches = accelerator_reach(memories, accelerators)
        if not memories.mapped:
            return cls(memories, reaches, pools, io_targets=None, constants_requested=constants)
        if defaulted:
            pools, constants = _defaults_for_accelerators(pools, memories, reaches, constants)
        memory = constants or memories.default_region("constants").name
        return cls(
            memories,
            reaches,
            with_reach(pools, reaches),
            memory,
            targets_reaching(memory, reaches),
            targets_reaching(memories.default_region("data").name, reaches),
            constants,
        )

    @property
    def mapped(self) -> bool:
        """Whether the board has memories to check pools and constants against."""
        return self.board is not None and self.board.mapped

    def planner_pools(self) -> tuple[Pool, ...]:
        """The pools as the planners see them."""
        return tuple(p.pool() for p in self.pools)

    def constants_placement(self, manifest: LibraryManifest) -> str | None:
        """The board memory holding a compiled model's constants: the requested one
        (checked to allow them), else the first in the board's order where they fit
        beside what else goes there; then everything aot placed is checked against its
        memory, so a layout that cannot link fails before the firmware is compiled.
        None without a memory map."""
        if not self.mapped:
            if self.constants_requested:
                raise ConfigError("--constants-memory needs a board with a memory map, not host")
            return None
        planned = _constants_in(manifest, self.constants_memory)
        memory = self.place_constants(planned, self.constants_requested)
        self.check_capacity(_constants_in(manifest, memory))
        return memory

    def holding(self, kind: str) -> tuple[MemoryRegion, ...]:
        """The memories that may hold ``kind``, in the board's order of preference."""
        return self.board.holding(kind)

    def reached_by(self, memory: str) -> frozenset[str]:
        return frozenset(targets_reaching(memory, self.reaches))

    def pool_memory(self, pool: str) -> MemoryRegion:
        """The memory a pool lives in: the one it is named after, else the board's default
        workspace memory (a generic ``workspace`` pool, operator state)."""
        names = {m.name for m in self.board.memories}
        return self.board.region(pool) if pool in names else self.board.default_region("workspace")

    def constants_choices(self, preferred: str) -> tuple[MemoryRegion, ...]:
        """Where the constants may go when the user did not say (no --constants-memory):
        the memories that may hold them, fast first, reached by exactly what reaches
        ``preferred`` (the memory the model was planned with), so the plan stays valid
        wherever they land."""
        reach = self.reached_by(preferred)
        return tuple(m for m in self.holding("constants") if self.reached_by(m.name) == reach)

    def placed(self, manifest: LibraryManifest) -> dict[str, list[Placed]]:
        """Memory name -> what aot puts there, from a compiled model's manifest."""
        placed: dict[str, list[Placed]] = {m.name: [] for m in self.board.memories}
        constants = manifest.constants
        if constants.memory:
            placed[constants.memory].append(Placed("constants", constants.placed_bytes))
        for pool in manifest.memory.pools:
            if pool.used_bytes:
                memory = self.pool_memory(pool.name).name
                placed[memory].append(Placed(f"pool '{pool.name}'", pool.used_bytes))
        if not manifest.memory.io_in_pool:
            # The application's I/O arena, in .bss of the data memory (aot/project).
            data = self.board.default_region("data").name
            placed[data].append(Placed("inputs and outputs", io_arena_bytes(manifest)))
        return placed

    def place_constants(self, manifest: LibraryManifest, requested: str | None) -> str:
        """The memory for the constants: ``requested`` (--constants-memory) if given, else
        the first of ``constants_choices`` where they fit beside what else is placed
        there (the memory the model was planned with when they fit nowhere: the capacity
        check then names it)."""
        planned = manifest.constants.memory or self.board.default_region("constants").name
        if requested is not None:
            region = self.board.region(requested)
            if not region.may_hold("constants"):
                raise ConfigError(
                    f"memory '{region.name}' of board '{self.board.name}' may not hold "
                    f"constants; it holds {', '.join(region.holds)}"
                )
            return region.name
        others = self.placed(_constants_in(manifest, None))
        size = manifest.constants.placed_bytes
        for region in self.constants_choices(planned):
            if size + sum(p.size for p in others[region.name]) <= region.size:
                return region.name
        return planned

    def check_capacity(self, manifest: LibraryManifest) -> None:
        """Fail when what the plan puts in a memory exceeds it, before the firmware is
        compiled."""
        placed = self.placed(manifest)
        for region in self.board.memories:
            total = sum(p.size for p in placed[region.name])
            if total > region.size:
                raise PlanningError(self._overflow(region, placed, manifest, total))

    def _overflow(
        self,
        region: MemoryRegion,
        placed: Mapping[str, list[Placed]],
        manifest: LibraryManifest,
        total: int,
    ) -> str:
        parts = " + ".join(f"{p.what} {p.size} B" for p in placed[region.name])
        if len(placed[region.name]) > 1:
            parts += f" = {total} B"
        return (
            f"memory '{region.name}' of board '{self.board.name}' ({region.size} bytes) cannot "
            f"hold what the plan puts in it: {parts}, {total - region.size} bytes "
            f"over; {self._advice(region, placed, manifest, total - region.size)}"
        )

    def _advice(
        self,
        region: MemoryRegion,
        placed: Mapping[str, list[Placed]],
        manifest: LibraryManifest,
        over: int,
    ) -> str:
        """The options that can fix an overflow of ``region``: move the constants (with
        copies when a reader of them cannot reach their new memory), give a pool less
        room; never one that cannot help."""
        here = {p.what: p.size for p in placed[region.name]}
        advice = []
        constants = here.get("constants")
        if constants is not None:
            target = self._constants_elsewhere(region, placed, constants)
            if target is not None:
                readers = {op.target for op in manifest.operators}
                far = sorted(readers - self.reached_by(target.name))
                copies = far and not manifest.memory.allow_copies
                advice.append(
                    f"move the constants with --constants-memory {target.name}"
                    + (f" --allow-copies ({', '.join(far)} cannot reach it)" if copies else "")
                )
        for what, size in here.items():
            if what.startswith("pool ") and size > over:
                pool = what.split("'")[1]
                room = (size - over) // 1024
                if room:
                    # --pool replaces the default pools: the user lists them all.
                    advice.append(
                        f"give {what} at most {room}K (--pool {pool}:{room}K with the other "
                        "pools"
                        + ("" if manifest.memory.allow_copies else ", and --allow-copies")
                        + ")"
                    )
        if not advice:
            return "use a smaller model or a board with more memory"
        return "; or ".join(advice)

    def _constants_elsewhere(
        self, region: MemoryRegion, placed: Mapping[str, list[Placed]], size: int
    ) -> MemoryRegion | None:
        """The first other memory (fast first) where the constants fit beside what is
        already placed there."""
        for other in self.holding("constants"):
            if other.name == region.name:
                continue
            if size + sum(p.size for p in placed[other.name]) <= other.size:
                return other
        return None

    def link_overflow_message(self, memory: str, over: int, manifest: LibraryManifest) -> str:
        """The linker's ``region 'X' overflowed by N bytes``, in aot's words: what aot put
        in that memory and the option that moves it; the rest (code, runtime data, stack)
        is the linker's measure, which only a smaller model or a larger memory changes."""
        region = self.board.region(memory)
        placed = self.placed(manifest)
        here = placed.get(region.name, [])
        kinds = [k for k in ("code", "data", "stack") if region.may_hold(k)]
        own = {"code": "the code", "data": "the runtime's data", "stack": "the stack"}
        holds = ", ".join([*(own[k] for k in kinds if self._lands(k, region)),
                           *(f"{p.what} {p.size} B" for p in here)])  # fmt: skip
        advice = (
            self._advice(region, placed, manifest, over)
            if here
            else "use a smaller model or a board with more memory"
        )
        return (
            f"the firmware does not fit memory '{region.name}' of board '{self.board.name}' "
            f"({region.size} bytes): {over} bytes over at link time; it holds "
            f"{holds or 'nothing aot placed'}; {advice}"
        )

    def _lands(self, kind: str, region: MemoryRegion) -> bool:
        """Whether the board's linker script puts the ``kind`` sections it owns there."""
        return self.board.default_region(kind).name == region.name


def io_arena_bytes(manifest: LibraryManifest) -> int:
    """The application's I/O arena (aot/project sizes it; the capacity check counts it).
    Each tensor is aligned to 16 bytes in it; a model built with --io-in-pool brings its
    own buffers."""
    if manifest.memory.io_in_pool:
        return 16
    total = sum((tensor.size_bytes + 15) // 16 * 16 for tensor in manifest.tensors)
    return max(total, 16)


def _constants_in(manifest: LibraryManifest, memory: str | None) -> LibraryManifest:
    """``manifest`` with its constants in ``memory``."""
    return replace(manifest, constants=replace(manifest.constants, memory=memory))


def default_pools(board: BoardMemories) -> tuple[PoolSpec, ...]:
    """One pool in the board's default workspace memory, limited by its size; the host
    has no limit."""
    if not board.mapped:
        return UNMAPPED_POOLS
    region = board.default_region("workspace")
    return (PoolSpec(region.name, region.size),)


def check_pools(pools: tuple[PoolSpec, ...], board: BoardMemories) -> tuple[PoolSpec, ...]:
    """Every pool must be a board memory that may hold workspace, and fit it, before any
    compile: otherwise the project would place it in the default RAM or the linker
    would find the overflow. An unbounded pool gets its memory's size. The host has no
    memory map: any pool goes."""
    if not board.mapped:
        return pools
    names = [m.name for m in board.memories]
    usable = [m.name for m in board.memories if m.may_hold("workspace")]
    checked = []
    for pool in pools:
        if pool.name not in names:
            close = difflib.get_close_matches(pool.name, usable, n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ConfigError(
                f"pool '{pool.name}' is not a memory of board '{board.name}'; {hint}name the "
                f"pool after the memory it lives in: {', '.join(usable)} (see 'aot boards')"
            )
        region = board.region(pool.name)
        if not region.may_hold("workspace"):
            raise ConfigError(
                f"memory '{region.name}' of board '{board.name}' may not hold workspace (it "
                f"holds {', '.join(region.holds)}); use one of {', '.join(usable)}"
            )
        if pool.size is not None and pool.size > region.size:
            raise PlanningError(
                f"pool '{pool.name}' ({pool.size} bytes) is larger than memory '{region.name}' "
                f"of board '{board.name}' ({region.size} bytes): {pool.size - region.size} "
                "bytes over; give a smaller --pool size or another memory"
            )
        checked.append(pool if pool.size is not None else replace(pool, size=region.size))
    return tuple(checked)


def accelerator_reach(
    board: BoardMemories, accelerators: Sequence[str]
) -> Mapping[str, Sequence[str]]:
    """Each --accelerator's target -> the board memories it reaches (its ``accelerators:``
    entry); checked first: installed, not the CPU, and, unless it runs on the CPU, on the
    board. A backend that runs on the CPU reaches what the CPU reaches: it is not listed."""
    from aot.backends import CPU_TARGET, get_backend

    reaches = {}
    for name in accelerators:
        if name == CPU_TARGET:
            raise ConfigError(
                "'cpu' is not an --accelerator: the CPU always takes what no accelerator takes"
            )
        backend = get_backend(name)
        if backend.target != CPU_TARGET:
            reaches[backend.target] = board.reached_by(name)
    return MappingProxyType(reaches if board.mapped else {})


def _defaults_for_accelerators(
    pools: tuple[PoolSpec, ...],
    board: BoardMemories,
    reaches: Mapping[str, Sequence[str]],
    constants: str | None,
) -> tuple[tuple[PoolSpec, ...], str | None]:
    """When the user left the pools to aot (no --pool or --pool-file), choose them so
    that ``--accelerator`` alone plans: an accelerator that reaches none of the board's
    default pools gets a pool in the first memory it reaches that may hold workspace,
    and, without --constants-memory, the constants go to the first memory that may hold
    them and every accelerator reaches (weights an NPU reads must sit where it reads
    them). A layout the user gave is kept, and what it leaves out of reach is an error
    (or copies with --allow-copies); --constants-memory alone keeps the NPU's pool, so
    moving the weights out of a full NPU memory is that option and --allow-copies."""
    if not reaches:
        return pools, constants
    for memories in reaches.values():
        if any(p.name in memories for p in pools):
            continue
        memory = next(
            (m for m in board.memories if m.name in memories and m.may_hold("workspace")), None
        )
        if memory is not None:
            pools = (*pools, PoolSpec(memory.name, memory.size))
    shared = [
        m.name
        for m in board.memories
        if m.may_hold("constants") and all(m.name in ms for ms in reaches.values())
    ]
    if constants is None:
        constants = shared[0] if shared else None
    return pools, constants
