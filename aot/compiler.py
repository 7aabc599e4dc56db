"""Compose the stages: model file -> model library folder (+ metadata).

The CLI's ``build`` calls :func:`compile_model`, then the project and toolchain stages.
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
    """What the compile stages produced, as written into the folder's metadata."""

    metadata: dict[str, Any] = field(repr=False)
    sources: tuple[str, ...]  # relative to the output folder


def _tool_versions() -> dict[str, str]:
    import numpy
    import tvm

    return {"aot": __version__, "tvm": tvm.__version__, "numpy": numpy.__version__}


def compile_model(
    model_path: str | Path,
    output: Path,
    options: CompileOptions,
    progress: Progress | None = None,
    board: Any = None,
) -> CompiledLibrary:
    """Import, lower, plan and generate C for ``model_path`` into ``output/model``."""
    from aot.backends import get_backend
    from aot.backends.base import backend_hook, call_hook
    from aot.codegen.executor import CodegenOptions, generate_sources
    from aot.frontend import import_model
    from aot.lowering import CONSTANT, lower
    from aot.partition import partition
    from aot.planning.memory_map import constants_section_bytes
    from aot.planning.schedule import schedule

    def report(message: str) -> None:
        if progress is not None:
            progress(message)

    timings: dict[str, float] = {}
    start = time.perf_counter()
    report(f"importing {model_path}")
    imported = import_model(model_path, options.frontend)
    report(f"imported with the {imported.frontend} frontend")
    for note in imported.notes:
        report(note)
    timings["import_s"] = time.perf_counter() - start

    mark = time.perf_counter()
    backends = [get_backend(name, options.backend_options) for name in options.accelerators]
    from aot.kernels import KernelBackend, isas_for

    # The kernel backend comes last: accelerators take their operators first.
    isas = isas_for(options.kernels, board)
    if isas:
        backends.append(KernelBackend({"isas": isas}))
    # What each backend's prepare() found: its context for the later hooks (no backend
    # keeps state between stages).
    contexts: dict[str, Any] = {}
    for backend in backends:
        with backend_hook(backend, "prepare()"):
            contexts[backend.name] = backend.prepare(imported, board)
    partitioned = partition(
        imported, backends, progress=report if options.accelerators else None, contexts=contexts
    )
    timings["partition_s"] = time.perf_counter() - mark

    mark = time.perf_counter()
    report(f"lowering {len(imported.operators)} operators")
    lowered = lower(partitioned, options.name, progress=None)
    timings["lower_s"] = time.perf_counter() - mark

    mark = time.perf_counter()
    lowered = schedule(lowered)
    report(f"planning the buffers of {len(lowered.steps)} steps with {options.planner}")
    planned = plan_lowered(lowered, options)
    plan = planned.plan
    if plan.copies:
        report(f"inserted {len(plan.copies)} copy steps (--allow-copies)")
    timings["plan_s"] = time.perf_counter() - mark

    mark = time.perf_counter()
    report("generating C")
    generated = generate_sources(
        lowered,
        plan,
        CodegenOptions(
            options.constants_alignment,
            options.workspace_alignment,
            options.io_in_pool,
            options.profile,
            options.trace,
        ),
    )
    library_dir = output / LIBRARY_DIR
    files = dict(generated.files)
    include_dirs: list[str] = []
    defines: dict[str, str] = {}
    header_owners: dict[str, str] = {}  # include/<name> -> the backend that shipped it
    for backend in backends:
        if not any(step.backend == backend.name for step in lowered.steps):
            continue  # took nothing: its driver is not needed
        with backend_hook(backend, "runtime()"):
            runtime = call_hook(backend.runtime, contexts.get(backend.name))
        # The backend's files for every build, then those its steps' artifacts name.
        kernels = {step.kernel for step in lowered.steps if step.backend == backend.name}
        stepwise = [
            a.runtime for a in lowered.artifacts if a.symbol in kernels and a.runtime is not None
        ]
        sources = list(dict.fromkeys([*runtime.sources, *(f for r in stepwise for f in r.sources)]))
        headers = list(dict.fromkeys([*runtime.headers, *(f for r in stepwise for f in r.headers)]))
        # Sources in a folder per backend (two drivers' util.c never meet); headers share
        # include/, so two backends' headers of one name must be one header.
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
    write_files(library_dir, files)
    copy_runtime_headers(library_dir / "include")
    timings["codegen_s"] = time.perf_counter() - mark
    timings["total_s"] = time.perf_counter() - start

    # What each accelerator's own compiler said (e.g. Vela's summary), when it says anything.
    reports: dict[str, dict[str, Any]] = {}
    for backend in backends:
        with backend_hook(backend, "report()"):
            said = dict(call_hook(backend.report, contexts.get(backend.name)))
        if said:
            reports[backend.name] = said
    source_bytes = Path(model_path).read_bytes()
    c_lines = sum(content.count("\n") for content in files.values())
    metadata: dict[str, Any] = {
        "tool_versions": _tool_versions(),
        "model": {
            "name": options.name,
            "source": str(Path(model_path).resolve()),
            "source_sha256": hashlib.sha256(source_bytes).hexdigest(),
            "format": imported.source_format,
            "frontend": imported.frontend,
            "source_operators": [op.to_json() for op in imported.sources],
        },
        # Backends in priority order (the CPU last, taking what is left), what each took.
        "backends": [
            {
                "name": b.name,
                "target": b.target,
                "steps": sum(step.backend == b.name for step in lowered.steps),
                "source_operators": sum(
                    len(step.source) for step in lowered.steps if step.backend == b.name
                ),
                **({"report": reports[b.name]} if b.name in reports else {}),
                # Why the emulator cannot run its steps (aot run refuses from this).
                **({"emulator_note": b.emulator_note} if b.emulator_note else {}),
            }
            for b in [*backends, lowered.backends["cpu"]]
        ],
        "inputs": [
            _io_json(spec, tensor)
            for spec, tensor in zip(imported.inputs, lowered.inputs, strict=True)
        ],
        "outputs": [
            _io_json(spec, tensor)
            for spec, tensor in zip(imported.outputs, lowered.outputs, strict=True)
        ],
        "kernels": {"choice": options.kernels, "isas": list(isas)},
        "operators": operators_metadata(lowered),
        "memory": memory_metadata(lowered, planned, options),
        "activations": [
            {"id": t.id, "shape": list(t.shape), "dtype": t.dtype, "size_bytes": t.size_bytes}
            for t in lowered.tensors
            if t.kind == "intermediate"
            and lowered.memory_root(t.id) == t.id
            and any(t.id in step.args for step in lowered.steps)
        ],
        "constants": {
            "bytes": generated.constants_bytes,
            # With each array's alignment: what the section takes in its memory.
            "section_bytes": constants_section_bytes(
                (
                    max(1, t.size_bytes),
                    max(options.constants_alignment, t.alignment),
                )
                for t in lowered.tensors_of(CONSTANT)
            ),
            "count": len(lowered.tensors_of(CONSTANT)),
            "section": f".rodata.aot.{options.name}.constants",
            "alignment": options.constants_alignment,
        },
        "library": {
            "dir": LIBRARY_DIR,
            "include_dirs": [f"{LIBRARY_DIR}/include", *include_dirs],
            "sources": sorted(f"{LIBRARY_DIR}/{f}" for f in files if f.endswith(".c")),
            "c_lines": c_lines,
            "header": f"{LIBRARY_DIR}/include/aot_{options.name}.h",
            "run_function": f"aot_{options.name}_run",
            "descriptor": f"aot_{options.name}_model",
            # Per-step ticks, read back with the protocol's PROFILE command (aot bench).
            "profile": options.profile,
            # -D macros the backends' runtime sources need (absent for CPU-only builds).
            **({"defines": defines} if defines else {}),
        },
        # What each step writes, for the TRACE command (only in --trace builds).
        **({"trace": trace_metadata(lowered)} if options.trace else {}),
        "compile_seconds": {k: round(v, 3) for k, v in timings.items()},
    }
    return CompiledLibrary(metadata=metadata, sources=tuple(metadata["library"]["sources"]))


