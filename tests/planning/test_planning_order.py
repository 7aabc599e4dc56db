"""Operator order: lifetimes from a step graph and the search for the lowest peak."""

from __future__ import annotations

import random

import pytest

from aot.errors import InternalError
from aot.planning import Pool, activation_lower_bound, plan_memory
from aot.planning.inplace import inplace_candidates
from aot.planning.order import Step, StepGraph, best_order, buffers_for_order, peak_for_order

pytestmark = pytest.mark.unit


def diamond() -> StepGraph:
    # x feeds two branches that each blow up to 100 bytes and shrink back to 10.
    steps = (
        Step("expand_a", ("x",), ("a",)),
        Step("expand_b", ("x",), ("b",)),
        Step("shrink_a", ("a",), ("a2",)),
        Step("shrink_b", ("b",), ("b2",)),
        Step("add", ("a2", "b2"), ("out",)),
    )
    sizes = {"x": 10, "a": 100, "b": 100, "a2": 10, "b2": 10, "out": 10}
    return StepGraph(steps, sizes, inputs=("x",), outputs=("out",))


def test_diamond_finds_the_branch_by_branch_order() -> None:
    graph = diamond()
    assert peak_for_order(graph) == 10 + 100 + 100  # both big tensors live together
    order = best_order(graph)
    assert order == ("expand_a", "shrink_a", "expand_b", "shrink_b", "add")
    assert peak_for_order(graph, order) == 10 + 10 + 100


def test_greedy_fallback_also_finds_it() -> None:
    graph = diamond()
    order = best_order(graph, exact_steps=0)
    assert peak_for_order(graph, order) == 120


def test_keeps_the_given_order_when_nothing_is_better() -> None:
    graph = diamond()
    good = ("expand_b", "shrink_b", "expand_a", "shrink_a", "add")
    assert best_order(graph, good) == good


def test_lifetimes() -> None:
    steps = (
        Step("conv", ("x", "w"), ("y",)),
        Step("reshape", ("y",), ("y2",)),
        Step("fc", ("y2", "w2"), ("z",)),
        Step("softmax", ("z",), ("out",)),
    )
    sizes = {"x": 64, "y": 32, "y2": 32, "z": 16, "out": 16, "w": 999, "w2": 999}
    graph = StepGraph(steps, sizes, ("x",), ("out",), aliases={"y2": "y"})
    buffers = {b.name: b for b in buffers_for_order(graph)}
    assert set(buffers) == {"x", "y", "z", "out"}  # w, w2 are constants; y2 is y
    assert (buffers["x"].start, buffers["x"].end) == (0, 0)
    assert (buffers["y"].start, buffers["y"].end) == (0, 2)  # through its alias y2
    assert (buffers["z"].start, buffers["z"].end) == (2, 3)
    assert (buffers["out"].start, buffers["out"].end) == (3, 3)
    assert peak_for_order(graph) == 96


def test_outputs_live_to_the_end_and_inputs_from_the_start() -> None:
    steps = (
        Step("a", ("x",), ("early_out",)),
        Step("b", ("x",), ("t",)),
        Step("c", ("t",), ("u",)),
    )
    graph = StepGraph(steps, {"x": 1, "early_out": 2, "t": 4, "u": 8}, ("x",), ("early_out", "u"))
    buffers = {b.name: b for b in buffers_for_order(graph)}
    assert (buffers["early_out"].start, buffers["early_out"].end) == (0, 2)
    assert (buffers["x"].start, buffers["x"].end) == (0, 1)


def test_rejects_an_order_that_breaks_dependencies() -> None:
    with pytest.raises(InternalError, match="depends"):
        peak_for_order(diamond(), ("shrink_a", "expand_a", "expand_b", "shrink_b", "add"))


