"""The lowering stage: partitioned Relax IRModule -> per-step artifacts + a step graph.

Stock Relax passes legalize and fuse what the CPU keeps; the s_tir pipeline lowers each
fused PrimFunc without MakePackedAPI (no TVM calling convention, no runtime); each
accelerator region goes to its backend's ``lower`` hook. The Relax ``main`` becomes a flat
list of steps over tensors, each naming its backend and target; the planner orders them
and places their buffers, and emit asks each step's backend for its C. No C text here,
and no Relax VM.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from aot.backends.base import (
    CPU_TARGET,
    Artifact,
    Backend,
    BackendConstant,
    LowerContext,
    Region,
)
from aot.errors import AotError, InternalError, UnsupportedError
from aot.frontend.model import ImportedModel, SourceOperator, TensorSpec
from aot.lowering.macs import kernel_macs
from aot.naming import c_identifier, kernel_symbol
from aot.partition import (
    PartitionedModel,
    region_operators,
    source_index,
    tensor_info,
)

INPUT, OUTPUT, CONSTANT, INTERMEDIATE = "input", "output", "constant", "intermediate"
# Operator state kept between inferences, in the persistent pool (ImportedModel.states).
STATE = "state"
# A constant only a backend's region had as a parameter and said it does not read.
UNUSED = "unused"
OPAQUE_PATTERN = 8  # relax OpPatternKind.kOpaque


@dataclass(frozen=True)
class Tensor:
    id: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    kind: str  # INPUT, OUTPUT, CONSTANT or INTERMEDIATE
    io_index: int | None = None  # position among the model inputs, outputs or states
    data: np.ndarray | None = field(default=None, compare=False, repr=False)
    source: str | None = None  # the source model's name for it, when known (for reports)
    alignment: int = 0  # bytes a backend needs for it (a constant it reads); 0: the default

    @property
    def size_bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class Step:
    index: int
    kernel: str  # C symbol of the kernel
    operator: str  # fused Relax function name, for reports
    args: tuple[int, ...]  # tensor ids, in kernel parameter order
    outputs: tuple[int, ...]  # the subset of args the kernel writes
    scratch_bytes: int
    elementwise: bool = False  # output element i depends only on input element i
    # The source model's operators this kernel computes (empty when the importer cannot
    # tell, e.g. after the stock frontends' fusion); what reports show instead of `operator`.
    source: tuple[SourceOperator, ...] = ()
    macs: int = 0  # multiply-accumulates per run, from the kernel's shapes (lowering/macs.py)
    # Which backend emits the step and the target (compute unit) it runs on; a pool's
    # ``targets`` must include it for every buffer the step reads or writes.
    backend: str = "cpu"
    target: str = "cpu"
    # Per argument, the target that touches it when that is not ``target`` everywhere:
    # an accelerator's CPU-side code touches some operands itself (Artifact.cpu_operands).
    # Empty: ``target`` touches every argument. ``scratch_targets`` likewise (empty:
    # ``target``).
    arg_targets: tuple[str, ...] = ()
    scratch_targets: tuple[str, ...] = ()

    def targets_of(self, tensor_id: int) -> tuple[str, ...]:
        """The targets that touch argument ``tensor_id`` in this step."""
        if not self.arg_targets:
            return (self.target,)
        found = {t for a, t in zip(self.args, self.arg_targets, strict=True) if a == tensor_id}
        return tuple(sorted(found))

    @property
    def arg_targets_by_id(self) -> dict[int, tuple[str, ...]]:
        """Each argument tensor id -> the targets that touch it in this step
        (``targets_of`` for every argument), for a stage that reads them all."""
        return {t: self.targets_of(t) for t in dict.fromkeys(self.args)}

    @property
    def reads(self) -> tuple[int, ...]:
        """Tensor ids the step only reads (inputs, activations, constants)."""
        return tuple(t for t in self.args if t not in self.outputs)

    @property
    def writes(self) -> tuple[int, ...]:
        """Tensor ids the step writes."""
        return self.outputs

    @property
    def label(self) -> str:
        """A name people recognise: the source operators, else the fused function."""
        return " + ".join(op.label for op in self.source) or self.operator


@dataclass(frozen=True)
class LoweredModel:
    name: str
    imported: ImportedModel
    tensors: tuple[Tensor, ...]
    steps: tuple[Step, ...]
    # What each step's backend lowered, keyed by ``Step.kernel``, in emission order.
    artifacts: tuple[Artifact, ...] = ()
    # The backends that emit the steps, by name ("cpu" always among them).
    backends: dict[str, Backend] = field(default_factory=dict, compare=False)
    # Set by the planning stage (aot.planning.schedule.schedule): the peak of live
    # intermediate bytes in the frontend's operator order (the bound docs/memory_planning.md
    # defines), and tensor id -> tensor id whose memory it reuses (in-place steps).
    activation_lower_bound: int = 0
    shared: dict[int, int] = field(default_factory=dict, compare=False)
    # Where a shared tensor starts relative to the one it shares (bytes; absent: 0): an
    # in-place depthwise writes its output rows below the input rows it still reads
    # (aot.planning.in_place_rows), so its output starts before its input.
    shared_offsets: dict[int, int] = field(default_factory=dict, compare=False)
    # (next-state tensor, state tensor) per state: run() copies the next value into the
    # persistent pool after the last step.
    state_updates: tuple[tuple[int, int], ...] = ()

    def artifact(self, symbol: str) -> Artifact:
        for artifact in self.artifacts:
            if artifact.symbol == symbol:
                return artifact
        raise InternalError(f"no artifact {symbol}")

    def memory_root(self, tensor_id: int) -> int:
        """The tensor whose buffer ``tensor_id`` lives in."""
        while tensor_id in self.shared:
            tensor_id = self.shared[tensor_id]
        return tensor_id

    def tensors_of(self, kind: str) -> list[Tensor]:
        return [t for t in self.tensors if t.kind == kind]

    @property
    def memory_roots(self) -> dict[int, int]:
        """Each tensor id -> the tensor whose buffer it lives in (``memory_root``)."""
        return {t.id: self.memory_root(t.id) for t in self.tensors}

    @property
    def buffer_offsets(self) -> dict[int, int]:
        """Each tensor id -> where it starts in its root's buffer (0 unless an in-place
        step placed it elsewhere, ``shared_offsets``); the lowest member starts at 0."""
        relative = {}
        for tensor in self.tensors:
            offset, tensor_id = 0, tensor.id
            while tensor_id in self.shared:
                offset += self.shared_offsets.get(tensor_id, 0)
                tensor_id = self.shared[tensor_id]
            relative[tensor.id] = offset
        lowest: dict[int, int] = {}
        roots = self.memory_roots
        for tensor_id, offset in relative.items():
            lowest[roots[tensor_id]] = min(lowest.get(roots[tensor_id], 0), offset)
        return {t: offset - lowest[roots[t]] for t, offset in relative.items()}

    @property
    def buffer_sizes(self) -> dict[int, int]:
        """Each root tensor id -> the bytes its buffer spans: every member from its
        offset (``buffer_offsets``) to its end."""
        offsets = self.buffer_offsets
        sizes: dict[int, int] = {}
        for tensor in self.tensors:
            root = self.memory_root(tensor.id)
            sizes[root] = max(sizes.get(root, 0), offsets[tensor.id] + tensor.size_bytes)
        return sizes

    @property
    def constants(self) -> list[Tensor]:
        return self.tensors_of(CONSTANT)

    @property
    def inputs(self) -> list[Tensor]:
        return sorted(self.tensors_of(INPUT), key=lambda t: t.io_index or 0)

    @property
    def states(self) -> list[Tensor]:
        return sorted(self.tensors_of(STATE), key=lambda t: t.io_index or 0)

    @property
    def outputs(self) -> list[Tensor]:
        return sorted(self.tensors_of(OUTPUT), key=lambda t: t.io_index or 0)


def relax_passes() -> list[object]:
    from tvm import relax

    return [
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
        relax.transform.DeadCodeElimination(),
    ]


class _GraphBuilder:
    def __init__(self, imported: ImportedModel, regions: dict[str, str] | None = None) -> None:
        self.imported = imported
        self.regions = regions or {}  # region function name -> backend name
        self.tensors: list[Tensor] = []
        # (prim func or region, args, outputs, name of the Relax variable bound to the call,
        # source operator index from the call's span or None)
        self.steps: list[tuple[str, list[int], list[int], str, int | None]] = []
        self.values: dict[int, list[int]] = {}  # relax var handle -> tensor ids
        self.constants: dict[int, int] = {}  # relax constant handle -> tensor id
        self.state_updates: list[tuple[int, int]] = []

    def add_tensor(self, name: str, tensor_type: object, kind: str, **extra: object) -> int:
        shape = tuple(int(d) for d in tensor_type.shape.values)
        dtype = str(tensor_type.dtype)
        tensor = Tensor(len(self.tensors), name, shape, dtype, kind, **extra)  # type: ignore[arg-type]
        self.tensors.append(tensor)
        return tensor.id

    def tensor_ids(self, expr: object) -> list[int]:
        from tvm import ir

        if isinstance(expr, ir.GenericConst):
            # One array per constant object, however many operators read it.
            key = expr.__chandle__()
            if key not in self.constants:
                data = expr.value.numpy()
                self.constants[key] = self.add_tensor(
                    f"const_{len(self.tensors)}", expr.ty, CONSTANT, data=data
                )
            return [self.constants[key]]
        if isinstance(expr, ir.Var):
            key = expr.__chandle__()
            if key not in self.values:
                raise InternalError(f"relax variable {expr.name_hint} used before definition")
            return self.values[key]
        if isinstance(expr, ir.Tuple):
            ids: list[int] = []
            for field_expr in expr.fields:
                ids.extend(self.tensor_ids(field_expr))
            return ids
        raise UnsupportedError(f"unexpected Relax argument {type(expr).__name__}")

    def build(self, main: object) -> None:
        from tvm import ir, relax

        states = self.imported.states
        for index, (param, spec) in enumerate(zip(main.params, self.imported.inputs, strict=False)):
            tensor_id = self.add_tensor(c_identifier(spec.name), param.ty, INPUT, io_index=index)
            self.values[param.__chandle__()] = [tensor_id]
        state_params = list(main.params)[len(self.imported.inputs) :]
        for index, (param, state) in enumerate(zip(state_params, states, strict=False)):
            tensor_id = self.add_tensor(
                f"state_{c_identifier(state.name)}", param.ty, STATE, io_index=index,
                data=state.initial, source=state.name,
            )  # fmt: skip
            self.values[param.__chandle__()] = [tensor_id]
        if len(main.params) != len(self.imported.inputs) + len(states):
            raise UnsupportedError(
                f"the imported model has {len(main.params)} inputs but the file declares "
                f"{len(self.imported.inputs)} (and {len(states)} states)"
            )
        body = main.body
        for block in body.blocks:
            for binding in block.bindings:
                value = binding.value
                key = binding.var.__chandle__()
                region = _region_name(value, self.regions)
                if region is not None or (
                    isinstance(value, ir.Call) and _op_name(value.op) == "relax.call_tir"
                ):
                    if region is not None:
                        prim_func = region
                        args = [i for a in value.args for i in self.tensor_ids(a)]
                    else:
                        prim_func = value.args[0].name_hint
                        args = self.tensor_ids(value.args[1])
                    var_type = binding.var.ty
                    out_infos = (
                        list(var_type.fields)
                        if isinstance(var_type, relax.TupleType)
                        else [var_type]
                    )
                    outs = [
                        self.add_tensor(f"t{len(self.tensors)}", info, INTERMEDIATE)
                        for info in out_infos
                    ]
                    index = source_index(value)
                    self.steps.append((prim_func, args + outs, outs, binding.var.name, index))
                    self.values[key] = outs
                elif isinstance(value, ir.TupleGetItem):
                    ids = self.tensor_ids(value.tuple_value)
                    self.values[key] = [ids[value.index]]
                elif isinstance(value, ir.Tuple | ir.Var | ir.GenericConst):
                    self.values[key] = self.tensor_ids(value)
                else:
                    op = _op_name(getattr(value, "op", None)) or type(value).__name__
                    raise UnsupportedError(
                        f"Relax operation {op} survived legalization; aot cannot lower it to C"
                    )
        result_ids = self.tensor_ids(body.body)
        count = len(result_ids) - len(states)
        state_ids = [t.id for t in self.tensors if t.kind == STATE]
        for next_id, state_id in zip(result_ids[count:], state_ids, strict=True):
            if self.tensors[next_id].kind != INTERMEDIATE:
                raise UnsupportedError(
                    f"state '{self.tensors[state_id].source}' is not computed by an operator"
                )
            self.state_updates.append((next_id, state_id))
        self._mark_outputs(result_ids[:count])

    def _mark_outputs(self, result_ids: list[int]) -> None:
        specs: tuple[TensorSpec, ...] = self.imported.outputs
        if len(result_ids) != len(specs):
            raise UnsupportedError(
                f"the imported model returns {len(result_ids)} tensors but the file declares "
                f"{len(specs)} outputs"
            )
        for index, (tensor_id, spec) in enumerate(zip(result_ids, specs, strict=True)):
            tensor = self.tensors[tensor_id]
            if tensor.kind != INTERMEDIATE or result_ids.count(tensor_id) > 1:
                raise UnsupportedError(
                    f"output '{spec.name}' is a model input, a constant or another output; "
                    "aot needs every output computed by an operator"
                )
            self.tensors[tensor_id] = Tensor(
                tensor.id,
                c_identifier(spec.name),
                tensor.shape,
                tensor.dtype,
                OUTPUT,
                io_index=index,
            )

    def name_after(self, ids: list[int], source: tuple[SourceOperator, ...]) -> None:
        """Tensors ``ids`` without a source name take the tensor the last of ``source``
        writes (what reports call them)."""
        for t in ids:
            if source and self.tensors[t].source is None:
                self.tensors[t] = replace(self.tensors[t], source=source[-1].output)

    def add_backend_constant(self, backend: Backend, constant: BackendConstant) -> int:
        """A backend's constant (a command stream, packed weights) as a constant tensor."""
        data = np.ascontiguousarray(constant.data).reshape(-1)
        tensor = Tensor(
            len(self.tensors), c_identifier(constant.name), data.shape, str(data.dtype),
            CONSTANT, data=data, source=f"{backend.name} {constant.name}",
            alignment=max(constant.alignment, backend.alignment),
        )  # fmt: skip
        self.tensors.append(tensor)
        return tensor.id

    def name_next_states(self, alias: dict[int, int]) -> None:
        """Reports name a next state after its state, not after the operator's output."""
        for next_id, state_id in self.state_updates:
            next_id = alias.get(next_id, next_id)
            state = self.tensors[state_id].source
            self.tensors[next_id] = replace(self.tensors[next_id], source=f"{state} (next)")

    def mark_unused(self, ids: set[int]) -> None:
        """Constants among ``ids`` (no step reads them any more) are not emitted."""
        for tensor_id in sorted(ids):
            if self.tensors[tensor_id].kind == CONSTANT:
                self.tensors[tensor_id] = replace(self.tensors[tensor_id], kind=UNUSED)


