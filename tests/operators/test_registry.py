"""The operator registry (aot/operators): each typed kind's entry agrees with its importer
handler, its TE compute and its docs row, and compute modules are named like the
importer's families, so adding an operator touches one importer module, one compute
module and one entry."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path

import pytest

from aot.errors import InternalError
from aot.frontend.tflite_int8 import SUPPORTED_OPERATORS
from aot.frontend.tflite_int8.importer import _handler
from aot.frontend.tflite_int8.logic import FLOAT_ONLY
from aot.frontend.validate import _RULES
from aot.operators import (
    CORE_FAMILY,
    KINDS,
    OPERATORS,
    SOURCES,
    AddParams,
    ConvParams,
    GenericParams,
    OperatorParams,
    operator_params,
    params_of,
)

pytestmark = pytest.mark.unit

AOT = Path(__file__).resolve().parents[2] / "aot"
# Compute modules that are not one importer family's: shared arithmetic.
SHARED_COMPUTES = {"__init__", "fixedpoint"}


def test_every_handler_has_an_entry_and_every_entry_a_handler() -> None:
    assert set(OPERATORS) == set(SUPPORTED_OPERATORS)
    # validate.py's shape rules go by the same names (a float-only operator's too: the
    # shapes are checked before the importer refuses it by name).
    assert set(_RULES) - set(OPERATORS) - set(FLOAT_ONLY) == set()


def test_a_handler_without_an_entry_is_refused() -> None:
    with pytest.raises(InternalError, match=r"aot/operators/table\.py"):
        _handler("FROBNICATE")(lambda imp, bb, op, ins, out: None)
    assert "FROBNICATE" not in SUPPORTED_OPERATORS


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_kind_is_emitted_by_its_familys_importer_module(kind: str) -> None:
    entry = KINDS[kind]
    assert SOURCES[kind], f"{kind} is the kind of no operator"
    module = "importer" if entry.family == CORE_FAMILY else entry.family
    # The int16 wrappers of some handlers hand the int8 form to the family's handler.
    text = (AOT / "frontend" / "tflite_int8" / f"{module}.py").read_text()
    assert f'name="{kind}"' in text


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_an_entry_holds_its_computes_arguments(kind: str) -> None:
    """The params dataclass has a field for every plain keyword of the compute and no
    required field the compute lacks: the importer's attribute dict fits it."""
    entry = KINDS[kind]
    compute = getattr(importlib.import_module(f"aot.ops.{entry.family}"), entry.compute)
    signature = inspect.signature(compute).parameters
    keywords = {n for n, p in signature.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    fields = {f.name: f for f in dataclasses.fields(entry.params)}
    assert keywords - set(fields) == set(), f"{entry.params.__name__} lacks fields"
    required = {
        name
        for name, f in fields.items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    assert required - set(signature) == set()
    assert dataclasses.is_dataclass(entry.params) and entry.params.__dataclass_params__.frozen


def test_compute_modules_are_named_after_the_importer_families() -> None:
    families = {p.stem for p in (AOT / "frontend" / "tflite_int8").glob("*.py")}
    families |= {p.stem for p in (AOT / "frontend").glob("*.py")}  # onnx_int8
    computes = {p.stem for p in (AOT / "ops").glob("*.py")} - SHARED_COMPUTES
    assert computes - families - {CORE_FAMILY} == set()


def test_a_key_the_dataclass_does_not_know_is_refused() -> None:
    values = {
        "out_shape": (1, 2), "lhs_offset": 1, "rhs_offset": 2, "left_shift": 20,
        "lhs_multiplier": 3, "lhs_shift": -1, "rhs_multiplier": 4, "rhs_shift": -2,
        "output_multiplier": 5, "output_shift": -3, "output_zp": 0, "act_min": -128,
        "act_max": 127, "operands": ("lhs", "rhs"), "rounding": "double",
    }  # fmt: skip
    params = params_of("add_int8", values)
    assert isinstance(params, AddParams) and params.side("rhs") == (2, 4, -2)
    with pytest.raises(InternalError, match="new_knob"):
        params_of("add_int8", {**values, "new_knob": 1})
    with pytest.raises(InternalError, match="act_max"):
        params_of("add_int8", {k: v for k, v in values.items() if k != "act_max"})


def test_a_kind_without_an_entry_keeps_its_values_generic() -> None:
    params = params_of("tile_int8", {"multiples": [2, 1], "operands": ("data",)})
    assert isinstance(params, GenericParams) and params.values == {"multiples": (2, 1)}
    assert params.operand("data") == 0 and params.operand("weight") is None


def test_operators_without_the_importers_params_have_none() -> None:
    class Op:
        kind, params = "conv2d_int8", GenericParams()

    assert operator_params(Op(), OperatorParams) is None
    Op.params = params_of("tile_int8", {"operands": ("data",), "multiples": (2,)})
    assert operator_params(Op(), OperatorParams) is Op.params
    assert operator_params(Op(), ConvParams) is None  # of another family
    Op.params = {"operands": ("data",), "rounding": "double"}  # a mapping: not typed
    with pytest.raises(InternalError, match="params_of"):
        operator_params(Op(), ConvParams)
