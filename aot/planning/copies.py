"""Copy steps: stage a tensor through another pool when its users share no pool, or when
the pool they share is too small for it to stay there all its life (``--allow-copies``).

A graph-level transformation on the planner's inputs. A buffer's users are ``(step,
target)`` pairs in step order; the first is its writer. Splitting it keeps a *home*
buffer for the writer's side and gives each run of later users on other targets a
*staging* buffer, filled by a copy step placed just before the run's first user. Those
users read the staging buffer instead. Staging buffers are ordinary buffers: they go
through the same planners, placed where their own users reach. A constant (in flash) read
by a target that cannot reach the constants memory gets a staging buffer the same way.

Copies run through the port's ``aot_platform_copy(dst, src, n)`` hook (a DMA where the
port has one, ``memcpy`` by default), so a copy step adds no target to the buffers it
touches unless ``copy_target`` names the unit that does the copy.

Two ways to split: ``reach`` (only what is needed: users join the home buffer, or a run,
while some pool still reaches all of them) for buffers no pool reaches; ``target`` (every
change of target starts a new buffer) for buffers split to save room in a small pool.
Buffers in ``pinned`` (graph inputs and outputs, in-place chains: more than one writer)
are never split.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from aot.errors import PlanningError
from aot.planning import COPIES_ADVICE, UNREACHABLE_ADVICE, plan_memory, unreachable_message
from aot.planning.core import allowed_pools
from aot.planning.model import (
    DEFAULT_ALIGNMENT,
    DEFAULT_TARGETS,
    Buffer,
    Copy,
    MemoryPlan,
    Pool,
)

# How a buffer is split: REACH (only where needed), TARGET (at every change of target,
# the copy just before the run: frees the staging pool) or SPILL (TARGET, the copy just
# after the use before the run: frees the home pool).
REACH, TARGET, SPILL = "reach", "target", "spill"


@dataclass(frozen=True)
class ConstantUse:
    """A constant (it lives in flash, not in a pool) and the steps that read it."""

    name: str
    size: int
    users: tuple[tuple[int, str], ...]  # (step, target), in step order
    alignment: int = DEFAULT_ALIGNMENT


@dataclass(frozen=True)
class CallerUse:
    """A model input or output in the caller's memory (not in a pool: built without
    --io-in-pool) and the steps that touch it. A target that cannot reach the caller's
    memory gets a staging buffer: an input is copied in before its first use there, an
    output written there is copied out after its last use."""

    name: str
    size: int
    users: tuple[tuple[int, str], ...]  # (step, target), in step order
    output: bool = False
    alignment: int = DEFAULT_ALIGNMENT


@dataclass(frozen=True)
class ModelBuffers:
    """What a model asks of memory, as the planning stage takes it: its workspace buffers
    (with the steps and targets that touch them), the steps' names for messages, the
    buffers no copy may split, the constants and the caller's inputs and outputs with
    their users, the targets whose backends want the caller's tensors staged through a
    pool (``Backend.io_copies``), and the operator state kept between inferences."""

    buffers: tuple[Buffer, ...]
    step_names: tuple[str, ...] | None = None
    pinned: frozenset[str] = frozenset()
    constants: tuple[ConstantUse, ...] = ()
    caller: tuple[CallerUse, ...] = ()
    caller_copies: tuple[str, ...] = ()
    state: tuple[Buffer, ...] = ()


@dataclass(frozen=True)
class CopyPlan:
    """The memory plan with its copies.

    ``schedule`` is the run order: original step indices and :class:`Copy` steps; buffer
    lifetimes in ``buffers`` and ``plan`` count positions in it. ``reads`` maps an
    original step and a buffer or constant it used to the staging buffer it uses instead
    (``plan`` carries the copies and ``reads`` too, for the executor). Without copies the
    schedule is the original steps and the plan is ``plan_memory``'s.
    """

    plan: MemoryPlan
    buffers: tuple[Buffer, ...]
    schedule: tuple[int | Copy, ...]
    reads: Mapping[tuple[int, str], str] = field(hash=False)
    step_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "reads", MappingProxyType(dict(self.reads)))

    @property
    def copies(self) -> tuple[Copy, ...]:
        return tuple(item for item in self.schedule if isinstance(item, Copy))

    def buffer_for(self, step: int, name: str) -> str:
        """The buffer (or constant) original step ``step`` uses for ``name``."""
        return self.reads.get((step, name), name)


def plan_with_copies(
    buffers: Iterable[Buffer],
    pools: Iterable[Pool],
    algorithm: str,
    *,
    allow_copies: bool = False,
    step_names: Sequence[str] | None = None,
    pinned: Iterable[str] = (),
    constants: Iterable[ConstantUse] = (),
    constants_targets: Sequence[str] | None = None,
    constants_memory: str = "constants",
    copy_target: str | None = None,
    caller: Iterable[CallerUse] = (),
    caller_targets: Sequence[str] | None = DEFAULT_TARGETS,
    caller_copies: Iterable[str] = (),
) -> CopyPlan:
    """Plan ``buffers`` into ``pools``; with ``allow_copies``, insert copy steps where the
    users of a buffer share no pool or the shared pool is too small.

    ``constants_targets`` is what reaches the memory holding the constants and
    ``caller_targets`` what reaches the caller's inputs and outputs (``caller``; None:
    every target). A caller's tensor touched by another target is staged through a pool
    when ``allow_copies`` or when all those targets are in ``caller_copies`` (backends
    that ask for it: ``Backend.io_copies``). Raises PlanningError, naming the buffer or
    constant, its operators and targets and the pools, when no plan exists (with the
    copies allowed).
    """
    buffers, pools, constants = tuple(buffers), tuple(pools), tuple(constants)
    pinned = frozenset(pinned)
    caller = tuple(caller)
    steps = max(
        [b.end + 1 for b in buffers]
        + [len(step_names or ())]
        + [s + 1 for c in caller for s, _ in c.users]
    )
    names = tuple(step_names) if step_names is not None else None
    far_io = [
        c
        for c in caller
        if caller_targets is not None and any(t not in caller_targets for _, t in c.users)
    ]
    automatic = set(caller_copies)
    refused = [
        c
        for c in far_io
        if not allow_copies
        and not all(t in automatic for _, t in c.users if t not in (caller_targets or ()))
    ]
    if refused:
        raise PlanningError(_caller_message(refused, caller_targets, names))

    def reached(targets: set[str]) -> bool:
        return any(p.targets is None or targets <= set(p.targets) for p in pools)

    far = [
        c
        for c in constants
        if constants_targets is not None and any(t not in constants_targets for _, t in c.users)
    ]
    if far and not allow_copies:
        raise PlanningError(_constant_message(far, constants_memory, constants_targets, names))
    unreachable = [b for b in buffers if not allowed_pools(b, pools)]
    if not allow_copies and not far_io:
        # Exactly the plan without copies (and its errors).
        plan = plan_memory(buffers, pools, algorithm, names)
        return CopyPlan(plan, buffers, tuple(range(steps)), {}, names)
    if not allow_copies:
        # Only the caller's tensors its backends asked for are staged; the rest is the
        # plan without copies (and its errors).
        planned, schedule, reads = _split(
            buffers, far, constants_targets, {}, reached, steps, copy_target, far_io,
            caller_targets,
        )  # fmt: skip
        labels = _labels(schedule, names)
        plan = plan_memory(planned, pools, algorithm, labels)
        plan = replace(plan, copies=tuple(c for c in schedule if isinstance(c, Copy)), reads=reads)
        return CopyPlan(plan, tuple(planned), tuple(schedule), reads, labels)
    stuck = [b for b in unreachable if b.name in pinned or len(b.users) < 2]
    if stuck:
        raise PlanningError(
            unreachable_message(stuck, pools, names).replace(
                UNREACHABLE_ADVICE,
                "; it cannot be copied (a model input or output, or written in place)",
            )
        )
    modes = {b.name: REACH for b in unreachable}
    # Split to save room: buffers whose users span targets, longest-held bytes first.
    spare = sorted(
        (
            b
            for b in buffers
            if b.name not in pinned and b.name not in modes and len({t for _, t in b.users}) > 1
        ),
        key=lambda b: (-b.size * (b.end - b.start + 1), b.name),
    )
    while True:
        planned, schedule, reads = _split(
            buffers, far, constants_targets, modes, reached, steps, copy_target, far_io,
            caller_targets,
        )  # fmt: skip
        labels = _labels(schedule, names)
        try:
            plan = plan_memory(planned, pools, algorithm, labels)
        except PlanningError as err:
            if not spare:
                message = str(err).replace(COPIES_ADVICE, "")
                raise PlanningError(f"{message} (with --allow-copies)") from None
            # Greedy: fetch late first; if that is not enough, spill early; then the next.
            name = spare[0].name
            if modes.get(name) == TARGET:
                modes[name] = SPILL
                spare.pop(0)
            else:
                modes[name] = TARGET
            continue
        plan = replace(plan, copies=tuple(c for c in schedule if isinstance(c, Copy)), reads=reads)
        return CopyPlan(plan, tuple(planned), tuple(schedule), reads, labels)


def _labels(schedule: Sequence[int | Copy], names: tuple[str, ...] | None) -> tuple[str, ...]:
    return tuple(
        f"{item.name} ({item.src} -> {item.dst})"
        if isinstance(item, Copy)
        else (names[item] if names is not None else f"step {item}")
        for item in schedule
    )


def _runs(
    users: Sequence[tuple[int, str]],
    home: set[str],
    mode: str,
    reached,
) -> tuple[list[tuple[int, str]], list[list[tuple[int, str]]]]:
    """The users served by the home copy, and the runs of the others (each one staging
    buffer), in step order."""
    stay: list[tuple[int, str]] = []
    runs: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] | None = None
    for step, target in users:
        if target in home:
            stay.append((step, target))
            current = None
            continue
        if current is not None:
            joined = {t for _, t in current} | {target}
            if (len(joined) == 1) if mode != REACH else reached(joined):
                current.append((step, target))
                continue
        current = [(step, target)]
        runs.append(current)
    return stay, runs


def _split(
    buffers: Sequence[Buffer],
    far: Sequence[ConstantUse],
    constants_targets: Sequence[str] | None,
    modes: Mapping[str, str],
    reached,
    steps: int,
    copy_target: str | None,
    far_io: Sequence[CallerUse] = (),
    caller_targets: Sequence[str] | None = None,
) -> tuple[list[Buffer], list[int | Copy], dict[tuple[int, str], str]]:
    # Decide the runs first (in original steps), then number the schedule's positions.
    plans: list[tuple[Buffer | ConstantUse, list[tuple[int, str]], list[list], str]] = []
    for b in buffers:
        mode = modes.get(b.name)
        if mode is None:
            continue
        home = {b.users[0][1]}
        if mode == REACH:
            # Readers join the writer's side while some pool still reaches all of them.
            for _, target in b.users[1:]:
                if target not in home and reached(home | {target}):
                    home.add(target)
        stay, runs = _runs(b.users, home, mode, reached)
        plans.append((b, stay, runs, mode))
    for c in far:
        home = set(constants_targets or ())
        stay, runs = _runs(c.users, home, REACH, reached)
        plans.append((c, stay, runs, REACH))
    copies_before: dict[int, list[Copy]] = {}
    reads: dict[tuple[int, str], str] = {}
    staging: list[tuple[Copy, Buffer | ConstantUse | CallerUse, list[tuple[int, str]]]] = []
    for c in far_io:
        home = set(caller_targets or ())
        if c.output and c.users[0][1] not in home:
            # Written where the caller's memory is out of reach: every user works on the
            # staging buffer, copied out to the caller after the last of them.
            dst = f"{c.name}__copy0"
            copy = Copy(f"copy_{c.name}_out", dst, c.name, c.size, c.users[-1][0] + 1)
            copies_before.setdefault(copy.before, []).append(copy)
            staging.append((copy, c, list(c.users)))
            for step, _ in c.users:
                reads[(step, c.name)] = dst
            continue
        stay, runs = _runs(c.users, home, REACH, reached)
        plans.append((c, stay, runs, REACH))
    for item, stay, runs, mode in plans:
        for k, run in enumerate(runs):
            dst = f"{item.name}__copy{k}"
            before = run[0][0]
            if mode == SPILL:
                # Right after the last use before the run (the writer at least).
                before = max([s for s, _ in stay if s < before], default=before - 1) + 1
            copy = Copy(f"copy_{item.name}_{k}", item.name, dst, item.size, before)
            copies_before.setdefault(copy.before, []).append(copy)
            staging.append((copy, item, run))
            for step, _ in run:
                reads[(step, item.name)] = dst
    schedule: list[int | Copy] = []
    position: dict[int, int] = {}
    copy_position: dict[str, int] = {}
    for step in range(steps + 1):
        for copy in copies_before.get(step, []):
            copy_position[copy.name] = len(schedule)
            schedule.append(copy)
        if step < steps:  # copies out of the last step's results run after it
            position[step] = len(schedule)
            schedule.append(step)

    def extra(targets: set[str]) -> set[str]:
        return targets | ({copy_target} if copy_target else set())

    home_of = {item.name: stay for item, stay, _, _ in plans}
    last_copy: dict[str, int] = {}
    for copy, item, _ in staging:
        last_copy[item.name] = max(last_copy.get(item.name, -1), copy_position[copy.name])
    planned: list[Buffer] = []
    for b in buffers:
        start, end = position[b.start], position[b.end]
        if b.name not in home_of:
            users = tuple((position[s], t) for s, t in b.users)
            planned.append(replace(b, start=start, end=end, users=users))
            continue
        stay = home_of[b.name]
        # The writer is always at home; it lives until its last own user or last copy.
        end = max([position[s] for s, _ in stay] + [last_copy.get(b.name, start), start])
        users = tuple((position[s], t) for s, t in stay)
        targets = {t for _, t in stay}
        if b.name in last_copy:
            targets = extra(targets)
        planned.append(replace(b, start=start, end=end, targets=tuple(targets), users=users))
    for copy, item, run in staging:
        targets = extra({t for _, t in run})
        if copy.dst == item.name:  # a copy out: the staging buffer is its source
            planned.append(
                Buffer(
                    copy.src,
                    copy.size,
                    position[run[0][0]],
                    copy_position[copy.name],
                    item.alignment,
                    targets=tuple(targets),
                    users=tuple((position[s], t) for s, t in run),
                )
            )
            continue
        planned.append(
            Buffer(
                copy.dst,
                copy.size,
                copy_position[copy.name],
                position[run[-1][0]],
                item.alignment,
                targets=tuple(targets),
                users=tuple((position[s], t) for s, t in run),
            )
        )
    return planned, schedule, reads


def _caller_message(
    far: Sequence[CallerUse], targets: Sequence[str] | None, names: tuple[str, ...] | None
) -> str:
    c = far[0]
    users = [(s, t) for s, t in c.users if targets is not None and t not in targets]
    touched = ", ".join(f"'{names[s]}' on {t}" if names is not None else f"step {s} on {t}"
                        for s, t in users)  # fmt: skip
    what = "output" if c.output else "input"
    verb = "written" if c.output and c.users[0] == users[0] else "read"
    more = f" (and {len(far) - 1} more)" if len(far) > 1 else ""
    far_targets = ",".join(dict.fromkeys(t for _, t in users))
    return (
        f"model {what} '{c.name}' ({c.size} bytes){more} is in the caller's memory, which "
        f"only {','.join(targets or ())} reaches, but {verb} directly by {touched}; plan "
        f"the inputs and outputs into the pools with --io-in-pool, or let aot copy it "
        f"through a pool {far_targets} reaches with --allow-copies"
    )


def _constant_message(
    far: Sequence[ConstantUse],
    memory: str,
    targets: Sequence[str] | None,
    names: tuple[str, ...] | None,
) -> str:
    c = far[0]
    readers = ", ".join(
        f"'{names[s]}' on {t}" if names is not None else f"step {s} on {t}"
        for s, t in c.users
        if targets is not None and t not in targets
    )
    more = f" (and {len(far) - 1} more constants)" if len(far) > 1 else ""
    return (
        f"constant '{c.name}' ({c.size} bytes){more} is read by {readers}, which cannot "
        f"reach the constants memory '{memory}' ({','.join(targets or ())}); place the "
        "constants in a memory those targets reach (the board's memory map) or let aot "
        "copy them into a pool they reach with --allow-copies"
    )
