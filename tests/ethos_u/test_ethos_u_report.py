"""The Ethos-U report: NPU and CPU operators, aot's pools, Vela's own summary."""

from __future__ import annotations

import pytest
from ethos_u_helpers import mixed_model

from aot.backends import OperatorInfo, TensorInfo
from aot.backends.ethos_u import EthosUBackend
from aot.backends.ethos_u.report import format_report
from aot.frontend import import_model
from aot.frontend.model import SourceOperator
from aot.operators import GenericParams
from aot.testing.shared import mlperf_tiny

pytestmark = pytest.mark.unit


def test_reference_model_operators_all_on_the_npu(vela_reference) -> None:
    model = import_model(str(mlperf_tiny("kws_ref_model")))
    backend = EthosUBackend()
    prepared = backend.prepare(model)  # Vela on the file the model came from
    # The importer's source tensors are the names Vela keeps: every operator is taken.
    assert model.sources and all(backend.takes(prepared, _info(op)) for op in model.sources)
    report = backend.report(prepared)
    assert report["npu_operators"] == [op.label for op in model.sources]
    assert report["cpu_operators"] == []
    (sg,) = report["subgraphs"]
    assert sg["arena_bytes"] == vela_reference("kws_ref_model").subgraphs[0].scratch_bytes
    assert report["summary"]["sram_memory_used"]["unit"] == "KiB"
    assert report["vela_version"] == "5.2.0"

    lines = format_report(report)
    assert report["lines"] == lines
    assert lines[0].startswith("ethos-u55-128 (Vela 5.2.0, Ethos_U55_High_End_Embedded")
    assert lines[1].startswith("  NPU operators (13): CONV_2D #0, DEPTHWISE_CONV_2D #1")
    assert lines[2] == "  CPU operators (0): none"
    assert any(line.startswith("  Vela sram memory used: 21.67") for line in lines)


def test_mixed_model_lists_the_cpu_operator() -> None:
    backend = EthosUBackend()
    prepared = backend.prepare_tflite(mixed_model(), name="mixed")
    ops = [
        SourceOperator(0, "CONV_2D", "conv1"),
        SourceOperator(1, "L2_NORMALIZATION", "l2"),
        SourceOperator(2, "CONV_2D", "conv2"),
    ]
    report = backend.report(prepared, ops)
    assert report["npu_operators"] == ["CONV_2D #0", "CONV_2D #2"]
    assert report["cpu_operators"] == ["L2_NORMALIZATION #1"]
    assert len(report["subgraphs"]) == 2


def _info(source: SourceOperator) -> OperatorInfo:
    t = TensorInfo((1,), "int8")
    return OperatorInfo("conv2d_int8", GenericParams(), (t,), t, source)
