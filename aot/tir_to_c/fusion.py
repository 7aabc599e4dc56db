"""Memory-saving loop fusion inside each kernel, before TIR lowering.

A legalized operator computes a whole intermediate (padded input, int32 accumulators)
before the next loop nest reads it. On a microcontroller those intermediates are the
biggest RAM cost after activations, so we move work to where its result is consumed:

- injective producers (padding, casts) are inlined into their consumers;
- an elementwise stage read by one elementwise consumer of its shape is computed under
  the consumer's innermost loop (one element instead of a whole int32 intermediate);
- the epilogue of a reduction (bias, requantize, clamp) is moved under the reduction's
  spatial loops, so the accumulator shrinks to one element (a register), and its
  initialisation is hoisted out of the reduction loops.

Both are semantics-preserving schedule primitives; a primitive that does not apply to a
block is skipped, so any kernel still lowers, only with a larger scratch area.
"""

from __future__ import annotations

import contextlib
from typing import Any


def _is_reduction(sch: Any, block: Any) -> bool:
    return any(int(iv.iter_type) == 2 for iv in sch.get(block).iter_vars)  # CommReduce


def _spatial_loop_count(sch: Any, block: Any) -> int:
    count = 0
    for iv in sch.get(block).iter_vars:
        if int(iv.iter_type) != 0:  # DataPar
            break
        count += 1
    return count


def _is_data_movement(sch: Any, block: Any) -> bool:
    """True for blocks that only copy, pad or cast: inlining them duplicates no arithmetic.

    Inlining a block whose value is read several times by its consumer copies the whole
    expression each time; chains of such blocks (fixed-point softmax) blow up
    exponentially, so only loads, constants, casts and bound checks are inlined.
    """
    from tvm import ir, tirx

    body = sch.get(block).body
    if not isinstance(body, tirx.BufferStore):
        return False
    allowed_calls = {"if_then_else", "likely"}
    stack = [body.value]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.TensorLoad):
            continue
        if isinstance(node, tirx.IntImm | tirx.FloatImm | tirx.Var):
            continue
        if isinstance(node, tirx.Cast):
            stack.append(node.value)
        elif isinstance(node, tirx.Select):
            stack += [node.condition, node.true_value, node.false_value]
        elif isinstance(
            node,
            tirx.And
            | tirx.Or
            | tirx.LT
            | tirx.LE
            | tirx.GT
            | tirx.GE
            | tirx.EQ
            | tirx.NE
            | tirx.Add
            | tirx.Sub,
        ):
            stack += [node.a, node.b]
        elif isinstance(node, ir.Call) and node.op.name.split(".", 1)[-1] in allowed_calls:
            stack += list(node.args)
        else:
            return False
    return True


def fuse_for_memory(func: Any) -> Any:
    """Return ``func`` with producers inlined and reduction epilogues fused."""
    from tvm import s_tir

    try:
        sch = s_tir.Schedule(func)
        root = sch.get_sblock("root")
    except Exception:  # not a schedulable function: keep it as it is
        return func
    for block in sch.get_child_blocks(root):
        if _is_reduction(sch, block) or not _is_data_movement(sch, block):
            continue
        try:
            sch.compute_inline(block)
        except Exception:  # the block writes an output or is not injective
            continue
    for block in sch.get_child_blocks(root):
        # An elementwise stage read only by one elementwise consumer of its shape (the
        # reluish value of HARD_SWISH): computed under the consumer's innermost loop, its
        # whole int32 intermediate shrinks to one element.
        if _is_reduction(sch, block):
            continue
        consumers = list(sch.get_consumers(block))
        if len(consumers) != 1 or _is_reduction(sch, consumers[0]):
            continue
        own, theirs = sch.get_loops(block), sch.get_loops(consumers[0])
        if not own or len(own) != len(theirs):
            continue
        if any(int(sch.get(a).extent) != int(sch.get(b).extent) for a, b in zip(own, theirs)):
            continue
        with contextlib.suppress(Exception):  # else it keeps its whole buffer
            sch.compute_at(block, theirs[-1])
    for block in sch.get_child_blocks(root):
        if not _is_reduction(sch, block):
            continue
        spatial = _spatial_loop_count(sch, block)
        if spatial == 0:
            continue
        pending = list(sch.get_consumers(block))
        while pending:
            consumer = pending.pop(0)
            loops = sch.get_loops(block)
            try:
                sch.reverse_compute_at(consumer, loops[spatial - 1])
            except Exception:  # the consumer needs more than one row
                continue
        # Initialise the accumulator once before the reduction loops instead of testing
        # "first iteration?" inside the innermost loop.
        loops = sch.get_loops(block)
        if len(loops) > spatial:
            with contextlib.suppress(Exception):  # else keep the in-loop init
                sch.decompose_reduction(block, loops[spatial])
    return sch.mod["main"]
