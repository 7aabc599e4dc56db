"""Import an int8 TFLite model into Relax, keeping it int8 end to end.

The stock Relax TFLite frontend turns each quantized operator into dequantize -> float
operator -> quantize, so weights become float32 and the arithmetic is not TFLite's. This
importer instead emits one ``call_tir`` per TFLite operator, each a TE compute from
``aot.ops.int8`` that follows TFLite's reference integer kernel bit for bit:

* weights stay int8 and biases int32 (``relax.const``); per-channel requantization
  parameters are immediates when all channels agree, else one packed int32 per channel
  (or an int32 multiplier and an int8 shift, when a layer's shifts spread too far);
* every tensor between operators is int8 (int32 exists only inside a kernel);
* multipliers, shifts, activation ranges and lookup tables are computed here, at import
  time, exactly as TFLite's ``Prepare`` computes them.

The supported operators and their limits are listed in docs/operators.md; the arithmetic
is described in docs/int8.md.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from aot.errors import ConfigError, InternalError, ModelError, UnsupportedError
from aot.frontend.model import (
    ImportedModel,
    Quantization,
    SourceOperator,
    StateSpec,
    TensorSpec,
)
from aot.frontend.tflite_checks import validate
from aot.frontend.tflite_file import TFLITE_DTYPES
from aot.frontend.validate import DAMAGED
from aot.operators import OPERATORS, params_of
from aot.ops import fixedpoint as fp

FRONTEND_NAME = "aot-tflite-int8"
# Per-operator dtypes and limits; docs/int8.md holds the arithmetic (rounding, folding).
DOCS = "docs/operators.md"

# Which MultiplyByQuantizedMultiplier rounding each operator's reference kernel uses in
# ai-edge-litert 2.3.0 (found by bit-exact comparison; see docs/int8.md). Operators not
# listed use double rounding.
LITERT_ROUNDING: dict[str, str] = {
    "FULLY_CONNECTED": "single",
}

_ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


@dataclass
class _TensorInfo:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    scale: tuple[float, ...]  # float32 values, widened exactly to Python floats
    zero_point: tuple[int, ...]
    quantized_dimension: int
    data: np.ndarray | None

    @property
    def quantized(self) -> bool:
        return len(self.scale) > 0

    @property
    def s(self) -> float:
        return self.scale[0]

    @property
    def zp(self) -> int:
        return self.zero_point[0] if self.zero_point else 0

    def spec(self) -> TensorSpec:
        quant = None
        if self.quantized:
            axis = self.quantized_dimension if len(self.scale) > 1 else None
            quant = Quantization(self.scale, self.zero_point or (0,) * len(self.scale), axis)
        return TensorSpec(self.name, self.shape, self.dtype, quant)


def import_tflite_int8(
    path: str | os.PathLike[str] | bytes,
    output_tensors: Sequence[int] | None = None,
    rounding: str = "litert",
) -> ImportedModel:
    """Import a fully int8-quantized ``.tflite`` model (a path, or the file's bytes).

    ``rounding`` picks how ``MultiplyByQuantizedMultiplier`` rounds: "litert" matches
    ai-edge-litert 2.3.0's reference kernels (which mix the two, per operator, see
    ``LITERT_ROUNDING``), "double" is gemmlowp double rounding everywhere (TFLite Micro's
    default build) and "single" is TFLITE_SINGLE_ROUNDING everywhere.

    ``output_tensors`` (TFLite tensor indices) replaces the model's outputs, to inspect
    intermediate tensors when debugging a mismatch.
    """
    if isinstance(path, bytes | bytearray):
        data, source = bytes(path), "<tflite bytes>"
    else:
        source = os.fspath(path)
        try:
            with open(source, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ModelError(f"{source}: cannot read the model file: {exc}") from exc
    if rounding not in (*fp.ROUNDING_MODES, "litert"):
        raise ConfigError(
            f"rounding must be one of litert, {', '.join(fp.ROUNDING_MODES)}; got {rounding!r}"
        )
    return _Importer(data, source, rounding).run(output_tensors)


# -- reading the flatbuffer -------------------------------------------------------------


def _fb(name: str) -> Any:
    return getattr(importlib.import_module(f"tflite.{name}"), name)


@lru_cache(maxsize=1)
def _builtin_names() -> dict[int, str]:
    cls = _fb("BuiltinOperator")
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


class _DamagedOperator(Exception):
    """Raised by a handler; the import loop words it as a ModelError naming the operator."""


def _options(op: Any, table: str) -> Any:
    """The operator's options table, or None when the model omits it."""
    raw = op.BuiltinOptions()
    opts = _fb(table)()
    if raw is None:
        return None
    found = int(op.BuiltinOptionsType())
    if found != int(getattr(_fb("BuiltinOptions"), table)):
        # Another table's fields would be read as this one's.
        raise _DamagedOperator(f"its options are of union type {found}, not {table}")
    opts.Init(raw.Bytes, raw.Pos)
    return opts


def _required_options(imp: _Importer, op: Any, table: str) -> Any:
    opts = _options(op, table)
    if opts is None:
        raise imp.unsupported(f"the operator has no {table}")
    return opts


