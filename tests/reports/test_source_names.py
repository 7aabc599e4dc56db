"""Reports speak the source model's language: operator index and type, output tensor name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aot.cli import main
from aot.frontend import import_model
from aot.lowering import lower
from aot.testing.shared import mlperf_tiny

KWS = mlperf_tiny("kws_ref_model")  # missing shared data fails, it is not skipped
TYPES = ["CONV_2D", "DEPTHWISE_CONV_2D"] * 4 + ["CONV_2D", "AVERAGE_POOL_2D", "RESHAPE"]
TYPES += ["FULLY_CONNECTED", "SOFTMAX"]

pytestmark = pytest.mark.unit


def test_importer_and_lowering_carry_source_operators() -> None:
    imported = import_model(KWS, "auto")
    ops = imported.source_operators
    assert [(op.index, op.type) for op in ops] == list(enumerate(TYPES))
    assert ops[9].output == "functional_1/average_pooling2d/AvgPool"
    assert ops[-1].output == imported.outputs[0].name == "Identity"
    lowered = lower(imported, "kws")
    # RESHAPE #10 became an alias (no kernel); every kernel names the op it computes,
    # the last one too although Relax renames the variable of a model output.
    computed = [op.index for step in lowered.steps for op in step.source]
    assert sorted(computed) == [i for i in range(13) if i != 10]
    assert lowered.steps[-1].label == "SOFTMAX #12"
    pooled = next(t for t in lowered.tensors if t.source == ops[9].output)
    assert pooled.kind == "intermediate"


@pytest.fixture(scope="module")
def kws_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from aot.testing.harness import build

    return build(KWS, tmp_path_factory.mktemp("kws") / "out", "host", "--no-build")


def test_metadata_operators_and_buffers_name_the_source(kws_folder: Path) -> None:
    metadata = json.loads((kws_folder / "metadata.json").read_text())
    assert metadata["model"]["source_operators"][0] == {
        "index": 0,
        "type": "CONV_2D",
        "output": metadata["model"]["source_operators"][0]["output"],
    }
    labels = [op["label"] for op in metadata["operators"]]
    assert labels[0] == "CONV_2D #0" and labels[-2:] == ["FULLY_CONNECTED #11", "SOFTMAX #12"]
    assert metadata["operators"][-1]["source_operators"] == [
        {"index": 12, "type": "SOFTMAX", "output": "Identity"}
    ]
    by_tensor = {b["tensor"]: b for b in metadata["memory"]["buffers"]}
    fc = by_tensor["functional_1/dense/BiasAdd"]
    assert fc["source_operator"] == {"index": 11, "type": "FULLY_CONNECTED"}
    assert by_tensor["scratch of AVERAGE_POOL_2D #9"]["source_operator"]["index"] == 9


def test_inspect_and_svg_show_source_names(
    kws_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(kws_folder)]) == 0
    out = capsys.readouterr().out
    assert "functional_1/dense/BiasAdd" in out and "FULLY_CONNECTED #11 -> SOFTMAX #12" in out
    assert "tensor_" not in out and "conv2d_int8" not in out
    svg = (kws_folder / "memory.svg").read_text()
    assert "functional_1/dense/BiasAdd" in svg and "SOFTMAX #12" in svg
    assert "conv2d_int81" not in svg
