"""The library manifest of a compile, from the stages' artifacts.

``library_manifest`` is the one place that says what metadata.json records of the
imported model, the lowered steps, the memory plan and the generated library. The
artifacts come in typed loosely (``Any``): this package sits below every stage and
imports none of them; it only reads the fields they carry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aot.artifacts.manifest import (
    ActivationEntry,
    BackendEntry,
    BufferEntry,
    ConstantsInfo,
    CopyEntry,
    IOTensor,
    KernelsInfo,
    LibraryInfo,
    LibraryManifest,
    MemoryInfo,
    ModelInfo,
    OperatorEntry,
    PoolEntry,
    Quantization,
    ScheduleItem,
    SourceOperatorRef,
    StateEntry,
    TouchedBy,
    TraceInfo,
    TraceOutput,
    TraceStep,
)
from aot.naming import constants_section, scratch_buffer_name, tensor_buffer_name


@dataclass(frozen=True)
class LibraryFiles:
    """The model library as written: every file's text (relative to the library folder),
    and the include folders and -D macros the backends' runtime sources need."""

    files: Mapping[str, str]
    include_dirs: tuple[str, ...] = ()
    defines: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelSource:
    """The model file as compiled: where it is and its digest."""

    path: str  # absolute
    sha256: str


def library_manifest(
    source: ModelSource,
    imported: Any,  # aot.frontend.ImportedModel
    lowered: Any,  # aot.lowering.LoweredModel, scheduled
    planned: Any,  # aot.planning.copies.CopyPlan
    generated: Any,  # aot.codegen.executor.GeneratedSources
    library: LibraryFiles,
    options: Any,  # aot.compiler.CompileOptions
    *,
    library_dir: str,
    backends: Sequence[Any],  # the accelerators and the kernel backend, in priority order
    reports: Mapping[str, Mapping[str, Any]],  # what each backend's compiler said
    isas: Sequence[str],
    constants_section_bytes: int,
    tool_versions: Mapping[str, str],
    timings: Mapping[str, float],
) -> LibraryManifest:
    """What a compile records in metadata.json (``aot build`` adds the board, the
    constants' memory, the project and the build)."""
    name = options.name
    constants = lowered.tensors_of("constant")
    return LibraryManifest(
        tool_versions=dict(tool_versions),
        model=ModelInfo(
            name=name,
            source=source.path,
            source_sha256=source.sha256,
            format=imported.source_format,
            frontend=imported.frontend,
            source_operators=tuple(_source_ref(op) for op in imported.sources),
        ),
        # Backends in priority order (the CPU last, taking what is left), what each took.
        backends=tuple(
            BackendEntry(
                name=b.name,
                target=b.target,
                steps=sum(step.backend == b.name for step in lowered.steps),
                source_operators=sum(
                    len(step.source) for step in lowered.steps if step.backend == b.name
                ),
                report=reports.get(b.name),
                # Why the emulator cannot run its steps (aot run refuses from this).
                emulator_note=b.emulator_note or None,
            )
            for b in [*backends, lowered.backends["cpu"]]
        ),
        inputs=tuple(
            _io(spec, tensor) for spec, tensor in zip(imported.inputs, lowered.inputs, strict=True)
        ),
        outputs=tuple(
            _io(spec, tensor)
            for spec, tensor in zip(imported.outputs, lowered.outputs, strict=True)
        ),
        kernels=KernelsInfo(choice=options.kernels, isas=tuple(isas)),
        operators=operator_entries(lowered),
        memory=memory_info(lowered, planned, options),
        activations=tuple(
            ActivationEntry(id=t.id, shape=tuple(t.shape), dtype=t.dtype, size_bytes=t.size_bytes)
            for t in lowered.tensors
            if t.kind == "intermediate"
            and lowered.memory_root(t.id) == t.id
            and any(t.id in step.args for step in lowered.steps)
        ),
        constants=ConstantsInfo(
            bytes=generated.constants_bytes,
            # With each array's alignment: what the section takes in its memory.
            section_bytes=constants_section_bytes,
            count=len(constants),
            section=constants_section(name),
            alignment=options.constants_alignment,
        ),
        library=LibraryInfo(
            dir=library_dir,
            include_dirs=(f"{library_dir}/include", *library.include_dirs),
            sources=tuple(sorted(f"{library_dir}/{f}" for f in library.files if f.endswith(".c"))),
            c_lines=sum(content.count("\n") for content in library.files.values()),
            header=f"{library_dir}/include/aot_{name}.h",
            run_function=f"aot_{name}_run",
            descriptor=f"aot_{name}_model",
            # Per-step ticks, read back with the protocol's PROFILE command (aot bench).
            profile=options.profile,
            # -D macros the backends' runtime sources need (absent for CPU-only builds).
            defines=dict(library.defines),
        ),
        # What each step writes, for the TRACE command (only in --trace builds).
        trace=trace_info(lowered) if options.trace else None,
        compile_seconds={k: round(v, 3) for k, v in timings.items()},
    )