def _grouped_sources(module: object) -> dict[str, tuple[int, ...]]:
    """The source operator indices inside each function FuseOps grouped, by its name
    (which FuseTIR gives the PrimFunc it makes of it): the calls inside keep the
    importer's spans, the new call to the group has none, and after partitioning the
    Relax variable names no longer match the importer's (pretrainedResnet_quant's first
    ADD, after the example NPU's region, has the name its CONV_2D #2 had)."""
    from tvm import relax

    found: dict[str, tuple[int, ...]] = {}
    for var, func in module.functions.items():
        if not isinstance(func, relax.Function) or func.attrs is None:
            continue
        if "Primitive" not in func.attrs:
            continue
        indices: list[int] = []

        def visit(expr: object, indices: list[int] = indices) -> None:
            if isinstance(expr, relax.Call):
                index = source_index(expr)
                if index is not None and index not in indices:
                    indices.append(index)

        relax.analysis.post_order_visit(func.body, visit)
        found[var.name_hint] = tuple(sorted(indices))
    return found


def _source_of(
    imported: ImportedModel,
    value: str,
    out_tensor: Tensor,
    index: int | None = None,
    grouped: tuple[int, ...] = (),
) -> tuple[SourceOperator, ...]:
    """The source operators a call computes: the one the importer's span names, else
    those whose calls FuseOps grouped into it (``grouped``), else the one whose result is
    the Relax variable ``value``; for a model output (whose variable Relax renames), the
    one writing it."""
    for wanted in ((index,) if index is not None else (), grouped):
        found = tuple(op for op in imported.sources if op.index in wanted)
        if found:
            return found
    for op in imported.sources:
        if value in op.values:
            return (op,)
    if out_tensor.kind == OUTPUT and out_tensor.io_index is not None:
        name = imported.outputs[out_tensor.io_index].name
        return tuple(op for op in imported.sources if op.output and op.output == name)[-1:]
    return ()


