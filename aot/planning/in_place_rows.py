"""Convolutions in place: the output written over the input rows already read.

A convolution (depthwise or not) run as a whole operator keeps its input and its output
live at once. Run in bands of whole output rows, one kernel call per band, it can write
its output into the same buffer as its input: output row r depends only on the input
rows of its window, from r * stride - padding on, and once a band is done no later band
reads the input rows above its own first window row. So the output starts
``in_place_shift`` bytes before the input (aot/planning/patches.py works the shift out:
about (rows per band + padding) output rows) and each band writes only bytes that no
band still reads; run from the last band, the output starts after the input instead. The buffer
holds max(shift + input, output) bytes instead of input + output.

Two ways to run such a step, each with its own shift:

- **In bands** (a hand-written kernel: scalar, DSP, Helium). Each band is the kernel's
  own prepared call with a band's geometry, as in a patch stage (aot/kernels/patches.py
  with ``direct_output``): it reads the whole input with its padding moved to the band's
  first row (a 1x1 kernel: only its rows) and writes its rows straight into the output.
  A call never writes a byte it reads, so the kernel may read and write in any order
  within a call (and keep its ``restrict`` pointers). Fewer rows per band: a smaller
  shift, more calls.
- **As it is** (TVM's generated kernel, compiled for the whole shape). Its backend shows
  the shift safe for its code (``Backend.in_place_shift``; for the CPU backend,
  aot/tir_to_c/analysis.py ``raster_in_place_shift``: one loop nest over output rows,
  each row writing below the lowest input index it and later rows read), and the step
  calls a copy of the kernel printed without ``restrict`` (``Artifact.aliased``). No
  call is added.

Depthwise convolutions were the aim (issue 21): in a MobileNetV2 block the depthwise step
holds the two largest tensors. A convolution's output rows depend on its input rows
alike, so the same bands serve it: a 1x1 expansion in place costs about one input row
instead of its whole input.

A step takes part when its input is an intermediate (or, with --io-in-pool, the model's
input) that no other step reads, and neither tensor shares memory already. The planner
sees one buffer (the input's, ``LoweredModel.shared`` with ``shared_offsets``) live
from the input's writer to the output's last reader; before the convolution it is
``shift`` bytes larger than the input alone, which is why ``choose_in_place`` keeps
only the steps that lower the model's peak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from aot.errors import InternalError
from aot.planning.patches import CONV, DEPTHWISE, Window, in_place_shift, plan_patches
from aot.planning.tiled_step import step_window, with_stage

# The output's start is this aligned, as every buffer the planner places.
SHIFT_ALIGNMENT = 16
# Output rows per band the search tries: fewer rows per band, a smaller shift and more
# kernel calls.
ROWS_PER_BAND = (1, 2, 4, 8)
# The search's estimate of one more band's call, in instructions: the call and its loops'
# set-up, and per output channel what the kernels prepare per call (the DSP depthwise
# kernel's doubled weights and records per group of four). Measured on mps2_an386 (docs/
# benchmarks.md, "Patch stages and convolutions in place"): kws (64 channels) about 6,600
# a call, ds_cnn and MobileNetV2 about 3,500.
INSTRUCTIONS_PER_BAND = 1_200
INSTRUCTIONS_PER_BAND_CHANNEL = 80


def _align(size: int) -> int:
    return -(-size // SHIFT_ALIGNMENT) * SHIFT_ALIGNMENT


def shift_bytes(window: Window, bands: int, reverse: bool = False) -> int:
    """How far the output's start is from the input's, aligned as a buffer: before it,
    after it with ``reverse``."""
    return _align(in_place_shift(window, bands, reverse))


@dataclass(frozen=True)
class InPlace:
    """The convolution that writes tensor ``output`` runs in place in ``bands`` bands
    (0: its generated kernel as it is, ``whole_shift`` the shift its backend showed
    safe), from the last band when ``reverse`` (its output then starts after its input).
    It carries its candidate's ``window``, so that putting it in place, its cost and its
    record need not look for the candidate again (``Candidate.choice``)."""

    output: int
    window: Window
    bands: int
    reverse: bool = False
    whole_shift: int | None = None

    @property
    def label(self) -> str:
        return self.window.label

    @property
    def shift(self) -> int:
        """How far its output's start is from its input's (``shift_bytes``)."""
        if self.whole_shift is not None:
            return _align(self.whole_shift)
        return shift_bytes(self.window, self.bands, self.reverse)


@dataclass(frozen=True)
class Candidate:
    """A convolution that can run in place: in bands (a kernel-backend step, whose
    params take a band's geometry) or, with ``whole_shift``, as it is (its backend showed
    that shift safe for its code, ``Backend.in_place_shift``)."""

    step: Any
    window: Window
    whole_shift: int | None = None

    def choice(self, bands: int, reverse: bool = False) -> InPlace:
        """This convolution in place in ``bands`` bands (0: as it is)."""
        return InPlace(self.step.outputs[0], self.window, bands, reverse, self.whole_shift)


def candidates(lowered: Any, io_in_pool: bool) -> list[Candidate]:
    """The convolution steps that can run in place (the module's docstring)."""
    from aot.lowering import INPUT, INTERMEDIATE

    roots = lowered.memory_roots
    members: dict[int, set[int]] = {}
    for tensor_id, root in roots.items():
        members.setdefault(root, set()).add(tensor_id)
    last_touch: dict[int, int] = {}  # buffer (root) -> the last step that touches it
    # Targets that touch each buffer: one buffer for two tensors must not narrow the pools
    # either may use, so both stay with the step's own target.
    targets: dict[int, set[str]] = {}
    for position, step in enumerate(lowered.steps):
        for tensor_id in step.args:
            last_touch[roots[tensor_id]] = position
            targets.setdefault(roots[tensor_id], set()).update(step.targets_of(tensor_id))
    sharing = set(lowered.shared) | set(lowered.shared.values())
    by_symbol = {a.symbol: a for a in lowered.artifacts}
    kinds = (INTERMEDIATE, INPUT) if io_in_pool else (INTERMEDIATE,)
    found = []
    for position, step in enumerate(lowered.steps):
        if len(step.outputs) != 1 or not step.args:
            continue
        source, output = step.args[0], step.outputs[0]
        group = members[roots[source]]
        # The source's buffer (with what already shares it: an in-place chain) dies here.
        if any(lowered.tensors[t].kind not in kinds for t in group):
            continue
        if last_touch[roots[source]] != position or step.args.count(source) != 1:
            continue
        if lowered.tensors[output].kind != INTERMEDIATE or output in sharing:
            continue
        if targets[roots[source]] | targets[roots[output]] != {step.target}:
            continue
        artifact = by_symbol[step.kernel]
        window = step_window(step, artifact)
        if window is not None:
            found.append(Candidate(step, window))
            continue
        window = _generated_window(lowered, step, artifact)
        backend = lowered.backends.get(step.backend)
        if window is None or backend is None:
            continue
        shift = backend.in_place_shift(artifact, 0, step.args.index(output))
        if shift is not None:
            found.append(Candidate(step, window, shift))
    return found


def _generated_window(lowered: Any, step: Any, artifact: Any) -> Window | None:
    """A generated convolution kernel's window, from its PrimFunc's ``aot.params`` and
    its tensors (NHWC, batch 1; weights [1, KH, KW, O] or [O, KH, KW, I])."""
    tir = artifact.tir
    attrs = getattr(tir, "attrs", None) if tir is not None else None
    operator = str(attrs.get("aot.operator", "")) if attrs is not None else ""
    kind = DEPTHWISE if operator.startswith("depthwise_conv2d") else CONV
    if not operator.startswith(("depthwise_conv2d", "conv2d")):
        return None
    params = attrs.get("aot.params")
    if params is None or len(step.args) < 2:
        return None
    data, weight = (lowered.tensors[t].shape for t in step.args[:2])
    out = tuple(int(d) for d in params["out_shape"])
    if len(data) != 4 or len(weight) != 4 or len(out) != 4 or data[0] != 1:
        return None
    return Window(
        kind, (int(data[1]), int(data[2])), (out[1], out[2]), int(data[3]), out[3],
        (int(weight[1]), int(weight[2])), tuple(int(v) for v in params["strides"]),
        tuple(int(v) for v in params["dilation"]), int(params["padding"][0]),
        int(params["padding"][1]), step.label,
    )  # fmt: skip


def apply_in_place(lowered: Any, choices: Sequence[InPlace], io_in_pool: bool) -> Any:
    """The lowered model with each chosen convolution run in place over one buffer:
    in bands, or its own code as it is with an ``aliased`` artifact. Each must be one of
    ``candidates(lowered, io_in_pool)``, once. One check serves them all: putting one in
    place leaves the others safe, as each one's input dies at its own step, so two share
    no tensor but in a chain, where one's output is the next one's input."""
    found = {c.step.outputs[0] for c in candidates(lowered, io_in_pool)}
    outputs = [choice.output for choice in choices]
    for output in outputs:
        if output not in found or outputs.count(output) != 1:
            raise InternalError(f"tensor {output} is not written by an in-place convolution")
    return _apply(lowered, choices)


def _apply(lowered: Any, choices: Sequence[InPlace]) -> Any:
    """``apply_in_place`` for choices made from ``candidates`` of ``lowered``: by what
    each carries, at its step's position (in place, a step stays where it is)."""
    position = {step.outputs[0]: k for k, step in enumerate(lowered.steps) if step.outputs}
    shared = dict(lowered.shared)
    offsets = dict(lowered.shared_offsets)
    for choice in choices:
        step = lowered.steps[position[choice.output]]
        if choice.whole_shift is None:
            plan = plan_patches([choice.window], (choice.bands, 1))
            if choice.reverse:
                plan = replace(plan, tiles=plan.tiles[::-1])
            symbol = f"{step.kernel}_in_place{step.index}"
            lowered = with_stage(lowered, [(step, choice.window)], plan, symbol, True)
        elif choice.reverse:
            raise InternalError(f"{step.label}: a generated kernel runs its rows from the first")
        else:
            lowered = _aliased(lowered, step)
        shared[choice.output] = step.args[0]
        offsets[choice.output] = choice.shift if choice.reverse else -choice.shift
    return replace(lowered, shared=shared, shared_offsets=offsets)


def _aliased(lowered: Any, step: Any) -> Any:
    """``step`` calling a copy of its kernel emitted for an output that shares a buffer
    with its input; the original stays for the steps that still call it."""
    symbol = f"{step.kernel}_in_place"
    steps = tuple(replace(s, kernel=symbol) if s is step else s for s in lowered.steps)
    used = {s.kernel for s in steps}
    artifacts = [a for a in lowered.artifacts if a.symbol in used]
    if symbol not in {a.symbol for a in artifacts}:
        original = next(a for a in lowered.artifacts if a.symbol == step.kernel)
        artifacts.append(replace(original, symbol=symbol, aliased=True))
    return replace(lowered, steps=steps, artifacts=tuple(artifacts))


@dataclass(frozen=True)
class InPlaceChoice:
    """In-place steps that lower the model's peak to ``ram_bytes``, with the kernel calls
    their bands add."""

    steps: tuple[InPlace, ...]
    ram_bytes: int
    extra_calls: int
    extra_instructions: int  # estimated: INSTRUCTIONS_PER_BAND and _PER_BAND_CHANNEL


def _top(live: Sequence[int]) -> tuple[int, int]:
    """The peak and how many steps reach it: a move that takes one of several steps off
    the peak is progress."""
    peak = max(live, default=0)
    return peak, list(live).count(peak)


def _options(candidate: Candidate) -> list[tuple[int, bool]]:
    """(bands, reverse) a candidate may run with: generated kernels one call from the
    first row; bands of each ROWS_PER_BAND height, either way."""
    if candidate.whole_shift is not None:
        return [(0, False)]
    heights = candidate.window.out_hw[0]
    bands = sorted({-(-heights // rows) for rows in ROWS_PER_BAND} - {1} or {1})
    return [(b, reverse) for b in bands for reverse in (False, True)]


def _chains(found: Sequence[Candidate]) -> list[list[Candidate]]:
    """The candidates in runs where each reads the output of the one before."""
    by_source = {c.step.args[0]: c for c in found}
    starts = [c for c in found if not any(c.step.args[0] == d.step.outputs[0] for d in found)]
    runs = []
    for first in starts:
        run = [first]
        while run[-1].step.outputs[0] in by_source:
            run.append(by_source[run[-1].step.outputs[0]])
        runs.append(run)
    return runs


def _moves(found: Sequence[Candidate], at_peak: set[int]) -> list[list[InPlace]]:
    """What the search tries: each candidate at the peak alone, with each of its options;
    and every run of a chain through one, each member in one-row bands (a generated
    kernel as it is), the directions alternating from either: putting one convolution of
    a chain in place makes its input's buffer a shift larger while the step before runs,
    which only that step in place too takes back."""
    moves = []
    for candidate in found:
        if candidate.step.index in at_peak:
            for bands, reverse in _options(candidate):
                moves.append([candidate.choice(bands, reverse)])
    for run in _chains(found):
        peaks = [k for k, c in enumerate(run) if c.step.index in at_peak]
        if not peaks:
            continue
        for first in range(0, peaks[-1] + 1):
            for stop in range(max(first, peaks[0]) + 1, len(run) + 1):
                if stop - first < 2:
                    continue
                for flip in (False, True):
                    members = []
                    for k, c in enumerate(run[first:stop]):
                        whole = c.whole_shift is not None
                        bands = 0 if whole else c.window.out_hw[0]
                        reverse = not whole and (k % 2 == 1) != flip
                        members.append(c.choice(bands, reverse))
                    moves.append(members)
    return moves


def choose_in_place(lowered: Any, io_in_pool: bool) -> list[InPlaceChoice]:
    """Greedy: while the steps at the model's peak include a candidate, make the move
    (``_moves``) that lowers the peak, or the number of steps at it, the most, fewer
    calls first on a tie; then give each chosen step the fewest bands that keep the
    peak. Each time the peak falls, a choice: the steps so far, by RAM, each with more
    calls than the one before. RAM is the planner's fixed-order peak
    (aot.planning.liveness.live_bytes)."""
    from aot.planning.liveness import live_bytes

    current = lowered
    live = live_bytes(current, io_in_pool)
    base = max(live, default=0)
    chosen: list[InPlace] = []
    found: list[InPlaceChoice] = []
    while True:
        peak = max(live, default=0)
        at_peak = {k for k, v in enumerate(live) if v == peak}
        best = None
        for move in _moves(candidates(current, io_in_pool), at_peak):
            trial = _apply(current, move)
            trial_live = live_bytes(trial, io_in_pool)
            key = (_top(trial_live), sum(c.bands for c in move))
            if _top(trial_live) < _top(live) and (best is None or key < best[0]):
                best = (key, move, trial, trial_live)
        if best is None:
            return found
        _, move, current, live = best
        chosen.extend(move)
        ram = max(live, default=0)
        if ram < (found[-1].ram_bytes if found else base):
            steps = _fewest_bands(lowered, chosen, ram, io_in_pool)
            calls = sum(c.bands - 1 for c in steps if c.bands)
            found.append(InPlaceChoice(tuple(steps), ram, calls, _estimate(steps)))


def _fewest_bands(
    lowered: Any, chosen: Sequence[InPlace], ram: int, io_in_pool: bool
) -> list[InPlace]:
    """``chosen`` with each step's bands cut to the fewest (``ROWS_PER_BAND``) that keep
    the model's peak at ``ram``, from the first step on."""
    from aot.planning.liveness import peak_bytes

    steps = list(chosen)
    # The model with steps[:settled] in place as cut: a try puts in place only its own
    # step and those after it.
    settled_model, settled = lowered, 0
    for k, step in enumerate(steps):
        if not step.bands:
            continue
        for rows in reversed(ROWS_PER_BAND):
            bands = -(-step.bands // rows)
            if bands >= step.bands or bands < 2:
                continue
            if settled < k:
                settled_model, settled = _apply(settled_model, steps[settled:k]), k
            fewer = replace(step, bands=bands)
            if peak_bytes(_apply(settled_model, [fewer, *steps[k + 1 :]]), io_in_pool) <= ram:
                steps[k] = fewer
                break
    return steps


def _estimate(steps: Sequence[InPlace]) -> int:
    """Instructions the bands of ``steps`` add (a generated kernel run as it is: none)."""
    return sum(
        (step.bands - 1)
        * (INSTRUCTIONS_PER_BAND + INSTRUCTIONS_PER_BAND_CHANNEL * step.window.out_channels)
        for step in steps
        if step.bands
    )
