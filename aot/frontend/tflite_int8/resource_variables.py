"""Resource variables of the TFLite importer: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE
and CALL_ONCE.

Registered into ``tflite_int8``'s handler table when that module loads. A variable (one
per container and shared name) that the main subgraph assigns is model state: a
parameter of ``main`` after the variable tensors, whose last assigned value ``main``
returns, kept in the persistent pool between inferences like SVDF's state. Its initial
value is what CALL_ONCE's initialization subgraph assigns, folded here at import time
(that subgraph may only assign constants), so ``aot_<name>_reset()`` restores it: a reset
model behaves as a freshly loaded TFLite interpreter. A variable the main subgraph only
reads is that constant. See docs/int8.md, "Resource variables".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aot.errors import ModelError
from aot.frontend.model import StateSpec
from aot.frontend.tflite_file import TFLITE_DTYPES
from aot.frontend.tflite_int8.importer import (
    STATE_SOURCES,
    _builtin_names,
    _DamagedOperator,
    _handler,
    _Importer,
    _options,
    _required_options,
    _TensorInfo,
)
from aot.frontend.tflite_int8.indexing import copied, is_model_output
from aot.frontend.validate import DAMAGED

_VARIABLE_OPERATORS = ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE")


@dataclass
class _Variable:
    key: str
    name: str
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    initial: np.ndarray | None = None
    assigned: bool = False  # by the main subgraph
    uses: list[str] = field(default_factory=list)  # "read [2, 3] int8 by operator 4", ...


def _operators(imp: _Importer, graph: Any) -> list[tuple[int, str, Any]]:
    names = _builtin_names()
    result = []
    for index in range(graph.OperatorsLength()):
        op = graph.Operators(index)
        code = imp.model.OperatorCodes(op.OpcodeIndex())
        builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
        result.append((index, names.get(builtin, f"BUILTIN_{builtin}"), op))
    return result


def _tensor(graph: Any, index: int) -> tuple[tuple[int, ...], str]:
    t = graph.Tensors(index)
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    return shape, TFLITE_DTYPES.get(t.Type(), f"tflite-type-{t.Type()}")


def _variable_key(imp: _Importer, op: Any) -> tuple[str, str]:
    opts = _options(op, "VarHandleOptions")
    container = (opts.Container() or b"").decode("utf-8", "replace") if opts else ""
    shared = (opts.SharedName() or b"").decode("utf-8", "replace") if opts else ""
    if not shared:
        raise imp.unsupported("a VAR_HANDLE without a shared_name is not supported")
    return f"resource:{container}/{shared}", shared


class _Walk:
    """One subgraph's variable operators, in order: which handle names which variable,
    and the shape and dtype each read and assignment sees."""

    def __init__(self, imp: _Importer, variables: dict[str, _Variable]) -> None:
        self.imp = imp
        self.variables = variables

    def variable(self, handles: dict[int, str], tensor: int) -> _Variable:
        if tensor not in handles:
            raise self.imp.unsupported(
                f"tensor {tensor} is not a VAR_HANDLE result of this subgraph"
            )
        return self.variables[handles[tensor]]

    def handle(self, handles: dict[int, str], op: Any) -> None:
        key, shared = _variable_key(self.imp, op)
        self.variables.setdefault(key, _Variable(key, shared))
        handles[int(op.Outputs(0))] = key

    def use(self, variable: _Variable, shape: tuple[int, ...], dtype: str, how: str) -> None:
        variable.uses.append(f"{how} as {list(shape)} {dtype} by operator {self.imp.op_index}")
        if variable.shape is None:
            variable.shape, variable.dtype = shape, dtype
        elif (variable.shape, variable.dtype) != (shape, dtype):
            raise self.imp.unsupported(
                f"variable {variable.name!r} is used with two shapes or dtypes: "
                + "; ".join(variable.uses)
            )


def _run_initialization(imp: _Importer, walk: _Walk, op: Any) -> None:
    """Fold CALL_ONCE's initialization subgraph: each ASSIGN_VARIABLE of a constant becomes
    its variable's initial value."""
    number = int(_required_options(imp, op, "CallOnceOptions").InitSubgraphIndex())
    if not 0 < number < imp.subgraph_count:
        raise imp.unsupported(
            f"init_subgraph_index {number} names no subgraph (the model has {imp.subgraph_count})"
        )
    graph = imp.model.Subgraphs(number)
    handles: dict[int, str] = {}
    main_index, main_name = imp.op_index, imp.op_name
    for _index, name, sub_op in _operators(imp, graph):
        if name == "VAR_HANDLE":
            walk.handle(handles, sub_op)
        elif name == "ASSIGN_VARIABLE":
            variable = walk.variable(handles, int(sub_op.Inputs(0)))
            value_index = int(sub_op.Inputs(1))
            shape, dtype = _tensor(graph, value_index)
            data = imp._buffer(graph.Tensors(value_index), dtype, shape)
            if data is None:
                raise imp.unsupported(
                    f"initialization subgraph {number} assigns variable {variable.name!r} "
                    "a computed value; aot folds only constant assignments"
                )
            walk.use(variable, shape, dtype, f"initialized in subgraph {number}")
            variable.initial = np.ascontiguousarray(data)
        else:
            raise imp.unsupported(
                f"initialization subgraph {number} contains {name}; aot folds only "
                "VAR_HANDLE and ASSIGN_VARIABLE of constants there"
            )
    imp.op_index, imp.op_name = main_index, main_name


