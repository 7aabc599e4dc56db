"""The kernel backend: aot's hand-written C kernels (aot/kernels/, docs/kernels.md) on
the CPU target.

It claims each operator one of its ISAs' variants takes, one region (one step) per
operator, so the planner still plans every tensor as on TVM's path. ``lower`` runs the
variant's ``prepare`` (build-time work: folded bias, re-laid-out weights, requantization
arrays) and keeps the :class:`~aot.kernels.PreparedKernel`, and its artifact names the
variant's C sources and ``aot_kernels.h`` (aot copies each once); ``emit`` writes its
params as one ``static const`` struct and the call. Everything else stays on TVM's
kernels. It keeps no state: a call's number comes from ``LowerContext.earlier``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from aot.backends.base import (
    CPU_TARGET,
    Artifact,
    Backend,
    EmitContext,
    EmittedCode,
    LowerContext,
    OperatorInfo,
    OperatorPattern,
    Region,
    RuntimeFiles,
)
from aot.errors import InternalError

KERNEL_BACKEND = "kernels"


@dataclass(frozen=True)
class KernelCall:
    """An artifact's payload: the variant chosen and what its prepare decided."""

    variant: Any  # aot.kernels.KernelVariant
    prepared: Any  # aot.kernels.PreparedKernel
    operands: tuple[int, ...]  # region parameter index of each prepared input


class KernelBackend(Backend):
    name = KERNEL_BACKEND
    description = "aot's hand-written C kernels (scalar, DSP, Helium) on the CPU"
    target_name = CPU_TARGET
    alignment = 4
    # One region per operator: never merged with its neighbours (see partition).
    merge_regions: ClassVar[bool] = False

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        # The ISAs to try, fastest first (aot.kernels.isas_for).
        self.isas: tuple[str, ...] = tuple(self.options.get("isas", ()))

    def _variant(self, info: OperatorInfo) -> Any:
        from aot.kernels import select

        return select(info, self.isas, bool(self.options.get("every_computed")))

    def kinds(self) -> tuple[str, ...]:
        from aot.kernels import variants

        return tuple(dict.fromkeys(v.kind for isa in self.isas for v in variants(isa)))

    def patterns(self, ctx: Any = None) -> Sequence[OperatorPattern]:
        return tuple(
            OperatorPattern(kind, (kind,), lambda info: self._variant(info) is not None)
            for kind in self.kinds()
        )

    def describe(self) -> list[str]:
        from aot.kernels import ISAS, variants

        return [
            f"{isa}: {', '.join(v.kind for v in variants(isa)) or '(none yet)'}" for isa in ISAS
        ]

    def lower(self, region: Region, ctx: LowerContext | None = None) -> Artifact:
        if len(region.operators) != 1:
            raise InternalError(
                f"the kernel backend got a region of {len(region.operators)} operators"
            )
        # Inside the region the operands are parameters; the constants' values are the
        # region's (lowering fills them in).
        info = region.operators[0]
        inputs = tuple(
            region.params[where] if kind == "param" and where >= 0 else tensor
            for tensor, (kind, where) in zip(info.inputs, info.wiring, strict=True)
        )
        info = replace(info, inputs=inputs)
        variant = self._variant(info)
        if variant is None:
            raise InternalError(f"no kernel variant takes the {info.kind} it claimed")
        prepared = variant.prepare(info)
        operands = []
        for index in prepared.inputs:
            kind, param = info.wiring[index]
            if kind != "param":
                raise InternalError("a kernel operand does not come from the region's params")
            operands.append(param)
        unused = tuple(i for i in range(len(region.params)) if i not in operands)
        # Relax shares one region function between structurally equal operators; each
        # call gets its own symbol, params struct and constants, numbered in call order.
        symbol = f"{region.symbol}_{len(ctx.earlier) if ctx is not None else 0}"
        constants = tuple(replace(c, name=f"{symbol}_{c.name}") for c in prepared.constants)
        return Artifact(
            symbol,
            payload=KernelCall(variant, prepared, tuple(operands)),
            constants=constants,
            scratch_bytes=prepared.scratch_bytes,
            unused_params=unused,
            runtime=_files(variant, prepared.defines),
        )

    def emit(self, step: Any, artifact: Artifact, ctx: EmitContext) -> EmittedCode:
        from aot.kernels.patches import PatchStage, emit_patch_stage

        if isinstance(artifact.payload, PatchStage):  # its kernels over tiles
            return emit_patch_stage(self, step, artifact, ctx)
        call: KernelCall = artifact.payload
        prepared = call.prepared
        # ctx.args: the kept region params (in param order), the output, the constants.
        kept = sorted(set(call.operands))
        inputs = [ctx.args[kept.index(p)] for p in call.operands]
        output = ctx.args[len(kept)]
        constants = list(ctx.args[len(kept) + 1 :])
        scratch = f"(int8_t*)(void*)({ctx.scratch})" if ctx.scratch else "NULL"
        params = f"{artifact.symbol}_params"
        fields = ", ".join(f".{k} = {int(v)}" for k, v in prepared.params.items())
        args = [f"&{params}", *inputs, *constants, output, scratch]
        return EmittedCode(
            call=(f"{prepared.function}({', '.join(args)});",),
            functions=(f"const {prepared.params_struct} {params} = {{{fields}}};",),
            prototypes=(f"extern const {prepared.params_struct} {params};",),
            includes=('"aot_kernels.h"',),
        )

    def implementation(self, artifact: Artifact) -> str:
        from aot.kernels.patches import PatchStage

        if isinstance(artifact.payload, PatchStage):
            return "patch stage of " + ", ".join(
                str(a.payload.prepared.function) for a in artifact.payload.operators
            )
        return str(artifact.payload.prepared.function)


def _files(variant: Any, defines: Mapping[str, str]) -> RuntimeFiles:
    """A step's files: its variant's C sources, aot_kernels.h and the private headers the
    sources share (requantization, the DSP operations), and the call's defines."""
    from aot.kernels import HEADER, KERNELS_C

    headers = (HEADER, *sorted(p for p in HEADER.parent.glob("*.h") if p != HEADER))
    return RuntimeFiles(
        sources=tuple(KERNELS_C / s for s in variant.sources),
        headers=headers,
        defines=dict(defines),
    )