def trace_info(lowered: Any) -> TraceInfo:
    """Per step, the tensors it writes in the order TRACE returns them, each with the
    source model's tensor name when it has one (what 'aot validate --layers' compares
    it with)."""
    return TraceInfo(
        steps=tuple(
            TraceStep(
                step=step.index,
                outputs=tuple(
                    TraceOutput(
                        tensor=lowered.tensors[t].source,
                        dtype=lowered.tensors[t].dtype,
                        shape=tuple(lowered.tensors[t].shape),
                        bytes=lowered.tensors[t].size_bytes,
                    )
                    for t in step.outputs
                ),
            )
            for step in lowered.steps
        )
    )


def operator_entries(lowered: Any) -> tuple[OperatorEntry, ...]:
    """The steps in order, each with where it runs (backend, target)."""
    return tuple(
        OperatorEntry(
            index=step.index,
            name=step.operator,
            label=step.label,
            source_operators=tuple(_source_ref(op) for op in step.source),
            kernel=step.kernel,
            # What ran it: the hand-written C kernel's function, or "tvm".
            implementation=lowered.backends[step.backend].implementation(
                lowered.artifact(step.kernel)
            ),
            backend=step.backend,
            target=step.target,
            scratch_bytes=step.scratch_bytes,
            macs=step.macs,
            workspace_bytes=sum(
                lowered.tensors[t].size_bytes
                for t in step.args
                if lowered.tensors[t].kind == "intermediate"
            )
            + step.scratch_bytes,
        )
        for step in lowered.steps
    )