def _op_name(op: object) -> str | None:
    name = getattr(op, "name", None)
    return str(name) if name is not None else None


def _region_name(value: object, regions: dict[str, str]) -> str | None:
    """The region a binding calls (a function a backend took), else None."""
    from tvm import ir

    is_call = isinstance(value, ir.Call) and isinstance(value.op, ir.GlobalVar)
    if is_call and value.op.name_hint in regions:
        return str(value.op.name_hint)
    return None


def legalized(module: object) -> tuple[object, dict[str, tuple[int, ...]]]:
    """``module`` after the stock Relax passes (:func:`relax_passes`: legalize, fuse, fuse
    TIR), and the source operators inside each function FuseOps grouped, by the name of
    the PrimFunc FuseTIR makes of it (:func:`_grouped_sources`)."""
    import tvm

    passes = relax_passes()
    fused = next(i for i, p in enumerate(passes) if p.info.name == "FuseOps") + 1
    with tvm.transform.PassContext(opt_level=3):
        module = tvm.transform.Sequential(passes[:fused])(module)
        grouped = _grouped_sources(module)
        module = tvm.transform.Sequential(passes[fused:])(module)
    return module, grouped


def lower(
    model: PartitionedModel | ImportedModel,
    name: str,
    progress: object = None,
    cpu: Backend | None = None,
) -> LoweredModel:
    """Lower a partitioned model to per-step artifacts and a step graph, in the frontend's
    order (``aot.planning.schedule.schedule`` orders it for memory). An ``ImportedModel``
    is lowered as the partition stage leaves it without accelerators: no regions,
    everything on the CPU.

    The stock Relax passes legalize and fuse what the CPU keeps (:func:`legalized`), the
    walk over ``main`` makes the tensors and the calls (:class:`_GraphBuilder`), and each
    call becomes a step of its backend (:func:`_lower_steps`)."""
    from aot.backends.cpu import CpuBackend

    # Without accelerators the partition stage leaves the module as imported: no regions.
    partitioned = (
        model
        if isinstance(model, PartitionedModel)
        else PartitionedModel(model, model.relax_module)
    )
    cpu = cpu or CpuBackend()
    backends: dict[str, Backend] = {CPU_TARGET: cpu}
    backends.update({b.name: b for b in partitioned.backends})
    module, grouped = legalized(partitioned.module)
    graph = _GraphBuilder(partitioned.imported, partitioned.regions)
    graph.build(module["main"])
    lowered = _lower_steps(partitioned, module, grouped, graph, backends, name, progress)
    return LoweredModel(
        name=name,
        imported=partitioned.imported,
        tensors=tuple(graph.tensors),
        steps=lowered.steps,
        artifacts=lowered.artifacts,
        backends=backends,
        state_updates=lowered.state_updates,
    )


