"""Compose the stages: model file -> model library folder and its manifest.

:func:`compile_model` only composes: each stage is a function from the artifact before
it and its options to the next (``ImportedModel`` -> ``PartitionedModel`` ->
``LoweredModel`` -> ``CopyPlan`` -> C sources -> ``LibraryManifest``, assembled by
``aot.artifacts.assemble``). The CLI's ``build`` then runs the project and build stages.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aot import __version__
from aot.artifacts.assemble import LibraryFiles, ModelSource, library_manifest
from aot.artifacts.manifest import LibraryManifest
from aot.errors import ConfigError
from aot.library import LIBRARY_DIR, copy_runtime_headers, write_files
from aot.naming import RUNTIME_PREFIXES
from aot.planning.memory_map import MemoryMap
from aot.planning.model import PoolSpec

Progress = Callable[[str], None]

# hill_climb starts from the better greedy plan and only improves it; deterministic.
DEFAULT_PLANNER = "hill_climb"

MODEL_NAME_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,31}$")
MODEL_NAME_MAX = 32


def model_name_from_path(path: str | Path) -> str:
    """The default model name: the file name as a C prefix (``vww_96_int8.tflite`` ->
    ``vww_96_int8``, ``My-Net v2.onnx`` -> ``my_net_v2``), so symbols say which model."""
    name = re.sub(r"[^a-z0-9_]+", "_", Path(path).stem.lower()).strip("_") or "model"
    if name[0].isdigit():
        name = f"m_{name}"
    name = name[:MODEL_NAME_MAX].rstrip("_")
    return f"{name}_model" if name in RUNTIME_PREFIXES else name


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
class Backends:
    """The build's backends in priority order (the accelerators, then the kernel
    backend), what each one's prepare() returned, and the kernels' instruction sets."""

    backends: tuple[Any, ...]
    contexts: Mapping[str, Any]
    isas: tuple[str, ...]

    def used(self, lowered: Any) -> list[Any]:
        """Those that took a step: the others' drivers are not needed."""
        return [b for b in self.backends if any(s.backend == b.name for s in lowered.steps)]


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
    from aot.codegen.executor import CodegenOptions, generate_sources
    from aot.lowering import lower
    from aot.partition import partition
    from aot.planning.schedule import schedule

    def report(message: str) -> None:
        if progress is not None:
            progress(message)

    clock = _Clock()
    imported = import_stage(model_path, options, report)
    clock.lap("import_s")

    backends = prepare_backends(imported, options, board)
    partitioned = partition(
        imported,
        list(backends.backends),
        progress=report if options.accelerators else None,
        contexts=dict(backends.contexts),
    )
    clock.lap("partition_s")

    report(f"lowering {len(imported.operators)} operators")
    lowered = lower(partitioned, options.name, progress=None)
    clock.lap("lower_s")

    lowered = schedule(lowered)
    report(f"planning the buffers of {len(lowered.steps)} steps with {options.planner}")
    planned = plan_lowered(lowered, options)
    if planned.plan.copies:
        report(f"inserted {len(planned.plan.copies)} copy steps (--allow-copies)")
    clock.lap("plan_s")

    report("generating C")
    generated = generate_sources(
        lowered,
        planned.plan,
        CodegenOptions(
            options.constants_alignment,
            options.workspace_alignment,
            options.io_in_pool,
            options.profile,
            options.trace,
        ),
    )
    library = library_files(generated, lowered, backends)
    write_library(output / LIBRARY_DIR, library)
    clock.lap("codegen_s")
    clock.seconds["total_s"] = clock.mark - clock.start

    return CompiledLibrary(
        library_manifest(
            _model_source(model_path),
            imported,
            lowered,
            planned,
            generated,
            library,
            options,
            library_dir=LIBRARY_DIR,
            backends=backends.backends,
            reports=backend_reports(backends),
            isas=backends.isas,
            constants_section_bytes=constants_section_bytes(lowered, options),
            tool_versions=_tool_versions(),
            timings=clock.seconds,
        )
    )


def import_stage(model_path: str | Path, options: CompileOptions, report: Progress) -> Any:
    """The model file -> ``ImportedModel``, saying which frontend took it."""
    from aot.frontend import import_model

    report(f"importing {model_path}")
    imported = import_model(model_path, options.frontend)
    report(f"imported with the {imported.frontend} frontend")
    for note in imported.notes:
        report(note)
    return imported


def prepare_backends(imported: Any, options: CompileOptions, board: Any) -> Backends:
    """The accelerators of ``options``, then the kernel backend the board's features
    allow (accelerators take their operators first), each prepared for this model."""
    from aot.backends import get_backend
    from aot.backends.base import backend_hook
    from aot.kernels import KernelBackend, isas_for

    backends = [get_backend(name, options.backend_options) for name in options.accelerators]
    isas = isas_for(options.kernels, board)
    if isas:
        backends.append(KernelBackend({"isas": isas}))
    # What each backend's prepare() found: its context for the later hooks (no backend
    # keeps state between stages).
    contexts: dict[str, Any] = {}
    for backend in backends:
        with backend_hook(backend, "prepare()"):
            contexts[backend.name] = backend.prepare(imported, board)
    return Backends(tuple(backends), contexts, tuple(isas))


