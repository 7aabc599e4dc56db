"""Top-1 accuracy over labelled inputs (``aot validate --inputs DIR --labels FILE``), of the
board, the reference and a float model (``--float-model``), for the first classifier output.

The labels file has one input set a line, ``NAME LABEL`` (a comma, tab or spaces between):
NAME is the set's name in the inputs folder (``cat_01`` for ``cat_01.npy``, or for
``cat_01.0.npy`` ... with several inputs; ``.npy`` may be written), LABEL the index of the
right class. Blank lines and lines starting with ``#`` are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aot.artifacts.manifest import IOTensor, LibraryManifest
from aot.errors import ConfigError
from aot.validate.compare import is_classifier_output, top1
from aot.validate.inputs import Sample
from aot.validate.report import Accuracy

_LINE = re.compile(r"^\s*(?P<name>[^\s,]+)\s*[,\s]\s*(?P<label>-?\d+)\s*$")


def read_labels(path: str | Path) -> dict[str, int]:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"labels file {path} does not exist") from None
    except UnicodeDecodeError:
        raise ConfigError(f"labels file {path} is not text: give NAME LABEL lines") from None
    labels: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise ConfigError(
                f"labels file {path}, line {number}: {line.strip()!r} is not 'NAME LABEL' "
                "(the input set's name, then the index of its class)"
            )
        name = match["name"].removesuffix(".npy")
        if name in labels:
            raise ConfigError(f"labels file {path}, line {number}: '{name}' is labelled twice")
        labels[name] = int(match["label"])
    if not labels:
        raise ConfigError(f"labels file {path} holds no 'NAME LABEL' line")
    return labels


def sample_name(sample: Sample, inputs: int) -> str:
    stem = Path(sample.files[0]).name.removesuffix(".npy")
    return stem.rpartition(".")[0] if inputs > 1 else stem


def classifier_output(specs: Sequence[IOTensor]) -> int:
    for index, spec in enumerate(specs):
        if is_classifier_output(tuple(spec.shape)):
            return index
    shapes = ", ".join(f"{s.name} {list(s.shape)}" for s in specs)
    raise ConfigError(
        f"--labels needs a classifier output (one row of class scores); the model gives {shapes}"
    )


def dequantized(arrays: list[np.ndarray], specs: Sequence[IOTensor]) -> list[np.ndarray]:
    """What a float model takes for the int8 inputs: (q - zero point) x scale."""
    result = []
    for array, spec in zip(arrays, specs, strict=True):
        quantization = spec.quantization
        if quantization is None or not quantization.scale:
            result.append(array.astype(np.float32))
            continue
        scale = np.float32(quantization.scale[0])
        zero = np.int32((quantization.zero_point or (0,))[0])
        result.append(((array.astype(np.int32) - zero) * scale).astype(np.float32))
    return result


@dataclass
class AccuracyCount:
    """Running counts over the labelled input sets."""

    labels: dict[str, int]
    output: int  # the classifier output's position
    output_name: str
    inputs: int
    float_reference: Any = None  # a Reference for --float-model
    float_model: str | None = None
    input_specs: Sequence[IOTensor] = ()
    labelled: int = 0
    board: int = 0
    reference: int = 0
    float_correct: int = 0
    float_agreement: int = 0
    seen: set[str] = field(default_factory=set)

    def add(self, sample: Sample, got: list[np.ndarray], expected: list[np.ndarray]) -> None:
        name = sample_name(sample, self.inputs)
        self.seen.add(name)
        if name not in self.labels:
            return
        label = self.labels[name]
        board = top1(got[self.output])
        self.labelled += 1
        self.board += board == label
        self.reference += top1(expected[self.output]) == label
        if self.float_reference is not None:
            floats = self.float_reference.run(dequantized(sample.arrays, self.input_specs))
            best = top1(floats[self.output])
            self.float_correct += best == label
            self.float_agreement += best == board

    def result(self, labels_path: str | Path) -> Accuracy:
        unknown = sorted(set(self.labels) - self.seen)
        if unknown:
            shown = ", ".join(unknown[:3]) + (" ..." if len(unknown) > 3 else "")
            raise ConfigError(
                f"labels file {labels_path} labels {len(unknown)} input set(s) the inputs "
                f"folder does not hold: {shown}"
            )
        has_float = self.float_reference is not None
        return Accuracy(
            output=self.output_name,
            labelled=self.labelled,
            board=self.board,
            reference=self.reference,
            float_model=self.float_model,
            float_correct=self.float_correct if has_float else None,
            float_agreement=self.float_agreement if has_float else None,
        )


def open_float_model(path: str | Path, manifest: LibraryManifest) -> Any:
    """The float model as a reference, checked to take float inputs of the built shapes."""
    from aot.validate.reference import open_reference

    reference = open_reference(path)
    for spec, declared in zip(manifest.inputs, reference.inputs, strict=False):
        if not declared.fits("float32", spec.shape):
            raise ConfigError(
                f"float model {path}: input '{declared.name}' is {declared.describe()}; it must "
                f"take float32 of the built model's shape {list(spec.shape)}"
            )
    if len(reference.inputs) != len(manifest.inputs):
        raise ConfigError(
            f"float model {path} takes {len(reference.inputs)} input(s); the built model takes "
            f"{len(manifest.inputs)}"
        )
    return reference
