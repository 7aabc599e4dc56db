"""aot.validate.layers.compare_layers on hand-made steps: what counts as equal, within the
tolerance, different and not comparable, and the report's lines."""

from __future__ import annotations

import numpy as np
import pytest

from aot.artifacts import LibraryManifest
from aot.errors import ConfigError
from aot.validate import Tolerance
from aot.validate.layers import LayersReport, compare_layers
from aot.validate.reference import Reference
from aot.validate.report import SampleRef

pytestmark = pytest.mark.unit


def _metadata(outputs: list[list[dict]]) -> LibraryManifest:
    operators = [
        {
            "index": i,
            "name": f"op_{i}",
            "label": f"OP #{i}",
            "backend": "cpu",
            "source_operators": [{"index": i, "type": "OP", "output": f"t{i}"}],
        }
        for i in range(len(outputs))
    ]
    steps = [{"step": i, "outputs": o} for i, o in enumerate(outputs)]
    return LibraryManifest.from_json(
        {
            "model": {"name": "m"},
            "operators": operators,
            "memory": {"pools": [], "buffers": []},
            "trace": {"steps": steps},
        }
    )


def _out(name: str | None, dtype: str = "int8", shape: tuple[int, ...] = (2, 2)) -> dict:
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return {"tensor": name, "dtype": dtype, "shape": list(shape), "bytes": size}


def _compare(
    metadata: LibraryManifest, board: dict[int, list[bytes]], reference: dict, **tol: float
):
    return compare_layers(
        metadata, SampleRef(0, seed=0), lambda step: board[step], reference, Tolerance(**tol)
    )


def test_the_first_step_outside_the_tolerance_is_named_with_its_element() -> None:
    a = np.array([[1, 2], [3, 4]], np.int8)
    b = np.array([[5, 6], [7, 8]], np.int8)
    wrong = b.copy()
    wrong[1, 0] = 10
    metadata = _metadata([[_out("t0")], [_out("t1")], [_out("t2")]])
    board = {0: [a.tobytes()], 1: [wrong.tobytes()], 2: [wrong.tobytes()]}
    report = _compare(metadata, board, {"t0": a, "t1": b, "t2": b})
    assert [s.status for s in report.steps] == ["equal", "differs", "differs"]
    first = report.first_difference
    assert first is not None and first.step == 1
    assert (first.first_index, first.board_value, first.reference_value) == ((1, 0), 10, 7)
    assert (first.differing, first.elements, first.max_abs_error) == (1, 4, 3.0)
    line = report.lines("out")[-1]
    assert line.startswith(
        "first difference: step 1, OP #1 (operator 1 of the model) on cpu: 't1' differs in 1 "
        "of 4 elements, the first at [1, 0]: board 10, reference 7;"
    )
    # --max-steps 3 lets it pass: within the tolerance, not equal.
    assert _compare(metadata, board, {"t0": a, "t1": b, "t2": b}, max_steps=3).steps[1].status == (
        "within tolerance"
    )


def test_what_cannot_be_compared_is_said_and_never_counted_as_a_difference() -> None:
    a = np.zeros((2, 2), np.int8)
    metadata = _metadata(
        [[_out(None)], [_out("missing")], [_out("twice")], [_out("t3", "int16", (2, 2))]]
    )
    board = {1: [a.tobytes()], 2: [a.tobytes()], 3: [np.zeros(4, np.int16).tobytes()]}
    reference = {"twice": None, "t3": a}  # t3 is int8 in the reference
    report = _compare(metadata, board, reference)
    assert [(s.status, s.note) for s in report.steps] == [
        ("not compared", "no tensor of the source model"),
        ("not compared", "not in the reference"),
        ("not compared", "two reference tensors have this name"),
        ("not compared", "the reference's is int8[2, 2]"),
    ]
    assert report.first_difference is None
    assert report.lines("out")[-1] == (
        "every compared step output equals the reference within the tolerance"
    )


def test_float_steps_use_the_float_tolerance_and_the_json_round_trips() -> None:
    ref = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    close = ref + np.float32(1e-6)
    far = ref.copy()
    far[2] = 3.5
    metadata = _metadata([[_out("t0", "float32", (4,))], [_out("t1", "float32", (4,))]])
    report = _compare(metadata, {0: [close.tobytes()], 1: [far.tobytes()]}, {"t0": ref, "t1": ref})
    assert [s.status for s in report.steps] == ["within tolerance", "differs"]
    from dataclasses import asdict

    assert LayersReport.from_json(asdict(report)) == report


def test_a_reference_that_cannot_keep_its_tensors_refuses_in_one_line() -> None:
    class Onnx(Reference):
        runtime = "onnxruntime 1.32.0"

    with pytest.raises(ConfigError) as info:
        Onnx("m.onnx").intermediates([])
    assert str(info.value) == (
        "--layers compares each operator's output with LiteRT's, which keeps every tensor of "
        "a .tflite model; onnxruntime 1.32.0 cannot: validate without --layers"
    )
