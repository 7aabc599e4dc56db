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

Partitioning builds each operator's dataclass from its ``aot.params`` (:func:`params_of`)
and backends get it as ``OperatorInfo.params``; :func:`operator_params` gives it checked
for a family. Nothing reads the parameters by key. Kinds without an entry carry
:class:`GenericParams`: nothing downstream reads them yet; the first backend that does
gives the kind an entry and a dataclass.

This package sits at the bottom of the house: it imports nothing of aot but the error
tree, so the importer, the partitioner and every backend can import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from aot.errors import InternalError
from aot.operators.entries import CORE_FAMILY, Operator, OperatorKind
from aot.operators.params import (
    ROUNDINGS,
    AddParams,
    ConvParams,
    FullyConnectedParams,
    GenericParams,
    OperatorParams,
    PoolParams,
    RequantizedParams,
    TransposeConvParams,
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
    def params(self) -> OperatorParams: ...


def operator_params(op: _Operator, expected: type[P]) -> P | None:
    """The typed parameters of an operator a backend sees (``OperatorInfo.params``) when
    they are of the ``expected`` family (``OperatorParams``: any), else None; None too for
    an operator that carries none of the importer's (``GenericParams()``, no operands: a
    test's hand-made one)."""
    params = op.params
    if not isinstance(params, OperatorParams):
        raise InternalError(
            f"operator {op.kind}: params is a {type(params).__name__}, not an OperatorParams "
            "(aot.operators.params_of builds one)"
        )
    if not params.operands or not isinstance(params, expected):
        return None
    return params


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
    "PoolParams",
    "RequantizedParams",
    "TransposeConvParams",
    "operator_params",
    "params_class",
    "params_of",
]
