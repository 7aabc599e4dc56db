"""The kernel backend's framework: ISA choice from board features, one step per
operator, the kernels named in metadata.json, --kernels errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aot.boards import load_board
from aot.compiler import CompileOptions, compile_model
from aot.errors import ConfigError
from aot.kernels import isas_for
from aot.testing.shared import shared_dir

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
KWS = shared_dir() / "models" / "mlperf_tiny" / "kws_ref_model.tflite"


@pytest.mark.parametrize(
    ("choice", "board", "expected"),
    [
        ("auto", "mps2_an386", ("dsp", "scalar")),
        ("auto", "mps2_an385", ("scalar",)),
        ("auto", "mps3_an547", ("mve", "dsp", "scalar")),
        ("auto", "host", ()),
        ("tvm", "mps2_an386", ()),
        ("dsp", "mps2_an500", ("dsp",)),
        ("scalar", "mps2_an385", ("scalar",)),
    ],
)
def test_isas_come_from_board_features(choice: str, board: str, expected: tuple) -> None:
    assert isas_for(choice, load_board(board)) == expected


def test_an_isa_the_board_lacks_is_a_one_line_error() -> None:
    with pytest.raises(ConfigError, match="board 'mps2_an385' has no dsp extension"):
        isas_for("dsp", load_board("mps2_an385"))


def _metadata(tmp_path: Path, kernels: str, board: str = "mps2_an386") -> dict:
    options = CompileOptions(name="kws", kernels=kernels)
    return compile_model(KWS, tmp_path / kernels, options, board=load_board(board)).metadata


def test_one_step_per_operator_and_the_kernel_named(tmp_path: Path) -> None:
    tvm = _metadata(tmp_path, "tvm")
    dsp = _metadata(tmp_path, "dsp")
    # Never merged: the same steps, every tensor still planned, the same workspace.
    assert len(dsp["operators"]) == len(tvm["operators"])
    assert dsp["memory"]["workspace_bytes"] <= tvm["memory"]["workspace_bytes"] * 1.05
    ran = [op["implementation"] for op in dsp["operators"]]
    # kws's one fully connected layer is batch 1 with small weights: the int16 copy.
    assert "aot_k_conv_s8_dsp" in ran and "aot_k_fc_wide_s8_dsp" in ran
    assert {op["implementation"] for op in tvm["operators"]} == {"tvm"}
    assert dsp["kernels"] == {"choice": "dsp", "isas": ["dsp"]}
    # Each step names its own source operator, also where Relax shared a region function.
    labels = [op["label"] for op in dsp["operators"]]
    assert len(set(labels)) == len(labels), labels
    kernel_steps = [op for op in dsp["operators"] if op["backend"] == "kernels"]
    assert all(op["target"] == "cpu" and len(op["source_operators"]) == 1 for op in kernel_steps)
    sources = dsp["library"]["sources"]
    assert "model/src/backends/kernels/conv_dsp.c" in sources


def test_cli_rejects_an_isa_the_board_lacks(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "aot", "build", str(KWS), "--board", "mps2_an385", "-o",
         str(tmp_path / "out"), "--kernels", "dsp", "--no-build"],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("error: board 'mps2_an385' has no dsp extension")
    )
    assert "Traceback" not in result.stderr


def test_shapes_tvm_runs_faster_stay_on_tvm(tmp_path: Path) -> None:
    """A 1x1 convolution over 4 channels with one requantization for all: TVM's kernel
    was measured faster, so the DSP variant declines it (aot/kernels/dsp.py) and even
    --kernels dsp leaves it to TVM; per channel it takes it, and over 8 channels (the
    interleaved loop) either way."""
    import numpy as np

    from aot.testing.tflite_builder import TFLiteModelBuilder
    from tests.kernels.cases import Shape, add_case

    b = TFLiteModelBuilder()
    rng = np.random.default_rng(0)
    add_case(b, rng, Shape("CONV_2D", 1, 6, 6, 4, 16), "small", per_channel=False)
    add_case(b, rng, Shape("CONV_2D", 1, 6, 6, 4, 16), "per_channel", per_channel=True)
    add_case(b, rng, Shape("CONV_2D", 1, 6, 6, 8, 16), "eight", per_channel=False)
    add_case(b, rng, Shape("CONV_2D", 1, 6, 6, 16, 16), "big", per_channel=False)
    model = tmp_path / "two.tflite"
    model.write_bytes(b.build())
    options = CompileOptions(name="two", kernels="dsp")
    meta = compile_model(model, tmp_path / "out", options, board=load_board("mps2_an386")).metadata
    ran = [op["implementation"] for op in meta["operators"]]
    assert ran == ["tvm", "aot_k_conv_s8_dsp", "aot_k_conv_s8_dsp", "aot_k_conv_s8_dsp"]