def _resource_states(imp: _Importer) -> list[tuple[str, StateSpec]]:
    """The variables the main subgraph assigns, as state; read-only ones become constants."""
    try:
        return _walk_variables(imp)
    except _DamagedOperator as err:  # options of the wrong table, as the main loop words it
        raise ModelError(
            f"{imp.source}: {DAMAGED}: operator {imp.op_index} ({imp.op_name}): {err}"
        ) from None


def _walk_variables(imp: _Importer) -> list[tuple[str, StateSpec]]:
    from tvm import relax

    variables: dict[str, _Variable] = {}
    walk = _Walk(imp, variables)
    handles: dict[int, str] = {}
    touched = False  # a variable read or assigned by the main subgraph so far
    for index, name, op in _operators(imp, imp.graph):
        if name not in _VARIABLE_OPERATORS:
            continue
        imp.op_index, imp.op_name = index, name
        touched = touched or name in ("READ_VARIABLE", "ASSIGN_VARIABLE")
        if name == "CALL_ONCE":
            if touched:
                raise imp.unsupported("CALL_ONCE must come before the variables' first use")
            _run_initialization(imp, walk, op)
        elif name == "VAR_HANDLE":
            walk.handle(handles, op)
        elif name == "READ_VARIABLE":
            variable = walk.variable(handles, int(op.Inputs(0)))
            if variable.initial is None and not variable.assigned:
                raise imp.unsupported(
                    f"variable {variable.name!r} is read before anything assigns it "
                    "(no CALL_ONCE initializes it; TFLite fails there too)"
                )
            walk.use(variable, *_tensor(imp.graph, int(op.Outputs(0))), "read")
        else:  # ASSIGN_VARIABLE
            variable = walk.variable(handles, int(op.Inputs(0)))
            walk.use(variable, *_tensor(imp.graph, int(op.Inputs(1))), "assigned")
            variable.assigned = True
    imp.op_index, imp.op_name = -1, ""
    states = []
    for variable in variables.values():
        if variable.shape is None or variable.dtype is None:
            continue  # a handle that nothing reads or assigns
        if variable.assigned:
            spec = StateSpec(variable.name, variable.shape, variable.dtype, variable.initial)
            states.append((variable.key, spec))
        elif variable.initial is not None:
            imp.values[variable.key] = relax.const(variable.initial, variable.dtype)
    return states


STATE_SOURCES.append(_resource_states)


@_handler("CALL_ONCE", no_output=True)
def _call_once(imp: _Importer, bb: Any, op: Any, ins: list[int], out: None) -> None:
    """Folded before ``main`` was built (``_resource_states``): nothing runs per inference."""


@_handler("VAR_HANDLE")
def _var_handle(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> str:
    # The handle's "value" is its variable's key; READ and ASSIGN look the variable up by it.
    return _variable_key(imp, op)[0]


def _key(imp: _Importer, index: int) -> str:
    key = imp.values.get(index)
    if not isinstance(key, str):
        raise imp.unsupported(f"tensor {index} is not a VAR_HANDLE result")
    return key


@_handler("READ_VARIABLE")
def _read_variable(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    value = imp.values[_key(imp, ins[0])]
    if is_model_output(imp, out.index):
        return copied(imp, bb, value, out.shape)
    return value  # later operators read the variable itself: no copy


@_handler("ASSIGN_VARIABLE", no_output=True)
def _assign_variable(imp: _Importer, bb: Any, op: Any, ins: list[int], out: None) -> None:
    key = _key(imp, ins[0])
    # A next state is a buffer of its own, which run() copies into the persistent pool.
    value = copied(imp, bb, imp.value(ins[1]), imp.tensors[ins[1]].shape)
    imp.values[key] = value
    imp.next_states[key] = value
