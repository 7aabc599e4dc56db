"""``aot run`` shows outputs people can read: whole when small, the head and '...' when
long, --top K with dequantized values, values in --json, and --fill instead of -i."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aot.artifacts.manifest import IOTensor, Quantization
from aot.cli import main
from aot.cli.run import fill_inputs, format_values, top_values
from aot.testing.shared import mlperf_tiny

KWS = mlperf_tiny("kws_ref_model")  # missing shared data fails, it is not skipped
QUANT = {"scale": [0.00390625], "zero_point": [-128], "axis": None}


@pytest.mark.unit
def test_small_outputs_are_shown_whole() -> None:
    values = np.array([[-128] * 9 + [121, -128, -121]], dtype=np.int8)
    assert format_values(values) == (
        "[-128, -128, -128, -128, -128, -128, -128, -128, -128, 121, -128, -121]"
    )


@pytest.mark.unit
def test_long_outputs_show_the_head_an_ellipsis_and_the_count() -> None:
    text = format_values(np.arange(1000, dtype=np.float32).reshape(1, 10, 100) / 4)
    assert text.startswith("[0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, ...]")
    assert "1000 values" in text


@pytest.mark.unit
def test_top_k_has_index_value_and_dequantized_value() -> None:
    output = np.array([[-128, 127, 0, 127, -5]], dtype=np.int8)
    top = top_values(output, Quantization.from_json(QUANT), 3)
    assert [t["index"] for t in top] == [1, 3, 2]  # ties: the lower index first
    assert top[0] == {"index": 1, "value": 127, "dequantized": 0.99609375}
    assert top_values(output.astype(np.float32), None, 1)[0]["dequantized"] is None


@pytest.mark.unit
def test_top_k_dequantizes_per_channel() -> None:
    quant = Quantization(scale=(1.0, 0.5), zero_point=(0, 10), axis=1)
    top = top_values(np.array([[4, 20]], dtype=np.int8), quant, 2)
    assert [(t["index"], t["dequantized"]) for t in top] == [(1, 5.0), (0, 4.0)]


@pytest.mark.unit
def test_fill_zeros_and_seeded_random() -> None:
    specs = [
        {"name": "a", "shape": [1, 49, 10, 1], "dtype": "int8"},
        {"name": "b", "shape": [3], "dtype": "float32"},
    ]
    specs = [IOTensor.from_json(s) for s in specs]
    zeros = fill_inputs(specs, "zeros", 0)
    assert [z.shape for z in zeros] == [(1, 49, 10, 1), (3,)] and not any(z.any() for z in zeros)
    first, again, other = (fill_inputs(specs, "random", s) for s in (1, 1, 2))
    assert first[0].dtype == np.int8 and first[1].dtype == np.float32
    np.testing.assert_array_equal(first[0], again[0])
    assert not np.array_equal(first[0], other[0])
    assert first[0].min() < -100 and first[0].max() > 100  # the whole int8 range


@pytest.fixture(scope="module")
def kws_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from aot.testing.harness import build

    return build(KWS, tmp_path_factory.mktemp("kws") / "out", "host")


@pytest.fixture(scope="module")
def example_no_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from aot.testing.harness import build

    example = Path(__file__).resolve().parents[2] / "examples" / "tiny_kws_int8.tflite"
    return build(example, tmp_path_factory.mktemp("example") / "out", "host", "--no-build")


@pytest.mark.toolchain
def test_run_shows_all_twelve_classes_and_the_winner(
    kws_host: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = np.load(KWS.with_suffix(".output.npy")).reshape(-1)
    assert main(["run", str(kws_host), "-i", str(KWS.with_suffix(".input.npy")), "--top", "2"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("output 0"))
    assert line.endswith("[" + ", ".join(str(v) for v in expected) + "]")
    winner = int(np.argmax(expected))
    assert f"top 1  index {winner} " in out and "dequantized 0.97" in out


@pytest.mark.toolchain
def test_run_fill_json_carries_values_and_top(
    kws_host: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", str(kws_host), "--fill", "random", "--seed", "7", "--top", "1", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    (output,) = report["outputs"]
    assert report["inputs_filled"] == {"mode": "random", "seed": 7}
    assert len(output["values"]) == 12 and output["name"] == "Identity"
    assert output["top"][0]["value"] == max(output["values"])
    assert main(["run", str(kws_host), "--fill", "zeros", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["outputs"][0]["values"]) == 12


@pytest.mark.unit
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--top", "0"], "--top 0: expected a number of values >= 1"),
        ([], "or run on made-up inputs with --fill zeros or --fill random"),
        (["--fill", "zeros", "-i", "x.npy"], "either with -i or with --fill, not both"),
    ],
)
def test_run_input_errors_are_one_line(
    example_no_build: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["run", str(example_no_build), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
