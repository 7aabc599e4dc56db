"""The int8 operator kinds: one registry entry per kind, with its typed parameters.

A kind is what the importer writes as a PrimFunc's ``aot.operator`` (``conv2d_int8``) and
what backends match on (``OperatorInfo.kind``). Its entry in ``KINDS`` says which
parameters dataclass (aot/operators/params.py) its ``aot.params`` become, which source
operators import as it (TFLite builtin names: the importer's handler, the shape rule of
aot/frontend/validate.py and the row of docs/operators.md go by that name), and its
family: the importer module ``aot/frontend/tflite_int8/<family>.py`` that emits it and the
compute module ``aot/ops/<family>.py`` whose TE compute it calls.

Backends read an operator's parameters through :func:`operator_params` only, never by
key. Kinds without an entry carry :class:`GenericParams`: nothing downstream reads them
yet; the first backend that does gives the kind an entry and a dataclass.

This package sits at the bottom of the house: it imports nothing of aot but the error
tree, so the importer, the partitioner and every backend can import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from aot.operators.params import (
    ROUNDINGS,
    AddParams,
    ConvParams,
    FullyConnectedParams,
    GenericParams,
    OperatorParams,
    RequantizedParams,
)

P = TypeVar("P", bound=OperatorParams)


@dataclass(frozen=True)
class OperatorKind:
    """One operator kind (see the module docstring)."""

    name: str  # the PrimFunc's aot.operator, e.g. conv2d_int8
    params: type[OperatorParams]
    sources: tuple[str, ...]  # TFLite builtin operators imported as this kind
    family: str  # aot/frontend/tflite_int8/<family>.py and aot/ops/<family>.py
    compute: str  # the TE compute in aot/ops/<family>.py whose arguments ``params`` holds


# The family whose handlers live in the importer's core module
# (aot/frontend/tflite_int8/importer.py) and whose computes are aot/ops/int8.py.
CORE_FAMILY = "int8"

KINDS: dict[str, OperatorKind] = {
    entry.name: entry
    for entry in (
        OperatorKind("conv2d_int8", ConvParams, ("CONV_2D",), CORE_FAMILY, "conv2d"),
        OperatorKind(
            "depthwise_conv2d_int8",
            ConvParams,
            ("DEPTHWISE_CONV_2D",),
            CORE_FAMILY,
            "depthwise_conv2d",
        ),
        OperatorKind(
            "fully_connected_int8",
            FullyConnectedParams,
            ("FULLY_CONNECTED",),
            CORE_FAMILY,
            "fully_connected",
        ),
        OperatorKind("add_int8", AddParams, ("ADD",), CORE_FAMILY, "add"),
    )
}


def params_class(kind: str) -> type[OperatorParams]:
    """The parameters dataclass of ``kind`` (:class:`GenericParams` without an entry)."""
    entry = KINDS.get(kind)
    return GenericParams if entry is None else entry.params


def params_of(kind: str, values: Mapping[str, Any]) -> OperatorParams:
    """``values`` (an operator's ``aot.params``) as its kind's dataclass; a key the
    dataclass does not know, or one it needs and ``values`` lacks, is an InternalError."""
    return params_class(kind).from_mapping(kind, values)


class _Operator(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def params(self) -> Mapping[str, Any]: ...


def operator_params(op: _Operator, expected: type[P]) -> P | None:
    """The typed parameters of an operator a backend sees (``OperatorInfo``), or None
    when it carries none of the importer's (an operator of the stock frontends, a test's
    hand-made one) or they are not of the ``expected`` family (``OperatorParams``: any).
    This is where a backend's typed view of an operator is built from the attributes."""
    values = op.params
    if isinstance(values, OperatorParams):
        typed: OperatorParams = values
    elif "operands" not in values or "rounding" not in values:
        return None
    else:
        typed = params_of(op.kind, values)
    return typed if isinstance(typed, expected) else None


__all__ = [
    "CORE_FAMILY",
    "KINDS",
    "ROUNDINGS",
    "AddParams",
    "ConvParams",
    "FullyConnectedParams",
    "GenericParams",
    "OperatorKind",
    "OperatorParams",
    "RequantizedParams",
    "operator_params",
    "params_class",
    "params_of",
]