@dataclass(frozen=True)
class _LoweredSteps:
    steps: tuple[Step, ...]
    artifacts: tuple[Artifact, ...]  # one per kernel, in emission order
    state_updates: tuple[tuple[int, int], ...]  # (next-state tensor, state tensor)


def _lower_steps(
    partitioned: PartitionedModel,
    module: object,
    grouped: dict[str, tuple[int, ...]],
    graph: _GraphBuilder,
    backends: dict[str, Backend],
    name: str,
    progress: object = None,
) -> _LoweredSteps:
    """Each call of ``main``, in the frontend's order, as a step of its backend: a region
    through the backend's ``lower`` (:func:`_region_step`), a CPU PrimFunc through
    ``lower_primfunc`` at its first call (the calls that share it share its artifact). A
    CPU copy into an intermediate tensor becomes an alias of its source, no call and no
    buffer, so the calls after it read the source."""
    imported, regions = partitioned.imported, partitioned.regions
    cpu = backends[CPU_TARGET]
    alias: dict[int, int] = {}
    steps: list[Step] = []
    dropped: set[int] = set()  # tensors a backend said it does not read
    artifacts: dict[str, Artifact] = {}  # by PrimFunc or region name
    per_step: dict[str, Artifact] = {}  # of a backend that names each call's artifact
    # Each backend's artifacts so far, in execution order: its LowerContext.earlier.
    lowered_by: dict[str, list[Artifact]] = {}
    copies: set[str] = set()  # CPU PrimFuncs that only copy their input
    macs: dict[str, int] = {}
    for prim_name, raw_args, raw_outs, value, index in graph.steps:
        args = [alias.get(t, t) for t in raw_args]
        outs = [alias.get(t, t) for t in raw_outs]
        if prim_name in regions:
            backend = backends[regions[prim_name]]
            earlier = lowered_by.setdefault(backend.name, [])
            ctx = LowerContext(partitioned.contexts.get(backend.name), tuple(earlier))
            symbol = kernel_symbol(name, prim_name)
            if progress is not None:
                progress(f"lowering {prim_name} on {backend.name}")
            step, artifact = _region_step(
                len(steps), backend, ctx, module, prim_name, symbol, graph, args, outs, dropped
            )
            earlier.append(artifact)
            artifacts[prim_name] = artifact
            if artifact.symbol != symbol:
                per_step[artifact.symbol] = artifact  # one per call: keep them all
            steps.append(step)
            continue
        source = _source_of(
            imported, value, graph.tensors[outs[0]], index, grouped.get(prim_name, ())
        )
        graph.name_after(outs, source)
        if prim_name not in artifacts:
            if progress is not None:
                progress(f"lowering {prim_name}")
            macs[prim_name] = kernel_macs(module[prim_name])  # type: ignore[index]
            symbol = kernel_symbol(name, prim_name)
            artifacts[prim_name] = cpu.lower_primfunc(module, prim_name, symbol)  # type: ignore[attr-defined]
            if cpu.is_identity_copy(artifacts[prim_name]):  # type: ignore[attr-defined]
                copies.add(prim_name)
        if prim_name in copies and graph.tensors[outs[0]].kind == INTERMEDIATE:
            alias[outs[0]] = args[0]
            continue
        artifact = artifacts[prim_name]
        if len(artifact.tir.params) != len(args):
            raise InternalError(
                f"kernel {artifact.symbol} takes {len(artifact.tir.params)} buffers, the graph "
                f"passes {len(args)}"
            )
        step = Step(
            len(steps), artifact.symbol, prim_name, tuple(args), tuple(outs),
            artifact.scratch_bytes, artifact.elementwise, source, macs[prim_name],
            backend=CPU_TARGET, target=cpu.target,
        )  # fmt: skip
        steps.append(step)
    graph.name_next_states(alias)
    read = {t for step in steps for t in step.args}
    graph.mark_unused(dropped - read)
    used = sorted({prim for prim, *_ in graph.steps})
    called = {step.operator for step in steps}
    return _LoweredSteps(
        tuple(steps),
        (
            *(artifacts[p] for p in used if p in called and artifacts[p].symbol not in per_step),
            *per_step.values(),
        ),
        tuple((alias.get(n, n), s) for n, s in graph.state_updates),
    )


