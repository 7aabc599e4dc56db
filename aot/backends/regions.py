"""Helpers of the Backend API for a backend that runs a region operator by operator.

Most accelerators' lowering has the same first half: find which operators' results the
region returns, and give every tensor made and used only inside the region a slice of
the step's scratch for its lifetime (the planner then places the scratch as one buffer).
:func:`layout` does both, so a backend's ``lower`` only turns operators into its own
commands::

    placed = layout(region, alignment=self.alignment)
    for op, where in zip(region.operators, placed.operands):
        ...  # where["data"], where["weight"], ..., where["output"]: an OperandRef
    return Artifact(region.symbol, payload=..., scratch_bytes=placed.scratch_bytes)

And most emit the same shape of C: one function per step that takes the region's
parameters (``p0``, ``p1``, ...), its outputs (``o0``, ...) and the scratch, and returns
an aot error code, which ``run()`` calls and checks. :func:`step_function` writes that
frame around the backend's own statements.

Like ``base.py`` this imports no stage (TVM lazily, to read the region function).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aot.backends.base import EmitContext, EmittedCode, OperatorInfo, Region
from aot.errors import InternalError
from aot.operators import OperatorParams, operator_params

PARAM, OUTPUT, SCRATCH = "param", "output", "scratch"


@dataclass(frozen=True)
class OperandRef:
    """Where one operand of a region's operator lives while the step runs: the region's
    ``index``-th parameter (``kind`` "param"), its ``index``-th output ("output"), or
    ``index`` bytes into the step's scratch ("scratch")."""

    kind: str
    index: int


@dataclass(frozen=True)
class RegionLayout:
    """Per operator (in the region's order), its operand name (the importer's
    ``OperatorParams.operands``, plus ``"output"``) -> :class:`OperandRef`; and the scratch
    the region-internal tensors need (``Artifact.scratch_bytes``)."""

    operands: tuple[Mapping[str, OperandRef], ...]
    scratch_bytes: int


def region_outputs(function: Any) -> dict[int, int]:
    """Operator index -> region output index: which operators' results the region
    function returns (its bindings call one Composite function per operator, in order;
    a ``Function`` binding defines a Composite, it computes nothing)."""
    from tvm import relax

    produced: dict[Any, int] = {}
    for block in function.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Function):
                continue
            produced[binding.var] = produced[value] if value in produced else len(produced)
    result = function.body.body
    fields = list(getattr(result, "fields", [result]))
    return {produced[f]: i for i, f in enumerate(fields)}


def _operands(op: OperatorInfo) -> tuple[str, ...]:
    p = operator_params(op, OperatorParams)
    if p is None:
        raise InternalError(f"{op.kind} in a region carries no operand names from the importer")
    return p.operands


def layout(region: Region, alignment: int = 16) -> RegionLayout:
    """Wire every operand of every operator of ``region`` (see :class:`RegionLayout`).

    A tensor the region returns is that output; one made and used only inside gets the
    lowest ``alignment``-aligned offset of the scratch that no tensor live at the same
    time holds (first fit; operators run in order, a tensor lives from its producer to
    its last reader)."""
    outputs = region_outputs(region.function)
    calls = [dict(zip(_operands(op), op.wiring, strict=True)) for op in region.operators]
    last_use: dict[int, int] = {}
    for index, refs in enumerate(calls):
        for kind, value in refs.values():
            if kind == "op":
                last_use[value] = index
    placed: list[tuple[int, int, int, int]] = []  # first step, last step, offset, size
    where: dict[int, OperandRef] = {}
    for index, op in enumerate(region.operators):
        if index in outputs:
            where[index] = OperandRef(OUTPUT, outputs[index])
            continue
        size = -(-op.output.size_bytes // alignment) * alignment
        end = last_use.get(index, index)
        offset = 0
        for start2, end2, offset2, size2 in sorted(placed, key=lambda p: p[2]):
            live_together = start2 <= end and index <= end2
            if live_together and offset < offset2 + size2 and offset2 < offset + size:
                offset = offset2 + size2
        placed.append((index, end, offset, size))
        where[index] = OperandRef(SCRATCH, offset)
    operands = tuple(
        {name: where[v] if k == "op" else OperandRef(PARAM, v) for name, (k, v) in refs.items()}
        | {"output": where[index]}
        for index, refs in enumerate(calls)
    )
    return RegionLayout(operands, max((o + s for _, _, o, s in placed), default=0))


def operand_pointer(ref: OperandRef, ctype: str = "int8_t") -> str:
    """The C expression of an operand inside a :func:`step_function`: ``p<i>``, ``o<i>``,
    or a ``ctype`` pointer into its scratch."""
    if ref.kind == PARAM:
        return f"p{ref.index}"
    if ref.kind == OUTPUT:
        return f"o{ref.index}"
    return f"({ctype}*)(void*)(scratch + {ref.index})"


def step_function(
    symbol: str,
    ctx: EmitContext,
    params: int,
    outputs: int,
    body: Sequence[str],
    statics: Sequence[str] = (),
    includes: Sequence[str] = (),
) -> EmittedCode:
    """The C of a step as one function ``int32_t <symbol>(p0.., o0.., scratch)``:
    ``params`` region parameters (``const``) and ``outputs`` region outputs with the
    element types of ``ctx.arg_types``, then ``uint8_t* scratch`` when the step has one.
    ``body`` is its statements (indented here; they return an ``int32_t`` aot error
    code, 0 for success), ``statics`` file-scope definitions before it. ``run()`` calls
    it with the step's pointers and returns its code when it is not 0."""
    types = ctx.arg_types
    arguments = [f"const {types[i]}* p{i}" for i in range(params)]
    arguments += [f"{types[params + i]}* o{i}" for i in range(outputs)]
    arguments += ["uint8_t* scratch"] if ctx.scratch else []
    signature = f"int32_t {symbol}({', '.join(arguments) or 'void'})"
    function = [*statics, f"{signature} {{", *(f"  {line}" for line in body), "}"]
    args = [*ctx.args[: params + outputs]]
    args += [f"(uint8_t*)(void*)({ctx.scratch})"] if ctx.scratch else []
    return EmittedCode(
        call=(
            "{",
            f"  int32_t err = {symbol}({', '.join(args)});",
            "  if (err != 0) return err;",
            "}",
        ),
        functions=("\n".join(function),),
        prototypes=(f"{signature};",),
        includes=tuple(includes),
    )
