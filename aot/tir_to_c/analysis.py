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


def raster_in_place_shift(func: Any, source: int, output: int) -> int | None:
    """How many bytes before parameter ``source`` parameter ``output`` may start so that
    the kernel, run as it is, computes the same output over one buffer: None when the
    kernel's shape does not let that be shown.

    Shown for a kernel whose body is one loop nest (besides its buffer declarations)
    that only reads ``source`` and only writes ``output``, both int8: for every
    iteration of the outermost loop, the highest output index written so far must stay
    below the lowest input index that iteration reads (and later ones read no lower).
    Index ranges are worked out per outermost iteration from the loops' bounds, the
    bindings and the loads as written (a guarded load counts, which only makes the
    shift larger); an index expression of any other form gives None.
    """
    from tvm import tirx

    params = list(func.params)
    buffers = [func.buffer_map[p] for p in params] if hasattr(func, "buffer_map") else params
    if max(source, output) >= len(buffers):
        return None
    for index in (source, output):
        if str(getattr(buffers[index], "dtype", "")) != "int8":
            return None
    aliases: dict[int, int] = {}
    body = func.body
    nest = None
    for child in body.seq if isinstance(body, tirx.SeqStmt) else [body]:
        if isinstance(child, tirx.DeclBuffer):
            data = declared_source(child)
            if data is not None:
                aliases[child.buffer.__chandle__()] = data.__chandle__()
        elif isinstance(child, tirx.AllocBuffer):
            continue
        elif isinstance(child, tirx.For) and nest is None:
            nest = child
        else:
            return None
    if nest is None:
        return None
    outer = _constant_range(nest)
    if outer is None or int(nest.kind) not in (0, 3):  # serial or unrolled
        return None

    def root(buffer: Any) -> int:
        key = buffer.__chandle__()
        return aliases.get(key, key)

    keys = {"source": root(buffers[source]), "output": root(buffers[output])}
    highest_written: list[int] = []
    lowest_read: list[int] = []
    for value in range(outer[0], outer[1] + 1):
        ranges = _Ranges({nest.loop_var.__chandle__(): (value, value)}, keys, root)
        if not ranges.walk(nest.body):
            return None
        highest_written.append(ranges.written)
        lowest_read.append(ranges.read)
    shift, written = 0, None
    for high, low in zip(highest_written, lowest_read, strict=True):
        written = high if written is None else max(written, high)
        if written >= 0 and low != _NONE_READ:
            shift = max(shift, written - low + 1)
    return shift


_NONE_READ = 1 << 62


def declared_source(decl: Any) -> Any:
    """The buffer whose data a DeclBuffer aliases (``data=other.data``), if any."""
    from tvm import ir

    data = decl.data
    is_call = isinstance(data, ir.Call) and isinstance(data.op, ir.Op) and data.args
    if is_call and data.op.name.split(".", 1)[-1] == "buffer_data":
        return data.args[0]
    return None


def _constant_range(loop: Any) -> tuple[int, int] | None:
    from tvm import tirx

    if not isinstance(loop.min, tirx.IntImm) or not isinstance(loop.extent, tirx.IntImm):
        return None
    first = int(loop.min.value)
    return first, first + int(loop.extent.value) - 1


