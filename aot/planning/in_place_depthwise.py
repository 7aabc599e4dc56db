"""In-place depthwise convolution: the output written over the input rows already read.

A depthwise convolution run as a whole operator keeps its input and its output live at
once. Run in bands of whole output rows, one kernel call per band, it can write its
output into the same buffer as its input: output row r depends only on input rows up to
a few below r * stride, and once a band is done no later band reads the input rows
above its own first window row. So the output starts ``in_place_shift`` bytes before
the input (aot/planning/patches.py works the shift out: about (rows per band + padding)
output rows) and each band writes only bytes that no band still reads. The buffer
holds max(shift + input, output) bytes instead of input + output.

Two ways to run such a step, each with its own shift:

- **In bands** (a hand-written kernel: scalar, DSP, Helium). Each band is the kernel's
  own prepared call with a band's geometry, as in a patch stage (aot/kernels/patches.py
  with ``direct_output``): it reads the whole input with its padding moved to the band's
  first row and writes its rows straight into the output. A call never writes a byte it
  reads, so the kernel may read and write in any order within a call (and keep its
  ``restrict`` pointers). Fewer rows per band: a smaller shift, more calls.
- **As it is** (TVM's generated kernel, compiled for the whole shape). Its backend shows
  the shift safe for its code (``Backend.in_place_shift``; for the CPU backend,
  aot/tir_to_c/analysis.py ``raster_in_place_shift``: one loop nest over output rows,
  each row writing below the lowest input index it and later rows read), and the step
  calls a copy of the kernel printed without ``restrict`` (``Artifact.aliased``). No
  call is added.

A step takes part when its input is an intermediate (or, with --io-in-pool, the model's
input) that no other step reads, and neither tensor shares memory already. The planner
sees one buffer (the input's, ``LoweredModel.shared`` with ``shared_offsets``) live
from the input's writer to the output's last reader; before the depthwise it is
``shift`` bytes larger than the input alone, which is why ``choose_in_place`` keeps
only the steps that lower the model's peak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from aot.errors import InternalError
from aot.planning.patches import DEPTHWISE, Window, in_place_shift, plan_patches

# The output's start is this aligned, as every buffer the planner places.
SHIFT_ALIGNMENT = 16
# Output rows per band the search tries: fewer rows per band, a smaller shift and more
# kernel calls (each about INSTRUCTIONS_PER_CALL of aot.planning.patch_stage).
ROWS_PER_BAND = (1, 2, 4, 8)


@dataclass(frozen=True)
class InPlace:
    """The depthwise step that writes tensor ``output`` runs in place in ``bands`` bands
    (0: its generated kernel as it is, ``Candidate.whole_shift``)."""

    output: int
    bands: int
    label: str = ""


def _align(size: int) -> int:
    return -(-size // SHIFT_ALIGNMENT) * SHIFT_ALIGNMENT


def shift_bytes(window: Window, bands: int) -> int:
    """The output's start before the input's, aligned as a buffer."""
    return _align(in_place_shift(window, bands))


@dataclass(frozen=True)
class Candidate:
    """A depthwise step that can run in place: in bands (a kernel-backend step, whose
    params take a band's geometry) or, with ``whole_shift``, as it is (its backend showed
    that shift safe for its code, ``Backend.in_place_shift``)."""

    step: Any
    window: Window
    whole_shift: int | None = None

    def shift(self, bands: int) -> int:
        if self.whole_shift is not None:
            return _align(self.whole_shift)
        return shift_bytes(self.window, bands)


def candidates(lowered: Any, io_in_pool: bool) -> list[Candidate]:
    """The depthwise steps that can run in place (the module's docstring)."""
    from aot.lowering import INPUT, INTERMEDIATE
    from aot.planning.patch_stage import step_window

    readers: dict[int, int] = {}
    for step in lowered.steps:
        for tensor_id in set(step.args) - set(step.outputs):
            readers[tensor_id] = readers.get(tensor_id, 0) + 1
    sharing = set(lowered.shared) | set(lowered.shared.values())
    by_symbol = {a.symbol: a for a in lowered.artifacts}
    kinds = (INTERMEDIATE, INPUT) if io_in_pool else (INTERMEDIATE,)
    found = []
    for step in lowered.steps:
        if len(step.outputs) != 1 or not step.args:
            continue
        source, output = step.args[0], step.outputs[0]
        if lowered.tensors[source].kind not in kinds:
            continue
        if lowered.tensors[output].kind != INTERMEDIATE or readers.get(source) != 1:
            continue
        if {source, output} & sharing:
            continue
        artifact = by_symbol[step.kernel]
        window = step_window(step, artifact)
        if window is not None:
            if window.kind == DEPTHWISE and window.kernel != (1, 1):
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
    """A generated depthwise kernel's window, from its PrimFunc's ``aot.params`` and its
    tensors (NHWC, batch 1, weights [1, KH, KW, O])."""
    tir = artifact.tir
    attrs = getattr(tir, "attrs", None) if tir is not None else None
    if attrs is None or not str(attrs.get("aot.operator", "")).startswith("depthwise_conv2d"):
        return None
    params = attrs.get("aot.params")
    if params is None or len(step.args) < 2:
        return None
    data, weight = (lowered.tensors[t].shape for t in step.args[:2])
    out = tuple(int(d) for d in params["out_shape"])
    if len(data) != 4 or len(weight) != 4 or len(out) != 4 or data[0] != 1:
        return None
    return Window(
        DEPTHWISE, (int(data[1]), int(data[2])), (out[1], out[2]), int(data[3]), out[3],
        (int(weight[1]), int(weight[2])), tuple(int(v) for v in params["strides"]),
        tuple(int(v) for v in params["dilation"]), int(params["padding"][0]),
        int(params["padding"][1]), step.label,
    )  # fmt: skip


def apply_in_place(lowered: Any, choices: Sequence[InPlace]) -> Any:
    """The lowered model with each chosen depthwise step run in place over one buffer:
    in bands, or its own code as it is with an ``aliased`` artifact."""
    from aot.planning.patch_stage import with_stage

    shared = dict(lowered.shared)
    offsets = dict(lowered.shared_offsets)
    for choice in choices:
        by_output = {c.step.outputs[0]: c for c in candidates(lowered, True)}
        if choice.output not in by_output:
            raise InternalError(f"tensor {choice.output} is not written by an in-place depthwise")
        candidate = by_output[choice.output]
        step = candidate.step
        if candidate.whole_shift is None:
            plan = plan_patches([candidate.window], (choice.bands, 1))
            symbol = f"{step.kernel}_in_place{step.index}"
            lowered = with_stage(lowered, [(step, candidate.window)], plan, symbol, True)
        else:
            lowered = _aliased(lowered, step)
        shared[choice.output] = step.args[0]
        offsets[choice.output] = -candidate.shift(choice.bands)
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


def peak_bytes(lowered: Any, io_in_pool: bool) -> int:
    """The fixed-order peak the planner starts from: the buffers of
    aot.planning.liveness (shared tensors as one), live at once."""
    from aot.planning.core import activation_lower_bound
    from aot.planning.liveness import workspace_buffers

    return activation_lower_bound(workspace_buffers(lowered, SHIFT_ALIGNMENT, io_in_pool))


@dataclass(frozen=True)
class InPlaceChoice:
    """In-place steps that lower the model's peak to ``ram_bytes``, with the kernel calls
    their bands add."""

    steps: tuple[InPlace, ...]
    ram_bytes: int
    extra_calls: int


def choose_in_place(lowered: Any, io_in_pool: bool) -> list[InPlaceChoice]:
    """Per band height (``ROWS_PER_BAND``): every candidate in place, then the steps whose
    removal keeps the peak dropped again (each costs calls and nothing else); the choices
    that lower the model's peak, by RAM then calls, none beaten on both."""
    base = peak_bytes(lowered, io_in_pool)
    found = candidates(lowered, io_in_pool)
    options = []
    for rows in ROWS_PER_BAND:
        chosen = [
            InPlace(c.step.outputs[0], _bands(c, rows), c.step.label)
            for c in found
            if c.whole_shift is not None or rows == 1 or _bands(c, rows) > 1
        ]
        if not chosen or (rows > 1 and all(c.whole_shift is not None for c in found)):
            continue
        ram = peak_bytes(apply_in_place(lowered, chosen), io_in_pool)
        if ram >= base:
            continue
        for choice in list(chosen):
            fewer = [c for c in chosen if c is not choice]
            if peak_bytes(apply_in_place(lowered, fewer), io_in_pool) <= ram:
                chosen = fewer
        calls = sum(c.bands - 1 for c in chosen if c.bands)
        options.append(InPlaceChoice(tuple(chosen), ram, calls))
    kept: list[InPlaceChoice] = []
    for option in sorted(options, key=lambda o: (o.extra_calls, o.ram_bytes)):
        if not kept or option.ram_bytes < kept[-1].ram_bytes:
            kept.append(option)
    return kept


def _bands(candidate: Candidate, rows: int) -> int:
    """Bands of up to ``rows`` output rows (0 for a kernel run as it is)."""
    if candidate.whole_shift is not None:
        return 0
    return -(-candidate.window.out_hw[0] // rows)
