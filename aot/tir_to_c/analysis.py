"""Facts about lowered kernels that the executor uses."""

from __future__ import annotations

from typing import Any


def is_identity_copy(func: Any) -> bool:
    """True when the lowered kernel copies its only input to its only output element by
    element at the same flat index (a reshape, squeeze or expand_dims).

    The executor then drops the call and lets the output alias the input, which saves the
    copy and one buffer: how the activation lower bound treats reshapes.
    """
    import numpy as np
    import tvm_ffi
    from tvm import ir, tirx

    params = list(func.params)
    if len(params) != 2:
        return False
    source, target = params
    if str(source.dtype) != str(target.dtype):
        return False
    count = int(np.prod([int(d) for d in source.shape]))
    if count != int(np.prod([int(d) for d in target.shape])):
        return False
    aliases: dict[int, int] = {}  # DeclBuffer over a param -> the param
    stmt = func.body
    covered = 1
    while True:
        if isinstance(stmt, tirx.SeqStmt):
            rest = []
            for child in stmt.seq:
                if isinstance(child, tirx.DeclBuffer):
                    data = child.data
                    if isinstance(data, ir.Call) and data.args:
                        aliases[child.buffer.__chandle__()] = data.args[0].__chandle__()
                    continue
                rest.append(child)
            if len(rest) != 1:
                return False
            stmt = rest[0]
        elif isinstance(stmt, tirx.For):
            if not isinstance(stmt.extent, tirx.IntImm):
                return False
            covered *= int(stmt.extent.value)
            stmt = stmt.body
        else:
            break
    if not isinstance(stmt, tirx.BufferStore) or not isinstance(stmt.value, ir.TensorLoad):
        return False

    def root(buffer: Any) -> int:
        key = buffer.__chandle__()
        return aliases.get(key, key)

    load = stmt.value
    if root(stmt.buffer) != target.__chandle__() or root(load.source) != source.__chandle__():
        return False
    if len(stmt.indices) != 1 or len(load.indices) != 1 or covered != count:
        return False
    return bool(tvm_ffi.structural_equal(stmt.indices[0], load.indices[0]))


# Allocations up to this size stay local C arrays (register-sized accumulators); anything
# larger goes to the kernel's scratch area so that no kernel frame grows past ~1 KiB. The
# C printer (aot/tir_to_c/printer.py) follows the same rule; lowering sizes the scratch
# here so the planner knows it before any C exists.
MAX_LOCAL_ALLOCATION_BYTES = 64
SCRATCH_ALIGNMENT = 16


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def scratch_bytes(func: Any) -> int:
    """Bytes of the scratch area a lowered kernel needs: its allocations larger than
    MAX_LOCAL_ALLOCATION_BYTES, each aligned, in the order the C printer meets them."""
    import numpy as np
    from tvm import tirx

    offset = 0

    def visit(stmt: Any) -> None:
        nonlocal offset
        if stmt is None:
            return
        if isinstance(stmt, tirx.SeqStmt):
            for child in stmt.seq:
                visit(child)
        elif isinstance(stmt, tirx.For | tirx.While | tirx.AttrStmt):
            visit(stmt.body)
        elif isinstance(stmt, tirx.IfThenElse):
            visit(stmt.then_case)
            visit(stmt.else_case)
        elif isinstance(stmt, tirx.LetStmt):
            visit(getattr(stmt, "body", None))
        elif isinstance(stmt, tirx.AllocBuffer):
            buffer = stmt.buffer
            dtype = str(buffer.dtype)
            count = int(np.prod([int(d) for d in buffer.shape], dtype=np.int64))
            nbytes = count * np.dtype(dtype if dtype != "bool" else "uint8").itemsize
            if nbytes > MAX_LOCAL_ALLOCATION_BYTES:
                offset = _align(offset, SCRATCH_ALIGNMENT) + nbytes

    visit(func.body)
    return _align(offset, SCRATCH_ALIGNMENT)
