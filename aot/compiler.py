"""Compose the stages: model file -> model library folder and its manifest.

:func:`compile_model` only composes: each stage is a function from the artifact before
it and its options to the next (``ImportedModel`` -> ``PartitionedModel`` ->
``LoweredModel`` -> ``CopyPlan`` -> C sources -> ``LibraryManifest``, assembled by
``aot.artifacts.assemble``). The CLI's ``build`` then runs the project and build stages.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aot import __version__
from aot.artifacts.assemble import library_manifest
from aot.artifacts.manifest import LibraryManifest
from aot.errors import ConfigError
from aot.library import (
    LIBRARY_DIR,
    copy_runtime_headers,
    library_files,
    model_source,
    write_files,
)
from aot.naming import RUNTIME_PREFIXES
from aot.planning.core import PlanOptions
from aot.planning.memory_map import MemoryMap
from aot.planning.model import PoolSpec

Progress = Callable[[str], None]

# hill_climb starts from the better greedy plan and only improves it; deterministic.
DEFAULT_PLANNER = "hill_climb"

MODEL_NAME_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,31}$")


@dataclass(frozen=True)
class CompileOptions:
    name: str = "default"
    frontend: str = "auto"
    planner: str = DEFAULT_PLANNER
    # The pools and what reaches them, the constants and the caller's inputs and outputs
    # (MemoryMap.for_build makes a board's; the default: one unbounded CPU pool).
    memory: MemoryMap = field(default_factory=MemoryMap)
    constants_alignment: int = 16
    workspace_alignment: int = 16
    io_in_pool: bool = False  # inputs and outputs planned into the pools too
    profile: bool = False  # the executor times each step (aot build --profile)
    # A debug build whose run() can stop after any step (aot build --trace), for
    # 'aot validate --layers'.
    trace: bool = False
    # Accelerator backends by registry name, in priority order (--accelerator).
    accelerators: tuple[str, ...] = ()
    # Copy steps where a tensor's users share no pool or the shared one is too small.
    allow_copies: bool = False
    # Options every accelerator backend gets (e.g. a driver's folder: docs/accelerators.md).
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    # --kernels: auto (the fastest kernels the board's features allow), tvm (TVM's
    # generated kernels only) or one ISA's hand-written kernels (docs/kernels.md).
    kernels: str = "auto"
    # --ram-budget: run the model's first convolutions tile by tile (patch stages) so the
    # fixed-order peak fits this many bytes, the fastest such schedule; --frontier records
    # the RAM/instructions frontier without changing the schedule (docs/memory_planning.md).
    ram_budget: int | None = None
    frontier: bool = False
    # --in-place: the convolutions that lower the peak write their output over their
    # input, band by band (aot.planning.in_place_rows).
    in_place: bool = False

    def __post_init__(self) -> None:
        if not MODEL_NAME_PATTERN.match(self.name):
            raise ConfigError(
                f"model name '{self.name}' is not usable as a C prefix; use lower-case letters, "
                "digits and '_' (at most 32 characters, not starting with a digit)"
            )
        if self.name in RUNTIME_PREFIXES:
            raise ConfigError(
                f"model name '{self.name}' would clash with the C runtime's aot_{self.name}_* "
                f"symbols; choose another --name (e.g. {self.name}_model)"
            )
        for alignment in (self.constants_alignment, self.workspace_alignment):
            if alignment < 1 or alignment & (alignment - 1):
                raise ConfigError(f"alignment {alignment} is not a power of two")
        if not self.memory.pools:
            raise ConfigError("at least one workspace pool is needed")
        from aot.kernels import CHOICES

        if self.kernels not in CHOICES:
            raise ConfigError(f"--kernels {self.kernels!r} is not one of {', '.join(CHOICES)}")
        if "kernels" in self.accelerators:
            raise ConfigError(
                "the kernel backend is chosen with --kernels, not --accelerator kernels"
            )
        if len(set(self.accelerators)) != len(self.accelerators):
            raise ConfigError(
                f"--accelerator repeats a name ({', '.join(self.accelerators)}); give each once, "
                "in priority order"
            )


@dataclass(frozen=True)
class CompiledLibrary:
    """What the compile stages produced: the library folder's manifest (aot build adds
    the board, the project and the build to it)."""

    manifest: LibraryManifest = field(repr=False)

    @property
    def sources(self) -> tuple[str, ...]:  # relative to the output folder
        return self.manifest.library.sources

    @property
    def metadata(self) -> dict[str, Any]:
        """The manifest as JSON data, as metadata.json holds it."""
        return self.manifest.to_json()


@dataclass(frozen=True)
class ChosenBackends:
    """The build's backends in priority order (the accelerators, then the kernel backend
    the board's features allow) and the kernels' instruction sets."""

    backends: tuple[Any, ...]
    isas: tuple[str, ...]


class _Clock:
    """Seconds per stage, for metadata.json's compile_seconds."""

    def __init__(self) -> None:
        self.start = self.mark = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = now - self.mark
        self.mark = now