def _region_step(
    index: int,
    backend: Backend,
    ctx: LowerContext,
    module: object,
    region_name: str,
    symbol: str,
    graph: _GraphBuilder,
    args: list[int],
    outs: list[int],
    dropped: set[int],
) -> tuple[Step, Artifact]:
    """Region ``region_name`` (called with tensors ``args``, writing ``outs``) lowered by
    its backend as step ``index``: its arguments without the parameters the backend does
    not read (added to ``dropped``), with the backend's constants, and the target that
    touches each."""
    function = module[region_name]  # type: ignore[index]
    operators = tuple(region_operators(module, function, graph.imported.sources))
    source = tuple(op.source for op in operators if op.source is not None)
    graph.name_after(outs, source)
    params = []
    for tensor_id, param in zip(args, function.params, strict=False):
        tensor = graph.tensors[tensor_id]
        info = tensor_info(param)
        params.append(replace(info, data=tensor.data) if tensor.kind == CONSTANT else info)
    outputs = tuple(tensor_info_of(graph.tensors[t]) for t in outs)
    region = Region(symbol, backend.name, operators, tuple(params), outputs, function, module)
    artifact = _lower_region(backend, region, ctx)
    # Region numbering (params, then outputs) -> who touches each argument.
    cpu_side = set(artifact.cpu_operands)
    targets = [CPU_TARGET if i in cpu_side else backend.target for i in range(len(args))]
    if artifact.unused_params:
        unused = set(artifact.unused_params)
        dropped.update(a for i, a in enumerate(args) if i in unused)
        args = [a for i, a in enumerate(args) if i not in unused]
        targets = [t for i, t in enumerate(targets) if i not in unused]
    for constant in artifact.constants:
        args.append(graph.add_backend_constant(backend, constant))
        targets.append(backend.target)
    step = Step(
        index, artifact.symbol, region_name, tuple(args), tuple(outs), artifact.scratch_bytes,
        artifact.elementwise, source, sum(kernel_macs(op.function) for op in operators),
        backend=backend.name, target=backend.target,
        arg_targets=tuple(targets) if cpu_side else (),
        scratch_targets=(CPU_TARGET, backend.target) if artifact.cpu_scratch else (),
    )  # fmt: skip
    return step, artifact


def _lower_region(backend: Backend, region: Region, ctx: LowerContext) -> Artifact:
    """Ask a backend to lower one of its regions; its failures become one-line errors."""
    try:
        artifact = backend.lower(region, ctx)
    except AotError:
        raise
    except Exception as exc:
        kinds = ", ".join(op.kind for op in region.operators)
        raise UnsupportedError(
            f"backend {backend.name} failed to lower {kinds} ({type(exc).__name__}); "
            f"fix its patterns() so it claims only what it can lower, or build without "
            f"--accelerator {backend.name}"
        ) from exc
    if not isinstance(artifact, Artifact):
        raise UnsupportedError(
            f"backend {backend.name}: lower() returned {type(artifact).__name__}; expected "
            "aot.backends.Artifact"
        )
    return replace(artifact, symbol=artifact.symbol or region.symbol)


def tensor_info_of(tensor: Tensor) -> object:
    from aot.backends.base import TensorInfo

    return TensorInfo(tensor.shape, tensor.dtype, tensor.data)
