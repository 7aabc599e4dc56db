"""Every damaged file in ../shared/robustness is rejected with one line naming the problem,
and a rejected ``aot build`` prints exactly that line on stderr (no TVM warning after it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from robustness_helpers import ROBUSTNESS, import_outcome

from aot.errors import ModelError
from aot.frontend import import_model
from aot.frontend.validate import DAMAGED

pytestmark = pytest.mark.unit

# file -> words the message must hold (what is wrong, where, and the value).
EXPECTED = {
    "0012_vww_96_int8_shape.tflite": ["operator 12 (CONV_2D)", "[1, 6, 6, 128]", "65536"],
    "0382_kws_ref_model_quant.tflite": ["scale of 1.4013e-45", "index 30", "operator 8 (CONV_2D)"],
    "0017_ad01_int8_op_index.tflite": ["operator 2 (FULLY_CONNECTED)", "tensor 31", "31 tensors"],
    "0031_ad01_int8_quant.tflite": [
        "zero point of 2147483648",
        "int8 range [-128, 127]",
        "index 26",
        "operator 5 (FULLY_CONNECTED)",
    ],
    "0092_ad01_int8_offset_oob.tflite": ["tensor 21", "outside the 276976-byte file"],
    "0210_pretrainedResnet_quant_shape.tflite": ["operator 4 (CONV_2D)", "[1, 16, 16, 32]"],
    "0256_kws_ref_model_quant.tflite": ["scale of -inf", "index 33", "operator 11"],
    "0416_kws_ref_model_offset_oob.tflite": ["operator 6", "outside the 53936-byte file"],
}


def _file(name: str) -> Path:
    return ROBUSTNESS / name


def test_every_shared_file_is_listed() -> None:
    assert sorted(p.name for p in ROBUSTNESS.glob("*.tflite")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_damaged_file_is_rejected_naming_the_problem(name: str) -> None:
    path = _file(name)
    with pytest.raises(ModelError) as err:
        import_model(path)
    message = str(err.value)
    assert message == import_outcome(path)
    assert message.startswith(f"{path}: {DAMAGED}: ")
    for word in EXPECTED[name]:
        assert word in message, message
    for leaked in ("Error", "Traceback", "unpack_from", "NoneType"):
        assert leaked not in message, message


@pytest.mark.parametrize(
    "name", ["0017_ad01_int8_op_index.tflite", "0210_pretrainedResnet_quant_shape.tflite"]
)
def test_rejected_build_prints_exactly_one_error_line(name: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = subprocess.run(
        # --json silences the progress lines, so stderr holds only what went wrong.
        [
            sys.executable,
            "-m",
            "aot",
            "build",
            str(_file(name)),
            "--board",
            "host",
            "-o",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == ModelError.exit_code, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert DAMAGED in lines[0]
    assert not out.exists()


def test_options_of_another_operators_table_are_damage() -> None:
    """An ADD whose options union is tagged MulOptions: its fields would be read through
    the wrong table."""
    from tflite.BuiltinOptions import BuiltinOptions

    from aot.frontend.tflite_int8 import import_tflite_int8
    from aot.frontend.validate import _Flatbuffer
    from aot.testing import TFLiteModelBuilder

    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 4), "int8", scale=0.1, zero_point=0)
    y = b.add_input("y", (1, 4), "int8", scale=0.1, zero_point=0)
    z = b.add_tensor("z", (1, 4), "int8", scale=0.2, zero_point=0)
    b.add_operator("ADD", inputs=[x, y], outputs=[z], options={"fused_activation_function": 1})
    b.mark_output(z)
    data = bytearray(b.build())
    (op,) = _Flatbuffer(bytes(data)).root().tables(2, "subgraph")[0].tables(3, "operator")
    at = op.pos + op.offset(3)  # Operator.builtin_options_type
    assert data[at] == BuiltinOptions.AddOptions
    data[at] = BuiltinOptions.MulOptions
    with pytest.raises(ModelError, match=r"operator 0 \(ADD\): its options are of union type"):
        import_tflite_int8(bytes(data))
