"""``aot validate --inputs DIR --labels FILE [--float-model F]``: top-1 agreement with the
reference on every classifier output, accuracy on labelled sets, and the float model's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aot.artifacts.manifest import IOTensor
from aot.runner import fill_inputs
from aot.testing import run_tflite_reference
from aot.testing.harness import build
from aot.validate.accuracy import read_labels
from aot.validate.compare import is_classifier_output

CHECKOUT = Path(__file__).resolve().parents[2]
FIXTURES = CHECKOUT / "tests" / "fixtures" / "validate"
MODEL = FIXTURES / "saturating_classifier.tflite"
FLOAT_MODEL = FIXTURES / "saturating_classifier_float.tflite"


def aot(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aot", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
    )


@pytest.mark.unit
def tensor(spec: dict) -> IOTensor:
    """A manifest's input or output from its JSON."""
    return IOTensor.from_json(spec)


def tensors(specs: list[dict]) -> list[IOTensor]:
    return [tensor(s) for s in specs]


def test_classifier_outputs_are_one_row_of_scores() -> None:
    assert is_classifier_output((1, 6)) and is_classifier_output((10,))
    assert is_classifier_output((1, 1, 12))
    assert not is_classifier_output((1, 1)) and not is_classifier_output((2, 6))
    assert not is_classifier_output((1, 12, 12, 3))


@pytest.mark.unit
def test_labels_file_lines_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "labels.txt"
    path.write_text("# name label\ncat_01 3\ndog_02.npy,1\n\nbird\t0\n")
    assert read_labels(path) == {"cat_01": 3, "dog_02": 1, "bird": 0}
    path.write_text("cat_01 three\n")
    with pytest.raises(Exception, match=r"line 1: 'cat_01 three' is not 'NAME LABEL'"):
        read_labels(path)
    path.write_text("a 1\na 2\n")
    with pytest.raises(Exception, match="'a' is labelled twice"):
        read_labels(path)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory) -> tuple[Path, Path, Path, list[int]]:
    """A host build, 8 input sets (spread seeds) and labels: the reference's best class for
    the first 6 sets, a wrong class for the last 2."""
    root = tmp_path_factory.mktemp("accuracy")
    folder = build(MODEL, root / "out")
    specs = json.loads((folder / "metadata.json").read_text())["inputs"]
    inputs = root / "inputs"
    inputs.mkdir()
    lines, best = [], []
    for seed in range(8):
        (array,) = fill_inputs(tensors(specs), "spread", seed)
        np.save(inputs / f"set_{seed}.npy", array)
        top = int(np.argmax(run_tflite_reference(MODEL, [array])[0]))
        best.append(top)
        lines.append(f"set_{seed} {top if seed < 6 else (top + 1) % 6}")
    labels = root / "labels.txt"
    labels.write_text("\n".join(lines) + "\n")
    return folder, inputs, labels, best


@pytest.mark.toolchain
def test_accuracy_on_labelled_inputs_and_the_float_model(labelled) -> None:
    folder, inputs, labels, _ = labelled
    result = aot("validate", folder, MODEL, "--inputs", inputs, "--labels", labels, "-q")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "top-1 agreement of 'StatefulPartitionedCall_1:0' with the reference: 8/8" in lines
    assert (
        "top-1 accuracy of 'StatefulPartitionedCall_1:0' on 8 labelled input sets: board "
        "6/8 (75.0%), reference 6/8 (75.0%)"
    ) in lines
    result = aot(
        "validate", folder, MODEL, "--inputs", inputs, "--labels", labels,
        "--float-model", FLOAT_MODEL, "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    accuracy = json.loads(result.stdout)["accuracy"]
    assert accuracy["labelled"] == 8 and accuracy["board"] == accuracy["reference"] == 6
    assert accuracy["float_model"] == str(FLOAT_MODEL)
    # The int8 model tracks its float model: at least 6 of the 8 best classes agree.
    assert accuracy["float_agreement"] >= 6 and accuracy["float_correct"] is not None


@pytest.mark.toolchain
def test_labels_need_an_inputs_folder_and_known_names(labelled, tmp_path: Path) -> None:
    folder, inputs, labels, _ = labelled
    result = aot("validate", folder, MODEL, "--labels", labels)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: --labels labels the sets of an inputs folder: add --inputs DIR"
    )
    stray = tmp_path / "labels.txt"
    stray.write_text(labels.read_text() + "set_99 2\n")
    result = aot("validate", folder, MODEL, "--inputs", inputs, "--labels", stray)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: labels file {stray} labels 1 input set(s) the inputs folder does not hold: set_99"
    )
