"""The validation report: per output the match counts and errors, as JSON and as a table."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aot.errors import ConfigError
from aot.reports import REPORT_SCHEMA_VERSION  # shared with aot run and aot bench


@dataclass(frozen=True)
class SampleRef:
    """Which input set something happened on, so it can be run again alone."""

    index: int
    seed: int | None = None
    files: tuple[str, ...] = ()

    def describe(self, folder: str) -> str:
        if self.seed is not None:
            return f"input {self.index} (aot run {folder} --fill spread --seed {self.seed})"
        shown = " ".join(f"-i {f}" for f in self.files)
        return f"input {self.index} (aot run {folder} {shown})"


@dataclass(frozen=True)
class OutputReport:
    name: str
    dtype: str
    shape: tuple[int, ...]
    quantized: bool
    samples: int
    exact: int  # input sets whose output equals the reference bit for bit
    passed: int  # ... within the tolerance (== exact for integer outputs by default)
    max_abs_error: float  # quantized steps for integer outputs
    max_abs_error_real: float | None = None  # dequantized (quantized outputs)
    mean_abs_error: float | None = None  # float outputs
    rmse: float | None = None  # float outputs
    min_cosine: float | None = None  # float outputs: the worst input set's
    first_mismatch: SampleRef | None = None  # first input set that is not exact
    first_failure: SampleRef | None = None  # first one outside the tolerance
    top1_agreement: int | None = None  # classifier outputs: sets whose best class agrees

    @property
    def ok(self) -> bool:
        return self.passed == self.samples


@dataclass(frozen=True)
class Accuracy:
    """Top-1 accuracy over labelled input sets (``--labels``), of the board, the reference
    and, when given, the float model (``--float-model``)."""

    output: str  # the classifier output judged
    labelled: int  # input sets with a label
    board: int  # ... whose best class on the board is the label
    reference: int
    float_model: str | None = None
    float_correct: int | None = None
    float_agreement: int | None = None  # sets where the board's best class is the float's

    def lines(self) -> list[str]:
        def share(count: int) -> str:
            return f"{count}/{self.labelled} ({100.0 * count / max(self.labelled, 1):.1f}%)"

        lines = [
            f"top-1 accuracy of '{self.output}' on {self.labelled} labelled input sets: board "
            f"{share(self.board)}, reference {share(self.reference)}"
            + ("" if self.float_correct is None else f", float model {share(self.float_correct)}")
        ]
        if self.float_agreement is not None:
            lines.append(
                f"top-1 agreement with the float model {self.float_model}: "
                f"{share(self.float_agreement)}"
            )
        return lines


# What --layers says of one step's output (aot.validate.layers compares them).
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


@dataclass(frozen=True)
class ValidationReport:
    folder: str
    model: str  # the reference model file
    model_name: str  # the model library's name
    board: str
    reference: str  # the runtime, e.g. "LiteRT 2.3.0 reference kernels (BUILTIN_REF)"
    same_model_as_build: bool | None  # the reference file's sha256 equals the built one's
    inputs: str  # "random" or the inputs folder
    seed: int | None
    samples: int
    samples_passed: int
    tolerance: dict[str, Any]
    outputs: tuple[OutputReport, ...]
    saved: tuple[str, ...] = field(default=())
    distinct_outputs: int | None = None  # distinct output sets the board gave
    warnings: tuple[str, ...] = field(default=())
    accuracy: Accuracy | None = None  # --labels: top-1 against the labels
    layers: LayersReport | None = None  # --layers: every step's output on one input set

    @property
    def passed(self) -> bool:
        return self.samples > 0 and self.samples_passed == self.samples

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        for out in document["outputs"]:
            # JSON has no infinity: a NaN or inf where the reference has a number is null.
            for key in ("max_abs_error", "mean_abs_error", "rmse"):
                if out[key] is not None and not math.isfinite(out[key]):
                    out[key] = None
        document["schema_version"] = REPORT_SCHEMA_VERSION
        document["passed"] = self.passed
        return document

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> ValidationReport:
        version = document.get("schema_version")
        if version != REPORT_SCHEMA_VERSION:
            raise ConfigError(
                f"validation report has schema version {version}; this aot reads version "
                f"{REPORT_SCHEMA_VERSION}"
            )
        fields = {k: v for k, v in document.items() if k not in ("schema_version", "passed")}
        fields["outputs"] = tuple(_output_from_json(o) for o in fields["outputs"])
        fields["saved"] = tuple(fields.get("saved", ()))
        fields["warnings"] = tuple(fields.get("warnings", ()))
        if fields.get("accuracy") is not None:
            fields["accuracy"] = Accuracy(**fields["accuracy"])
        if fields.get("layers") is not None:
            fields["layers"] = LayersReport.from_json(fields["layers"])
        return cls(**fields)


def _sample_from_json(value: dict[str, Any] | None) -> SampleRef | None:
    if value is None:
        return None
    return SampleRef(value["index"], value.get("seed"), tuple(value.get("files", ())))


def _output_from_json(value: dict[str, Any]) -> OutputReport:
    fields = dict(value)
    fields["shape"] = tuple(fields["shape"])
    if fields["max_abs_error"] is None:
        fields["max_abs_error"] = math.inf
    fields["first_mismatch"] = _sample_from_json(fields.get("first_mismatch"))
    fields["first_failure"] = _sample_from_json(fields.get("first_failure"))
    return OutputReport(**fields)


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def format_report(report: ValidationReport) -> list[str]:
    """The human report: a header, one table row per output, the verdict."""
    where = (
        "random inputs (spread around the zero point)"
        if report.inputs == "random"
        else f"inputs from {report.inputs}"
    )
    seed = f", seed {report.seed}" if report.seed is not None else ""
    lines = [
        f"model '{report.model_name}' on {report.board}: {report.samples} {where}{seed}",
        f"reference {report.model} in {report.reference}",
    ]
    if report.same_model_as_build is False:
        lines.append(f"note: {report.model} is not the model {report.folder} was built from")
    header = ("output", "type", "exact", "passed", "max abs err", "mean abs", "rmse", "cosine")
    rows = [header]
    for out in report.outputs:
        n = out.samples
        if out.dtype.startswith(("int", "uint")):
            steps = int(out.max_abs_error)
            error = f"{steps} step{'s' if steps != 1 else ''}"
            if out.max_abs_error_real is not None:
                error += f" ({_number(float(out.max_abs_error_real))})"
        else:
            error = _number(out.max_abs_error)
        rows.append(
            (
                out.name,
                f"{out.dtype}[{'x'.join(map(str, out.shape))}]",
                f"{out.exact}/{n}",
                f"{out.passed}/{n}",
                error,
                _number(out.mean_abs_error),
                _number(out.rmse),
                "-" if out.min_cosine is None else f"{out.min_cosine:.6f}",
            )
        )
    widths = [max(len(str(row[c])) for row in rows) for c in range(len(header))]
    for row in rows:
        lines.append("  " + "  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
    tol = report.tolerance
    lines.append(
        f"pass rule: integer outputs within {tol['max_steps']} step(s); float outputs within "
        f"atol {tol['atol']:g} + rtol {tol['rtol']:g} and cosine >= {tol['min_cosine']:g}"
    )
    for out in report.outputs:
        if out.first_failure is not None:
            lines.append(
                f"first failure of '{out.name}': {out.first_failure.describe(report.folder)}"
            )
    if report.saved:
        where = sorted({str(Path(path).parent) for path in report.saved})
        lines.append(
            f"saved {len(report.saved)} .npy file(s) of failing inputs in {', '.join(where)}"
        )
    if report.distinct_outputs is not None:
        lines.append(
            f"outputs: {report.distinct_outputs} distinct among {report.samples} input sets"
        )
    for out in report.outputs:
        if out.top1_agreement is not None:
            lines.append(
                f"top-1 agreement of '{out.name}' with the reference: "
                f"{out.top1_agreement}/{out.samples}"
            )
    if report.accuracy is not None:
        lines += report.accuracy.lines()
    if report.layers is not None:
        lines += report.layers.lines(report.folder)
    lines += [f"warning: {warning}" for warning in report.warnings]
    failed = report.samples - report.samples_passed
    if report.passed:
        lines.append(f"PASS: {report.samples_passed}/{report.samples} input sets")
    else:
        lines.append(f"FAIL: {failed} of {report.samples} input sets outside the tolerance")
    return lines
