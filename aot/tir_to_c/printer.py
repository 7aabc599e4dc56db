"""Emit one lowered TIR PrimFunc as a plain C99 function.

TVM 0.27's C code generator emits the packed calling convention and TVM runtime
headers, and MakeUnpackedAPI is gone. A kernel here is simple, flattened TIR (loops,
loads, stores, arithmetic), so we print it ourselves: full control over the signature
(one pointer per buffer), over where kernel-internal buffers live (a scratch area the
memory planner places, not the C stack), and over exact numerics (hex float literals,
floor division helpers, lazy if_then_else for padded reads).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
from tvm import ir, tirx

from aot.errors import UnsupportedError
from aot.tir_to_c.analysis import (
    MAX_LOCAL_ALLOCATION_BYTES,
    SCRATCH_ALIGNMENT,
    declared_source,
)

C_TYPES = {
    "bool": "uint8_t",
    "int8": "int8_t",
    "uint8": "uint8_t",
    "int16": "int16_t",
    "uint16": "uint16_t",
    "int32": "int32_t",
    "uint32": "uint32_t",
    "int64": "int64_t",
    "uint64": "uint64_t",
    "float32": "float",
    "float64": "double",
}

# TIR intrinsic -> (C function for float32, C function for float64)
MATH_FUNCTIONS = {
    "exp": ("expf", "exp"),
    "exp2": ("exp2f", "exp2"),
    "log": ("logf", "log"),
    "log2": ("log2f", "log2"),
    "log10": ("log10f", "log10"),
    "log1p": ("log1pf", "log1p"),
    "sqrt": ("sqrtf", "sqrt"),
    "tanh": ("tanhf", "tanh"),
    "sin": ("sinf", "sin"),
    "cos": ("cosf", "cos"),
    "tan": ("tanf", "tan"),
    "erf": ("erff", "erf"),
    "floor": ("floorf", "floor"),
    "ceil": ("ceilf", "ceil"),
    "trunc": ("truncf", "trunc"),
    "round": ("nearbyintf", "nearbyint"),
    "nearbyint": ("nearbyintf", "nearbyint"),
    "fabs": ("fabsf", "fabs"),
    "pow": ("powf", "pow"),
    "fmod": ("fmodf", "fmod"),
    "atan": ("atanf", "atan"),
    "atan2": ("atan2f", "atan2"),
}

BINARY_OPERATORS = {
    tirx.Add: "+",
    tirx.Sub: "-",
    tirx.Mul: "*",
    tirx.EQ: "==",
    tirx.NE: "!=",
    tirx.LT: "<",
    tirx.LE: "<=",
    tirx.GT: ">",
    tirx.GE: ">=",
    tirx.And: "&&",
    tirx.Or: "||",
    tirx.RShift: ">>",  # arithmetic on signed values with gcc and clang, as TIR means
    tirx.BitwiseAnd: "&",
    tirx.BitwiseOr: "|",
    tirx.BitwiseXor: "^",
}

# Intrinsic calls that mean the same as an operator node: printed through the node, so
# each operator has one C spelling (and left shifts one UB-free form).
CALL_AS_NODE = {
    "shift_left": tirx.LShift,
    "shift_right": tirx.RShift,
    "bitwise_and": tirx.BitwiseAnd,
    "bitwise_or": tirx.BitwiseOr,
    "bitwise_xor": tirx.BitwiseXor,
}


def dtype_of(expr: object) -> str:
    return str(expr.ty)  # type: ignore[attr-defined]


def c_type(dtype: str) -> str:
    try:
        return C_TYPES[dtype]
    except KeyError:
        raise UnsupportedError(f"data type {dtype} has no C equivalent in aot") from None


def c_literal(value: float | int, dtype: str) -> str:
    """A C literal of exactly this value and type."""
    if dtype.startswith("float"):
        value = float(np.float32(value)) if dtype == "float32" else float(value)
        if math.isnan(value):
            return "(0.0f/0.0f)" if dtype == "float32" else "(0.0/0.0)"
        if math.isinf(value):
            text = "(1.0f/0.0f)" if dtype == "float32" else "(1.0/0.0)"
            return text if value > 0 else f"(-{text})"
        # Hex floats are exact; the decimal in the comment is for readers.
        suffix = "f" if dtype == "float32" else ""
        return f"{value.hex()}{suffix}"
    value = int(value)
    if dtype == "bool":
        return "1" if value else "0"
    if dtype in ("int64", "uint64"):
        macro = "INT64_C" if dtype == "int64" else "UINT64_C"
        if value == -(2**63):
            return "INT64_MIN"
        return f"{macro}({value})"
    if dtype == "int32" and value == -(2**31):
        return "INT32_MIN"
    if dtype in ("int32", "int16", "int8") and value < 0:
        return f"({value})" if dtype == "int32" else f"(({c_type(dtype)})({value}))"
    if dtype == "int32":
        return str(value)
    if dtype.startswith("uint"):
        return f"{value}u" if dtype == "uint32" else f"(({c_type(dtype)}){value}u)"
    return f"(({c_type(dtype)}){value})"


@dataclass(frozen=True)
class KernelParam:
    name: str  # C parameter name
    dtype: str
    num_elements: int
    written: bool


@dataclass(frozen=True)
class EmittedKernel:
    """One C function and what the executor needs to call it."""

    name: str  # C symbol
    params: tuple[KernelParam, ...]
    scratch_bytes: int  # the kernel-internal buffers placed by the memory planner
    source: str  # the function definition
    prototype: str
    helpers: frozenset[str] = field(default_factory=frozenset)  # helper functions it uses


class _Names:
    """Unique, valid C identifiers for TIR variables."""

    def __init__(self) -> None:
        self._by_var: dict[int, str] = {}
        self._used: set[str] = set()

    def get(self, var: object, hint: str) -> str:
        key = var.__chandle__()  # type: ignore[attr-defined]
        if key in self._by_var:
            return self._by_var[key]
        base = re.sub(r"\W", "_", hint) or "v"
        if base[0].isdigit():
            base = "v_" + base
        name = base
        counter = 1
        while name in self._used:
            name = f"{base}_{counter}"
            counter += 1
        self._used.add(name)
        self._by_var[key] = name
        return name

    def lookup(self, var: object) -> str | None:
        return self._by_var.get(var.__chandle__())  # type: ignore[attr-defined]


class KernelEmitter:
    def __init__(self, symbol: str, func: tirx.PrimFunc, restrict: bool = True) -> None:
        self.symbol = symbol
        self.func = func
        # Without restrict the executor may pass the same buffer as input and output
        # (elementwise kernels computed in place).
        self.restrict = "restrict " if restrict else ""
        self.names = _Names()
        self.lines: list[str] = []
        self.helpers: set[str] = set()
        # buffer var -> C pointer expression naming its data
        self.buffer_data: dict[int, str] = {}
        self.buffer_dtype: dict[int, str] = {}
        self.scratch_offset = 0
        self.written_buffers: set[int] = set()

    # ---- entry ---------------------------------------------------------------------------
    def emit(self) -> EmittedKernel:
        params: list[KernelParam] = []
        self._collect_writes(self.func.body)
        for buffer in self.func.params:
            name = self.names.get(buffer, buffer.name)
            dtype = str(buffer.dtype)
            self.buffer_data[_key(buffer)] = name
            self.buffer_dtype[_key(buffer)] = dtype
            count = 1
            for dim in buffer.shape:
                count *= int(dim)
            params.append(KernelParam(name, dtype, count, _key(buffer) in self.written_buffers))
        body_lines: list[str] = []
        self.lines = body_lines
        self._stmt(self.func.body, 1)
        scratch = _align(self.scratch_offset, SCRATCH_ALIGNMENT)
        signature_parts = []
        for param in params:
            const = "" if param.written else "const "
            signature_parts.append(f"{const}{c_type(param.dtype)}* {self.restrict}{param.name}")
        if scratch:
            signature_parts.append("uint8_t* restrict scratch")
        signature = f"void {self.symbol}({', '.join(signature_parts) or 'void'})"
        # A kernel may take an input only for its shape (ZEROS_LIKE): say so to the compiler,
        # which builds with -Werror=unused-parameter.
        body_text = "\n".join(body_lines)
        unused = [p.name for p in params if not re.search(rf"\b{re.escape(p.name)}\b", body_text)]
        body_lines = [f"  (void){name};" for name in unused] + body_lines
        source = "\n".join([signature + " {", *body_lines, "}", ""])
        return EmittedKernel(
            name=self.symbol,
            params=tuple(params),
            scratch_bytes=scratch,
            source=source,
            prototype=signature + ";",
            helpers=frozenset(self.helpers),
        )

    def _collect_writes(self, stmt: object) -> None:
        def visit(node: object) -> None:
            if isinstance(node, tirx.BufferStore):
                self.written_buffers.add(_key(node.buffer))

        _walk(stmt, visit)
        # Stores go through DeclBuffer aliases of params; map them back.
        aliases: dict[int, int] = {}

        def visit_decl(node: object) -> None:
            if isinstance(node, tirx.DeclBuffer):
                source = declared_source(node)
                if source is not None:
                    aliases[_key(node.buffer)] = _key(source)

        _walk(stmt, visit_decl)
        for buffer in list(self.written_buffers):
            while buffer in aliases:
                buffer = aliases[buffer]
                self.written_buffers.add(buffer)

    # ---- statements ----------------------------------------------------------------------
    def _emit(self, indent: int, text: str) -> None:
        self.lines.append("  " * indent + text)

    def _stmt(self, stmt: object, indent: int) -> None:
        if isinstance(stmt, tirx.SeqStmt):
            for child in stmt.seq:
                self._stmt(child, indent)
        elif isinstance(stmt, tirx.For):
            self._for(stmt, indent)
        elif isinstance(stmt, tirx.BufferStore):
            index = self._index(stmt.indices)
            target = self._buffer_ref(stmt.buffer)
            self._emit(indent, f"{target}[{index}] = {self._expr(stmt.value)};")
        elif isinstance(stmt, tirx.IfThenElse):
            self._emit(indent, f"if ({self._expr(stmt.condition)}) {{")
            self._stmt(stmt.then_case, indent + 1)
            if stmt.else_case is not None:
                self._emit(indent, "} else {")
                self._stmt(stmt.else_case, indent + 1)
            self._emit(indent, "}")
        elif isinstance(stmt, tirx.Bind | tirx.LetStmt):
            dtype = dtype_of(stmt.var)
            name = self.names.get(stmt.var, stmt.var.name)
            self._emit(indent, f"const {c_type(dtype)} {name} = {self._expr(stmt.value)};")
            if isinstance(stmt, tirx.LetStmt) and getattr(stmt, "body", None) is not None:
                self._stmt(stmt.body, indent)
        elif isinstance(stmt, tirx.AllocBuffer):
            self._alloc(stmt.buffer, indent)
        elif isinstance(stmt, tirx.DeclBuffer):
            self._decl(stmt, indent)
        elif isinstance(stmt, tirx.Evaluate):
            value = stmt.value
            if isinstance(value, tirx.IntImm):
                return  # no-op
            self._emit(indent, f"(void)({self._expr(value)});")
        elif isinstance(stmt, tirx.AssertStmt):
            return  # shapes are static and checked at compile time
        elif isinstance(stmt, tirx.AttrStmt):
            self._stmt(stmt.body, indent)
        elif isinstance(stmt, tirx.While):
            self._emit(indent, f"while ({self._expr(stmt.condition)}) {{")
            self._stmt(stmt.body, indent + 1)
            self._emit(indent, "}")
        else:
            raise UnsupportedError(
                f"kernel {self.symbol}: TIR statement {type(stmt).__name__} is not supported "
                "by the C emitter"
            )

    def _for(self, loop: tirx.For, indent: int) -> None:
        var = self.names.get(loop.loop_var, loop.loop_var.name)
        dtype = dtype_of(loop.loop_var)
        start = self._expr(loop.min)
        end = self._expr(loop.extent)
        if not _is_const(loop.min, 0):
            end = f"{start} + {end}"
        step = "++" + var if loop.step is None or _is_const(loop.step, 1) else None
        if step is None:
            step = f"{var} += {self._expr(loop.step)}"
        self._emit(indent, f"for ({c_type(dtype)} {var} = {start}; {var} < {end}; {step}) {{")
        self._stmt(loop.body, indent + 1)
        self._emit(indent, "}")

    def _alloc(self, buffer: object, indent: int) -> None:
        dtype = str(buffer.dtype)
        count = 1
        for dim in buffer.shape:
            count *= int(dim)
        nbytes = count * np.dtype(dtype if dtype != "bool" else "uint8").itemsize
        name = self.names.get(buffer, buffer.name)
        self.buffer_dtype[_key(buffer)] = dtype
        self.buffer_data[_key(buffer)] = name
        if nbytes <= MAX_LOCAL_ALLOCATION_BYTES:
            # Zero-initialised so that compilers can prove it is set before use.
            self._emit(indent, f"{c_type(dtype)} {name}[{count}] = {{0}};")
            return
        offset = _align(self.scratch_offset, SCRATCH_ALIGNMENT)
        self.scratch_offset = offset + nbytes
        self._emit(
            indent,
            f"{c_type(dtype)}* restrict {name} = ({c_type(dtype)}*)(void*)(scratch + {offset});",
        )

    def _decl(self, stmt: object, indent: int) -> None:
        buffer = stmt.buffer
        source = declared_source(stmt)
        dtype = str(buffer.dtype)
        self.buffer_dtype[_key(buffer)] = dtype
        if source is not None and _key(source) in self.buffer_data:
            source_name = self.buffer_data[_key(source)]
            if self.buffer_dtype[_key(source)] == dtype:
                self.buffer_data[_key(buffer)] = source_name
            else:
                name = self.names.get(buffer, buffer.name)
                self._emit(
                    indent, f"{c_type(dtype)}* {name} = ({c_type(dtype)}*)(void*){source_name};"
                )
                self.buffer_data[_key(buffer)] = name
            return
        raise UnsupportedError(
            f"kernel {self.symbol}: buffer {buffer.name} is declared over data the C emitter "
            "cannot follow"
        )

    def _buffer_ref(self, buffer: object) -> str:
        try:
            return self.buffer_data[_key(buffer)]
        except KeyError:
            raise UnsupportedError(
                f"kernel {self.symbol}: buffer {buffer.name} is used before it is declared"
            ) from None

    def _index(self, indices: object) -> str:
        indices = list(indices)
        if len(indices) != 1:
            raise UnsupportedError(
                f"kernel {self.symbol}: multi-dimensional access survived flattening"
            )
        if isinstance(indices[0], tirx.Ramp):
            raise UnsupportedError(f"kernel {self.symbol}: vector access is not supported")
        return self._expr(indices[0])

    # ---- expressions ---------------------------------------------------------------------
    def _expr(self, expr: object) -> str:
        if isinstance(expr, tirx.IntImm):
            return c_literal(int(expr.value), dtype_of(expr))
        if isinstance(expr, tirx.FloatImm):
            return c_literal(float(expr.value), dtype_of(expr))
        if isinstance(expr, ir.TensorLoad):
            return f"{self._buffer_ref(expr.source)}[{self._index(expr.indices)}]"
        if isinstance(expr, tirx.Var):
            name = self.names.lookup(expr)
            if name is None:
                raise UnsupportedError(f"kernel {self.symbol}: free variable {expr.name}")
            return name
        if isinstance(expr, tirx.LShift):
            # Shift the bits as unsigned: a left shift of a negative signed value is
            # undefined in C99, while TIR means two's complement.
            dtype = dtype_of(expr)
            a, b = self._expr(expr.a), self._expr(expr.b)
            if dtype.startswith("int"):
                unsigned = c_type("u" + dtype)
                return f"(({c_type(dtype)})(({unsigned})({a}) << ({b})))"
            return f"({a} << {b})"
        operator = BINARY_OPERATORS.get(type(expr))
        if operator is not None:
            return f"({self._expr(expr.a)} {operator} {self._expr(expr.b)})"
        if isinstance(expr, tirx.Div | tirx.Mod):
            dtype = dtype_of(expr)
            if isinstance(expr, tirx.Mod) and dtype.startswith("float"):
                return self._math_call("fmod", dtype, [expr.a, expr.b])
            symbol = "/" if isinstance(expr, tirx.Div) else "%"
            return f"({self._expr(expr.a)} {symbol} {self._expr(expr.b)})"
        if isinstance(expr, tirx.FloorDiv | tirx.FloorMod):
            dtype = dtype_of(expr)
            kind = "floordiv" if isinstance(expr, tirx.FloorDiv) else "floormod"
            helper = f"aot_{kind}_{dtype}"
            self.helpers.add(helper)
            return f"{helper}({self._expr(expr.a)}, {self._expr(expr.b)})"
        if isinstance(expr, tirx.Min | tirx.Max):
            dtype = dtype_of(expr)
            kind = "min" if isinstance(expr, tirx.Min) else "max"
            helper = f"aot_{kind}_{dtype}"
            self.helpers.add(helper)
            return f"{helper}({self._expr(expr.a)}, {self._expr(expr.b)})"
        if isinstance(expr, tirx.Not):
            return f"(!{self._expr(expr.a)})"
        if isinstance(expr, tirx.BitwiseNot):
            return f"(~{self._expr(expr.a)})"
        if isinstance(expr, tirx.Select):
            return (
                f"({self._expr(expr.condition)} ? {self._expr(expr.true_value)} : "
                f"{self._expr(expr.false_value)})"
            )
        if isinstance(expr, tirx.Cast):
            target = dtype_of(expr)
            if target == "bool":
                return f"(({self._expr(expr.value)}) != 0)"
            return f"(({c_type(target)})({self._expr(expr.value)}))"
        if isinstance(expr, tirx.Let):
            raise UnsupportedError(f"kernel {self.symbol}: Let expressions are not supported")
        if isinstance(expr, ir.Call):
            return self._call(expr)
        raise UnsupportedError(
            f"kernel {self.symbol}: TIR expression {type(expr).__name__} is not supported by "
            "the C emitter"
        )

    def _call(self, call: ir.Call) -> str:
        op_name = call.op.name if isinstance(call.op, ir.Op) else str(call.op)
        # Intrinsics are named "prim.exp", "tirx.exp", ... depending on where TVM registers them.
        op_name = op_name.split(".", 1)[-1]
        args = list(call.args)
        if op_name == "if_then_else":
            # C's conditional operator is lazy, so a padded read never touches memory
            # outside the buffer.
            cond, then_value, else_value = args
            return f"({self._expr(cond)} ? {self._expr(then_value)} : {self._expr(else_value)})"
        if op_name in MATH_FUNCTIONS:
            return self._math_call(op_name, dtype_of(call), args)
        if op_name in CALL_AS_NODE:
            return self._expr(CALL_AS_NODE[op_name](args[0], args[1]))
        if op_name == "bitwise_not":
            return self._expr(tirx.BitwiseNot(args[0]))
        if op_name == "likely":
            return self._expr(args[0])
        if op_name == "sigmoid":
            dtype = dtype_of(call)
            exp = "expf" if dtype == "float32" else "exp"
            one = c_literal(1.0, dtype)
            return f"({one} / ({one} + {exp}(-({self._expr(args[0])}))))"
        if op_name == "isnan":
            value = self._expr(args[0])
            return f"({value} != {value})"
        if op_name == "reinterpret":
            raise UnsupportedError(f"kernel {self.symbol}: reinterpret is not supported")
        raise UnsupportedError(
            f"kernel {self.symbol}: TIR intrinsic {op_name} is not supported by the C emitter"
        )

    def _math_call(self, op_name: str, dtype: str, args: list[object]) -> str:
        single, double = MATH_FUNCTIONS[op_name]
        if dtype not in ("float32", "float64"):
            raise UnsupportedError(
                f"kernel {self.symbol}: {op_name} on {dtype} is not supported by the C emitter"
            )
        function = single if dtype == "float32" else double
        rendered = ", ".join(self._expr(arg) for arg in args)
        return f"{function}({rendered})"


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _is_const(expr: object, value: int) -> bool:
    return isinstance(expr, tirx.IntImm) and int(expr.value) == value


def _key(node: object) -> int:
    """Identity of a TVM object: TVM expressions overload ``==``, so never key on them."""
    return node.__chandle__()  # type: ignore[attr-defined]


def _walk(stmt: object, visit: object) -> None:
    """Pre-order walk over statements (expressions are not needed by the callers)."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        visit(node)  # type: ignore[operator]
        if isinstance(node, tirx.SeqStmt):
            stack.extend(reversed(list(node.seq)))
        elif isinstance(node, tirx.For | tirx.While | tirx.AttrStmt):
            stack.append(node.body)
        elif isinstance(node, tirx.IfThenElse):
            stack.append(node.then_case)
            stack.append(node.else_case)
        elif isinstance(node, tirx.LetStmt) and getattr(node, "body", None) is not None:
            stack.append(node.body)


