"""The lowering stage: Relax IRModule -> TIR kernels + an execution graph.

Stock Relax passes legalize and fuse the graph; the s_tir pipeline lowers each fused
PrimFunc without MakePackedAPI (no TVM calling convention, no runtime); the C emitter
prints each kernel. The Relax ``main`` becomes a flat list of steps over tensors, which
the memory planner and the executor emitter consume. No Relax VM is involved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from aot.codegen.c_kernel import EmittedKernel, emit_kernel
from aot.errors import InternalError, UnsupportedError
from aot.frontend.model import ImportedModel, SourceOperator, TensorSpec
from aot.lowering.analysis import is_identity_copy
from aot.lowering.macs import kernel_macs
from aot.lowering.schedule import fuse_for_memory

INPUT, OUTPUT, CONSTANT, INTERMEDIATE = "input", "output", "constant", "intermediate"
OPAQUE_PATTERN = 8  # relax OpPatternKind.kOpaque


@dataclass(frozen=True)
class Tensor:
    id: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    kind: str  # INPUT, OUTPUT, CONSTANT or INTERMEDIATE
    io_index: int | None = None  # position among the model inputs or outputs
    data: np.ndarray | None = field(default=None, compare=False, repr=False)
    source: str | None = None  # the source model's name for it, when known (for reports)

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
    kernels: tuple[EmittedKernel, ...]
    # Peak of live intermediate bytes in the frontend's operator order (the bound that
    # docs/memory_planning.md defines); the plan is compared against it.
    activation_lower_bound: int = 0
    # Tensor id -> tensor id whose memory it reuses (elementwise kernels run in place).
    shared: dict[int, int] = field(default_factory=dict, compare=False)

    def memory_root(self, tensor_id: int) -> int:
        """The tensor whose buffer ``tensor_id`` lives in."""
        while tensor_id in self.shared:
            tensor_id = self.shared[tensor_id]
        return tensor_id

    def tensors_of(self, kind: str) -> list[Tensor]:
        return [t for t in self.tensors if t.kind == kind]

    @property
    def inputs(self) -> list[Tensor]:
        return sorted(self.tensors_of(INPUT), key=lambda t: t.io_index or 0)

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


# Fully unroll innermost loop nests of up to this many iterations (3x3 kernel taps, RGB
# channels): on a Cortex-M the loop overhead there costs more than the multiply-adds.
TIR_CONFIG = {"tirx.UnrollLoop": {"auto_max_step": 16, "explicit_unroll": True}}


def tir_passes() -> list[object]:
    """The s_tir lowering pipeline up to, not including, the packed-API passes."""
    from tvm import s_tir, tirx

    return [
        s_tir.transform.CanonicalizeLoop(),
        s_tir.transform.LowerInitBlock(),
        s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
        s_tir.transform.ConvertBlocksToOpaque(),
        s_tir.transform.CompactBufferAllocation(),
        s_tir.transform.LowerMatchBuffer(),
        s_tir.transform.StmtSimplify(),
        s_tir.transform.LowerOpaqueBlock(),
        tirx.transform.FlattenBuffer(),
        tirx.transform.NarrowDataType(32),
        s_tir.transform.LoopPartition(),
        tirx.transform.VectorizeLoop(False),
        tirx.transform.StorageRewrite(),
        tirx.transform.UnrollLoop(),
        tirx.transform.StmtSimplify(),
        tirx.transform.RemoveNoOp(),
        s_tir.transform.RewriteUnsafeSelect(),
        tirx.transform.CommonSubexprElim(),
    ]


def c_identifier(text: str) -> str:
    name = re.sub(r"\W+", "_", text).strip("_") or "t"
    return name if not name[0].isdigit() else "t_" + name


class _GraphBuilder:
    def __init__(self, imported: ImportedModel) -> None:
        self.imported = imported
        self.tensors: list[Tensor] = []
        # (prim func, args, outputs, name of the Relax variable bound to the call)
        self.steps: list[tuple[str, list[int], list[int], str]] = []
        self.values: dict[int, list[int]] = {}  # relax var handle -> tensor ids
        self.constants: dict[int, int] = {}  # relax constant handle -> tensor id

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

        for index, (param, spec) in enumerate(zip(main.params, self.imported.inputs, strict=False)):
            tensor_id = self.add_tensor(c_identifier(spec.name), param.ty, INPUT, io_index=index)
            self.values[param.__chandle__()] = [tensor_id]
        if len(main.params) != len(self.imported.inputs):
            raise UnsupportedError(
                f"the imported model has {len(main.params)} inputs but the file declares "
                f"{len(self.imported.inputs)}"
            )
        body = main.body
        for block in body.blocks:
            for binding in block.bindings:
                value = binding.value
                key = binding.var.__chandle__()
                if isinstance(value, ir.Call) and _op_name(value.op) == "relax.call_tir":
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
                    self.steps.append((prim_func, args + outs, outs, binding.var.name))
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
        self._mark_outputs(result_ids)

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


def _source_of(
    imported: ImportedModel, value: str, out_tensor: Tensor
) -> tuple[SourceOperator, ...]:
    """The source operator a call computes: the one whose result is the Relax variable
    ``value``; for a model output (whose variable Relax renames), the one writing it."""
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


def lower(imported: ImportedModel, name: str, progress: object = None) -> LoweredModel:
    """Lower an imported model to C kernels and an execution graph."""
    import tvm
    from tvm import tirx

    module = imported.relax_module
    with tvm.transform.PassContext(opt_level=3):
        module = tvm.transform.Sequential(relax_passes())(module)
    builder = _GraphBuilder(imported)
    builder.build(module["main"])

    used = sorted({prim for prim, _, _, _ in builder.steps})
    target = tvm.target.Target({"kind": "c"})
    kernels: dict[str, EmittedKernel] = {}
    copies: set[str] = set()
    # Relax op patterns: 0 elementwise, 1 broadcast; both may run in place on the input
    # that has the output's shape.
    elementwise = {p for p in used if int(module[p].attrs.get("op_pattern", OPAQUE_PATTERN)) <= 1}
    macs: dict[str, int] = {}
    for prim_name in used:
        if progress is not None:
            progress(f"lowering {prim_name}")
        macs[prim_name] = kernel_macs(module[prim_name])
        func = fuse_for_memory(module[prim_name])
        tir_module = tvm.IRModule({prim_name: func.with_attr("global_symbol", prim_name)})
        tir_module = tirx.transform.BindTarget(target)(tir_module)
        with tvm.transform.PassContext(opt_level=3, config=TIR_CONFIG):
            tir_module = tvm.transform.Sequential(tir_passes())(tir_module)
        symbol = f"aot_{name}_{c_identifier(prim_name)}"
        kernels[prim_name] = emit_kernel(
            symbol, tir_module[prim_name], restrict=prim_name not in elementwise
        )
        if is_identity_copy(tir_module[prim_name]):
            copies.add(prim_name)

    # A copy into an intermediate tensor becomes an alias of its source: no call, no buffer.
    alias: dict[int, int] = {}
    steps: list[Step] = []
    for prim_name, raw_args, raw_outs, value in builder.steps:
        args = [alias.get(t, t) for t in raw_args]
        outs = [alias.get(t, t) for t in raw_outs]
        out_tensor = builder.tensors[outs[0]]
        source = _source_of(imported, value, out_tensor)
        for t in outs:
            if source and builder.tensors[t].source is None:
                builder.tensors[t] = replace(builder.tensors[t], source=source[-1].output)
        if prim_name in copies and out_tensor.kind == INTERMEDIATE:
            alias[outs[0]] = args[0]
            continue
        index = len(steps)
        kernel = kernels[prim_name]
        if len(kernel.params) != len(args):
            raise InternalError(
                f"kernel {kernel.name} takes {len(kernel.params)} buffers, the graph passes "
                f"{len(args)}"
            )
        steps.append(
            Step(
                index,
                kernel.name,
                prim_name,
                tuple(args),
                tuple(outs),
                kernel.scratch_bytes,
                prim_name in elementwise,
                source,
                macs[prim_name],
            )
        )
    tensors = tuple(builder.tensors)
    given_bound = activation_bound(tensors, steps)
    steps = reorder_for_memory(tensors, steps)
    shared = inplace_outputs(tensors, steps)
    called = {step.operator for step in steps}
    return LoweredModel(
        name=name,
        imported=imported,
        tensors=tensors,
        steps=tuple(steps),
        kernels=tuple(kernels[p] for p in used if p in called),
        activation_lower_bound=given_bound,
        shared=shared,
    )


def _step_graph(tensors: tuple[Tensor, ...], steps: list[Step], with_scratch: bool) -> Any:
    """The abstract graph the order search works on: workspace tensors by name and size.

    Inputs and constants are not written by any step, so they take no workspace; outputs
    live in user buffers (size 0); a kernel's scratch is a tensor only its step touches.
    """
    from aot.planning.order import Step as OrderStep
    from aot.planning.order import StepGraph

    sizes: dict[str, int] = {}
    order_steps = []
    for step in steps:
        reads = tuple(f"t{t}" for t in step.args if t not in step.outputs)
        writes = tuple(f"t{t}" for t in step.outputs)
        if with_scratch and step.scratch_bytes:
            writes += (f"scratch{step.index}",)
            reads += (f"scratch{step.index}",)
            sizes[f"scratch{step.index}"] = step.scratch_bytes
        order_steps.append(OrderStep(f"s{step.index}", reads, writes, step.elementwise))
    for tensor in tensors:
        sizes[f"t{tensor.id}"] = tensor.size_bytes if tensor.kind == INTERMEDIATE else 0
    outputs = tuple(f"t{t.id}" for t in tensors if t.kind == OUTPUT)
    return StepGraph(tuple(order_steps), sizes, (), outputs)


def activation_bound(tensors: tuple[Tensor, ...], steps: list[Step]) -> int:
    """The activation lower bound of docs/memory_planning.md: peak of live intermediate
    bytes in this order, reshapes aliased, kernel scratch not counted."""
    from aot.planning.order import peak_for_order

    return peak_for_order(_step_graph(tensors, steps, with_scratch=False)) if steps else 0


def reorder_for_memory(tensors: tuple[Tensor, ...], steps: list[Step]) -> list[Step]:
    """Steps in the topological order with the lowest peak workspace (scratch included)."""
    from aot.planning.order import best_order

    if len(steps) < 3:
        return steps
    order = best_order(_step_graph(tensors, steps, with_scratch=True))
    by_name = {f"s{step.index}": step for step in steps}
    return [replace(s, index=index) for index, s in enumerate(by_name[name] for name in order)]


def inplace_outputs(tensors: tuple[Tensor, ...], steps: list[Step]) -> dict[int, int]:
    """Outputs of elementwise steps that may overwrite an input nobody reads afterwards."""
    from aot.planning.inplace import inplace_candidates

    pairs = inplace_candidates(_step_graph(tensors, steps, with_scratch=False))
    return {int(out[1:]): int(src[1:]) for out, src in pairs}
