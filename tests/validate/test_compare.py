"""Unit tests of the comparison, the input folders, the report and the option checks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from aot.artifacts.manifest import IOTensor
from aot.cli import main
from aot.errors import ConfigError, ModelError
from aot.runner import fill_inputs
from aot.validate import Tolerance, ValidationReport, format_report, open_reference
from aot.validate.compare import OutputComparison, cosine
from aot.validate.inputs import Sample, folder_samples, random_samples, save_sample
from aot.validate.report import OutputReport, SampleRef

pytestmark = pytest.mark.unit

INT8 = {
    "name": "y",
    "dtype": "int8",
    "shape": [1, 2, 3],
    "quantization": {"scale": [0.5], "zero_point": [3], "axis": None},
}
FLOAT = {"name": "f", "dtype": "float32", "shape": [4]}


def tensor(spec: dict) -> IOTensor:
    """A manifest's input or output from its JSON."""
    return IOTensor.from_json(spec)


def tensors(specs: list[dict]) -> list[IOTensor]:
    return [tensor(s) for s in specs]


def test_int_outputs_count_steps_and_dequantized_error() -> None:
    c = OutputComparison(tensor(INT8), Tolerance())
    ref = np.arange(6, dtype=np.int8).reshape(1, 2, 3)
    assert c.add(0, ref.copy(), ref)
    off = ref.copy()
    off[0, 1, 2] += 3
    assert not c.add(1, off, ref)
    assert not c.add(2, off, ref)
    assert (c.samples, c.exact, c.passed) == (3, 1, 1)
    assert (c.max_abs_error, c.max_abs_error_real) == (3, 1.5)
    assert (c.first_mismatch, c.first_failure) == (1, 1)
    assert c.mean_abs_error is None and c.rmse is None and c.min_cosine is None


def test_max_steps_lets_close_integer_outputs_pass() -> None:
    c = OutputComparison(tensor(INT8), Tolerance(max_steps=3))
    ref = np.full((1, 2, 3), -128, np.int8)
    got = ref + np.int8(3)  # no int8 wrap-around: differences are taken in int64
    assert c.add(0, got, ref) and c.first_failure is None and c.first_mismatch == 0


def test_per_channel_scales_weigh_each_channel() -> None:
    spec = {**INT8, "quantization": {"scale": [0.1, 1.0, 10.0], "zero_point": [0] * 3, "axis": 2}}
    c = OutputComparison(tensor(spec), Tolerance())
    ref = np.zeros((1, 2, 3), np.int8)
    got = ref.copy()
    got[0, 0, 0] = 5  # 5 steps of 0.1
    got[0, 1, 2] = 1  # 1 step of 10
    c.add(0, got, ref)
    assert c.max_abs_error == 5 and c.max_abs_error_real == pytest.approx(10.0)


def test_float_metrics_and_tolerance() -> None:
    c = OutputComparison(tensor(FLOAT), Tolerance(atol=1e-3, rtol=0.0, min_cosine=0.99))
    ref = np.array([1, 2, 3, 4], np.float32)
    assert c.add(0, ref + np.float32(5e-4), ref)  # within atol
    assert not c.add(1, ref + np.array([0, 0, 0, 0.5], np.float32), ref)
    assert (c.exact, c.passed, c.first_failure) == (0, 1, 1)
    assert c.max_abs_error == pytest.approx(0.5)
    assert c.mean_abs_error == pytest.approx((4 * 5e-4 + 0.5) / 8, rel=1e-3)
    assert c.rmse == pytest.approx(math.sqrt((4 * 5e-4**2 + 0.25) / 8), rel=1e-3)
    assert c.min_cosine == pytest.approx(cosine(ref + np.float32([0, 0, 0, 0.5]), ref))


def test_min_cosine_fails_a_scaled_output_that_is_close_in_absolute_terms() -> None:
    c = OutputComparison(tensor(FLOAT), Tolerance(atol=1.0, rtol=0.0, min_cosine=0.9999))
    ref = np.array([0.1, -0.1, 0.1, -0.1], np.float32)
    assert not c.add(0, -ref, ref)  # every element within atol, but opposite direction
    assert c.min_cosine == pytest.approx(-1.0)


