"""The CPU backend, the reference: it takes every operator no accelerator took.

Lowering runs the memory-saving schedule and the s_tir pipeline on each PrimFunc (the
artifact is the lowered TIR); emit prints it as a plain C99 function with aot's own
printer (aot/tir_to_c/printer.py) and calls it with one pointer per buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aot.backends.base import (
    CPU_TARGET,
    Artifact,
    Backend,
    EmitContext,
    EmittedCode,
    OperatorPattern,
    Region,
)
from aot.errors import InternalError, UnsupportedError

OPAQUE_PATTERN = 8  # relax OpPatternKind.kOpaque


class CpuBackend(Backend):
    name = CPU_TARGET
    description = "plain C99 kernels from TIR (the reference); takes every operator left"

    def patterns(self, ctx: Any = None) -> Sequence[OperatorPattern]:
        return ()  # not partitioned: what stays in main is the CPU's

    def describe(self) -> list[str]:
        return ["every operator no accelerator takes (all of `aot operators`)"]

    def lower(self, region: Region, ctx: Any = None) -> Artifact:
        raise UnsupportedError("the CPU backend takes no regions; it lowers what is left")

    def lower_primfunc(self, module: Any, prim_name: str, symbol: str) -> Artifact:
        """Schedule and lower one PrimFunc of ``module`` to flat TIR."""
        import tvm
        from tvm import tirx

        from aot.tir_to_c.analysis import scratch_bytes
        from aot.tir_to_c.fusion import fuse_for_memory
        from aot.tir_to_c.pipeline import TIR_CONFIG, tir_passes

        func = module[prim_name]
        # Relax op patterns: 0 elementwise, 1 broadcast; both may run in place on the
        # input that has the output's shape (then emitted without restrict).
        elementwise = int(func.attrs.get("op_pattern", OPAQUE_PATTERN)) <= 1
        func = fuse_for_memory(func)
        tir_module = tvm.IRModule({prim_name: func.with_attr("global_symbol", prim_name)})
        tir_module = tirx.transform.BindTarget(tvm.target.Target({"kind": "c"}))(tir_module)
        with tvm.transform.PassContext(opt_level=3, config=TIR_CONFIG):
            tir_module = tvm.transform.Sequential(tir_passes())(tir_module)
        lowered = tir_module[prim_name]
        return Artifact(
            symbol, tir=lowered, scratch_bytes=scratch_bytes(lowered), elementwise=elementwise
        )

    def implementation(self, artifact: Artifact) -> str:
        return "tvm"  # TVM-generated TIR, printed as C

    def in_place_shift(self, artifact: Artifact, source: int, output: int) -> int | None:
        from aot.tir_to_c.analysis import raster_in_place_shift

        if artifact.tir is None:
            return None
        return raster_in_place_shift(artifact.tir, source, output)

    def is_identity_copy(self, artifact: Artifact) -> bool:
        from aot.tir_to_c.analysis import is_identity_copy

        return is_identity_copy(artifact.tir)

    def emit(self, step: Any, artifact: Artifact, ctx: EmitContext) -> EmittedCode:
        from aot.tir_to_c.printer import emit_kernel

        # Steps that share a kernel print it again; the emitter keeps one copy.
        restrict = not (artifact.elementwise or artifact.aliased)
        kernel = emit_kernel(artifact.symbol, artifact.tir, restrict=restrict)
        if kernel.scratch_bytes != artifact.scratch_bytes:
            raise InternalError(
                f"kernel {artifact.symbol}: the C printer needs {kernel.scratch_bytes} "
                f"scratch bytes, lowering planned {artifact.scratch_bytes}"
            )
        args = list(ctx.args)
        if ctx.scratch is not None:
            args.append(ctx.scratch)
        return EmittedCode(
            call=(f"{artifact.symbol}({', '.join(args)});",),
            functions=(kernel.source,),
            prototypes=(kernel.prototype,),
            helpers=kernel.helpers,
        )