def trace_metadata(lowered: Any) -> dict[str, Any]:
    """metadata.json's trace: per step, the tensors it writes in the order TRACE returns
    them, each with the source model's tensor name when it has one (what
    'aot validate --layers' compares it with)."""
    return {
        "steps": [
            {
                "step": step.index,
                "outputs": [
                    {
                        "tensor": lowered.tensors[t].source,
                        "dtype": lowered.tensors[t].dtype,
                        "shape": list(lowered.tensors[t].shape),
                        "bytes": lowered.tensors[t].size_bytes,
                    }
                    for t in step.outputs
                ],
            }
            for step in lowered.steps
        ]
    }


def operators_metadata(lowered: Any) -> list[dict[str, Any]]:
    """metadata.json's operators: in order, each with where it runs (backend, target)."""
    return [
        {
            "index": step.index,
            "name": step.operator,
            "label": step.label,
            "source_operators": [op.to_json() for op in step.source],
            "kernel": step.kernel,
            # What ran it: the hand-written C kernel's function, or "tvm".
            "implementation": lowered.backends[step.backend].implementation(
                lowered.artifact(step.kernel)
            ),
            "backend": step.backend,
            "target": step.target,
            "scratch_bytes": step.scratch_bytes,
            "macs": step.macs,
            "workspace_bytes": sum(
                lowered.tensors[t].size_bytes
                for t in step.args
                if lowered.tensors[t].kind == "intermediate"
            )
            + step.scratch_bytes,
        }
        for step in lowered.steps
    ]


