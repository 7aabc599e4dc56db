"""aot validate on the host board: the tiny int8 example, a float ONNX model, wrong
references (other signature: one-line error; other weights: FAIL, exit 1), --json,
--save and --inputs, and the session seam validate_folder(session=...)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from validate_helpers import EXAMPLE_INT8, aot, float_onnx, with_other_weights

from aot.artifacts import read_manifest
from aot.runner import fill_inputs, open_session
from aot.testing import run_tflite_reference
from aot.testing.harness import build
from aot.validate import ValidationReport, validate_folder

pytestmark = pytest.mark.toolchain


@pytest.fixture(scope="module")
def int8_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(EXAMPLE_INT8, tmp_path_factory.mktemp("int8") / "out")


@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return float_onnx(tmp_path_factory.mktemp("onnx") / "small.onnx")


@pytest.fixture(scope="module")
def onnx_folder(onnx_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(onnx_model, tmp_path_factory.mktemp("onnx_build") / "out")


def test_int8_model_passes_exactly(int8_folder: Path) -> None:
    result = aot("validate", int8_folder, EXAMPLE_INT8, "-n", "100", "--json")
    assert result.returncode == 0, result.stderr
    report = ValidationReport.from_json(json.loads(result.stdout))
    assert report.passed and report.samples == report.samples_passed == 100
    assert report.reference.startswith("LiteRT") and "BUILTIN_REF" in report.reference
    assert report.same_model_as_build is True
    (out,) = report.outputs
    assert (out.exact, out.passed, out.max_abs_error, out.first_failure) == (100, 100, 0, None)
    assert out.quantized and out.max_abs_error_real == 0.0


def test_human_report_is_a_table_with_the_verdict(int8_folder: Path) -> None:
    result = aot("validate", int8_folder, EXAMPLE_INT8, "-n", "5", "--seed", "9")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "model 'tiny_kws_int8' on host: 5 random inputs (spread around the zero point), seed 9"
    )
    header = next(line for line in lines if line.strip().startswith("output"))
    assert header.split() == ["output", "type", "exact", "passed", "max", "abs", "err",
                              "mean", "abs", "rmse", "cosine"]  # fmt: skip
    row = lines[lines.index(header) + 1].split()
    assert row[1:5] == ["int8[1x4]", "5/5", "5/5", "0"]
    assert lines[-1] == "PASS: 5/5 input sets"


def test_other_signature_is_a_one_line_error(int8_folder: Path, onnx_model: Path) -> None:
    result = aot("validate", int8_folder, onnx_model)
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert line.startswith(f"error: reference {onnx_model}: input 0 'x' is float32[1, 2, 6, 6]")
    assert "int8[1, 16, 16, 1]" in line and "give the model the folder was built from" in line
    assert "Traceback" not in result.stderr


def test_other_weights_fail_with_a_reproducible_first_failure(
    int8_folder: Path, tmp_path: Path
) -> None:
    wrong = with_other_weights(EXAMPLE_INT8, tmp_path / "wrong.tflite")
    saved = tmp_path / "failing"
    result = aot(
        "validate", int8_folder, wrong, "-n", "20", "--seed", "100", "--save", saved, "--json"
    )
    assert result.returncode == 1, result.stderr
    report = ValidationReport.from_json(json.loads(result.stdout))
    assert not report.passed and report.same_model_as_build is False
    (out,) = report.outputs
    assert out.exact < 20 and out.max_abs_error >= 1
    first = out.first_failure
    assert first is not None and first.seed == 100 + first.index
    # The report's command reruns exactly that input set with aot run.
    rerun = aot("run", int8_folder, "--fill", "spread", "--seed", first.seed, "--json")
    assert rerun.returncode == 0, rerun.stderr
    inputs = fill_inputs(read_manifest(int8_folder).inputs, "spread", first.seed)
    got = json.loads(rerun.stdout)["outputs"][0]["values"]
    (wrong_says,) = run_tflite_reference(wrong, inputs)
    (right_says,) = run_tflite_reference(EXAMPLE_INT8, inputs)
    assert got != wrong_says.reshape(-1).tolist()
    assert got == right_says.reshape(-1).tolist()
    # --save wrote the failing sets; validating that folder fails on all of them.
    assert len(report.saved) == 20 - report.samples_passed
    assert Path(report.saved[0]).name == f"input_{first.index:04d}_seed{first.seed}.npy"
    again = aot("validate", int8_folder, wrong, "--inputs", saved, "--json")
    assert again.returncode == 1, again.stderr
    replay = json.loads(again.stdout)
    assert replay["samples"] == len(report.saved) and replay["samples_passed"] == 0
    assert replay["outputs"][0]["first_failure"]["files"] == [report.saved[0]]


def test_wrong_weights_pass_within_enough_steps(int8_folder: Path, tmp_path: Path) -> None:
    """--max-steps: integer outputs pass within that many quantized steps."""
    wrong = with_other_weights(EXAMPLE_INT8, tmp_path / "wrong.tflite")
    result = aot("validate", int8_folder, wrong, "-n", "5", "--max-steps", "255", "--json")
    assert result.returncode == 0, result.stderr
    (out,) = json.loads(result.stdout)["outputs"]
    assert out["passed"] == 5 and out["exact"] < 5


def test_float_onnx_model_passes_with_metrics(onnx_folder: Path, onnx_model: Path) -> None:
    result = aot("validate", onnx_folder, onnx_model, "-n", "30", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["reference"].startswith("onnxruntime")
    assert [o["name"] for o in report["outputs"]] == ["y", "logits"]
    for out in report["outputs"]:
        assert out["passed"] == 30 and out["quantized"] is False
        assert out["max_abs_error"] < 1e-5 and out["mean_abs_error"] <= out["max_abs_error"]
        assert out["rmse"] <= out["max_abs_error"] and out["min_cosine"] > 0.99999
        assert out["max_abs_error_real"] is None


def test_float_onnx_with_other_weights_fails(onnx_folder: Path, tmp_path: Path) -> None:
    wrong = float_onnx(tmp_path / "wrong.onnx", seed=4)
    result = aot("validate", onnx_folder, wrong, "-n", "10")
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[-1] == "FAIL: 10 of 10 input sets outside the tolerance"
    assert "first failure of 'y': input 0 (aot run" in result.stdout


def test_session_is_passed_in(int8_folder: Path) -> None:
    """The seam other tools (a board farm) use: validate_folder runs on the session it is
    given, many input sets in it, and never opens its own."""
    with open_session(int8_folder, timeout=30) as client:
        report = validate_folder(int8_folder, EXAMPLE_INT8, count=7, seed=3, session=client)
        assert client.info is not None  # the given session did the work
        again = validate_folder(int8_folder, EXAMPLE_INT8, count=3, seed=3, session=client)
        assert client.stats().runs == 10  # every set ran in this one session
    assert report.passed and report.samples == 7 and again.passed
    assert ValidationReport.from_json(json.loads(json.dumps(report.to_json()))) == report


def test_progress_lines(int8_folder: Path) -> None:
    lines: list[str] = []
    validate_folder(int8_folder, EXAMPLE_INT8, count=4, progress=lines.append, progress_every=0)
    assert lines[0].startswith("validating 4 input set(s) on host against LiteRT")
    assert lines[1:] == [f"{n}/4 input sets, 0 outside the tolerance" for n in (1, 2, 3)]


def test_float_inputs_folder(onnx_folder: Path, onnx_model: Path, tmp_path: Path) -> None:
    samples = tmp_path / "samples"
    samples.mkdir()
    rng = np.random.default_rng(0)
    for name in ("b", "a"):
        np.save(samples / f"{name}.npy", rng.standard_normal((1, 2, 6, 6)).astype(np.float32))
    report = validate_folder(onnx_folder, onnx_model, inputs_dir=samples)
    assert report.passed and report.samples == 2 and report.seed is None


def test_one_device_session_for_all_inputs(int8_folder: Path, monkeypatch) -> None:
    """Without a session, the board is started once (the real connect, counted)."""
    import aot.runner

    starts = []
    real_connect = aot.runner.connect

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        starts.append(args[0])
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(aot.runner, "connect", counted)
    report = validate_folder(int8_folder, EXAMPLE_INT8, count=25)
    assert report.passed and report.samples == 25 and starts == [int8_folder]


def test_a_model_litert_cannot_run_is_validated_against_tflite_micro(tmp_path: Path) -> None:
    # LiteRT has no 16x8 LSTM kernel; TFLite Micro's interpreter is the reference then.
    from aot.validate.reference import open_reference
    from tests.int8.lstm_models import lstm_model

    model = tmp_path / "lstm16x8.tflite"
    model.write_bytes(
        lstm_model(np.random.default_rng(3), activation_dtype="int16", batch=1, steps=3,
                   n_input=5, n_cell=4, cell_scale_log2=-11)
    )  # fmt: skip
    runtime = open_reference(model).runtime
    assert "TensorFlow Lite Micro" in runtime and "LiteRT cannot load" in runtime
    folder = build(model, tmp_path / "out")
    result = aot("validate", folder, model, "-n", "6", "--json")
    assert result.returncode == 0, result.stderr
    report = ValidationReport.from_json(json.loads(result.stdout))
    assert report.passed and report.samples == report.samples_passed == 6
    assert report.reference.startswith("TensorFlow Lite Micro")
