"""docs/operators.md and `aot operators` come from the importers' own tables and cannot drift."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aot.cli import main
from aot.errors import InternalError
from aot.frontend import operators as ops

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_int8_entries_equal_the_handler_registry() -> None:
    from aot.frontend import tflite_int8

    assert set(ops.INT8_OPERATORS) == set(tflite_int8.SUPPORTED_OPERATORS)
    assert set(tflite_int8.SUPPORTED_OPERATORS) == set(tflite_int8._HANDLERS)


def test_relax_tflite_entries_equal_the_converter_map() -> None:
    supported = ops.relax_tflite_supported()
    stablehlo = {name for name in supported if name.startswith("STABLEHLO_")}
    assert set(ops.RELAX_TFLITE_NOTES) | stablehlo == supported
    assert not set(ops.RELAX_TFLITE_NOTES) & stablehlo


def test_relax_onnx_entries_equal_the_convert_map() -> None:
    from tvm.relax.frontend.onnx import onnx_frontend

    assert set(ops.RELAX_ONNX_NOTES) == set(onnx_frontend._get_convert_map())
    versions = ops.relax_onnx_supported()
    assert versions["Softmax"] == (1, 11, 13)  # _impl_v1, _impl_v11, _impl_v13 in TVM 0.27
    assert all(versions.values()), [k for k, v in versions.items() if not v]


@pytest.mark.parametrize("groups", [ops.RELAX_TFLITE_GROUPS, ops.RELAX_ONNX_GROUPS])
def test_each_operator_is_in_one_group(groups) -> None:
    names = [name for _, text in groups for name in text.split()]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_a_handler_without_an_entry_fails(monkeypatch) -> None:
    from aot.frontend import tflite_int8

    monkeypatch.setattr(
        tflite_int8, "SUPPORTED_OPERATORS", (*tflite_int8.SUPPORTED_OPERATORS, "IF")
    )
    with pytest.raises(InternalError, match="no tflite-int8 entry for IF"):
        ops.int8_table()


def test_docs_page_is_the_generated_text() -> None:
    page = (ROOT / "docs" / "operators.md").read_text(encoding="utf-8")
    assert page == ops.render_markdown(), (
        "docs/operators.md is stale: python3 -m aot operators --markdown > docs/operators.md"
    )


def test_every_docs_page_named_in_a_message_exists() -> None:
    named = set()
    for source in (ROOT / "aot").rglob("*.py"):
        named |= set(re.findall(r"docs/[a-z0-9_]+\.md", source.read_text(encoding="utf-8")))
    assert "docs/operators.md" in named
    assert [page for page in sorted(named) if not (ROOT / page).is_file()] == []


def test_tflm_operators_missing_from_int8_are_listed() -> None:
    import tflite

    builtin = {k for k in vars(tflite.BuiltinOperator) if not k.startswith("_")}
    assert set(ops.TFLM_BUILTIN_OPERATORS) <= builtin  # real TFLite builtin names
    table = ops.int8_table()
    missing = {n for n in table.not_yet_supported if not n.startswith("CUSTOM:")}
    supported = {e.name for e in table.operators}
    refused = set(table.float_only) | set(table.control_flow)
    assert missing | refused == set(ops.TFLM_BUILTIN_OPERATORS) - supported
    assert {"CONV_2D", "SOFTMAX", "TRANSPOSE_CONV"} <= supported
    assert set(table.control_flow) == {"IF", "WHILE"} and not set(table.control_flow) & missing


def _tflite_operators(data: bytes, tmp_path: Path) -> set[str]:
    from aot.frontend.tflite_file import read_tflite

    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    return set(read_tflite(path).operators)


def _onnx_operators(data: bytes) -> set[str]:
    import onnx

    return {node.op_type for node in onnx.load_model_from_string(data).graph.node}


def test_tested_marks_match_the_test_models(tmp_path: Path) -> None:
    from tests.compiler.test_float_models import TFLITE_MODELS, onnx_cnn, onnx_gemm
    from tests.operators.test_onnx_float64 import float64_model

    tflite_ops = set().union(*(_tflite_operators(m(), tmp_path) for m in TFLITE_MODELS.values()))
    tflite_ops |= _tflite_operators(
        (ROOT / "examples/tiny_kws_float.tflite").read_bytes(), tmp_path
    )
    assert ops.TESTED["relax-tflite"] == tflite_ops
    onnx_ops = set().union(*(_onnx_operators(m()) for m in (onnx_cnn, onnx_gemm, float64_model)))
    assert ops.TESTED["relax-onnx"] == onnx_ops
    int8_test_source = "".join(
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests/int8").glob("test_ops*.py"))
    )
    assert {n for n in ops.TESTED["tflite-int8"] if f'"{n}"' not in int8_test_source} == set()


# -- the command ------------------------------------------------------------------------------


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["operators", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_table_lists_every_frontend(capsys) -> None:
    code, out, _ = run(capsys)
    assert code == 0
    int8_title = f"[tflite-int8]: {len(ops.INT8_OPERATORS)} operators"
    for title in (int8_title, "[relax-tflite]:", "[relax-onnx]:"):
        assert title in out
    assert re.search(r"^  CONV_2D \*\s+int8; weights int8 per-", out, re.MULTILINE)
    assert "not yet supported (TensorFlow Lite Micro has them):" in out
    assert re.search(r"^  Softmax \*\s+1,11,13\s+float32, float64", out, re.MULTILINE)


def test_cli_json_is_the_same_table(capsys) -> None:
    code, out, _ = run(capsys, "--json", "--frontend", "relax-onnx")
    assert code == 0
    (table,) = json.loads(out)
    assert table["frontend"] == "relax-onnx"
    names = [entry["name"] for entry in table["operators"]]
    assert set(names) == set(ops.RELAX_ONNX_NOTES) and names == sorted(names)
    conv = next(e for e in table["operators"] if e["name"] == "Conv")
    assert conv == {
        "name": "Conv",
        "dtypes": "float32, float64",
        "limits": "NCHW convolution: pads, strides, dilations, groups",
        "tested": True,
        "converter_versions": [11],
    }


def test_cli_one_operator_in_each_frontend(capsys) -> None:
    code, out, _ = run(capsys, "--json", "conv_2d")
    assert code == 0
    assert [(t["frontend"], [e["name"] for e in t["operators"]]) for t in json.loads(out)] == [
        ("tflite-int8", ["CONV_2D"]),
        ("relax-tflite", ["CONV_2D"]),
    ]


def test_cli_unknown_operator_is_one_line(capsys) -> None:
    code, _, err = run(capsys, "NoSuchOp", "--frontend", "relax-onnx")
    assert code == 2
    assert err == (
        "error: no operator named NoSuchOp in the relax-onnx frontend; "
        "'aot operators' lists them all\n"
    )


def test_cli_markdown_is_the_docs_page(capsys) -> None:
    code, out, _ = run(capsys, "--markdown")
    assert code == 0
    assert out == (ROOT / "docs" / "operators.md").read_text(encoding="utf-8")


def test_cli_help_teaches(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["operators", "--help"])
    out = capsys.readouterr().out
    for text in ("tflite-int8", "relax-onnx", "examples:", "--markdown > docs/operators.md"):
        assert text in out
