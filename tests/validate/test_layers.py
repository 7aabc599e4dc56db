"""``aot validate --layers``: a --trace build compared operator by operator with LiteRT's
tensors names the first operator whose output differs (issue 19, acceptance 3).

The firmware is built from kws_ref_model with one int8 weight of one operator moved by 60
steps; validated against the original model, the first step that differs must be that
operator, every step before it equal. On the host for three operators (a convolution, a
depthwise convolution, the fully connected layer) and under QEMU on mps2_an386 for one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from validate_helpers import aot, consumers, int8_constant_arrays, moved_weight

from aot.testing.harness import build
from aot.testing.shared import mlperf_tiny

pytestmark = [pytest.mark.toolchain]

KWS = mlperf_tiny("kws_ref_model")


def _weights_of(model: Path, operator: int) -> tuple[str, int, int]:
    """The int8 constant array (name, offset, count) operator ``operator`` reads."""
    for name, offset, count in int8_constant_arrays(model):
        if consumers(model, name) == [operator]:
            return name, offset, count
    raise AssertionError(f"operator {operator} reads no int8 constant of its own")


def _layers(folder: Path, model: Path) -> dict:
    result = aot("validate", folder, model, "--layers", "--json", "-q", "-n", "4")
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)["layers"]


def _faulty_build(tmp_path: Path, operator: int, board: str) -> Path:
    _, offset, count = _weights_of(KWS, operator)
    faulty = tmp_path / "faulty.tflite"
    moved_weight(KWS, offset, count, faulty, seed=operator)
    return build(faulty, tmp_path / "out", board, "--trace")


@pytest.mark.parametrize("operator", [0, 5, 11], ids=["conv", "depthwise", "dense"])
def test_a_moved_weight_is_named_by_the_operator_that_reads_it(
    tmp_path: Path, operator: int
) -> None:
    layers = _layers(_faulty_build(tmp_path, operator, "host"), KWS)
    statuses = [s["status"] for s in layers["steps"]]
    first = statuses.index("differs")
    assert layers["steps"][first]["source_operator"]["index"] == operator
    assert all(status == "equal" for status in statuses[:first])
    step = layers["steps"][first]
    assert step["differing"] >= 1 and step["board_value"] != step["reference_value"]


def test_the_report_says_where_in_one_line(tmp_path: Path) -> None:
    folder = _faulty_build(tmp_path, 5, "host")
    result = aot("validate", folder, KWS, "--layers", "-q", "-n", "4")
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("first difference")]
    assert len(lines) == 1
    assert lines[0].startswith(
        "first difference: step 5, DEPTHWISE_CONV_2D #5 (operator 5 of the model) on cpu: '"
    )
    assert "every step before it equals the reference" in lines[0]


def test_a_correct_build_equals_the_reference_at_every_step(tmp_path: Path) -> None:
    folder = build(mlperf_tiny("vww_96_int8"), tmp_path / "vww", "host", "--trace")
    layers = _layers(folder, mlperf_tiny("vww_96_int8"))
    assert len(layers["steps"]) >= 25
    assert {s["status"] for s in layers["steps"]} == {"equal"}


def test_layers_without_a_trace_build_is_one_line(tmp_path: Path) -> None:
    folder = build(KWS, tmp_path / "plain", "host")
    result = aot("validate", folder, KWS, "--layers", "-n", "2")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: --layers needs a build whose model can stop after each operator; {folder} "
        "was built without it: rebuild it with 'aot build ... --trace'"
    )
    assert "trace" not in json.loads((folder / "metadata.json").read_text())
    executor = (folder / "model" / "src" / "aot_kws_ref_model.c").read_text()
    assert "stop_after" not in executor  # a build without --trace has no stop in run()


@pytest.mark.emulator
def test_on_the_emulator_the_moved_weight_is_named_too(tmp_path: Path) -> None:
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found on PATH (bash scripts/setup.sh installs it)")
    layers = _layers(_faulty_build(tmp_path, 4, "mps2_an386"), KWS)
    first = next(s for s in layers["steps"] if s["status"] == "differs")
    assert first["source_operator"] == {"index": 4, "type": "CONV_2D"}
    assert all(s["status"] == "equal" for s in layers["steps"][: first["step"]])