def _random_graph(rng: random.Random) -> StepGraph:
    n = rng.randrange(1, 8)
    tensors = ["in0", "in1"][: rng.randrange(1, 3)]
    inputs = tuple(tensors)
    sizes = {t: rng.randrange(1, 50) for t in tensors}
    sizes["const"] = 1000
    steps, aliases = [], {}
    for i in range(n):
        # Mostly recent tensors, so chains (and in-place chances) are common.
        reads = tuple(
            dict.fromkeys(
                rng.choice(tensors[-3:] if k == 0 else tensors)
                for k in range(1 + (rng.random() < 0.4))
            )
        )
        if rng.random() < 0.2:
            reads += ("const",)
        out = f"t{i}"
        elementwise = False
        if rng.random() < 0.15:  # a reshape view of its input
            aliases[out] = reads[0]
            sizes[out] = sizes[reads[0]]
            reads = reads[:1]
        elif rng.random() < 0.4:  # elementwise over its first input: may run in place
            elementwise = True
            sizes[out] = sizes[reads[0]]
        else:
            sizes[out] = rng.choice([rng.randrange(1, 20), rng.randrange(20, 200)])
        steps.append(Step(f"s{i}", reads, (out,), elementwise))
        tensors.append(out)
    outputs = tuple({tensors[-1], rng.choice(tensors[len(inputs) :])})
    return StepGraph(tuple(steps), sizes, inputs, outputs, aliases)


def _all_orders(graph: StepGraph):
    """Every order that keeps data dependencies and runs in-place steps after the other
    readers of the input they overwrite (or of views of it)."""
    writer = {t: s.name for s in graph.steps for t in s.writes}
    deps = {s.name: {writer[t] for t in s.reads if t in writer} for s in graph.steps}

    def view_base(t: str) -> str:
        while t in graph.aliases:
            t = graph.aliases[t]
        return t

    for out, src in graph.inplace.items():
        base = view_base(src)
        deps[writer[out]] |= {
            o.name
            for o in graph.steps
            if o.name != writer[out] and any(view_base(t) == base for t in o.reads)
        }

    def extend(done: list[str]):
        if len(done) == len(graph.steps):
            yield tuple(done)
            return
        for s in graph.steps:
            if s.name not in done and deps[s.name] <= set(done):
                yield from extend([*done, s.name])

    yield from extend([])


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("inplace", [False, True], ids=["plain", "inplace"])
def test_best_order_is_exact_on_small_graphs(seed: int, inplace: bool) -> None:
    graph = _random_graph(random.Random(seed))
    if inplace:
        graph = graph.with_inplace(inplace_candidates(graph))
    peaks = {}
    for order in _all_orders(graph):
        # The fast peak agrees with the lower bound of the buffers' lifetimes.
        peaks[order] = peak_for_order(graph, order)
        assert peaks[order] == activation_lower_bound(buffers_for_order(graph, order))
    given = peak_for_order(graph)
    best = peak_for_order(graph, best_order(graph))
    assert best == min(peaks.values()) <= given
    assert peak_for_order(graph, best_order(graph, exact_steps=0)) <= given


def test_large_graph_uses_the_greedy_order_and_is_no_worse() -> None:
    rng = random.Random(3)
    # Many parallel branches: too many states for the exact search.
    steps, sizes = [], {"x": 8}
    for k in range(12):
        steps.append(Step(f"up{k}", ("x",), (f"u{k}",)))
        sizes[f"u{k}"] = rng.randrange(50, 150)
    for k in range(12):
        steps.append(Step(f"down{k}", (f"u{k}",), (f"d{k}",)))
        sizes[f"d{k}"] = 4
    steps.append(Step("concat", tuple(f"d{k}" for k in range(12)), ("out",)))
    sizes["out"] = 48
    graph = StepGraph(tuple(steps), sizes, ("x",), ("out",))
    order = best_order(graph, exact_states=500)
    assert peak_for_order(graph, order) < peak_for_order(graph)
    # Branch by branch: one big tensor at a time.
    assert peak_for_order(graph, order) <= 8 + max(sizes[f"u{k}"] for k in range(12)) + 48


def test_order_feeds_the_planner() -> None:
    graph = diamond()
    order = best_order(graph)
    buffers = buffers_for_order(graph, order)
    plan = plan_memory(buffers, [Pool("sram", None)], "optimal")
    assert plan.lower_bound == 120
    assert plan.total_size >= 120
