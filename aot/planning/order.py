"""Operator order: lifetimes of tensors in a step graph, and the order with the lowest peak.

The graph is abstract (names and sizes only) so lowering can build it from any IR.
Conventions:

- ``steps`` are given in a valid execution order; a step reads and writes tensors by name.
- Graph inputs are live from the first step, graph outputs until the last step.
- A tensor that is neither a graph input nor written by a step is a constant (it lives
  in flash) and takes no working memory.
- ``aliases`` maps a tensor to the tensor it is a view of (a reshape): same bytes, never
  written through. ``inplace`` maps a step's output to the input it overwrites (see
  ``aot.planning.inplace``). Either way the tensors form one buffer, named after the root,
  live from the first write of any member to the last read of any member.
- An in-place step destroys its input, so every other reader of that input (or of a view
  of it) stays before it when reordering.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aot.errors import InternalError
from aot.planning.model import DEFAULT_ALIGNMENT, Buffer

# Exact search up to this many steps and memoized states; the greedy order beyond.
EXACT_STEPS = 24
EXACT_STATES = 20_000


@dataclass(frozen=True)
class Step:
    name: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    elementwise: bool = False  # output element i depends only on input element i


@dataclass(frozen=True)
class StepGraph:
    steps: tuple[Step, ...]  # a valid execution order
    sizes: Mapping[str, int] = field(hash=False)  # bytes per tensor; constants may be absent
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict, hash=False)
    inplace: Mapping[str, str] = field(default_factory=dict, hash=False)

    def root(self, tensor: str) -> str:
        """The tensor whose memory ``tensor`` uses (itself unless aliased or in place)."""
        return self._follow(tensor, True)

    def view_root(self, tensor: str) -> str:
        """The tensor ``tensor`` is a view of, following reshape aliases only."""
        return self._follow(tensor, False)

    def _follow(self, tensor: str, through_inplace: bool) -> str:
        seen = {tensor}
        while True:
            if tensor in self.aliases:
                tensor = self.aliases[tensor]
            elif through_inplace and tensor in self.inplace:
                tensor = self.inplace[tensor]
            else:
                return tensor
            if tensor in seen:
                raise InternalError(f"alias cycle through tensor '{tensor}'")
            seen.add(tensor)

    def with_inplace(self, pairs: Sequence[tuple[str, str]]) -> StepGraph:
        """A copy where each ``(output, input)`` pair is computed in place."""
        inplace = dict(self.inplace)
        inplace.update(pairs)
        return StepGraph(self.steps, self.sizes, self.inputs, self.outputs, self.aliases, inplace)


class _Analysis:
    """Buffers (alias roots) of a graph as bitmasks over step indices."""

    def __init__(self, graph: StepGraph) -> None:
        self.graph = graph
        steps = graph.steps
        self.n = len(steps)
        index = {s.name: i for i, s in enumerate(steps)}
        if len(index) != self.n:
            raise InternalError("step names must be unique")
        writer: dict[str, int] = {}
        for i, s in enumerate(steps):
            for t in s.writes:
                if t in writer:
                    raise InternalError(
                        f"tensor '{t}' is written by steps '{steps[writer[t]].name}' and '{s.name}'"
                    )
                writer[t] = i
        inputs = set(graph.inputs)
        roots_in = {graph.root(t) for t in inputs}
        tensors = {t for s in steps for t in (*s.reads, *s.writes)} | inputs | set(graph.outputs)
        members: dict[str, list[str]] = {}
        for t in sorted(tensors):
            members.setdefault(graph.root(t), []).append(t)
        self.roots: list[str] = []
        self.size: list[int] = []
        self.writers: list[int] = []  # bitmask of steps writing any member
        self.readers: list[int] = []  # bitmask of steps reading any member
        self.is_input: list[bool] = []
        self.is_output: list[bool] = []
        outputs = set(graph.outputs)
        for root, group in sorted(members.items()):
            writers = 0
            for t in group:
                if t in writer:
                    writers |= 1 << writer[t]
            if not writers and root not in roots_in:
                continue  # a constant
            sizes = [graph.sizes[t] for t in group if t in graph.sizes]
            if not sizes:
                raise InternalError(f"tensor '{root}' has no size")
            readers = 0
            for i, s in enumerate(steps):
                if any(t in group for t in s.reads):
                    readers |= 1 << i
            self.roots.append(root)
            self.size.append(max(sizes))
            self.writers.append(writers)
            self.readers.append(readers)
            self.is_input.append(root in roots_in)
            self.is_output.append(any(t in outputs for t in group))
        # Data dependencies, plus: other readers of an overwritten input run before.
        self.pred = [0] * self.n
        for j, s in enumerate(steps):
            for t in s.reads:
                if t in writer and writer[t] != j:
                    self.pred[j] |= 1 << writer[t]
        for out, src in graph.inplace.items():
            if out not in writer:
                raise InternalError(f"in-place output '{out}' is not written by any step")
            j, base = writer[out], graph.view_root(src)
            for i, other in enumerate(steps):
                if i != j and any(graph.view_root(t) == base for t in other.reads):
                    self.pred[j] |= 1 << i
        self.index = index

    def check_order(self, order: Sequence[int]) -> None:
        if sorted(order) != list(range(self.n)):
            raise InternalError("an order must list every step once")
        done = 0
        for i in order:
            if self.pred[i] & ~done:
                raise InternalError(
                    f"step '{self.graph.steps[i].name}' runs before a step it depends on"
                )
            done |= 1 << i

    def live_during(self, done: int, s: int) -> int:
        """Bytes live while step ``s`` runs after the steps in the bitmask ``done``."""
        bit = 1 << s
        total = 0
        for r in range(len(self.roots)):
            started = self.is_input[r] or self.writers[r] & (done | bit)
            if not started:
                continue
            # Live until the last reader, or its own first step when nothing reads it.
            first_here = (not done) if self.is_input[r] else not (self.writers[r] & done)
            if self.is_output[r] or self.readers[r] & ~done or first_here:
                total += self.size[r]
        return total

    def peak(self, order: Sequence[int]) -> int:
        done, peak = 0, 0
        for s in order:
            peak = max(peak, self.live_during(done, s))
            done |= 1 << s
        return peak

    def buffers(self, order: Sequence[int], alignment: int) -> list[Buffer]:
        pos = {s: k for k, s in enumerate(order)}
        last_step = max(self.n - 1, 0)
        result = []
        for r, name in enumerate(self.roots):
            writes = [pos[i] for i in range(self.n) if self.writers[r] >> i & 1]
            reads = [pos[i] for i in range(self.n) if self.readers[r] >> i & 1]
            start = 0 if self.is_input[r] else min(writes)
            end = last_step if self.is_output[r] else max([start, *reads])
            result.append(Buffer(name, self.size[r], start, end, alignment))
        return sorted(result, key=lambda b: (b.start, b.name))


def _order_indices(analysis: _Analysis, order: Sequence[str] | None) -> list[int]:
    if order is None:
        return list(range(analysis.n))
    try:
        indices = [analysis.index[name] for name in order]
    except KeyError as err:
        raise InternalError(f"unknown step {err} in order") from None
    analysis.check_order(indices)
    return indices


def buffers_for_order(
    graph: StepGraph, order: Sequence[str] | None = None, alignment: int = DEFAULT_ALIGNMENT
) -> list[Buffer]:
    """One buffer per alias root with its lifetime in ``order`` (default: the given order)."""
    analysis = _Analysis(graph)
    return analysis.buffers(_order_indices(analysis, order), alignment)


def peak_for_order(graph: StepGraph, order: Sequence[str] | None = None) -> int:
    """The activation lower bound of ``graph`` run in ``order``."""
    analysis = _Analysis(graph)
    peak = analysis.peak(_order_indices(analysis, order))
    return peak


def best_order(
    graph: StepGraph,
    order: Sequence[str] | None = None,
    *,
    exact_steps: int = EXACT_STEPS,
    exact_states: int = EXACT_STATES,
) -> tuple[str, ...]:
    """A topological order of the steps with the lowest peak of live bytes found.

    Exact (memoized search over the sets of steps already run) for graphs up to
    ``exact_steps`` steps and ``exact_states`` states, else greedy: run next the ready
    step that needs the least memory. Never worse than ``order`` (default: the given
    one), which is kept when nothing is strictly better.
    """
    analysis = _Analysis(graph)
    given = _order_indices(analysis, order)
    found = None
    if analysis.n <= exact_steps:
        try:
            found = _exact(analysis, exact_states)
        except _TooManyStates:
            found = None
    if found is None:
        found = _greedy(analysis)
    if analysis.peak(found) < analysis.peak(given):
        given = found
    return tuple(graph.steps[i].name for i in given)


class _TooManyStates(Exception):
    pass


def _ready(analysis: _Analysis, done: int) -> list[int]:
    return [s for s in range(analysis.n) if not done >> s & 1 and not analysis.pred[s] & ~done]


def _exact(analysis: _Analysis, max_states: int) -> list[int]:
    full = (1 << analysis.n) - 1
    memo: dict[int, tuple[int, int]] = {}  # done -> (best peak of the rest, next step)

    def best(done: int) -> int:
        if done == full:
            return 0
        hit = memo.get(done)
        if hit is not None:
            return hit[0]
        if len(memo) >= max_states:
            raise _TooManyStates
        value, choice = 1 << 62, -1
        for s in _ready(analysis, done):
            now = analysis.live_during(done, s)
            if now >= value:
                continue  # cannot beat the best choice so far
            rest = max(now, best(done | 1 << s))
            if rest < value:
                value, choice = rest, s
        if choice < 0:
            raise InternalError("the step graph has a dependency cycle")
        memo[done] = (value, choice)
        return value

    best(0)
    order, done = [], 0
    while done != full:
        s = memo[done][1]
        order.append(s)
        done |= 1 << s
    return order


def _greedy(analysis: _Analysis) -> list[int]:
    order, done = [], 0
    for _ in range(analysis.n):
        ready = _ready(analysis, done)
        if not ready:
            raise InternalError("the step graph has a dependency cycle")
        # Least memory now; then the one that frees the most (smallest live set after).
        s = min(
            ready,
            key=lambda s: (
                analysis.live_during(done, s),
                _live_after(analysis, done | 1 << s),
                s,
            ),
        )
        order.append(s)
        done |= 1 << s
    return order


def _live_after(analysis: _Analysis, done: int) -> int:
    total = 0
    for r in range(len(analysis.roots)):
        if (analysis.is_input[r] or analysis.writers[r] & done) and (
            analysis.is_output[r] or analysis.readers[r] & ~done
        ):
            total += analysis.size[r]
    return total
