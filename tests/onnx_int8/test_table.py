"""The onnx-int8 table of docs/operators.md against the importer and its tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from aot.frontend import operators as ops
from aot.frontend.onnx_int8 import SUPPORTED_OPERATORS

pytestmark = pytest.mark.unit

HERE = Path(__file__).resolve().parent


def test_entries_equal_the_importer_registry() -> None:
    assert set(ops.ONNX_INT8_OPERATORS) == set(SUPPORTED_OPERATORS)
    (table,) = ops.tables("onnx-int8")
    assert [e.name for e in table.operators] == sorted(SUPPORTED_OPERATORS)


def test_every_operator_marked_tested_is_in_a_test_model() -> None:
    source = "\n".join(p.read_text(encoding="utf-8") for p in HERE.glob("*.py"))
    assert {n for n in ops.ONNX_INT8_TESTED if f'"{n}"' not in source} == set()


def test_docs_page_has_the_onnx_int8_section() -> None:
    page = (HERE.parents[1] / "docs" / "operators.md").read_text(encoding="utf-8")
    assert "## ONNX int8 (aot's importer): `onnx-int8`" in page
    assert page == ops.render_markdown()
