"""The operator registry: one entry per TFLite builtin the int8 importer takes.

``OPERATORS`` (aot/operators/table.py) maps each builtin name to its
:class:`Operator`: the dtypes and limits of its row in docs/operators.md and the
:class:`OperatorKind` s it is imported as whose parameters backends read. A kind is what
the importer writes as a PrimFunc's ``aot.operator`` (``conv2d_int8``) and what a backend
matches (``OperatorInfo.kind``); its entry names the parameters dataclass its
``aot.params`` become (aot/operators/params.py), its family (the importer module
``aot/frontend/tflite_int8/<family>.py`` that emits it and the compute module
``aot/ops/<family>.py``) and its TE compute. The builtin's name is the key of its
importer handler and of its shape rule in aot/frontend/validate.py.

Backends read an operator's parameters through :func:`operator_params` only, never by
key. Kinds without an entry carry :class:`GenericParams`: nothing downstream reads them
yet; the first backend that does gives the kind an entry and a dataclass.

This package sits at the bottom of the house: it imports nothing of aot but the error
tree, so the importer, the partitioner and every backend can import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from aot.operators.entries import CORE_FAMILY, Operator, OperatorKind
from aot.operators.params import (
    ROUNDINGS,
    AddParams,
    ConvParams,
    FullyConnectedParams,
    GenericParams,
    OperatorParams,
    RequantizedParams,
)
from aot.operators.table import OPERATORS

P = TypeVar("P", bound=OperatorParams)

# Every typed kind, by name; and the operators imported as it.
KINDS: dict[str, OperatorKind] = {
    kind.name: kind for operator in OPERATORS.values() for kind in operator.kinds
}
SOURCES: dict[str, tuple[str, ...]] = {
    kind: tuple(name for name, op in OPERATORS.items() if any(k.name == kind for k in op.kinds))
    for kind in KINDS
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
    "OPERATORS",
    "ROUNDINGS",
    "SOURCES",
    "AddParams",
    "ConvParams",
    "FullyConnectedParams",
    "GenericParams",
    "Operator",
    "OperatorKind",
    "OperatorParams",
    "RequantizedParams",
    "operator_params",
    "params_class",
    "params_of",
]
