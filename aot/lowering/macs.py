"""Multiply-accumulates of a kernel, counted from its TIR before scheduling.

A MAC is one product added into a reduction: every block with a reduction axis whose
update multiplies contributes the product of all its axes' extents (spatial x reduced).
Reductions without a product (sums, max pooling) and elementwise work count 0, so the
figure means the same for convolutions, depthwise and fully connected layers in every
frontend. The figure comes from shapes, never from a measurement.
"""

from __future__ import annotations

import math
from typing import Any

REDUCE = 2  # tirx IterVar.iter_type of a reduction axis (CommReduce)


def _children(node: Any) -> list[Any]:
    children = []
    for attr in ("a", "b", "value", "condition", "true_value", "false_value"):
        child = getattr(node, attr, None)
        if child is not None and not isinstance(child, int | float | str):
            children.append(child)
    return children + list(getattr(node, "args", ()) or ())


def _reads(expr: Any) -> bool:
    from tvm import ir

    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.TensorLoad):  # a buffer read in TVM 0.27
            return True
        stack += _children(node)
    return False


def _multiplies(expr: Any) -> bool:
    """The update multiplies two values read from buffers (not a value by a constant,
    as a fixed-point pooling or mean does)."""
    from tvm import tirx

    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, tirx.Mul) and _reads(node.a) and _reads(node.b):
            return True
        stack += _children(node)
    return False


def kernel_macs(func: Any) -> int:
    """MACs of one call of the PrimFunc ``func`` (0 when it has no such reduction)."""
    from tvm import s_tir

    try:
        sch = s_tir.Schedule(func)
        blocks = sch.get_child_blocks(sch.get_sblock("root"))
    except Exception:  # not a schedulable function: no blocks to count
        return 0
    total = 0
    for ref in blocks:
        block = sch.get(ref)
        if not any(int(iv.iter_type) == REDUCE for iv in block.iter_vars):
            continue
        if not _multiplies(getattr(block.body, "value", block.body)):
            continue
        total += math.prod(int(iv.dom.extent) for iv in block.iter_vars)
    return total
