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
from dataclasses import dataclass
from typing import Any

import numpy as np

from aot.validate.compare import Tolerance
from aot.validate.report import SampleRef

EQUAL, WITHIN, DIFFERS, NOT_COMPARED = "equal", "within tolerance", "differs", "not compared"


@dataclass(frozen=True)
class StepComparison:
    """One tensor a step wrote, against the reference's tensor of the same name."""

    step: int
    label: str  # the source operators, "CONV_2D #2", as metadata.json's operators say
    backend: str
    tensor: str | None  # the source model's name for it; None: an internal tensor
    status: str  # EQUAL, WITHIN, DIFFERS or NOT_COMPARED
    source_operator: dict[str, Any] | None = None  # {"index", "type"} of its producer
    note: str = ""  # why it was not compared
    elements: int = 0
    differing: int = 0  # elements outside the tolerance
    max_abs_error: float | None = None  # quantized steps for integer tensors
    first_index: tuple[int, ...] | None = None  # of the first element outside the tolerance
    board_value: float | None = None
    reference_value: float | None = None

    @property
    def operator(self) -> str:
        """'CONV_2D #2 (operator 2 of the model)', or the step's label."""
        op = self.source_operator
        if op is None:
            return self.label
        return f"{op['type']} #{op['index']} (operator {op['index']} of the model)"

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> StepComparison:
        fields = dict(value)
        if fields.get("first_index") is not None:
            fields["first_index"] = tuple(fields["first_index"])
        return cls(**fields)


@dataclass(frozen=True)
class LayersReport:
    """Every step's outputs on one input set; ``first_difference`` is where it starts."""

    sample: SampleRef
    steps: tuple[StepComparison, ...]

    @property
    def first_difference(self) -> StepComparison | None:
        return next((s for s in self.steps if s.status == DIFFERS), None)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> LayersReport:
        sample = value["sample"]
        return cls(
            sample=SampleRef(sample["index"], sample.get("seed"), tuple(sample.get("files", ()))),
            steps=tuple(StepComparison.from_json(s) for s in value["steps"]),
        )

    def lines(self, folder: str) -> list[str]:
        counts = {status: 0 for status in (EQUAL, WITHIN, DIFFERS, NOT_COMPARED)}
        for step in self.steps:
            counts[step.status] += 1
        lines = [
            f"layers on {self.sample.describe(folder)}: {len(self.steps)} step output(s), "
            + ", ".join(f"{n} {status}" for status, n in counts.items() if n)
        ]
        rows = [("step", "operator", "backend", "result", "differing", "max abs err")]
        for step in self.steps:
            rows.append(
                (
                    str(step.step),
                    step.label,
                    step.backend,
                    step.status if not step.note else f"{step.status} ({step.note})",
                    "-" if step.status == NOT_COMPARED else f"{step.differing}/{step.elements}",
                    "-" if step.max_abs_error is None else f"{step.max_abs_error:g}",
                )
            )
        widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
        for row in rows:
            lines.append("  " + "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
        first = self.first_difference
        if first is None:
            lines.append("every compared step output equals the reference within the tolerance")
            return lines
        where = "" if first.first_index is None else f" at {list(first.first_index)}"
        lines.append(
            f"first difference: step {first.step}, {first.operator} on {first.backend}: "
            f"'{first.tensor}' differs in {first.differing} of {first.elements} elements, the "
            f"first{where}: board {_value(first.board_value)}, reference "
            f"{_value(first.reference_value)}; every step before it equals the reference, so "
            "the difference starts in this operator (its constants or its kernel)"
        )
        return lines


def _value(value: float | None) -> str:
    if value is None:
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def compare_layers(
    metadata: Mapping[str, Any],
    sample: SampleRef,
    board: Callable[[int], list[bytes]],
    reference: Mapping[str, np.ndarray | None],
    tolerance: Tolerance,
    progress: Callable[[str], None] | None = None,
) -> LayersReport:
    """Each step's outputs (``board(step)``: the bytes it wrote, in metadata's order)
    against ``reference`` (the source model's tensors by name)."""
    operators = metadata["operators"]
    traced = metadata["trace"]["steps"]
    results: list[StepComparison] = []
    for done, entry in enumerate(traced):
        index = entry["step"]
        op = operators[index]
        wanted = [o for o in entry["outputs"] if o["tensor"]]
        got = board(index) if wanted else []
        for position, out in enumerate(entry["outputs"]):
            common = {
                "step": index,
                "label": op["label"],
                "backend": op["backend"],
                "tensor": out["tensor"],
                "source_operator": _producer(op["source_operators"], out["tensor"]),
            }
            if not out["tensor"]:
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


def _producer(sources: Sequence[dict[str, Any]], tensor: str | None) -> dict[str, Any] | None:
    """The source operator whose output the tensor is (else the step's last one)."""
    if not sources:
        return None
    chosen = next((s for s in sources if tensor and s.get("output") == tensor), sources[-1])
    return {"index": chosen["index"], "type": chosen["type"]}


def _compare(
    common: dict[str, Any],
    out: Mapping[str, Any],
    data: bytes,
    reference: Mapping[str, np.ndarray | None],
    tolerance: Tolerance,
) -> StepComparison:
    name = out["tensor"]
    if name not in reference:
        return StepComparison(**common, status=NOT_COMPARED, note="not in the reference")
    expected = reference[name]
    if expected is None:
        return StepComparison(
            **common, status=NOT_COMPARED, note="two reference tensors have this name"
        )
    dtype = np.dtype(out["dtype"])
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