def compile_model(
    model_path: str | Path,
    output: Path,
    options: CompileOptions,
    progress: Progress | None = None,
    board: Any = None,
) -> CompiledLibrary:
    """Import, partition, lower, plan and generate C for ``model_path`` into
    ``output/model``; each stage takes the artifact of the one before."""
    from aot.backends.base import finish_backends
    from aot.codegen.executor import CodegenOptions, generate_sources
    from aot.frontend import import_model
    from aot.lowering import lower
    from aot.partition import partition_for_build
    from aot.planning.memory_map import constants_section_bytes
    from aot.planning.patch_stage import plan_schedule
    from aot.planning.schedule import schedule
    from aot.planning.stage import plan_model

    def report(message: str) -> None:
        if progress is not None:
            progress(message)

    clock = _Clock()
    chosen = choose_backends(options, board)
    report(f"importing {model_path}")
    imported = import_model(model_path, options.frontend)
    report(f"imported with the {imported.frontend} frontend")
    for note in imported.notes:
        report(note)
    clock.lap("import_s")

    partitioned = partition_for_build(
        imported, chosen.backends, board, progress=report if options.accelerators else None
    )
    clock.lap("partition_s")

    report(f"lowering {len(imported.operators)} operators")
    lowered = lower(partitioned, options.name, progress=None)
    clock.lap("lower_s")

    lowered, schedule_info = plan_schedule(
        lowered,
        options.ram_budget,
        options.io_in_pool,
        options.frontier,
        report,
        in_place=options.in_place,
    )

    lowered = schedule(lowered)
    report(f"planning the buffers of {len(lowered.steps)} steps with {options.planner}")
    planned = plan_model(
        lowered,
        options.memory,
        PlanOptions(options.planner, options.allow_copies),
        options.workspace_alignment,
        options.io_in_pool,
    )
    if planned.plan.copies:
        report(f"inserted {len(planned.plan.copies)} copy steps (--allow-copies)")
    section_bytes = constants_section_bytes(
        (max(1, t.size_bytes), max(options.constants_alignment, t.alignment))
        for t in lowered.constants
    )
    clock.lap("plan_s")

    report("generating C")
    codegen = CodegenOptions(
        options.constants_alignment,
        options.workspace_alignment,
        options.io_in_pool,
        options.profile,
        options.trace,
    )
    generated = generate_sources(lowered, planned.plan, codegen)
    finished = finish_backends(partitioned.backends, partitioned.contexts, lowered)
    source = model_source(model_path)
    library = library_files(generated, lowered, finished.runtimes)
    write_files(output / LIBRARY_DIR, dict(library.files))
    copy_runtime_headers(output / LIBRARY_DIR / "include")
    clock.lap("codegen_s")
    clock.seconds["total_s"] = clock.mark - clock.start

    manifest = library_manifest(
        source,
        imported,
        lowered,
        planned,
        generated,
        library,
        options,
        library_dir=LIBRARY_DIR,
        backends=partitioned.backends,
        reports=finished.reports,
        isas=chosen.isas,
        constants_section_bytes=section_bytes,
        tool_versions=_tool_versions(),
        timings=clock.seconds,
    )
    if schedule_info is not None:
        manifest = replace(manifest, schedule=schedule_info)
    return CompiledLibrary(manifest)


def choose_backends(options: CompileOptions, board: Any) -> ChosenBackends:
    """The accelerators of ``options``, then the kernel backend the board's features
    allow (accelerators take their operators first)."""
    from aot.backends import get_backend
    from aot.kernels import KernelBackend, isas_for

    isas = tuple(isas_for(options.kernels, board))
    backends = [get_backend(name, options.backend_options) for name in options.accelerators]
    if isas:
        # A RAM budget may need the first convolutions tiled: the kernels take every
        # operator they compute, not only those they are the fastest for.
        every = options.ram_budget is not None or options.frontier or options.in_place
        backends.append(
            KernelBackend({"isas": list(isas), **({"every_computed": True} if every else {})})
        )
    return ChosenBackends(tuple(backends), isas)


def _tool_versions() -> dict[str, str]:
    import numpy
    import tvm

    return {"aot": __version__, "tvm": tvm.__version__, "numpy": numpy.__version__}


def plan_lowered(lowered: Any, options: CompileOptions) -> Any:
    """The plan stage on a lowered model with the options of a compile (see
    ``aot.planning.stage.plan_model``); returns an ``aot.planning.copies.CopyPlan``."""
    from aot.planning.stage import plan_model

    return plan_model(
        lowered,
        options.memory,
        PlanOptions(options.planner, options.allow_copies),
        options.workspace_alignment,
        options.io_in_pool,
    )


def parse_pool(text: str) -> PoolSpec:
    """``NAME:SIZE[:TARGETS]`` with SIZE in bytes or with a K/M suffix (KiB, MiB)."""
    from aot.planning.pools_file import parse_pool_arg

    return parse_pool_arg(text)


def pools_from_args(texts: Sequence[str] | None) -> tuple[PoolSpec, ...]:
    if not texts:
        return (PoolSpec("workspace", None),)
    from aot.planning import pools_file

    return pools_file.pools_from_args(texts)