class _Importer:
    def __init__(self, data: bytes, source: str, rounding: str = "litert") -> None:
        self.source = source
        self.rounding = rounding
        if len(data) < 8 or data[4:8] != b"TFL3":
            raise ModelError(f"{source} is not a TFLite model (no 'TFL3' file identifier)")
        # Everything read below was checked by the validation pass (indices, lengths,
        # shapes, quantization); the accessors read the padded copy it returns.
        checked = validate(data, source)
        self.data = checked.padded
        self.model = _fb("Model").GetRootAs(self.data, 0)
        # Shapes, constants and the operator list come from the validated view: for a
        # dynamic-batch export, aot.frontend.tflite_static made it static (batch 1, shape
        # arithmetic folded into constants); the flatbuffer keeps names, types, options.
        self.static_graph = checked.model.subgraphs[0]
        self.static_buffers = checked.model.buffers
        self.notes = checked.static.notes() if checked.static is not None else ()
        # Subgraph 0 runs; others are only read where an operator names them (CALL_ONCE's
        # initialization); IF and WHILE are refused by name.
        self.subgraph_count = self.model.SubgraphsLength()
        self.graph = self.model.Subgraphs(0)
        self.tensors = [self._tensor(i) for i in range(self.graph.TensorsLength())]
        self.values: dict[int, Any] = {}
        # PrimFunc name -> (operator kind, typed parameters), see ``emit``.
        self.operator_attrs: dict[str, tuple[str, dict[str, Any]]] = {}
        self.op_index = -1
        self.op_name = ""
        # Variable tensors (operator state): tensor index -> StateSpec, in parameter order,
        # and the value each stateful operator computed as its next state.
        # Resource variables (VAR_HANDLE) are keyed by their shared name instead.
        self.states: dict[int | str, StateSpec] = {}
        self.next_states: dict[int | str, Any] = {}

    # -- tensors ---------------------------------------------------------------------

    def _tensor(self, index: int) -> _TensorInfo:
        t = self.graph.Tensors(index)
        name = (t.Name() or b"").decode("utf-8", "replace") or f"tensor_{index}"
        dtype = TFLITE_DTYPES.get(t.Type(), f"tflite-type-{t.Type()}")
        static = self.static_graph.tensors[index]
        shape, signature = tuple(static.shape), tuple(static.signature)
        # A dynamic batch (signature -1 in dimension 0) runs at the stored size, as the TFLite
        # interpreter does without a resize; any other dynamic dimension is refused (a
        # dynamic-batch export arrives here static: see aot.frontend.tflite_static).
        if any(d < 0 for d in shape) or any(d < 0 for d in signature[1:]):
            raise UnsupportedError(
                f"{self.source}: tensor {name!r} has a dynamic shape "
                f"{list(signature or shape)}; the int8 importer needs static shapes "
                f"(a dynamic batch dimension is allowed, see {DOCS})"
            )
        scale: tuple[float, ...] = ()
        zero_point: tuple[int, ...] = ()
        qdim = 0
        q = t.Quantization()
        if q is not None and q.ScaleLength() > 0:
            scale = tuple(float(s) for s in q.ScaleAsNumpy().astype(np.float32))
            if q.ZeroPointLength() > 0:
                zero_point = tuple(int(z) for z in q.ZeroPointAsNumpy())
            else:
                zero_point = (0,) * len(scale)
            # A 1-D tensor's one dimension is its channel (validate.py's rule).
            qdim = int(q.QuantizedDimension()) if len(shape) != 1 else 0
        return _TensorInfo(
            index, name, shape, dtype, scale, zero_point, qdim, self._static_data(index, dtype)
        )

    def _static_data(self, index: int, dtype: str) -> np.ndarray | None:
        """The tensor's constant data (validate checked its length against the shape)."""
        static = self.static_graph.tensors[index]
        raw = self.static_buffers[static.buffer].data
        if raw is None or dtype not in TFLITE_DTYPES.values():
            return None
        array = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))
        return array.astype(np.dtype(dtype)).reshape(static.shape)

    def _buffer(self, t: Any, dtype: str, shape: tuple[int, ...]) -> np.ndarray | None:
        b = self.model.Buffers(t.Buffer())
        if b is None:
            return None
        if b.Offset() > 1:  # large models keep buffers after the flatbuffer
            raw = self.data[b.Offset() : b.Offset() + b.Size()]
        elif b.DataLength() > 0:
            raw = b.DataAsNumpy().tobytes()
        else:
            return None
        try:
            array = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))
            return array.astype(np.dtype(dtype)).reshape(shape)
        except (TypeError, ValueError) as exc:
            raise ModelError(
                f"{self.source}: constant tensor data does not match its shape"
            ) from exc

    # -- errors ----------------------------------------------------------------------

    def emit(self, bb: Any, fn: Callable[..., Any], *args: Any, name: str, **kwargs: Any) -> Any:
        """Emit one operator as a ``call_tir`` of the TE compute ``fn`` and remember its
        kind (``name``) and typed parameters, which ``run`` attaches to the PrimFunc."""
        from tvm import ir, relax

        from aot.naming import SOURCE_OPERATOR_SPAN

        call = bb.call_te(fn, *args, primfunc_name_hint=name, **kwargs)
        # Parameters baked into the compute only: structurally equal PrimFuncs (which the
        # BlockBuilder shares between calls) then carry equal attributes.
        # The rounding of MultiplyByQuantizedMultiplier is baked into the compute too; an
        # accelerator must round the same way (docs/int8.md, "Rounding").
        rounding = "single" if fp.single_rounding() else "double"
        params = {**_typed_params(fn, args, kwargs), "rounding": rounding}
        params_of(name, params)  # the kind's dataclass takes them (aot/operators)
        self.operator_attrs[call.args[0].name_hint] = (name, params)
        index = self.op_index
        span = ir.Span(ir.SourceName(SOURCE_OPERATOR_SPAN), index, index, 0, 0)
        return bb.emit(relax.Call(call.op, call.args, call.attrs, call.ty_args, span))

    def unsupported(self, what: str) -> UnsupportedError:
        return UnsupportedError(
            f"{self.source}: operator {self.op_index} ({self.op_name}): {what}; "
            f"the supported operators and limits are listed in {DOCS}"
        )

    # -- main ------------------------------------------------------------------------

    def run(self, output_tensors: Sequence[int] | None = None) -> ImportedModel:
        from tvm import relax

        graph = self.graph
        inputs = [self.tensors[int(i)] for i in graph.InputsAsNumpy()]
        if output_tensors is None:
            output_tensors = [int(i) for i in graph.OutputsAsNumpy()]
        for i in output_tensors:
            if not 0 <= int(i) < len(self.tensors):
                raise ConfigError(
                    f"output tensor {i} does not exist; the model has {len(self.tensors)} tensors"
                )
        outputs = [self.tensors[int(i)] for i in output_tensors]

        bb = relax.BlockBuilder()
        params = []
        used_names: set[str] = set()
        for info in inputs:
            var_name = _identifier(info.name, used_names)
            var = relax.Var(var_name, relax.TensorType(info.shape, info.dtype))
            params.append(var)
            self.values[info.index] = var
        # State comes after the inputs: main(inputs..., states...) -> (outputs..., next
        # states...); the executor keeps it in the persistent pool (docs/memory_planning.md).
        for index in range(graph.TensorsLength()):
            if not graph.Tensors(index).IsVariable():
                continue
            info = self.tensors[index]
            initial = info.data if info.data is not None and info.data.any() else None
            if initial is None and info.dtype == "int8" and info.zp != 0:
                # TFLite's ResetVariableTensor fills an int8 variable with its zero point.
                initial = np.full(info.shape, info.zp, np.int8)
            self.states[index] = StateSpec(info.name, info.shape, info.dtype, initial)
            var = relax.Var(
                _identifier(info.name, used_names), relax.TensorType(info.shape, info.dtype)
            )
            params.append(var)
            self.values[index] = var
        for discover in STATE_SOURCES:
            for key, spec in discover(self):
                self.states[key] = spec
                var = relax.Var(
                    _identifier(spec.name, used_names), relax.TensorType(spec.shape, spec.dtype)
                )
                params.append(var)
                self.values[key] = var

        operators: list[str] = []
        sources: list[SourceOperator] = []
        try:
            self._convert(bb, params, outputs, operators, sources)
        except BaseException:
            _close_function_scope(bb)
            raise
        return ImportedModel(
            relax_module=_annotate_operators(bb.get(), self.operator_attrs),
            inputs=tuple(i.spec() for i in inputs),
            outputs=tuple(o.spec() for o in outputs),
            source_path=self.source,
            source_format="tflite",
            frontend=FRONTEND_NAME,
            operators=tuple(operators),
            source_operators=tuple(sources),
            states=tuple(self.states.values()),
            notes=self.notes,
        )

    def _convert(
        self,
        bb: Any,
        params: list[Any],
        outputs: list[_TensorInfo],
        operators: list[str],
        sources: list[SourceOperator],
    ) -> None:
        from tvm import relax

        graph = self.graph
        codes = self.model.OperatorCodes
        names = _builtin_names()
        with bb.function("main", params):
            with bb.dataflow():
                for static_op in self.static_graph.operators:
                    index = static_op.index
                    op = graph.Operators(index)
                    code = codes(op.OpcodeIndex())
                    builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
                    name = names.get(builtin, f"BUILTIN_{builtin}")
                    if builtin == 32:  # CUSTOM
                        name = f"CUSTOM:{(code.CustomCode() or b'').decode('utf-8', 'replace')}"
                    self.op_index, self.op_name = index, name
                    operators.append(name)
                    handler = _HANDLERS.get(name)
                    if handler is None:
                        reason = UNSUPPORTED_REASONS.get(name, "this operator is not supported")
                        raise self.unsupported(reason)
                    ins = [int(i) for i in op.InputsAsNumpy()] if op.InputsLength() else []
                    outs = [int(i) for i in op.OutputsAsNumpy()]
                    if name in NO_OUTPUT:
                        if outs:
                            raise self.unsupported(f"expected no outputs, found {len(outs)}")
                        handler(self, bb, op, ins, None)
                        sources.append(SourceOperator(index, name))
                        continue
                    multi = name in MULTI_OUTPUT
                    if not outs or (len(outs) != 1 and not multi):
                        raise self.unsupported(f"expected one output, found {len(outs)}")
                    mode = self.rounding
                    if mode == "litert":
                        mode = LITERT_ROUNDING.get(name, "double")
                    out_info = self.tensors[outs[0]]
                    try:
                        with fp.rounding_mode(mode):
                            result = handler(self, bb, op, ins, out_info)
                    except fp.MultiplierRangeError as err:
                        raise ModelError(
                            f"{self.source}: {DAMAGED}: operator {index} ({name}): {err}, from "
                            f"the scales of its tensors (output {out_info.name!r} has scale "
                            f"{out_info.s:g})"
                        ) from None
                    except _DamagedOperator as err:
                        raise ModelError(
                            f"{self.source}: {DAMAGED}: operator {index} ({name}): {err}"
                        ) from None
                    # A MULTI_OUTPUT handler returns one value per output tensor.
                    results = list(result) if multi else [result]
                    if len(results) != len(outs):
                        raise InternalError(f"{name} handler gave {len(results)} values")
                    for tensor, value in zip(outs, results):
                        self.values[tensor] = value
                    # The result's Relax variable name ties the lowered kernel to this op.
                    values = tuple(r.name for r in results if isinstance(r, relax.Var))
                    sources.append(SourceOperator(index, name, self.tensors[outs[0]].name, values))
                results = []
                for info in outputs:
                    if info.index not in self.values:
                        raise ModelError(f"{self.source}: output {info.name!r} is never computed")
                    results.append(self.values[info.index])
                for index, state in self.states.items():
                    if index not in self.next_states:
                        raise UnsupportedError(
                            f"{self.source}: variable tensor {state.name!r} is never updated by "
                            f"a stateful operator aot supports (SVDF); see {DOCS}"
                        )
                    results.append(self.next_states[index])
                out = results[0] if len(results) == 1 else relax.Tuple(results)
                gv = bb.emit_output(out)
            bb.emit_func_output(gv)

    # -- helpers for handlers --------------------------------------------------------

    def value(self, index: int) -> Any:
        """The Relax value of a tensor: an earlier result, an input, or a constant."""
        from tvm import relax

        if index in self.values:
            return self.values[index]
        info = self.tensors[index]
        if info.data is None:
            raise self.unsupported(f"input tensor {info.name!r} is neither computed nor constant")
        const = relax.const(np.ascontiguousarray(info.data))
        self.values[index] = const
        return const

    def update_state(self, index: int, value: Any, role: str) -> None:
        """Record ``value`` as the next value of the variable tensor ``index``; operators
        after this one read the updated state, as in TFLite, where it changes in place."""
        if index not in self.states:
            raise self.unsupported(f"the {role} must be a variable tensor (is_variable)")
        if index in self.next_states:
            raise self.unsupported(
                f"variable tensor {self.tensors[index].name!r} is updated by two operators"
            )
        self.next_states[index] = value
        self.values[index] = value

    def constant(self, index: int, what: str) -> np.ndarray:
        data = self.tensors[index].data
        if data is None:
            raise self.unsupported(f"{what} must be a constant tensor")
        return data

    def expect(self, info: _TensorInfo, dtypes: Sequence[str], role: str) -> None:
        if info.dtype not in dtypes:
            raise self.unsupported(
                f"{role} {info.name!r} is {info.dtype}, expected {' or '.join(dtypes)}"
            )
        if info.dtype in ("int8", "uint8", "int16") and not info.quantized:
            raise self.unsupported(f"{role} {info.name!r} has no quantization parameters")

    def per_tensor(self, info: _TensorInfo, role: str) -> None:
        if len(set(info.scale)) > 1 or len(set(info.zero_point)) > 1:
            raise self.unsupported(f"{role} {info.name!r} must be quantized per tensor")

    def activation(self, opts: Any, output: _TensorInfo) -> tuple[int, int]:
        name = _ACTIVATIONS.get(opts.FusedActivationFunction(), "?")
        if name not in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"):
            raise self.unsupported(f"fused activation {name} is not supported")
        if output.dtype == "int16":  # the handlers that take int16 too (pools)
            return fp.activation_range(name, output.s, output.zp, -32768, 32767)
        return fp.activation_range(name, output.s, output.zp)

    def channel_params(self, values: Sequence[int], dtype: str) -> Any:
        """An immediate when all channels agree, else a constant tensor."""
        from tvm import relax

        if len(set(values)) == 1:
            return int(values[0])
        return relax.const(np.asarray(values, dtype=dtype))


