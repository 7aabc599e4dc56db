"""``aot validate --layers``: every executor step's output against the reference tensor of
the same name, on one input set, to name the first operator whose output differs.

The firmware must be a ``--trace`` build: its run() stops after a chosen step and the
TRACE command returns what that step wrote (docs/protocol.md). Each step is one run from
the start that stops there, so a step's buffers are read before a later step reuses
them. The reference keeps every tensor (LiteRT's preserve-all-tensors mode), and a step's
output is matched to the source model's tensor its last operator produces (metadata.json's
``trace``). Steps run in the executor's order, so the first step that differs is where the
difference starts: every step before it equals the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from aot.artifacts.manifest import LibraryManifest, SourceOperatorRef, TraceOutput
from aot.validate.compare import Tolerance
from aot.validate.report import (
    DIFFERS,
    EQUAL,
    NOT_COMPARED,
    WITHIN,
    LayersReport,
    SampleRef,
    StepComparison,
)

__all__ = ["LayersReport", "StepComparison", "compare_layers"]


def compare_layers(
    manifest: LibraryManifest,
    sample: SampleRef,
    board: Callable[[int], list[bytes]],
    reference: Mapping[str, np.ndarray | None],
    tolerance: Tolerance,
    progress: Callable[[str], None] | None = None,
) -> LayersReport:
    """Each step's outputs (``board(step)``: the bytes it wrote, in the trace's order)
    against ``reference`` (the source model's tensors by name)."""
    operators = manifest.operators
    traced = manifest.trace.steps if manifest.trace is not None else ()
    results: list[StepComparison] = []
    for done, entry in enumerate(traced):
        index = entry.step
        op = operators[index]
        wanted = [o for o in entry.outputs if o.tensor]
        got = board(index) if wanted else []
        for position, out in enumerate(entry.outputs):
            common = {
                "step": index,
                "label": op.label,
                "backend": op.backend,
                "tensor": out.tensor,
                "source_operator": _producer(op.source_operators, out.tensor),
            }
            if not out.tensor:
                results.append(
                    StepComparison(
                        **common, status=NOT_COMPARED, note="no tensor of the source model"
                    )
                )
                continue
            results.append(_compare(common, out, got[position], reference, tolerance))
        if progress is not None and done + 1 < len(traced) and (done + 1) % 10 == 0:
            progress(f"compared {done + 1}/{len(traced)} steps with the reference")
    return LayersReport(sample=sample, steps=tuple(results))


def _producer(sources: Sequence[SourceOperatorRef], tensor: str | None) -> dict[str, Any] | None:
    """The source operator whose output the tensor is (else the step's last one)."""
    if not sources:
        return None
    chosen = next((s for s in sources if tensor and s.output == tensor), sources[-1])
    return {"index": chosen.index, "type": chosen.type}


def _compare(
    common: dict[str, Any],
    out: TraceOutput,
    data: bytes,
    reference: Mapping[str, np.ndarray | None],
    tolerance: Tolerance,
) -> StepComparison:
    name = out.tensor
    if name not in reference:
        return StepComparison(**common, status=NOT_COMPARED, note="not in the reference")
    expected = reference[name]
    if expected is None:
        return StepComparison(
            **common, status=NOT_COMPARED, note="two reference tensors have this name"
        )
    dtype = np.dtype(out.dtype)
    if expected.dtype != dtype or expected.nbytes != len(data):
        return StepComparison(
            **common,
            status=NOT_COMPARED,
            note=f"the reference's is {expected.dtype}{list(expected.shape)}",
        )
    got = np.frombuffer(data, dtype=dtype).reshape(expected.shape)
    if dtype.kind in "iu":
        error = np.abs(got.astype(np.int64) - expected.astype(np.int64))
        outside = error > tolerance.max_steps
    else:
        error = np.abs(got.astype(np.float64) - expected.astype(np.float64))
        outside = ~np.isclose(
            got, expected, atol=tolerance.atol, rtol=tolerance.rtol, equal_nan=True
        )
    differing = int(np.count_nonzero(outside))
    exact = bool(np.array_equal(got, expected, equal_nan=dtype.kind == "f"))
    first = None
    board_value = reference_value = None
    if differing:
        flat = int(np.flatnonzero(outside.reshape(-1))[0])
        first = tuple(int(i) for i in np.unravel_index(flat, expected.shape))
        board_value = float(got.reshape(-1)[flat])
        reference_value = float(expected.reshape(-1)[flat])
    finite = error[np.isfinite(error)] if error.size else error
    return StepComparison(
        **common,
        status=EQUAL if exact else (DIFFERS if differing else WITHIN),
        elements=int(expected.size),
        differing=differing,
        max_abs_error=float(finite.max()) if finite.size else 0.0,
        first_index=first,
        board_value=board_value,
        reference_value=reference_value,
    )