class _Ranges:
    """One outermost iteration: the range of every loop variable and binding, the highest
    output index it writes and the lowest source index it reads."""

    # Expression fields that may hold loads (TVM nodes name their operands so).
    FIELDS = ("a", "b", "value", "condition", "true_value", "false_value", "args", "indices")

    def __init__(self, env: dict[int, tuple[int, int]], keys: dict[str, int], root: Any) -> None:
        self.env = env
        self.keys = keys
        self.root = root
        self.written = -1
        self.read = _NONE_READ

    def walk(self, stmt: Any) -> bool:
        from tvm import tirx

        if stmt is None:
            return True
        if isinstance(stmt, tirx.SeqStmt):
            return all(self.walk(child) for child in stmt.seq)
        if isinstance(stmt, tirx.For):
            bounds = _constant_range(stmt)
            if bounds is None:
                return False
            self.env[stmt.loop_var.__chandle__()] = bounds
            return self.walk(stmt.body)
        if isinstance(stmt, tirx.Bind | tirx.LetStmt):
            if not self.loads(stmt.value):
                return False
            interval = self.interval(stmt.value)
            if interval is not None:
                self.env[stmt.var.__chandle__()] = interval
            return (
                self.walk(getattr(stmt, "body", None)) if isinstance(stmt, tirx.LetStmt) else True
            )
        if isinstance(stmt, tirx.BufferStore):
            target = self.root(stmt.buffer)
            if target == self.keys["source"]:
                return False
            if not all(self.loads(i) for i in stmt.indices) or not self.loads(stmt.value):
                return False
            if target == self.keys["output"]:
                if len(stmt.indices) != 1:
                    return False
                interval = self.interval(stmt.indices[0])
                if interval is None:
                    return False
                self.written = max(self.written, interval[1])
            return True
        if isinstance(stmt, tirx.IfThenElse):
            return (
                self.loads(stmt.condition)
                and self.walk(stmt.then_case)
                and self.walk(stmt.else_case)
            )
        if isinstance(stmt, tirx.AllocBuffer | tirx.DeclBuffer):
            return isinstance(stmt, tirx.AllocBuffer) or declared_source(stmt) is None
        if isinstance(stmt, tirx.Evaluate):
            return self.loads(stmt.value)
        return False

    def loads(self, expr: Any) -> bool:
        """Record the source loads in ``expr``; False for a load of the output or an index
        whose range cannot be told."""
        from tvm import ir

        if isinstance(expr, ir.TensorLoad):
            source = self.root(expr.source)
            if source == self.keys["output"]:
                return False
            if source == self.keys["source"]:
                if len(expr.indices) != 1:
                    return False
                interval = self.interval(expr.indices[0])
                if interval is None:
                    return False
                self.read = min(self.read, interval[0])
            return all(self.loads(i) for i in expr.indices)
        for name in self.FIELDS:
            child = getattr(expr, name, None)
            if child is None or isinstance(child, int | float | str):
                continue
            children = (
                child if type(child).__name__ == "Array" or isinstance(child, list) else [child]
            )
            for item in children:
                if not self.loads(item):
                    return False
        return True

    def interval(self, expr: Any) -> tuple[int, int] | None:
        """The range of an integer index expression, or None for a form not handled."""
        from tvm import tirx

        if isinstance(expr, tirx.IntImm):
            return int(expr.value), int(expr.value)
        if isinstance(expr, tirx.Var):
            return self.env.get(expr.__chandle__())
        if isinstance(expr, tirx.Cast):
            return self.interval(expr.value)
        if isinstance(expr, tirx.Add | tirx.Sub | tirx.Mul | tirx.Min | tirx.Max):
            a, b = self.interval(expr.a), self.interval(expr.b)
            if a is None or b is None:
                return None
            if isinstance(expr, tirx.Add):
                return a[0] + b[0], a[1] + b[1]
            if isinstance(expr, tirx.Sub):
                return a[0] - b[1], a[1] - b[0]
            if isinstance(expr, tirx.Min):
                return min(a[0], b[0]), min(a[1], b[1])
            if isinstance(expr, tirx.Max):
                return max(a[0], b[0]), max(a[1], b[1])
            products = [x * y for x in a for y in b]
            return min(products), max(products)
        if isinstance(expr, tirx.FloorDiv | tirx.FloorMod):
            a, b = self.interval(expr.a), self.interval(expr.b)
            if a is None or b is None or b[0] != b[1] or b[0] <= 0:
                return None
            if isinstance(expr, tirx.FloorDiv):
                return a[0] // b[0], a[1] // b[0]
            return (
                (0, b[0] - 1)
                if a[1] - a[0] + 1 >= b[0] or a[0] // b[0] != a[1] // b[0]
                else (a[0] % b[0], a[1] % b[0])
            )
        return None
