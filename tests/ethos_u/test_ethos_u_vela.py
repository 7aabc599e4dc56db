"""Vela on the reference models and on a model it splits between NPU and CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ethos_u_helpers import ACCELERATOR, mixed_model

from aot.backends.ethos_u.vela import compile_model
from aot.errors import ToolchainError, UnsupportedError
from aot.testing.shared import MLPERF_TINY

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", MLPERF_TINY)
def test_reference_models_are_one_npu_subgraph(vela_reference, name: str) -> None:
    result = vela_reference(name)
    assert result.cpu_operators == ()
    (sg,) = result.subgraphs
    # The driver's custom data starts with its 'COP1' header (ethosu_invoke_v3 checks it).
    assert sg.command_stream[:4] == b"COP1"
    assert len(sg.read_only) > 1000 and len(sg.read_only) % 16 == 0
    assert sg.scratch_bytes > 0 and sg.fast_scratch_bytes == sg.scratch_bytes
    for fm in (*sg.inputs, *sg.outputs):
        assert fm.dtype == "int8"
        assert fm.offset % 16 == 0 and fm.offset + fm.size_bytes <= sg.scratch_bytes
    # Vela's own summary comes along for the report.
    assert result.summary["network"] == name
    assert float(result.summary["sram_memory_used"]) > 0
    assert result.summary_text.startswith(f"Network summary for {name}")
    assert "NPU operators" in result.summary_text


def test_cpu_operators_split_the_npu_subgraphs() -> None:
    result = compile_model(mixed_model(), ACCELERATOR, name="mixed")
    assert result.cpu_operators == (("l2", "L2_NORMALIZATION"),)
    assert [[fm.name for fm in sg.inputs] for sg in result.subgraphs] == [["x"], ["l2"]]
    assert [[fm.name for fm in sg.outputs] for sg in result.subgraphs] == [["conv1"], ["conv2"]]
    assert result.npu_outputs == {"conv1", "conv2"}


def test_unknown_npu_configuration_is_one_line() -> None:
    with pytest.raises(UnsupportedError, match="no NPU configuration 'ethos-u55-100'; use one of"):
        compile_model(mixed_model(), "ethos-u55-100")


def test_vela_options_and_vela_errors() -> None:
    result = compile_model(mixed_model(), ACCELERATOR, system_config="Ethos_U55_Deep_Embedded")
    assert result.summary["system_config"] == "Ethos_U55_Deep_Embedded"
    with pytest.raises(ToolchainError) as info:
        compile_model(mixed_model(), ACCELERATOR, system_config="Nope", name="m")
    message = str(info.value)
    assert message.startswith("Vela 5.2.0 refused 'm': Incorrect argument to CLI option")
    assert "System_Config.Nope not found" in message and "\n" not in message


def test_missing_vela_names_the_extra() -> None:
    # A Python where ethos-u-vela cannot be imported (None in sys.modules blocks it).
    code = (
        "import sys\n"
        "sys.modules['ethosu'] = None\n"
        "from aot.backends.ethos_u.vela import compile_model\n"
        "from aot.errors import ToolchainError\n"
        "try:\n"
        "    compile_model(b'', 'ethos-u55-128')\n"
        "except ToolchainError as e:\n"
        "    print(e)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        check=True,
        timeout=120,
    )
    assert result.stdout.strip() == (
        "the Ethos-U backend needs Arm's Vela compiler (ethos-u-vela): pip install 'aot[ethos-u]'"
    )