def test_nan_matches_only_nan() -> None:
    c = OutputComparison(tensor(FLOAT), Tolerance())
    ref = np.array([1, np.nan, 3, 4], np.float32)
    assert c.add(0, ref.copy(), ref) and c.exact == 1
    got = ref.copy()
    got[0] = np.nan
    assert not c.add(1, got, ref)
    assert c.max_abs_error == math.inf


def test_cosine_of_zero_tensors() -> None:
    zero = np.zeros(3, np.float32)
    assert cosine(zero, zero) == 1.0
    assert cosine(zero, np.ones(3, np.float32)) == 0.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_steps": -1}, "--max-steps must be 0 or more, got -1"),
        ({"atol": -1.0}, "--atol must be a finite number >= 0, got -1"),
        ({"rtol": math.nan}, "--rtol must be a finite number >= 0, got nan"),
        ({"min_cosine": 2.0}, "--min-cosine must be from -1 to 1, got 2"),
    ],
)
def test_tolerance_checks(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{message}$"):
        Tolerance(**options)


def test_random_input_i_is_aot_run_fill_spread_with_seed_plus_i() -> None:
    specs = [{"name": "a", "dtype": "int8", "shape": [2, 3]}, FLOAT]
    samples = list(random_samples(tensors(specs), 3, seed=40))
    assert [s.seed for s in samples] == [40, 41, 42]
    for sample in samples:
        expected = fill_inputs(tensors(specs), "spread", sample.seed)
        assert all(np.array_equal(a, b) for a, b in zip(sample.arrays, expected, strict=True))


def test_input_folder_one_input(tmp_path: Path) -> None:
    spec = {"name": "x", "dtype": "int8", "shape": [2]}
    for name, value in (("b", 2), ("a", 1)):
        np.save(tmp_path / f"{name}.npy", np.full(2, value, np.int8))
    (tmp_path / "notes.txt").write_text("not an input")
    samples = folder_samples(tmp_path, tensors([spec]))
    assert [s.files for s in samples] == [(str(tmp_path / "a.npy"),), (str(tmp_path / "b.npy"),)]
    assert [int(s.arrays[0][0]) for s in samples] == [1, 2] and samples[1].index == 1


def test_input_folder_several_inputs_round_trips_save(tmp_path: Path) -> None:
    specs = [{"name": "x", "dtype": "int8", "shape": [2]}, FLOAT]
    sample = Sample(7, fill_inputs(tensors(specs), "random", 5), seed=5)
    written = save_sample(tmp_path, sample)
    assert [Path(p).name for p in written] == ["input_0007_seed5.0.npy", "input_0007_seed5.1.npy"]
    (back,) = folder_samples(tmp_path, tensors(specs))
    assert all(np.array_equal(a, b) for a, b in zip(back.arrays, sample.arrays, strict=True))


def test_input_folder_errors(tmp_path: Path) -> None:
    specs = [{"name": "x", "dtype": "int8", "shape": [2]}, FLOAT]
    with pytest.raises(ConfigError, match=r"holds no \.npy files"):
        folder_samples(tmp_path, tensors(specs))
    with pytest.raises(ConfigError, match="does not exist"):
        folder_samples(tmp_path / "nowhere", tensors(specs))
    np.save(tmp_path / "s.0.npy", np.zeros(2, np.int8))
    with pytest.raises(ConfigError, match=r"input set 's' lacks s\.1\.npy$"):
        folder_samples(tmp_path, tensors(specs))
    np.save(tmp_path / "s.1.npy", np.zeros(4, np.float64))
    with pytest.raises(ConfigError, match="is a float64 array of shape \\(4,\\); input 'f' needs"):
        folder_samples(tmp_path, tensors(specs))
    np.save(tmp_path / "loose.npy", np.zeros(2, np.int8))
    with pytest.raises(
        ConfigError, match=r"loose\.npy is not named NAME\.K\.npy with K from 0 to 1"
    ):
        folder_samples(tmp_path, tensors(specs))


def test_reference_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        open_reference(tmp_path / "missing.tflite")
    with pytest.raises(ConfigError, match="is a directory"):
        open_reference(tmp_path)
    text = tmp_path / "model.tflite"
    text.write_text("hello")
    with pytest.raises(ModelError, match=r"neither a TFLite flatbuffer nor an \.onnx file"):
        open_reference(text)


def report(**changes) -> ValidationReport:  # type: ignore[no-untyped-def]
    out = OutputReport(
        name="y",
        dtype="float32",
        shape=(1, 4),
        quantized=False,
        samples=3,
        exact=2,
        passed=2,
        max_abs_error=math.inf,  # a NaN where the reference has a number
        mean_abs_error=math.inf,
        rmse=math.inf,
        min_cosine=-1.0,
        first_mismatch=SampleRef(1, seed=11),
        first_failure=SampleRef(1, seed=11),
    )
    fields = dict(
        folder="out",
        model="m.tflite",
        model_name="m",
        board="host",
        reference="LiteRT",
        same_model_as_build=True,
        inputs="random",
        seed=10,
        samples=3,
        samples_passed=2,
        tolerance=Tolerance().to_json(),
        outputs=(out,),
    )
    return ValidationReport(**{**fields, **changes})


def test_report_json_round_trip_is_strict_json() -> None:
    r = report()
    text = json.dumps(r.to_json(), allow_nan=False)  # no Infinity in the document
    out = json.loads(text)["outputs"][0]
    assert out["max_abs_error"] is None and out["rmse"] is None
    back = ValidationReport.from_json(json.loads(text))
    assert back.outputs[0].max_abs_error == math.inf
    assert back.to_json() == r.to_json()
    with pytest.raises(ConfigError, match="schema version 99"):
        ValidationReport.from_json({**json.loads(text), "schema_version": 99})


def test_failed_report_names_the_rerun_command() -> None:
    lines = format_report(report())
    assert lines[3].split() == ["y", "float32[1x4]", "2/3", "2/3", "inf", "inf", "inf", "-1.000000"]
    assert "first failure of 'y': input 1 (aot run out --fill spread --seed 11)" in lines
    assert lines[-1] == "FAIL: 1 of 3 input sets outside the tolerance"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-n", "5", "--inputs", "d"], "give either --count (random inputs) or --inputs DIR"),
        (["--max-steps", "-2"], "--max-steps must be 0 or more, got -2"),
        (["--min-cosine", "1.5"], "--min-cosine must be from -1 to 1, got 1.5"),
        (["--timeout", "0"], "--timeout must be a positive number of seconds, got 0"),
    ],
)
def test_option_errors_are_one_line(argv: list[str], message: str, capsys) -> None:
    assert main(["validate", "out", "m.tflite", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1


def test_validate_is_the_last_stage() -> None:
    """No stage imports aot.validate (only the CLI and the test helpers do), and it
    imports no CLI module: data flows one way."""
    import ast

    root = Path(__file__).resolve().parents[2] / "aot"
    for path in root.rglob("*.py"):
        part = path.relative_to(root).parts[0]
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        if part not in ("validate", "cli", "testing"):
            assert not any(n.startswith("aot.validate") for n in names), path
        if part == "validate":
            assert not any(n.startswith("aot.cli") for n in names), path


def test_spread_cycles_through_four_ranges_around_the_zero_point() -> None:
    spec = {
        "name": "a",
        "dtype": "int8",
        "shape": [64, 64],
        "quantization": {"scale": [0.5], "zero_point": [-100], "axis": None},
    }
    ranges = []
    for seed in range(8):
        (array,) = fill_inputs(tensors([spec]), "spread", seed)
        ranges.append((int(array.min()), int(array.max())))
    # seed % 4: the whole range, then zero point +-32 (clipped at -128), +-8, +-2.
    assert ranges[0] == (-128, 127) and ranges[4] == (-128, 127)
    assert ranges[1] == (-128, -68) and ranges[5] == (-128, -68)
    assert ranges[2] == (-108, -92) and ranges[3] == (-102, -98)
    (again,) = fill_inputs(tensors([spec]), "spread", 2)
    assert np.array_equal(again, fill_inputs(tensors([spec]), "spread", 2)[0])  # reproducible


def test_few_distinct_outputs_warn_and_name_the_fix() -> None:
    from aot.validate.core import information_warnings

    assert information_warnings(89, 100) == ()
    assert information_warnings(2, 4) == ()  # too few input sets to judge
    (warning,) = information_warnings(6, 100)
    assert warning.startswith("the 100 input sets gave only 6 distinct output(s)")
    assert warning.endswith("validate with real inputs too (--inputs DIR)")
