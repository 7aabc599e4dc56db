"""In-place candidates: when an elementwise output may overwrite its input."""

from __future__ import annotations

import pytest

from aot.planning import Pool, plan_memory
from aot.planning.inplace import inplace_candidates
from aot.planning.order import Step, StepGraph, best_order, buffers_for_order, peak_for_order

from .planning_helpers import assert_sound

pytestmark = pytest.mark.unit


def graph(*steps: Step, sizes=None, inputs=("x",), outputs=("out",), aliases=None) -> StepGraph:
    tensors = {t for s in steps for t in (*s.reads, *s.writes)}
    all_sizes = {t: 64 for t in tensors if not t.startswith("w")} | (sizes or {})
    return StepGraph(tuple(steps), all_sizes, inputs, outputs, aliases or {})


def test_chain_of_elementwise_steps_reuses_one_buffer() -> None:
    g = graph(
        Step("conv", ("x", "w"), ("a",)),
        Step("add", ("a", "w_bias"), ("b",), elementwise=True),
        Step("relu", ("b",), ("c",), elementwise=True),
        Step("fc", ("c", "w2"), ("out",)),
        sizes={"x": 16, "out": 16},
    )
    pairs = inplace_candidates(g)
    assert pairs == [("b", "a"), ("c", "b")]
    merged = g.with_inplace(pairs)
    assert sorted(b.name for b in buffers_for_order(merged)) == ["a", "out", "x"]
    assert peak_for_order(g) == 128  # a and b during add
    assert peak_for_order(merged) == 80  # x or out next to the one shared buffer
    buffers = buffers_for_order(merged)
    assert_sound(plan_memory(buffers, [Pool("sram", None)]), buffers, [Pool("sram", None)])


def test_input_read_later_is_not_overwritten() -> None:
    g = graph(
        Step("conv", ("x",), ("a",)),
        Step("relu", ("a",), ("b",), elementwise=True),
        Step("add", ("a", "b"), ("out",)),  # reads a after relu: relu may not clobber it
    )
    assert inplace_candidates(g) == []


def test_other_reader_earlier_is_fine() -> None:
    g = graph(
        Step("conv", ("x",), ("a",)),
        Step("pool", ("a",), ("p",)),
        Step("relu", ("a",), ("b",), elementwise=True),
        Step("add", ("p", "b"), ("out",)),
    )
    assert inplace_candidates(g) == [("b", "a")]
    # The reader that ran first must stay before the step that overwrites a.
    order = best_order(g.with_inplace([("b", "a")]))
    assert order.index("pool") < order.index("relu")


def test_graph_inputs_outputs_and_constants_are_never_overwritten() -> None:
    # x is a graph input, w_scale a constant, and out a graph output.
    g = graph(
        Step("scale", ("x", "w_scale"), ("a",), elementwise=True),
        Step("relu", ("a",), ("out",), elementwise=True),
        sizes={"w_scale": 64},
    )
    assert inplace_candidates(g) == []


def test_sizes_must_match() -> None:
    g = graph(
        Step("conv", ("x",), ("a",)),
        Step("cast", ("a",), ("b",), elementwise=True),
        Step("fc", ("b",), ("out",)),
        sizes={"b": 256},  # int8 -> int32 widening: different size
    )
    assert inplace_candidates(g) == []


def test_not_elementwise_means_no_pair() -> None:
    g = graph(
        Step("conv", ("x",), ("a",)), Step("pool", ("a",), ("b",)), Step("fc", ("b",), ("out",))
    )
    assert inplace_candidates(g) == []


def test_second_input_is_used_when_the_first_is_still_needed() -> None:
    g = graph(
        Step("c1", ("x",), ("a",)),
        Step("c2", ("x",), ("b",)),
        Step("add", ("a", "b"), ("s",), elementwise=True),
        Step("mul", ("s", "a"), ("out",)),
    )
    assert inplace_candidates(g) == [("s", "b")]


def test_view_of_the_input_counts_as_a_reader() -> None:
    g = graph(
        Step("conv", ("x",), ("a",)),
        Step("flatten", ("a",), ("a_flat",)),
        Step("relu", ("a",), ("b",), elementwise=True),
        Step("fc", ("a_flat", "b"), ("out",)),
        aliases={"a_flat": "a"},
    )
    assert inplace_candidates(g) == []