def memory_info(lowered: Any, planned: Any, options: Any) -> MemoryInfo:
    """Pools, every buffer with its pool, what it holds, its targets and the steps that
    touch it, the copy steps and the run order with them."""
    plan, buffers = planned.plan, planned.buffers
    buffers_by_name = {b.name: b for b in buffers}
    # What each buffer holds in the source model's words, for inspect and the picture.
    holds: dict[str, _Holds] = {}
    for tensor in lowered.tensors:
        producer = next((s for s in lowered.steps if tensor.id in s.outputs and s.source), None)
        holds[tensor_buffer_name(tensor)] = _Holds(
            tensor.source or tensor.name, _op_ref(producer.source[-1]) if producer else None
        )
    for step in lowered.steps:
        holds[scratch_buffer_name(step.index)] = _Holds(
            f"scratch of {step.label}", _op_ref(step.source[-1]) if step.source else None
        )
    for copy in plan.copies:
        if copy.src not in holds:  # a copy out to the caller's output from its staging
            holds[copy.src] = _Holds(holds[copy.dst].tensor, holds[copy.dst].operator, copy.dst)
            continue
        holds[copy.dst] = _Holds(holds[copy.src].tensor, holds[copy.src].operator, copy.src)
    labels = planned.step_names or ()
    nothing = _Holds(None, None)
    return MemoryInfo(
        planner=plan.algorithm,
        io_in_pool=options.io_in_pool,
        pools=tuple(
            PoolEntry(
                name=p.name,
                size_limit=p.size,
                targets=tuple(p.targets),
                used_bytes=plan.pool_sizes.get(p.name, 0),
            )
            for p in options.memory.pools
        )
        + tuple(
            # Operator state, kept between inferences (docs/memory_planning.md).
            PoolEntry(
                name=name,
                size_limit=None,
                targets=tuple(
                    sorted(
                        {
                            t
                            for p in plan.placements
                            if p.pool == name
                            for t in buffers_by_name[p.buffer].targets
                        }
                    )
                ),
                used_bytes=plan.pool_sizes[name],
                kind="persistent",
            )
            for name in plan.persistent
        ),
        workspace_bytes=plan.workspace_size,
        persistent_bytes=plan.total_size - plan.workspace_size,
        states=tuple(
            StateEntry(
                name=state.name,
                shape=tuple(state.shape),
                dtype=state.dtype,
                size_bytes=state.size_bytes,
                initial="zeros" if state.initial is None else "constant",
                buffer=tensor_buffer_name(tensor),
            )
            for state, tensor in zip(lowered.imported.states, lowered.states, strict=True)
        ),
        lower_bound_bytes=plan.lower_bound,
        pool_lower_bounds=dict(plan.pool_lower_bounds),
        activation_lower_bound_bytes=lowered.activation_lower_bound,
        allow_copies=options.allow_copies,
        constants_targets=_listed(options.memory.constants_targets),
        io_targets=_listed(options.memory.io_targets),
        buffers=tuple(
            _buffer(placement, holds.get(placement.buffer, nothing), buffers_by_name, labels)
            for placement in plan.placements
        ),
        # With copies, buffer lifetimes count positions in this run order (steps and
        # copies); without, the schedule is the operators in order.
        schedule=(
            tuple(
                ScheduleItem(step=item) if isinstance(item, int) else ScheduleItem(copy=item.name)
                for item in planned.schedule
            )
            if plan.copies
            else None
        ),
        copies=tuple(
            CopyEntry(name=c.name, src=c.src, dst=c.dst, size=c.size, before_step=c.before)
            for c in plan.copies
        ),
    )


@dataclass(frozen=True)
class _Holds:
    """What a buffer holds: the source tensor, its producer, the buffer it copies."""

    tensor: str | None
    operator: SourceOperatorRef | None
    copy_of: str | None = None


def _buffer(
    placement: Any, holds: _Holds, buffers_by_name: Mapping[str, Any], labels: Sequence[str]
) -> BufferEntry:
    buffer = buffers_by_name[placement.buffer]
    return BufferEntry(
        buffer=placement.buffer,
        pool=placement.pool,
        offset=placement.offset,
        tensor=holds.tensor,
        source_operator=holds.operator,
        copy_of=holds.copy_of,
        size=buffer.size,
        start=buffer.start,
        end=buffer.end,
        # Who touches it: its targets and every (step, target) with the step's label.
        targets=tuple(buffer.targets),
        touched_by=tuple(
            TouchedBy(step=s, target=t, label=labels[s] if s < len(labels) else None)
            for s, t in buffer.users
        ),
    )


def _source_ref(op: Any) -> SourceOperatorRef:
    return SourceOperatorRef(index=op.index, type=op.type, output=op.output)


def _op_ref(op: Any) -> SourceOperatorRef:
    return SourceOperatorRef(index=op.index, type=op.type)


def _io(spec: Any, tensor: Any) -> IOTensor:
    q = spec.quantization
    return IOTensor(
        name=spec.name,
        shape=tuple(spec.shape),
        dtype=spec.dtype,
        size_bytes=spec.size_bytes,
        quantization=(
            None
            if q is None
            else Quantization(scale=tuple(q.scale), zero_point=tuple(q.zero_point), axis=q.axis)
        ),
        c_name=tensor.name,
    )


def _listed(targets: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if targets is None else tuple(targets)