def helper_definitions(helpers: set[str] | frozenset[str]) -> str:
    """Static inline definitions of the helper functions kernels use."""
    out: list[str] = []
    for helper in sorted(helpers):
        _, kind, dtype = helper.split("_", 2)
        ctype = c_type(dtype)
        if kind in ("min", "max"):
            op = "<" if kind == "min" else ">"
            out.append(
                f"static inline {ctype} {helper}({ctype} a, {ctype} b) "
                f"{{ return a {op} b ? a : b; }}"
            )
        elif kind == "floordiv":
            if dtype.startswith("float"):
                floor = "floorf" if dtype == "float32" else "floor"
                out.append(
                    f"static inline {ctype} {helper}({ctype} a, {ctype} b) "
                    f"{{ return {floor}(a / b); }}"
                )
            else:
                out.append(
                    f"static inline {ctype} {helper}({ctype} a, {ctype} b) {{\n"
                    f"  {ctype} q = a / b;\n"
                    f"  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;\n}}"
                )
        elif kind == "floormod":
            if dtype.startswith("float"):
                floor = "floorf" if dtype == "float32" else "floor"
                out.append(
                    f"static inline {ctype} {helper}({ctype} a, {ctype} b) "
                    f"{{ return a - {floor}(a / b) * b; }}"
                )
            else:
                out.append(
                    f"static inline {ctype} {helper}({ctype} a, {ctype} b) {{\n"
                    f"  {ctype} r = a % b;\n"
                    f"  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}}"
                )
    return "\n".join(out)


def emit_kernel(symbol: str, func: tirx.PrimFunc, restrict: bool = True) -> EmittedKernel:
    return KernelEmitter(symbol, func, restrict).emit()