def memory_metadata(lowered: Any, planned: Any, options: CompileOptions) -> dict[str, Any]:
    """metadata.json's memory: pools, every buffer with its pool, what it holds, its
    targets and the steps that touch it, the copy steps and the run order with them."""
    from aot.naming import scratch_buffer_name, tensor_buffer_name

    plan, buffers = planned.plan, planned.buffers
    buffers_by_name = {b.name: b for b in buffers}
    # What each buffer holds in the source model's words, for inspect and the picture.
    holds: dict[str, dict[str, Any]] = {}
    for tensor in lowered.tensors:
        producer = next((s for s in lowered.steps if tensor.id in s.outputs and s.source), None)
        holds[tensor_buffer_name(tensor)] = {
            "tensor": tensor.source or tensor.name,
            "source_operator": _op_ref(producer.source[-1]) if producer else None,
        }
    for step in lowered.steps:
        holds[scratch_buffer_name(step.index)] = {
            "tensor": f"scratch of {step.label}",
            "source_operator": _op_ref(step.source[-1]) if step.source else None,
        }
    for copy in plan.copies:
        if copy.src not in holds:  # a copy out to the caller's output from its staging
            holds[copy.src] = {**holds[copy.dst], "copy_of": copy.dst}
            continue
        holds[copy.dst] = {**holds[copy.src], "copy_of": copy.src}
    labels = planned.step_names or ()
    return {
        "planner": plan.algorithm,
        "io_in_pool": options.io_in_pool,
        "pools": [
            {**p.to_json(), "used_bytes": plan.pool_sizes.get(p.name, 0)}
            for p in options.memory.pools
        ]
        + [
            # Operator state, kept between inferences (docs/memory_planning.md).
            {
                "name": name,
                "size_limit": None,
                "targets": sorted(
                    {
                        t
                        for p in plan.placements
                        if p.pool == name
                        for t in buffers_by_name[p.buffer].targets
                    }
                ),
                "used_bytes": plan.pool_sizes[name],
                "kind": "persistent",
            }
            for name in plan.persistent
        ],
        "workspace_bytes": plan.workspace_size,
        "persistent_bytes": plan.total_size - plan.workspace_size,
        "states": [
            {**state.to_json(), "buffer": tensor_buffer_name(tensor)}
            for state, tensor in zip(lowered.imported.states, lowered.states, strict=True)
        ],
        "lower_bound_bytes": plan.lower_bound,
        "pool_lower_bounds": dict(plan.pool_lower_bounds),
        "activation_lower_bound_bytes": lowered.activation_lower_bound,
        "allow_copies": options.allow_copies,
        "constants_targets": _listed(options.memory.constants_targets),
        "io_targets": _listed(options.memory.io_targets),
        "buffers": [
            {
                **placement.to_json(),
                **holds.get(placement.buffer, {"tensor": None, "source_operator": None}),
                "size": buffers_by_name[placement.buffer].size,
                "start": buffers_by_name[placement.buffer].start,
                "end": buffers_by_name[placement.buffer].end,
                **_touched_json(buffers_by_name[placement.buffer], labels),
            }
            for placement in plan.placements
        ],
        # With copies, buffer lifetimes count positions in this run order (steps and
        # copies); without, the schedule is the operators in order.
        "schedule": (
            [
                {"step": item} if isinstance(item, int) else {"copy": item.name}
                for item in planned.schedule
            ]
            if plan.copies
            else None
        ),
        "copies": [c.to_json() for c in plan.copies],
    }


def plan_lowered(lowered: Any, options: CompileOptions) -> Any:
    """The plan stage on a lowered model: its buffers (each with the targets that touch
    it) into the pools of ``options.memory`` that their targets reach, with copy steps
    when ``allow_copies``; returns an ``aot.planning.copies.CopyPlan``."""
    from aot.planning.core import PlanOptions
    from aot.planning.liveness import model_buffers
    from aot.planning.stage import plan

    buffers = model_buffers(lowered, options.workspace_alignment, options.io_in_pool)
    return plan(buffers, options.memory, PlanOptions(options.planner, options.allow_copies))


def _listed(targets: Sequence[str] | None) -> list[str] | None:
    return None if targets is None else list(targets)


def _touched_json(buffer: Any, labels: Sequence[str]) -> dict[str, Any]:
    """Who touches a buffer: its targets and every (step, target) with the step's label."""
    return {
        "targets": list(buffer.targets),
        "touched_by": [
            {"step": s, "target": t, "label": labels[s] if s < len(labels) else None}
            for s, t in buffer.users
        ],
    }


def _op_ref(op: Any) -> dict[str, Any]:
    return {"index": op.index, "type": op.type}


def _io_json(spec: Any, tensor: Any) -> dict[str, Any]:
    return {**spec.to_json(), "c_name": tensor.name}


def parse_pool(text: str) -> PoolSpec:
    """``NAME:SIZE[:TARGETS]`` with SIZE in bytes or with a K/M suffix (KiB, MiB)."""
    from aot.planning.pools_file import parse_pool_arg

    return parse_pool_arg(text)


def pools_from_args(texts: Sequence[str] | None) -> tuple[PoolSpec, ...]:
    if not texts:
        return (PoolSpec("workspace", None),)
    from aot.planning import pools_file

    return pools_file.pools_from_args(texts)
