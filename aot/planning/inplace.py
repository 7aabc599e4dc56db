"""Which outputs may be computed in place, over an input whose memory is free afterwards.

An elementwise step (``Step.elementwise``: output element i depends only on input element
i) can write its output over an input when the kernel reads element i before writing it.
That is safe when the input:

- is read for the last time by this step (in the graph's order),
- has the same size in bytes as the output,
- is not a graph input or output (the caller owns those) and not a constant (flash).

The output must not be a graph output either. Each input is given to one output at most.
Pairs are found in step order so chains work (``relu(add(a, b))`` can all reuse ``a``).
Apply them with ``graph.with_inplace(pairs)``: the planner then sees one buffer.
"""

from __future__ import annotations

from aot.planning.order import StepGraph


def inplace_candidates(graph: StepGraph) -> list[tuple[str, str]]:
    """(output, input) pairs where the output may safely share the input's memory."""
    working = graph
    pairs: list[tuple[str, str]] = []
    io = set(graph.inputs) | set(graph.outputs)
    written = {t for s in graph.steps for t in s.writes}
    for k, step in enumerate(graph.steps):
        if not step.elementwise:
            continue
        for out in step.writes:
            if out in io or out not in graph.sizes or working.root(out) != out:
                continue
            for src in step.reads:
                root = working.root(src)
                members = _members(working, root)
                if root == out or members & io or not members & written:
                    continue  # shares memory already, caller-owned, or a constant
                if graph.sizes.get(src) != graph.sizes[out]:
                    continue
                if _last_reader(working, members) != k:
                    continue
                pairs.append((out, src))
                working = working.with_inplace([(out, src)])
                break
    return pairs


def _members(graph: StepGraph, root: str) -> set[str]:
    tensors = {t for s in graph.steps for t in (*s.reads, *s.writes)}
    tensors |= set(graph.inputs) | set(graph.outputs)
    return {t for t in tensors if graph.root(t) == root}


def _last_reader(graph: StepGraph, members: set[str]) -> int:
    return max((k for k, s in enumerate(graph.steps) if members.intersection(s.reads)), default=-1)
