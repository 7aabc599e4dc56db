"""The TIR pipeline every TIR-lowering backend runs (the CPU backend, and an accelerator
that lowers through TIR with its own schedule): the pass list and its configuration.

A leaf module: backends import it without importing the lowering stage itself.
"""

from __future__ import annotations

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
