"""What a registry entry holds (the entries themselves are in aot/operators/table.py)."""

from __future__ import annotations

from dataclasses import dataclass

from aot.operators.params import OperatorParams

# The family whose handlers live in the importer's core module
# (aot/frontend/tflite_int8/importer.py) and whose computes are aot/ops/int8.py.
CORE_FAMILY = "int8"


@dataclass(frozen=True)
class OperatorKind:
    """One kind an operator is imported as (the PrimFunc's ``aot.operator``, what a
    backend's pattern matches), when a backend reads its parameters."""

    name: str  # e.g. conv2d_int8
    params: type[OperatorParams]  # what its ``aot.params`` become (aot/operators/params.py)
    family: str  # aot/frontend/tflite_int8/<family>.py emits it; aot/ops/<family>.py computes
    compute: str  # the TE compute in aot/ops/<family>.py whose arguments ``params`` holds


@dataclass(frozen=True)
class Operator:
    """One TFLite builtin operator the int8 importer takes (the table's key is its name:
    the importer's handler, the shape rule of aot/frontend/validate.py and the row of
    docs/operators.md go by it)."""

    dtypes: str  # docs/operators.md's dtypes column: what the handler's checks accept
    limits: str  # its limits column: shapes, options, ranges
    # The kinds it is imported as whose parameters are typed; any other kind it emits
    # carries GenericParams.
    kinds: tuple[OperatorKind, ...] = ()
