"""A tiny out-of-tree backend for aot's tests: it is found only through its entry point.

It takes int8 2-D convolutions with stride 1 (a predicate on the typed parameters,
``aot.operators.ConvParams``), lowers
each through TIR with its own (empty) schedule, emits the kernel with aot's C printer
under its own symbol, and calls it between ``tinyacc_begin`` and ``tinyacc_end`` of its
small runtime, passing a descriptor constant that the runtime checks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aot.backends import (
    Artifact,
    Backend,
    BackendConstant,
    EmittedCode,
    OperatorPattern,
    RuntimeFiles,
)
from aot.operators import ConvParams, operator_params

RUNTIME = Path(__file__).parent / "runtime"
MAGIC = 0x7A11AC


def stride_1(op):
    """A convolution with stride 1 (its typed parameters: None for another family)."""
    p = operator_params(op, ConvParams)
    return p is not None and p.strides == (1, 1)


class TinyAcc(Backend):
    name = "tinyacc"
    description = "test backend: int8 CONV_2D with stride 1, through its own runtime"
    target_name = "cpu"  # its C runs on the CPU: no board declaration needed

    def patterns(self):
        return [
            OperatorPattern(
                "conv2d_stride1",
                ("conv2d_int8",),
                lambda op: stride_1(op) and op.output.dtype == "int8",
            )
        ]

    def lower(self, region, ctx=None):
        import tvm
        from tvm import tirx

        from aot.tir_to_c.analysis import scratch_bytes
        from aot.tir_to_c.pipeline import TIR_CONFIG, tir_passes

        (op,) = region.operators  # one operator per region: convolutions never touch here
        mod = tvm.IRModule({"k": op.function.with_attr("global_symbol", "k")})
        mod = tirx.transform.BindTarget(tvm.target.Target({"kind": "c"}))(mod)
        with tvm.transform.PassContext(opt_level=3, config=TIR_CONFIG):
            mod = tvm.transform.Sequential(tir_passes())(mod)
        func = mod["k"]
        out_elems = int(np.prod(op.output.shape))
        descriptor = np.array([MAGIC, out_elems, op.params.input_zp], dtype=np.int32)
        return Artifact(
            region.symbol,
            tir=func,
            payload=[p.shape for p in region.params],
            constants=(BackendConstant("descriptor", descriptor),),
            scratch_bytes=scratch_bytes(func),
        )

    def emit(self, step, artifact, ctx):
        from aot.tir_to_c.printer import emit_kernel

        kernel = emit_kernel(artifact.symbol, artifact.tir)
        *operands, descriptor = ctx.args
        args = list(operands) + ([ctx.scratch] if ctx.scratch else [])
        return EmittedCode(
            call=(
                f"if (tinyacc_begin({descriptor}) != 0) return {ctx.error_prefix}_BAD_ARGUMENT;",
                f"{artifact.symbol}({', '.join(args)});",
                "tinyacc_end();",
            ),
            functions=(kernel.source,),
            prototypes=(kernel.prototype,),
            includes=('"tinyacc.h"',),
            helpers=kernel.helpers,
        )

    def runtime(self):
        return RuntimeFiles(sources=(RUNTIME / "tinyacc.c",), headers=(RUNTIME / "tinyacc.h",))


class TinyNpu(TinyAcc):
    """The same code on a compute unit of its own, which no board declares."""

    name = "tinynpu"
    description = "test backend: like tinyacc, on a target no board has"
    target_name = "tinynpu"


class Greedy(TinyAcc):
    """A pattern that claims softmax, which its codegen cannot emit."""

    name = "greedy"
    description = "test backend: claims SOFTMAX but lowers only CONV_2D"
    lowers = ("conv2d_int8",)

    def patterns(self):
        return [OperatorPattern("everything", ("conv2d_int8", "softmax_int8"))]


class Broken(TinyAcc):
    """A lowering that fails inside the backend."""

    name = "broken"
    description = "test backend: its lower() raises"

    def lower(self, region, ctx=None):
        raise ValueError("internal failure of the broken test backend")


class FailsIn(TinyAcc):
    """A backend whose hook named by ``failing`` raises a plain Python exception."""

    failing = ""

    def _maybe_fail(self, hook):
        if hook == self.failing:
            raise KeyError(f"{hook} of the failing test backend")

    def prepare(self, model, board=None):
        self._maybe_fail("prepare")

    def patterns(self):
        self._maybe_fail("patterns")

        def check(op):
            self._maybe_fail("predicate")
            return stride_1(op)

        return [OperatorPattern("conv2d_stride1", ("conv2d_int8",), check)]

    def runtime(self):
        self._maybe_fail("runtime")
        return super().runtime()

    def report(self):
        self._maybe_fail("report")
        return {}


class FailsInPrepare(FailsIn):
    name, failing = "fails-prepare", "prepare"


class FailsInPatterns(FailsIn):
    name, failing = "fails-patterns", "patterns"


class FailsInPredicate(FailsIn):
    name, failing = "fails-predicate", "predicate"


class FailsInRuntime(FailsIn):
    name, failing = "fails-runtime", "runtime"


class FailsInReport(FailsIn):
    name, failing = "fails-report", "report"


class RefusesInPredicate(FailsIn):
    """A predicate that raises aot's own UnsupportedError on purpose: its message stands."""

    name = "refuses-predicate"

    def patterns(self):
        from aot.errors import UnsupportedError

        def check(op):
            raise UnsupportedError("refuses-predicate: this test backend refuses every operator")

        return [OperatorPattern("conv2d_any", ("conv2d_int8",), check)]


class Clash(TinyAcc):
    """Takes depthwise convolutions and ships a different header named tinyacc.h."""

    name = "tinyclash"
    description = "test backend: its header's name collides with tinyacc's"

    def patterns(self):
        return [OperatorPattern("depthwise", ("depthwise_conv2d_int8",))]

    def runtime(self):
        return RuntimeFiles(sources=(RUNTIME / "tinyacc.c",), headers=(CLASH / "tinyacc.h",))


CLASH = Path(__file__).parent / "clash"


class Single(TinyAcc):
    """tinyacc's convolutions, one region per operator (merge_regions False)."""

    name = "tinysingle"
    description = "test backend: like tinyacc, never merging its regions"
    merge_regions = False