def library_files(generated: Any, lowered: Any, backends: Backends) -> LibraryFiles:
    """The generated C, and the runtime files of every backend that took a step: its
    sources in a folder of its own (two drivers' util.c never meet), its headers in the
    shared include/ (two backends' headers of one name must be one header)."""
    from aot.backends.base import backend_hook, call_hook

    files = dict(generated.files)
    include_dirs: list[str] = []
    defines: dict[str, str] = {}
    header_owners: dict[str, str] = {}  # include/<name> -> the backend that shipped it
    for backend in backends.used(lowered):
        with backend_hook(backend, "runtime()"):
            runtime = call_hook(backend.runtime, backends.contexts.get(backend.name))
        # The backend's files for every build, then those its steps' artifacts name.
        kernels = {step.kernel for step in lowered.steps if step.backend == backend.name}
        stepwise = [
            a.runtime for a in lowered.artifacts if a.symbol in kernels and a.runtime is not None
        ]
        sources = list(dict.fromkeys([*runtime.sources, *(f for r in stepwise for f in r.sources)]))
        headers = list(dict.fromkeys([*runtime.headers, *(f for r in stepwise for f in r.headers)]))
        for path in sources:
            files[f"src/backends/{backend.name}/{path.name}"] = path.read_text()
        for path in headers:
            text = path.read_text()
            key = f"include/{path.name}"
            if key in files and files[key] != text:
                owner = header_owners.get(key, "the model library")
                raise ConfigError(
                    f"backends {owner} and {backend.name} both ship a different {path.name} "
                    "header (model/include/ is shared); rename one of them, or build without "
                    f"--accelerator {backend.name}"
                )
            files[key] = text
            header_owners.setdefault(key, backend.name)
        include_dirs += [str(d) for d in runtime.include_dirs]
        defines.update(runtime.defines)
        for files_of in stepwise:
            include_dirs += [str(d) for d in files_of.include_dirs if str(d) not in include_dirs]
            defines.update(files_of.defines)
    return LibraryFiles(files, tuple(include_dirs), defines)


def write_library(library_dir: Path, library: LibraryFiles) -> None:
    write_files(library_dir, dict(library.files))
    copy_runtime_headers(library_dir / "include")


def backend_reports(backends: Backends) -> dict[str, dict[str, Any]]:
    """What each backend's own compiler said (e.g. Vela's summary), when it says anything."""
    from aot.backends.base import backend_hook, call_hook

    reports: dict[str, dict[str, Any]] = {}
    for backend in backends.backends:
        with backend_hook(backend, "report()"):
            said = dict(call_hook(backend.report, backends.contexts.get(backend.name)))
        if said:
            reports[backend.name] = said
    return reports


def constants_section_bytes(lowered: Any, options: CompileOptions) -> int:
    """What the constants section takes in its memory, each array with its alignment."""
    from aot.lowering import CONSTANT
    from aot.planning.memory_map import constants_section_bytes as section_bytes

    return section_bytes(
        (max(1, t.size_bytes), max(options.constants_alignment, t.alignment))
        for t in lowered.tensors_of(CONSTANT)
    )


def _tool_versions() -> dict[str, str]:
    import numpy
    import tvm

    return {"aot": __version__, "tvm": tvm.__version__, "numpy": numpy.__version__}


def _model_source(model_path: str | Path) -> ModelSource:
    path = Path(model_path)
    return ModelSource(str(path.resolve()), hashlib.sha256(path.read_bytes()).hexdigest())


def plan_lowered(lowered: Any, options: CompileOptions) -> Any:
    """The plan stage on a lowered model: its buffers (each with the targets that touch
    it) into the pools of ``options.memory`` that their targets reach, with copy steps
    when ``allow_copies``; returns an ``aot.planning.copies.CopyPlan``."""
    from aot.planning.core import PlanOptions
    from aot.planning.liveness import model_buffers
    from aot.planning.stage import plan

    buffers = model_buffers(lowered, options.workspace_alignment, options.io_in_pool)
    return plan(buffers, options.memory, PlanOptions(options.planner, options.allow_copies))


def parse_pool(text: str) -> PoolSpec:
    """``NAME:SIZE[:TARGETS]`` with SIZE in bytes or with a K/M suffix (KiB, MiB)."""
    from aot.planning.pools_file import parse_pool_arg

    return parse_pool_arg(text)


def pools_from_args(texts: Sequence[str] | None) -> tuple[PoolSpec, ...]:
    if not texts:
        return (PoolSpec("workspace", None),)
    from aot.planning import pools_file

    return pools_file.pools_from_args(texts)