def _close_function_scope(bb: Any) -> None:
    """Close what an exception left open in ``bb.function``: TVM's FunctionScope does not
    end its binding block or scope then, and the C++ destructor would later print
    'BlockBuilder destroyed with remaining blocks!' after our error line."""
    try:
        bb._end_block()
        bb.end_scope()
    except Exception:  # nothing was left open
        pass


def _identifier(name: str, used: set[str]) -> str:
    base = re.sub(r"\W", "_", name) or "input"
    if base[0].isdigit():
        base = "t_" + base
    candidate, n = base, 1
    while candidate in used:
        n += 1
        candidate = f"{base}_{n}"
    used.add(candidate)
    return candidate


# -- operator handlers --------------------------------------------------------------------


def _typed_params(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> dict:
    """The compute's arguments that are plain values (ints, floats, bools, tuples of them),
    by parameter name, plus ``operands``: the names of the tensor arguments in call order."""
    import inspect

    from tvm import relax

    bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
    values: dict[str, Any] = {}
    operands: list[str] = []
    for key, value in bound.items():
        if isinstance(value, relax.Expr):
            operands.append(key)
        elif isinstance(value, tuple | list) and all(isinstance(v, relax.Expr) for v in value):
            operands.extend(f"{key}{i}" for i in range(len(value)))
        elif isinstance(value, bool | int | float | str):
            values[key] = value
        elif isinstance(value, tuple | list) and all(isinstance(v, int | float) for v in value):
            values[key] = tuple(value)
        elif isinstance(value, np.ndarray) and value.ndim == 1 and value.size <= 256:
            values[key] = tuple(value.tolist())  # e.g. a lookup table
    return {**values, "operands": tuple(operands)}


def _annotate_operators(mod: Any, attrs: dict[str, tuple[str, dict[str, Any]]]) -> Any:
    """Set ``aot.operator`` and ``aot.params`` on every operator's PrimFunc, so that the
    partition stage's patterns can read an operator's kind and quantization."""
    from aot.naming import OPERATOR_KIND_ATTR, OPERATOR_PARAMS_ATTR

    for gv in list(mod.functions.keys()):
        entry = attrs.get(gv.name_hint)
        if entry is None:
            continue
        kind, params = entry
        func = mod[gv].with_attrs({OPERATOR_KIND_ATTR: kind, OPERATOR_PARAMS_ATTR: params})
        mod.update_func(gv, func)
    return mod


Handler = Callable[[_Importer, Any, Any, list[int], _TensorInfo], Any]
_HANDLERS: dict[str, Handler] = {}
# Operators with several output tensors (SPLIT, UNPACK, ...): their handler gets the first
# output's info and returns a sequence of values, one per output, in order.
MULTI_OUTPUT: set[str] = set()
# Operators with no output tensor (ASSIGN_VARIABLE, CALL_ONCE): their handler gets None as
# the output's info and its result is ignored.
NO_OUTPUT: set[str] = set()
# Functions called before ``main`` is built, each returning (key, StateSpec) pairs of state
# that no variable tensor declares (resource variables); ``main`` takes each as a parameter
# after the variable tensors, and ``_Importer.values[key]`` holds its current value.
STATE_SOURCES: list[Callable[[_Importer], list[tuple[str, StateSpec]]]] = []
# Why an operator without a handler is refused, when there is more to say than "not
# supported" (a float-only operator: which frontend to use instead).
UNSUPPORTED_REASONS: dict[str, str] = {
    "SQRT": "int8 SQRT is not supported: TFLite (LiteRT and TFLite Micro) has no int8 SQRT "
    "kernel, only a float32 one (a float model imports with --frontend relax-tflite)",
}


def _handler(
    *names: str, multi_output: bool = False, no_output: bool = False
) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            if name not in OPERATORS:
                raise InternalError(
                    f"the handler {fn.__name__} of {name} has no registry entry: add one "
                    "to aot/operators/table.py (docs/architecture.md, 'Adding an operator')"
                )
            _HANDLERS[name] = fn
            if multi_output:
                MULTI_OUTPUT.add(name)
            if no_output:
                NO_OUTPUT.add(name)
        return fn

    return register


def _padding(
    imp: _Importer,
    opts: Any,
    in_hw: tuple[int, int],
    filt: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    out_hw: tuple[int, int],
) -> tuple[int, int]:
    """TFLite ``ComputePaddingHeightWidth``; also checks the output size it implies."""
    same = opts.Padding() == 0
    pads = []
    for in_size, f, s, d, out_size in zip(in_hw, filt, strides, dilation, out_hw):
        effective = (f - 1) * d + 1
        expected = (in_size + s - 1) // s if same else (in_size - effective + s) // s
        if expected != out_size:
            raise imp.unsupported(
                f"output size {out_size} does not match the {'SAME' if same else 'VALID'} "
                f"padding size {expected}"
            )
        total = max((out_size - 1) * s + effective - in_size, 0)
        pads.append(total // 2)
    return pads[0], pads[1]


def _conv_requant(
    imp: _Importer, x: _TensorInfo, w: _TensorInfo, out: _TensorInfo, channels: int
) -> dict[str, Any]:
    """Per-channel multipliers like TFLite ``PopulateConvolutionQuantizationParams``.

    Returns the requantization arguments of ``aot.ops.int8``'s conv/dense computes: scalars
    when all channels agree; else, to keep constants small, one packed int32 per channel
    when the shifts span at most 4 values (see ``aot.ops.int8.PACKED_SHIFT_BITS``); else
    an int32 multiplier and an int8 shift per channel.
    """
    if any(z != 0 for z in w.zero_point):
        raise imp.unsupported(f"weights {w.name!r} have a nonzero zero point")
    scales = w.scale if len(w.scale) > 1 else w.scale * channels
    if len(scales) != channels:
        raise imp.unsupported(
            f"weights {w.name!r} have {len(scales)} scales for {channels} channels"
        )
    pairs = [fp.checked_quantize_multiplier(x.s * s / out.s, allow_zero=True) for s in scales]
    if all(m == 0 for m, _ in pairs):
        raise fp.MultiplierRangeError(
            f"every channel's requantization multiplier flushes to 0 (weights {w.name!r} "
            f"scale {scales[0]:g}): every output would be the zero point"
        )
    return _requant_args(imp, [m for m, _ in pairs], [s for _, s in pairs])


def _requant_args(imp: _Importer, multipliers: list[int], shifts: list[int]) -> dict[str, Any]:
    from tvm import relax

    from aot.ops.int8 import pack_requant

    if len(set(multipliers)) == 1 and len(set(shifts)) == 1:
        return {"multiplier": multipliers[0], "shift": shifts[0], "packed_shift_base": None}
    packed = pack_requant(multipliers, shifts)
    if packed is not None:
        return {"multiplier": relax.const(packed), "shift": 0, "packed_shift_base": min(shifts)}
    return {
        "multiplier": imp.channel_params(multipliers, "int32"),
        "shift": imp.channel_params(shifts, "int8"),
        "packed_shift_base": None,
    }


def _bias(imp: _Importer, ins: list[int], channels: int) -> Any:
    if len(ins) < 3 or ins[2] < 0:
        return None
    b = imp.tensors[ins[2]]
    if b.dtype != "int32":
        raise imp.unsupported(f"bias {b.name!r} is {b.dtype}, expected int32")
    data = imp.constant(ins[2], "the bias")
    if data.size != channels:
        raise imp.unsupported(f"bias {b.name!r} has {data.size} values for {channels} channels")
    # Only the values matter: a 1-D bias with any quantized_dimension is accepted.
    from tvm import relax

    return relax.const(np.ascontiguousarray(data.reshape(channels)))


def _bias_for(
    imp: _Importer, ins: list[int], channels: int, input_zp: int, sum_axes: tuple[int, ...]
) -> tuple[Any, bool]:
    """The bias to pass, and whether the input zero point is folded into it (the weights
    summed over ``sum_axes`` give one sum per output channel)."""
    weights = imp.constant(ins[1], "the weights").astype(np.int64)
    bias = _bias_with_folded_zero_point(imp, ins, channels, input_zp, weights.sum(axis=sum_axes))
    if bias is not None:
        return bias, True
    return _bias(imp, ins, channels), False


def _bias_with_folded_zero_point(
    imp: _Importer, ins: list[int], channels: int, input_zp: int, weight_sums: np.ndarray
) -> Any:
    """The bias minus input_zp * sum(weights) per output channel.

    sum((x - zp) * w) == sum(x * w) - zp * sum(w) exactly in integers, and a padded tap
    reads x = zp so it still contributes nothing; the kernel then skips one subtraction
    per multiply-accumulate, as CMSIS-NN does.
    """
    from tvm import relax

    bias = _bias(imp, ins, channels)
    values = np.zeros(channels, np.int64) if bias is None else bias.value.numpy().astype(np.int64)
    folded = values - np.int64(input_zp) * weight_sums.astype(np.int64)
    if np.any(folded < np.iinfo(np.int32).min) or np.any(folded > np.iinfo(np.int32).max):
        return None  # would not fit int32: keep the subtraction in the kernel
    return relax.const(np.ascontiguousarray(folded.astype(np.int32)))


@_handler("CONV_2D")
def _conv2d(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x, w = imp.tensors[ins[0]], imp.tensors[ins[1]]
    imp.expect(x, ["int8"], "input")
    imp.expect(w, ["int8"], "weights")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    opts = _required_options(imp, op, "Conv2DOptions")
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise imp.unsupported("expected 4-D NHWC input and OHWI weights")
    out_c, k_h, k_w, group_c = w.shape
    if x.shape[3] % group_c or out_c % (x.shape[3] // group_c):
        raise imp.unsupported(f"input channels {x.shape[3]} do not fit weights {list(w.shape)}")
    strides = (opts.StrideH(), opts.StrideW())
    dilation = (opts.DilationHFactor(), opts.DilationWFactor())
    padding = _padding(imp, opts, x.shape[1:3], (k_h, k_w), strides, dilation, out.shape[1:3])
    act_min, act_max = imp.activation(opts, out)
    requant = _conv_requant(imp, x, w, out, out_c)
    bias, folded = _bias_for(imp, ins, out_c, x.zp, (1, 2, 3))
    return imp.emit(
        bb, int8.conv2d, imp.value(ins[0]), imp.value(ins[1]), bias, requant["multiplier"],
        requant["shift"], packed_shift_base=requant["packed_shift_base"], name="conv2d_int8",
        out_shape=out.shape, strides=strides, dilation=dilation, padding=padding,
        input_zp=x.zp, output_zp=out.zp, act_min=act_min, act_max=act_max,
        zero_point_in_bias=folded,
    )  # fmt: skip


@_handler("DEPTHWISE_CONV_2D")
def _depthwise(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x, w = imp.tensors[ins[0]], imp.tensors[ins[1]]
    imp.expect(x, ["int8"], "input")
    imp.expect(w, ["int8"], "weights")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    opts = _required_options(imp, op, "DepthwiseConv2DOptions")
    if len(x.shape) != 4 or len(w.shape) != 4 or w.shape[0] != 1:
        raise imp.unsupported("expected 4-D NHWC input and [1, H, W, C] weights")
    _, k_h, k_w, out_c = w.shape
    if out_c % x.shape[3]:
        raise imp.unsupported(f"{out_c} output channels for {x.shape[3]} input channels")
    strides = (opts.StrideH(), opts.StrideW())
    dilation = (opts.DilationHFactor(), opts.DilationWFactor())
    padding = _padding(imp, opts, x.shape[1:3], (k_h, k_w), strides, dilation, out.shape[1:3])
    act_min, act_max = imp.activation(opts, out)
    requant = _conv_requant(imp, x, w, out, out_c)
    bias, folded = _bias_for(imp, ins, out_c, x.zp, (0, 1, 2))
    return imp.emit(
        bb, int8.depthwise_conv2d, imp.value(ins[0]), imp.value(ins[1]), bias,
        requant["multiplier"], requant["shift"], packed_shift_base=requant["packed_shift_base"],
        name="depthwise_conv2d_int8", out_shape=out.shape, strides=strides, dilation=dilation,
        padding=padding, depth_multiplier=out_c // x.shape[3], input_zp=x.zp, output_zp=out.zp,
        act_min=act_min, act_max=act_max, zero_point_in_bias=folded,
    )  # fmt: skip


@_handler("FULLY_CONNECTED")
def _fully_connected(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x, w = imp.tensors[ins[0]], imp.tensors[ins[1]]
    imp.expect(x, ["int8"], "input")
    imp.expect(w, ["int8"], "weights")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    opts = _options(op, "FullyConnectedOptions")
    if opts is not None and opts.WeightsFormat() != 0:
        raise imp.unsupported("only the DEFAULT weights format is supported")
    if len(w.shape) != 2:
        raise imp.unsupported(f"weights {w.name!r} must be 2-D, found {list(w.shape)}")
    out_c, depth = w.shape
    if int(np.prod(x.shape)) % depth:
        raise imp.unsupported(f"input {list(x.shape)} is not a multiple of depth {depth}")
    if int(np.prod(out.shape)) != int(np.prod(x.shape)) // depth * out_c or out.shape[-1] != out_c:
        raise imp.unsupported(f"output shape {list(out.shape)} does not fit the weights")
    act_min, act_max = (-128, 127) if opts is None else imp.activation(opts, out)
    if len(w.scale) > 1:
        if len(set(w.zero_point)) > 1:
            raise imp.unsupported("per-channel weights need one zero point")
        requant = _conv_requant(imp, x, w, out, out_c)
    else:
        # GetQuantizedConvolutionMultipler: the scale product is float32, then widened.
        product = float(np.float32(x.s) * np.float32(w.s))
        _check_bias_scale(imp, ins, x.s * w.s, out)  # this check multiplies in double
        m, s = fp.checked_quantize_multiplier(product / out.s)
        requant = {"multiplier": m, "shift": s, "packed_shift_base": None}
    if w.zp == 0:  # then sum((x - zx) * w) folds like a convolution's
        bias, folded = _bias_for(imp, ins, out_c, x.zp, (1,))
    else:
        bias, folded = _bias(imp, ins, out_c), False
    return imp.emit(
        bb, int8.fully_connected, imp.value(ins[0]), imp.value(ins[1]), bias,
        requant["multiplier"], requant["shift"], packed_shift_base=requant["packed_shift_base"],
        name="fully_connected_int8", out_shape=out.shape, input_zp=x.zp, weight_zp=w.zp,
        output_zp=out.zp, act_min=act_min, act_max=act_max, zero_point_in_bias=folded,
    )  # fmt: skip


# GetQuantizedConvolutionMultipler's prepare-time check (LiteRT and TFLite Micro): the
# bias is in units of input scale x weights scale, up to this share of the output scale.
MAX_BIAS_SCALE_DIFFERENCE = 0.02


def _check_bias_scale(imp: _Importer, ins: list[int], product: float, out: _TensorInfo) -> None:
    """Refuse, as the reference kernels do when they prepare, a bias whose scale is not the
    input and weight scales' product: its values would mean something else (a weight
    scale of 1e38 gets here)."""
    if len(ins) < 3 or ins[2] < 0 or not imp.tensors[ins[2]].scale:
        return
    bias = imp.tensors[ins[2]]
    difference = abs(product - float(bias.scale[0]))
    if not difference / out.s <= MAX_BIAS_SCALE_DIFFERENCE:
        raise imp.unsupported(
            f"bias {bias.name!r} has scale {bias.scale[0]:.9g} where input scale x weights "
            f"scale is {product:.9g}; the difference {difference:.3g} exceeds "
            f"{MAX_BIAS_SCALE_DIFFERENCE:g} x the output scale {out.s:g}, which TFLite's "
            "kernels refuse when they prepare, so LiteRT and TensorFlow Lite Micro cannot run "
            "the model either: requantize it"
        )


def _broadcast_shape(
    imp: _Importer, a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]
) -> None:
    try:
        shape = tuple(np.broadcast_shapes(a, b))
    except ValueError as exc:
        raise imp.unsupported(f"shapes {list(a)} and {list(b)} do not broadcast") from exc
    if shape != tuple(out):
        raise imp.unsupported(f"output shape {list(out)} is not the broadcast shape {list(shape)}")


@_handler("ADD")
def _add(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    a, b = imp.tensors[ins[0]], imp.tensors[ins[1]]
    for t, role in ((a, "input 1"), (b, "input 2"), (out, "output")):
        imp.expect(t, ["int8"], role)
        imp.per_tensor(t, role)
    _broadcast_shape(imp, a.shape, b.shape, out.shape)
    opts = _options(op, "AddOptions")
    act_min, act_max = (-128, 127) if opts is None else imp.activation(opts, out)
    left_shift = 20
    twice_max = 2 * float(max(np.float32(a.s), np.float32(b.s)))
    m1, s1 = fp.quantize_multiplier_smaller_than_one(a.s / twice_max)
    m2, s2 = fp.quantize_multiplier_smaller_than_one(b.s / twice_max)
    mo, so = fp.quantize_multiplier_smaller_than_one(twice_max / ((1 << left_shift) * out.s))
    return imp.emit(
        bb, int8.add, imp.value(ins[0]), imp.value(ins[1]), name="add_int8",
        out_shape=out.shape, lhs_offset=-a.zp, rhs_offset=-b.zp, left_shift=left_shift,
        lhs_multiplier=m1, lhs_shift=s1, rhs_multiplier=m2, rhs_shift=s2,
        output_multiplier=mo, output_shift=so, output_zp=out.zp, act_min=act_min,
        act_max=act_max,
    )  # fmt: skip


@_handler("MUL")
def _mul(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    a, b = imp.tensors[ins[0]], imp.tensors[ins[1]]
    for t, role in ((a, "input 1"), (b, "input 2"), (out, "output")):
        imp.expect(t, ["int8"], role)
        imp.per_tensor(t, role)
    _broadcast_shape(imp, a.shape, b.shape, out.shape)
    opts = _options(op, "MulOptions")
    act_min, act_max = (-128, 127) if opts is None else imp.activation(opts, out)
    m, s = fp.checked_quantize_multiplier(a.s * b.s / out.s)
    return imp.emit(
        bb, int8.mul, imp.value(ins[0]), imp.value(ins[1]), name="mul_int8",
        out_shape=out.shape, lhs_offset=-a.zp, rhs_offset=-b.zp, output_multiplier=m,
        output_shift=s, output_zp=out.zp, act_min=act_min, act_max=act_max,
    )  # fmt: skip


def _pool(imp: _Importer, op: Any, ins: list[int], out: _TensorInfo) -> dict[str, Any]:
    x = imp.tensors[ins[0]]
    # int16: pooling.cc's int16 kernels are the int8 arithmetic with int16 ranges.
    imp.expect(x, ["int8", "int16"], "input")
    imp.expect(out, [x.dtype], "output")
    if len(x.shape) != 4:
        raise imp.unsupported("expected a 4-D NHWC input")
    opts = _required_options(imp, op, "Pool2DOptions")
    filt = (opts.FilterHeight(), opts.FilterWidth())
    strides = (opts.StrideH(), opts.StrideW())
    padding = _padding(imp, opts, x.shape[1:3], filt, strides, (1, 1), out.shape[1:3])
    act_min, act_max = imp.activation(opts, out)
    return {
        "out_shape": out.shape,
        "filter_size": filt,
        "strides": strides,
        "padding": padding,
        "act_min": act_min,
        "act_max": act_max,
    }


@_handler("AVERAGE_POOL_2D")
def _average_pool(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    kwargs = _pool(imp, op, ins, out)
    data = imp.value(ins[0])
    if imp.tensors[ins[0]].dtype == "int8":  # the typed kind (aot/operators/table.py)
        return imp.emit(bb, int8.average_pool2d, data, name="average_pool2d_int8", **kwargs)
    return imp.emit(bb, int8.average_pool2d, data, name="average_pool2d_int16", **kwargs)


@_handler("MAX_POOL_2D")
def _max_pool(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    kwargs = _pool(imp, op, ins, out)
    name = f"max_pool2d_{imp.tensors[ins[0]].dtype}"
    return imp.emit(bb, int8.max_pool2d, imp.value(ins[0]), name=name, **kwargs)


@_handler("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def _reshape(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8", "int16"], "input")  # a copy of the stored values, any type
    imp.expect(out, [x.dtype], "output")
    if int(np.prod(x.shape)) != int(np.prod(out.shape)):
        raise imp.unsupported(f"cannot reshape {list(x.shape)} to {list(out.shape)}")
    if x.shape == out.shape:
        return imp.value(ins[0])
    return imp.emit(
        bb, int8.reshape, imp.value(ins[0]), name=f"reshape_{x.dtype}", out_shape=out.shape
    )


@_handler("SOFTMAX")
def _softmax(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    # int16 output: TFLite Micro's kernel takes it (keyword_scrambled ends with one).
    imp.expect(out, ["int8", "int16"], "output")
    bits = 8 if out.dtype == "int8" else 16
    if out.zp != -(1 << (bits - 1)) or abs(out.s - 2.0**-bits) > 0.001 * 2.0**-bits:
        raise imp.unsupported(
            f"the {out.dtype} output must have zero point {-(1 << (bits - 1))} and scale "
            f"1/{1 << bits}"
        )
    beta = float(np.float32(_required_options(imp, op, "SoftmaxOptions").Beta()))
    # PreprocessSoftmaxScaling caps the multiplier below 2**30 in single-rounding builds.
    cap = (1 << 30) - 1.0 if fp.single_rounding() else (1 << 31) - 1.0
    real = min(beta * x.s * (1 << (31 - 5)), cap)
    mult, left_shift = fp.quantize_multiplier_greater_than_one(real)
    diff_min = -fp.calculate_input_radius(5, left_shift)
    return imp.emit(
        bb, int8.softmax, imp.value(ins[0]),
        name="softmax_int8" if bits == 8 else "softmax_int8_int16", input_multiplier=mult,
        input_left_shift=left_shift, diff_min=diff_min, out_dtype=out.dtype,
    )  # fmt: skip


@_handler("PAD", "PADV2")
def _pad(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8", "int16"], "input")  # int16: pad.cc's EvalInt<int16_t>, the same
    imp.expect(out, [x.dtype], "output")
    paddings = imp.constant(ins[1], "the paddings").astype(np.int64).reshape(-1, 2)
    if len(paddings) != len(x.shape) or (paddings < 0).any():
        raise imp.unsupported(f"paddings {paddings.tolist()} do not fit input {list(x.shape)}")
    value = out.zp
    if imp.op_name == "PADV2" and len(ins) > 2 and ins[2] >= 0:
        value = int(imp.constant(ins[2], "the pad value").reshape(-1)[0])
    expected = tuple(int(d + p.sum()) for d, p in zip(x.shape, paddings))
    if expected != out.shape:
        raise imp.unsupported(f"output shape {list(out.shape)} is not {list(expected)}")
    return imp.emit(
        bb, int8.pad, imp.value(ins[0]), name=f"pad_{x.dtype}",
        paddings=[(int(a), int(b)) for a, b in paddings], out_shape=out.shape, value=value,
    )  # fmt: skip


@_handler("MEAN")
def _mean(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8", "int16"], "input")
    imp.expect(out, [x.dtype], "output")
    if x.dtype == "int16" and (x.zp, out.zp) != (0, 0):  # reduce.cc requires it for int16
        raise imp.unsupported("int16 MEAN needs zero points 0")
    axes = sorted({int(a) % len(x.shape) for a in imp.constant(ins[1], "the axes").reshape(-1)})
    reducer = _options(op, "ReducerOptions")
    keep_dims = bool(reducer.KeepDims()) if reducer is not None else False
    count = int(np.prod([x.shape[a] for a in axes]))
    mult, shift = fp.checked_quantize_multiplier(x.s / out.s)
    # reference_ops::QuantizedMeanOrSum folds 1/count into the multiplier.
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    mult = int((mult << extra) // count)
    shift -= extra
    return imp.emit(
        bb, int8.mean, imp.value(ins[0]), name=f"mean_{x.dtype}", axes=axes, keep_dims=keep_dims,
        out_shape=out.shape, input_zp=x.zp, output_multiplier=mult, output_shift=shift,
        output_zp=out.zp,
    )  # fmt: skip


@_handler("QUANTIZE")
def _quantize(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["float32", "int8", "uint8"], "input")
    imp.expect(out, ["int8", "uint8"], "output")
    imp.per_tensor(out, "output")
    if x.dtype == "float32":
        return imp.emit(
            bb, int8.quantize, imp.value(ins[0]), name="quantize_int8", scale=out.s,
            zero_point=out.zp, out_dtype=out.dtype,
        )  # fmt: skip
    imp.per_tensor(x, "input")
    m, s = fp.checked_quantize_multiplier(x.s / out.s)
    lo, hi = (-128, 127) if out.dtype == "int8" else (0, 255)
    return imp.emit(
        bb, int8.requantize, imp.value(ins[0]), name="requantize_int8", input_zp=x.zp,
        output_multiplier=m, output_shift=s, output_zp=out.zp, act_min=lo, act_max=hi,
        out_dtype=out.dtype,
    )  # fmt: skip


@_handler("DEQUANTIZE")
def _dequantize(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8", "uint8"], "input")
    imp.expect(out, ["float32"], "output")
    imp.per_tensor(x, "input")
    return imp.emit(
        bb, int8.dequantize, imp.value(ins[0]), name="dequantize_int8", scale=x.s, zero_point=x.zp
    )


@lru_cache(maxsize=1)
def _libm() -> Any:
    path = ctypes.util.find_library("m")
    if path is None:
        return None
    lib = ctypes.CDLL(path)
    for fn in ("expf", "tanhf"):
        getattr(lib, fn).restype = ctypes.c_float
        getattr(lib, fn).argtypes = [ctypes.c_float]
    return lib


def _expf(x: np.float32) -> np.float32:
    lib = _libm()  # the C library's expf, as TFLite calls it, when there is one
    return np.float32(lib.expf(float(x))) if lib is not None else np.exp(np.float32(x))


def _tanhf(x: np.float32) -> np.float32:
    lib = _libm()
    return np.float32(lib.tanhf(float(x))) if lib is not None else np.tanh(np.float32(x))


def _lut(
    x: _TensorInfo, out: _TensorInfo, transform: Callable[[np.float32], np.float32]
) -> np.ndarray:
    """TFLite ``LUTPopulate<int8_t>`` in float32; entry i is for input value i - 128."""
    inverse_scale = np.float32(1) / np.float32(out.s)
    table = np.empty(256, dtype=np.int8)
    for i, val in enumerate(range(-128, 128)):
        dequantized = np.float32(x.s) * np.float32(val - x.zp)
        transformed = transform(dequantized)
        rescaled = fp.tflite_round(float(np.float32(transformed * inverse_scale)))
        quantized = int(np.float32(rescaled) + np.float32(out.zp))
        table[i] = min(max(quantized, -128), 127)
    return table


def _sigmoid(v: np.float32) -> np.float32:
    return np.float32(np.float32(1.0) / (np.float32(1.0) + _expf(np.float32(-v))))


@_handler("LOGISTIC", "TANH")
def _lut_op(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    if imp.op_name == "LOGISTIC" and out.s != float(np.float32(1 / 256)):
        raise imp.unsupported("the int8 output scale must be 1/256 (as TFLite requires)")
    transform = _sigmoid if imp.op_name == "LOGISTIC" else _tanhf
    table = relax.const(_lut(x, out, transform))
    name = "logistic_int8" if imp.op_name == "LOGISTIC" else "tanh_int8"
    return imp.emit(bb, int8.lookup_table, imp.value(ins[0]), table, name=name)


@_handler("HARD_SWISH")
def _hard_swish(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    hires = np.float32(1.0 / 128.0) * np.float32(x.s)
    reluish_scale = np.float32(3.0) / np.float32(32768.0)
    out_m, out_e = fp.checked_quantize_multiplier(float(hires / np.float32(out.s)))
    if out_e > 0:
        raise imp.unsupported("the output scale is too small relative to the input scale")
    rel_m, rel_e = fp.checked_quantize_multiplier(float(hires / reluish_scale))
    return imp.emit(
        bb, int8.hard_swish, imp.value(ins[0]), name="hard_swish_int8", input_zp=x.zp,
        output_zp=out.zp, output_multiplier=fp.downscale_multiplier_to_int16(out_m),
        output_exponent=out_e, reluish_multiplier=fp.downscale_multiplier_to_int16(rel_m),
        reluish_exponent=rel_e,
    )  # fmt: skip


@_handler("RELU", "RELU6", "RELU_N1_TO_1")
def _relu(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    # ReluPrepare divides the float32 scales in float, then widens.
    m, s = fp.checked_quantize_multiplier(float(np.float32(x.s) / np.float32(out.s)))
    lows = {"RELU": 0.0, "RELU6": 0.0, "RELU_N1_TO_1": -1.0}
    highs = {"RELU": None, "RELU6": 6.0, "RELU_N1_TO_1": 1.0}
    lo = max(-128, fp.quantize_f32(lows[imp.op_name], out.s, out.zp))
    high = highs[imp.op_name]
    hi = 127 if high is None else min(127, fp.quantize_f32(high, out.s, out.zp))
    return imp.emit(
        bb, int8.requantize, imp.value(ins[0]), name=f"{imp.op_name.lower()}_int8",
        input_zp=x.zp, output_multiplier=m, output_shift=s, output_zp=out.zp, act_min=lo,
        act_max=hi,
    )  # fmt: skip


@_handler("STRIDED_SLICE")
def _strided_slice(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8", "int16"], "input")  # a copy of the stored values, any type
    imp.expect(out, [x.dtype], "output")
    begin = imp.constant(ins[1], "begin").reshape(-1).astype(np.int64).tolist()
    end = imp.constant(ins[2], "end").reshape(-1).astype(np.int64).tolist()
    strides = imp.constant(ins[3], "strides").reshape(-1).astype(np.int64).tolist()
    opts = _required_options(imp, op, "StridedSliceOptions")
    if opts.EllipsisMask() or opts.NewAxisMask():
        raise imp.unsupported("ellipsis_mask and new_axis_mask are not supported")
    rank = len(x.shape)
    if not len(begin) == len(end) == len(strides) == rank:
        raise imp.unsupported("begin, end and strides must have one entry per input dimension")
    offset = bool(opts.Offset()) if hasattr(opts, "Offset") else False
    starts, steps, full = [], [], []
    for axis in range(rank):
        size, stride = x.shape[axis], strides[axis]
        if stride == 0:
            raise imp.unsupported("a stride of 0 is invalid")
        b, e = begin[axis], end[axis]
        if offset:
            e = b + e
        if opts.ShrinkAxisMask() >> axis & 1:
            b = b + size if b < 0 else b
            start, stop, stride = b, b + 1, 1
            count = 1
        else:
            sl = slice(
                None if opts.BeginMask() >> axis & 1 else b,
                None if opts.EndMask() >> axis & 1 else e,
                stride,
            )
            start, stop, stride = sl.indices(size)
            count = len(range(start, stop, stride))
        starts.append(start)
        steps.append(stride)
        full.append(count)
    if int(np.prod(full)) != int(np.prod(out.shape)):
        raise imp.unsupported(
            f"computed slice shape {full} does not match output {list(out.shape)}"
        )
    return imp.emit(
        bb, int8.strided_slice, imp.value(ins[0]), name=f"strided_slice_{x.dtype}", begin=starts,
        strides=steps, out_shape_full=full, out_shape=out.shape,
    )  # fmt: skip


@_handler("TRANSPOSE")
def _transpose(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8", "int16"], "input")  # a copy of the stored values, any type
    imp.expect(out, [x.dtype], "output")
    perm = [int(p) % len(x.shape) for p in imp.constant(ins[1], "the permutation").reshape(-1)]
    if sorted(perm) != list(range(len(x.shape))):
        raise imp.unsupported(f"{perm} is not a permutation")
    return imp.emit(bb, int8.transpose, imp.value(ins[0]), name=f"transpose_{x.dtype}", perm=perm)


def relax_constant_bytes(mod: Any) -> int:
    """Bytes of all distinct ``relax.Constant`` data in a module's Relax functions."""
    from tvm import ir, relax

    seen: dict[Any, int] = {}

    def visit(expr: Any) -> None:
        if isinstance(expr, ir.expr.Constant) and hasattr(expr.value, "numpy"):
            seen[expr] = expr.value.numpy().nbytes

    for _, func in mod.functions.items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return sum(seen.values())
