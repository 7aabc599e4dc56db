"""The memory plan of a build folder, read back from its manifest: the planner's own
objects (Buffer, Pool, Placement, MemoryPlan) rebuilt from ``LibraryManifest.memory``, and
their picture (``memory.svg``, which ``aot build`` writes and ``aot inspect`` redraws)."""

from __future__ import annotations

from dataclasses import dataclass, field

from aot.artifacts.manifest import LibraryManifest
from aot.errors import ModelError
from aot.planning.model import DEFAULT_ALIGNMENT, Buffer, MemoryPlan, Placement, Pool


@dataclass(frozen=True)
class LoadedPlan:
    """The memory plan of a build folder as the planner's own objects."""

    plan: MemoryPlan
    buffers: tuple[Buffer, ...]
    pools: tuple[Pool, ...]
    targets: dict[str, list[str]]  # pool name -> what accesses it
    step_names: tuple[str, ...]  # operator per step, in the source model's words
    # buffer name -> (source tensor name or None, "CONV_2D #3"-style producer or None)
    holds: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    # Where each step runs ("cpu", an accelerator; "copy" for a copy step).
    step_targets: tuple[str, ...] = ()


def load_plan(manifest: LibraryManifest, where: str = "metadata.json") -> LoadedPlan:
    """Rebuild Buffer/Pool/Placement/MemoryPlan objects from a build's manifest."""
    memory = manifest.memory
    pools = [Pool(p.name, p.size_limit, p.targets) for p in memory.pools]
    targets = {p.name: list(p.targets) for p in memory.pools}
    used = {p.name: p.used_bytes for p in memory.pools}
    buffers, placements = [], []
    holds: dict[str, tuple[str | None, str | None]] = {}
    for entry in memory.buffers:
        producer = entry.source_operator
        holds[entry.buffer] = (entry.tensor, producer.label if producer is not None else None)
        if entry.pool not in used:
            raise ModelError(f"{where}: buffer '{entry.buffer}' is in unknown pool {entry.pool!r}")
        buffers.append(
            Buffer(
                entry.buffer,
                entry.size,
                entry.start,
                entry.end,
                DEFAULT_ALIGNMENT,
                targets=entry.targets,
                users=tuple((u.step, u.target) for u in entry.touched_by),
            )
        )
        placements.append(Placement(entry.buffer, entry.pool, entry.offset))
    operators = manifest.operators
    steps = max([b.end + 1 for b in buffers] + [len(operators)])
    # "label" (source operators, e.g. "CONV_2D #3") since metadata carries it; else "name".
    names = {op.index: op.shown for op in operators}
    runs_on = {op.index: op.target for op in operators}
    schedule = memory.schedule
    if schedule:
        # Built with copies: lifetimes count positions in the run order, copies included.
        step_names = tuple(
            f"copy {item.copy}" if item.copy is not None else names.get(item.step, "?")
            for item in schedule
        )
        step_targets = tuple(
            "copy" if item.copy is not None else runs_on.get(item.step, "cpu") for item in schedule
        )
        steps = max(steps, len(schedule))
        step_names += tuple(f"step {i}" for i in range(len(schedule), steps))
    else:
        step_names = tuple(names.get(i, f"step {i}") for i in range(steps))
        step_targets = tuple(runs_on.get(i, "cpu") for i in range(steps))
    from aot.planning import activation_lower_bound

    lower = memory.lower_bound_bytes
    plan = MemoryPlan(
        memory.planner,
        tuple(placements),
        used,
        activation_lower_bound(buffers) if lower is None else lower,
        dict(memory.pool_lower_bounds),
        persistent=tuple(p.name for p in memory.pools if p.persistent),
    )
    return LoadedPlan(plan, tuple(buffers), tuple(pools), targets, step_names, holds, step_targets)


def short_tensor_name(name: str | None, limit: int = 48) -> str | None:
    """A source tensor name short enough for a table: TFLite joins the names of fused
    ops with ';' (the first is the one people gave), and long paths keep their tail."""
    if not name:
        return None
    name = name.split(";")[0]
    return name if len(name) <= limit else "..." + name[-(limit - 3) :]


def picture(loaded: LoadedPlan) -> str:
    """The SVG of a loaded plan, buffers named by the source tensors they hold."""
    from aot.planning.render import render_svg

    labels = {name: short_tensor_name(tensor) or name for name, (tensor, _) in loaded.holds.items()}
    # Narrow boxes show the producing operator's number, which the step axis names.
    tags = {
        name: ("scratch " if (tensor or "").startswith("scratch") else "") + "#" + op.split("#")[-1]
        for name, (tensor, op) in loaded.holds.items()
        if op
    }
    return render_svg(loaded.plan, loaded.buffers, loaded.pools, loaded.step_names, labels, tags)


def plan_picture(manifest: LibraryManifest) -> str:
    """The SVG of a build's memory plan, from its manifest."""
    return picture(load_plan(manifest))
