"""Which kernels the four MLPerf Tiny reference models get on mps3_an547 (compiled only;
tests/kernels/test_models.py runs them with every ISA's kernels, mve included, on QEMU
against LiteRT, with 200 seeded random inputs each in its slow test).

Every CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED of the four models is one a Helium
variant takes, so none falls back to TVM's kernels, and `auto` picks the Helium kernels on
the M55 (its features say mve) without growing the workspace by more than 5%."""

from __future__ import annotations

from pathlib import Path

import pytest

from aot.boards import load_board
from aot.compiler import CompileOptions, compile_model
from aot.testing.shared import shared_dir

pytestmark = [pytest.mark.unit, pytest.mark.slow]  # two compiles per model, up to 20 s

MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = ["kws_ref_model", "vww_96_int8", "pretrainedResnet_quant", "ad01_int8"]
MVE_OPERATORS = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}


def _metadata(model: str, kernels: str, folder: Path) -> dict:
    options = CompileOptions(name="m", kernels=kernels)
    board = load_board("mps3_an547")
    return compile_model(MODELS_DIR / f"{model}.tflite", folder, options, board=board).metadata


@pytest.mark.parametrize("model", MODELS)
def test_auto_runs_every_conv_and_fc_on_helium(model: str, tmp_path: Path) -> None:
    auto = _metadata(model, "auto", tmp_path / "auto")
    assert auto["kernels"]["isas"][0] == "mve"
    for op in auto["operators"]:
        types = {s["type"] for s in op["source_operators"]}
        if types & MVE_OPERATORS:
            assert op["implementation"].endswith("_s8_mve"), (op["name"], op["implementation"])
    tvm = _metadata(model, "tvm", tmp_path / "tvm")
    assert auto["memory"]["workspace_bytes"] <= tvm["memory"]["workspace_bytes"] * 1.05
