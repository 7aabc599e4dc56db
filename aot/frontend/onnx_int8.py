"""Import an int8/uint8 ONNX model (QDQ or QOperator) into Relax, integer end to end.

Two forms reach this importer (``--frontend auto`` picks it when a model contains a
QuantizeLinear/DequantizeLinear, a ``QLinear*`` or an ``*Integer`` operator):

* **QOperator**: ``QLinearConv``, ``QLinearMatMul``, ``QGemm``, ``QLinearAdd``, ... carry
  their scales and zero points as inputs; each becomes one ``call_tir``.
* **QDQ**: float operators between DequantizeLinear and QuantizeLinear nodes, as
  ``onnxruntime.quantization.quantize_static`` writes them. Each DequantizeLinear -> op ->
  QuantizeLinear group is folded into the same integer operator onnxruntime's graph
  optimizer fuses it into (``QLinearConv``, ``QGemm``, ...); the DequantizeLinear of a
  constant weight becomes the int8 weight itself.

Every kernel follows onnxruntime's CPU kernel (MLAS) bit for bit: float32 requantization
rounded to nearest even (``aot.ops.onnx_int8``, docs/int8.md "onnxruntime"). Tensors
stay NCHW; weights int8, biases int32, activations int8 or uint8.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from aot.errors import ModelError, UnsupportedError
from aot.frontend.model import ImportedModel, Quantization, SourceOperator, TensorSpec
from aot.frontend.validate import DAMAGED
from aot.operators import params_of

FRONTEND_NAME = "aot-onnx-int8"
DOCS = "docs/operators.md"
MS_DOMAIN = "com.microsoft"

# Operators whose presence marks a model as integer (``is_integer_onnx``).
QDQ_OPERATORS = frozenset({"QuantizeLinear", "DequantizeLinear"})
INTEGER_OPERATORS = frozenset({"ConvInteger", "MatMulInteger", "QGemm"})

_ELEM = {1: "float32", 2: "uint8", 3: "int8", 6: "int32"}
_RANGES = {"int8": (-128, 127), "uint8": (0, 255)}


def is_integer_onnx(model: Any) -> bool:
    return any(
        n.op_type in QDQ_OPERATORS
        or n.op_type in INTEGER_OPERATORS
        or n.op_type.startswith("QLinear")
        for n in model.graph.node
    )


def _f32(value: Any) -> float:
    return float(np.float32(value))


def _div32(a: float, b: float) -> float:
    return float(np.float32(a) / np.float32(b))


def _mul32(a: float, b: float) -> float:
    return float(np.float32(a) * np.float32(b))


def _round_f32(value: Fraction) -> float:
    """The float32 nearest to an exact rational, ties to even (one IEEE rounding)."""
    if value == 0:
        return 0.0
    sign = -1 if value < 0 else 1
    value = abs(value)
    exponent = value.numerator.bit_length() - value.denominator.bit_length()
    while Fraction(2) ** exponent > value:
        exponent -= 1
    while Fraction(2) ** (exponent + 1) <= value:
        exponent += 1
    quantum = Fraction(2) ** (max(exponent, -126) - 23)
    steps = value / quantum
    whole = steps.numerator // steps.denominator
    rest = steps - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    return sign * float(whole * quantum)


def fma32(a: float, b: float, c: float) -> float:
    """float32 fused multiply-add: a*b + c rounded once."""
    return _round_f32(Fraction(a) * Fraction(b) + Fraction(c))


@dataclass
class _Value:
    """A tensor during import: its Relax value, shape, dtype and (if quantized) params."""

    expr: Any
    shape: tuple[int, ...]
    dtype: str
    scale: float | None = None
    zero_point: int | None = None


@dataclass(frozen=True)
class _QParams:
    scale: np.ndarray  # float32, one per tensor or per channel
    zero_point: np.ndarray
    dtype: str
    axis: int = 1

    @property
    def s(self) -> float:
        return float(self.scale.reshape(-1)[0])

    @property
    def zp(self) -> int:
        return int(self.zero_point.reshape(-1)[0])


def import_onnx_int8(path: str | os.PathLike[str]) -> ImportedModel:
    """Import an integer ONNX model from ``path`` (QDQ, QOperator or a mix)."""
    import onnx

    source = os.fspath(path)
    try:
        model = onnx.load_model_from_string(Path(source).read_bytes())
        onnx.checker.check_model(model)
    except OSError as err:
        raise ModelError(f"{source}: cannot read the model file: {err.strerror}") from err
    except Exception as err:  # protobuf and the checker raise several types
        detail = str(err).splitlines()[0] if str(err).strip() else "it cannot be parsed"
        raise ModelError(f"{source}: {DAMAGED}: it is not a valid ONNX model: {detail}") from err
    return _Importer(model, source).run()


class _Importer:
    def __init__(self, model: Any, source: str) -> None:
        from onnx import numpy_helper

        self.model = model
        self.graph = model.graph
        self.source = source
        self.constants: dict[str, np.ndarray] = {
            init.name: numpy_helper.to_array(init) for init in self.graph.initializer
        }
        for node in self.graph.node:
            if node.op_type == "Constant" and node.output:
                attr = {a.name: a for a in node.attribute}
                if "value" in attr:
                    self.constants[node.output[0]] = numpy_helper.to_array(attr["value"].t)
        self.values: dict[str, _Value] = {}
        self.consumers: dict[str, list[int]] = {}
        for index, node in enumerate(self.graph.node):
            for name in node.input:
                self.consumers.setdefault(name, []).append(index)
        self.outputs = {v.name for v in self.graph.output}
        self.opset = next(
            (int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 13
        )
        # DequantizeLinear outputs not yet materialized: float name -> (q name, params).
        self.dequantized: dict[str, tuple[str, _QParams]] = {}
        # Nodes folded into an earlier group (their index), and the group's source entry.
        self.folded: set[int] = set()
        self.operator_attrs: dict[str, tuple[str, dict[str, Any]]] = {}
        self.index = -1
        self.node: Any = None
        self.sources: list[SourceOperator] = []
        self.uint8_pairs = self._onnxruntime_uint8_pairs()
        self.group_output = ""  # the QuantizeLinear output of the QDQ group being folded

    def _onnxruntime_uint8_pairs(self) -> set[str]:
        """The int8 QuantizeLinear -> DequantizeLinear pairs that onnxruntime's x86
        optimizer turns into uint8 ones (zero point + 128; its QDQS8ToU8Transformer), by
        the QuantizeLinear's output: one whose only consumer is a DequantizeLinear with
        the same scale and zero point. Values and integer kernels are the same either
        way, but which QDQ Add groups it fuses, and QLinearAdd's rounding, follow."""
        pairs = set()
        for node in self.graph.node:
            if node.op_type != "QuantizeLinear" or len(node.input) < 3:
                continue
            out = node.output[0]
            users = self.consumers.get(out, [])
            zp = self.constants.get(node.input[2])
            if out in self.outputs or len(users) != 1 or zp is None or zp.dtype != np.int8:
                continue
            user = self.graph.node[users[0]]
            if user.op_type != "DequantizeLinear" or len(user.input) < 3:
                continue
            same = all(
                a == b or (a in self.constants and b in self.constants
                           and np.array_equal(self.constants[a], self.constants[b]))
                for a, b in zip(node.input[1:3], user.input[1:3])
            )  # fmt: skip
            if same:
                pairs.add(out)
        return pairs

    def onnxruntime_dtype(self, float_name: str, q: _QParams) -> str:
        """The type onnxruntime's x86 optimizer gives a QDQ group's input ``float_name``."""
        pending = self.dequantized.get(float_name)
        return "uint8" if pending is not None and pending[0] in self.uint8_pairs else q.dtype

    # -- errors ---------------------------------------------------------------------------

    def unsupported(self, what: str) -> UnsupportedError:
        node = self.node
        label = f"operator #{self.index} {node.op_type}" if node is not None else "the model"
        name = f" (node '{node.name}')" if node is not None and node.name else ""
        return UnsupportedError(
            f"{self.source}: {label}{name}: {what}; the supported operators and limits are "
            f"listed in {DOCS}"
        )

    # -- inputs of a node -----------------------------------------------------------------

    def const(self, name: str, what: str) -> np.ndarray:
        if name not in self.constants:
            raise self.unsupported(f"{what} '{name}' must be a constant initializer")
        return self.constants[name]

    def qparams(
        self, scale: str, zero_point: str | None, dtype: str | None = None, bias: bool = False
    ) -> _QParams:
        """Scale and zero point from constants; the zero point's type (int8 or uint8, or
        int32 for the DequantizeLinear of a ``bias``) is the quantized tensor's."""
        s = np.asarray(self.const(scale, "the scale"), dtype=np.float32).reshape(-1)
        if zero_point:
            z = self.const(zero_point, "the zero point")
            dtype = str(z.dtype)  # the zero point's type is the quantized tensor's
            z = np.asarray(z).reshape(-1).astype(np.int64)
        else:
            z = np.zeros(s.shape, np.int64)
            dtype = dtype or "uint8"
        if dtype not in _RANGES and not (bias and dtype == "int32"):
            raise self.unsupported(
                f"the zero point '{zero_point}' is {dtype}; int8 and uint8 are supported"
            )
        if (s <= 0).any() or not np.isfinite(s).all():
            raise ModelError(
                f"{self.source}: {DAMAGED}: operator #{self.index} {self.node.op_type}: the "
                f"scale '{scale}' must be positive and finite"
            )
        return _QParams(s, z, dtype)

    def activation(self, name: str) -> _Value:
        if name in self.values:
            return self.values[name]
        if name in self.constants:
            raise self.unsupported(f"input '{name}' is a constant; expected a computed tensor")
        raise self.unsupported(f"input '{name}' is not computed by a supported operator")

    def operand(self, name: str) -> _Value:
        """An input of a QLinear binary operator: a computed tensor, or an int8/uint8
        initializer (onnxruntime's quantizer writes a Linear's bias as QLinearAdd's
        constant first input)."""
        if name in self.constants and name not in self.values:
            return self.constant_value(self.constants[name], name)
        return self.activation(name)

    def constant_value(self, data: np.ndarray, name: str) -> _Value:
        from tvm import relax

        dtype = str(data.dtype)
        if dtype not in _RANGES:
            raise self.unsupported(
                f"the constant input '{name}' is {dtype}, expected int8 or uint8"
            )
        shape = tuple(int(d) for d in data.shape)
        return _Value(relax.const(np.ascontiguousarray(data)), shape, dtype)

    def expect(self, value: _Value, dtypes: tuple[str, ...], role: str) -> None:
        if value.dtype not in dtypes:
            raise self.unsupported(f"{role} is {value.dtype}, expected {' or '.join(dtypes)}")

    def per_tensor(self, q: _QParams, role: str) -> None:
        if q.scale.size != 1 or q.zero_point.size != 1:
            raise self.unsupported(f"{role} must be quantized per tensor")

    # -- emitting -------------------------------------------------------------------------

    def emit(self, bb: Any, fn: Callable[..., Any], *args: Any, name: str, **kwargs: Any) -> Any:
        from tvm import ir, relax

        from aot.frontend.tflite_int8.importer import _typed_params
        from aot.naming import SOURCE_OPERATOR_SPAN

        call = bb.call_te(fn, *args, primfunc_name_hint=name, **kwargs)
        params = {**_typed_params(fn, args, kwargs), "rounding": "onnxruntime"}
        params_of(name, params)  # the kind's dataclass takes them (aot/operators)
        self.operator_attrs[call.args[0].name_hint] = (name, params)
        span = ir.Span(ir.SourceName(SOURCE_OPERATOR_SPAN), self.index, self.index, 0, 0)
        return bb.emit(relax.Call(call.op, call.args, call.attrs, call.ty_args, span))

    def record(self, op_type: str, output: str, result: Any) -> None:
        from tvm import relax

        values = (result.name,) if isinstance(result, relax.Var) else ()
        self.sources.append(SourceOperator(self.index, op_type, output, values))

    # -- main -----------------------------------------------------------------------------

    def run(self) -> ImportedModel:
        from tvm import relax

        from aot.frontend.relax_onnx import _value_spec
        from aot.frontend.tflite_int8.importer import (
            _annotate_operators,
            _close_function_scope,
            _identifier,
        )

        initializers = set(self.constants)
        inputs = [
            _value_spec(v, self.source) for v in self.graph.input if v.name not in initializers
        ]
        bb = relax.BlockBuilder()
        params = []
        used: set[str] = set()
        for spec in inputs:
            var = relax.Var(_identifier(spec.name, used), relax.TensorType(spec.shape, spec.dtype))
            params.append(var)
            self.values[spec.name] = _Value(var, spec.shape, spec.dtype)
        try:
            with bb.function("main", params):
                with bb.dataflow():
                    for index, node in enumerate(self.graph.node):
                        self.index, self.node = index, node
                        if index in self.folded or node.op_type == "Constant":
                            continue
                        self._convert(bb, node)
                    self.index, self.node = -1, None
                    results, specs = [], []
                    for out in self.graph.output:
                        value = self._materialize(bb, out.name)
                        results.append(value.expr)
                        quant = None
                        if value.scale is not None:
                            quant = Quantization((value.scale,), (int(value.zero_point or 0),))
                        specs.append(TensorSpec(out.name, value.shape, value.dtype, quant))
                    gv = bb.emit_output(results[0] if len(results) == 1 else relax.Tuple(results))
                bb.emit_func_output(gv)
        except BaseException:
            _close_function_scope(bb)
            raise
        return ImportedModel(
            relax_module=_annotate_operators(bb.get(), self.operator_attrs),
            inputs=tuple(inputs),
            outputs=tuple(specs),
            source_path=self.source,
            source_format="onnx",
            frontend=FRONTEND_NAME,
            operators=tuple(s.type for s in self.sources),
            source_operators=tuple(self.sources),
        )

    def _materialize(self, bb: Any, name: str) -> _Value:
        """A float tensor that is a pending DequantizeLinear output becomes a kernel."""
        if name in self.values:
            return self.values[name]
        if name not in self.dequantized:
            raise ModelError(f"{self.source}: output '{name}' is never computed")
        from aot.ops import onnx_int8 as ops

        qname, q = self.dequantized[name]
        x = self.activation(qname)
        self.per_tensor(q, "the DequantizeLinear input")
        saved = self.index
        self.index = next(
            (i for i, n in enumerate(self.graph.node) if name in n.output), self.index
        )
        result = self.emit(
            bb, ops.dequantize_linear, x.expr, name="dequantize_linear",
            scale=q.s, zero_point=q.zp,
        )  # fmt: skip
        self.record("DequantizeLinear", name, result)
        self.index = saved
        value = _Value(result, x.shape, "float32")
        self.values[name] = value
        return value

    def _convert(self, bb: Any, node: Any) -> None:
        op = node.op_type
        if node.domain not in ("", "ai.onnx", MS_DOMAIN):
            raise self.unsupported(f"the operator domain '{node.domain}' is not supported")
        if op == "DequantizeLinear":
            self._dequantize_node(node)
            return
        if op == "QuantizeLinear":
            self._quantize_node(bb, node)
            return
        handler = _QOPERATOR.get(op)
        if handler is not None and not self._has_float_inputs(node):
            result, value = handler(self, bb, node)
            self.values[node.output[0]] = value
            self.record(op, node.output[0], result)
            return
        if op in _QDQ:
            self._qdq_group(bb, node)
            return
        raise self.unsupported("this operator is not supported by the int8 ONNX importer")

    def _has_float_inputs(self, node: Any) -> bool:
        return any(name in self.dequantized for name in node.input)

    # -- QuantizeLinear / DequantizeLinear ------------------------------------------------

    def _dequantize_node(self, node: Any) -> None:
        name = node.input[0]
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        if name in self.constants:
            return  # a weight or bias: read by the group that uses it (``_dq_constant``)
        x = self.activation(name)
        self.expect(x, ("int8", "uint8"), "the DequantizeLinear input")
        q = self.qparams(node.input[1], node.input[2] if len(node.input) > 2 else None, x.dtype)
        # Folded into the group that reads it, or made a kernel if the model outputs it.
        self.dequantized[node.output[0]] = (name, _QParams(q.scale, q.zero_point, q.dtype, axis))

    def _quantize_node(self, bb: Any, node: Any) -> None:
        from aot.ops import onnx_int8 as ops

        name = node.input[0]
        zp_name = node.input[2] if len(node.input) > 2 else None
        q = self.qparams(node.input[1], zp_name)
        self.per_tensor(q, "the QuantizeLinear output")
        if q.dtype not in _RANGES:
            raise self.unsupported(f"QuantizeLinear to {q.dtype} is not supported")
        if name in self.dequantized:
            # DequantizeLinear -> QuantizeLinear with the same parameters changes nothing.
            # With others, onnxruntime's optimizer merges the surrounding pairs (its
            # DoubleQDQPairsRemover), which is not a plain requantization: refused.
            qname, dq = self.dequantized[name]
            if (dq.s, dq.zp, dq.dtype) != (q.s, q.zp, q.dtype):
                raise self.unsupported(
                    "a DequantizeLinear -> QuantizeLinear pair with different parameters is "
                    "not supported"
                )
            self.values[node.output[0]] = self.values[qname]
            return
        x = self.activation(name)
        self.expect(x, ("float32",), "the QuantizeLinear input")
        result = self.emit(
            bb, ops.quantize_linear, x.expr, name="quantize_linear", scale=q.s,
            zero_point=q.zp, out_dtype=q.dtype,
        )  # fmt: skip
        self.values[node.output[0]] = _Value(result, x.shape, q.dtype, q.s, q.zp)
        self.record("QuantizeLinear", node.output[0], result)

    def _dq_constant(self, name: str) -> tuple[np.ndarray, _QParams] | None:
        """The integer data and parameters behind a DequantizeLinear of a constant."""
        for index in self._producers(name):
            node = self.graph.node[index]
            if node.op_type == "DequantizeLinear" and node.input[0] in self.constants:
                data = self.constants[node.input[0]]
                axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
                zp = node.input[2] if len(node.input) > 2 and node.input[2] else None
                q = self.qparams(node.input[1], zp, str(data.dtype), bias=data.dtype == np.int32)
                return data, _QParams(q.scale, q.zero_point, q.dtype, axis)
        return None

    def _producers(self, name: str) -> list[int]:
        return [i for i, n in enumerate(self.graph.node) if name in n.output]

    # -- QDQ groups -------------------------------------------------------------------------

    def _single_consumer(self, name: str) -> Any:
        users = self.consumers.get(name, [])
        if len(users) != 1 or name in self.outputs:
            return None
        return users[0]

    def _qdq_group(self, bb: Any, node: Any) -> None:
        """DequantizeLinear(s) -> ``node`` [-> Relu/Clip] -> QuantizeLinear, folded."""
        out = node.output[0]
        lo_hi: tuple[float | None, float | None] = (None, None)
        quantize = self._single_consumer(out)
        folded = []
        if quantize is not None and self.graph.node[quantize].op_type in ("Relu", "Clip"):
            act = self.graph.node[quantize]
            lo_hi = self._activation_bounds(act)
            folded.append(quantize)
            quantize = self._single_consumer(act.output[0])
        if quantize is None or self.graph.node[quantize].op_type != "QuantizeLinear":
            raise self.unsupported(
                "a float operator must be followed by one QuantizeLinear (a QDQ group); "
                "float operators are not supported by the int8 ONNX importer"
            )
        qnode = self.graph.node[quantize]
        zp_name = qnode.input[2] if len(qnode.input) > 2 else None
        y = self.qparams(qnode.input[1], zp_name)
        self.per_tensor(y, "the QuantizeLinear output")
        self.group_output = qnode.output[0]
        result, value = _QDQ[node.op_type](self, bb, node, y, lo_hi)
        self.folded.update([*folded, quantize])
        self.values[qnode.output[0]] = value
        self.record(node.op_type, qnode.output[0], result)

    def _activation_bounds(self, act: Any) -> tuple[float | None, float | None]:
        if act.op_type == "Relu":
            return 0.0, None
        lo = hi = None
        attrs = {a.name: a for a in act.attribute}
        if len(act.input) > 1 and act.input[1]:
            lo = float(self.const(act.input[1], "the Clip minimum").reshape(-1)[0])
        elif "min" in attrs:
            lo = attrs["min"].f
        if len(act.input) > 2 and act.input[2]:
            hi = float(self.const(act.input[2], "the Clip maximum").reshape(-1)[0])
        elif "max" in attrs:
            hi = attrs["max"].f
        return lo, hi

    def dq_input(self, name: str) -> tuple[_Value, _QParams]:
        if name not in self.dequantized:
            raise self.unsupported(f"input '{name}' must come from a DequantizeLinear")
        qname, q = self.dequantized[name]
        self.per_tensor(q, f"input '{name}'")
        return self.activation(qname), q

    def dq_operand(self, name: str) -> tuple[_Value | np.ndarray, _QParams]:
        """An input of a QDQ binary group: a DequantizeLinear of a computed tensor, or of
        a constant (returned as its integer array: int8, uint8 or an int32 bias, as
        onnxruntime's quantizer writes the Add of a MatMul + Add)."""
        if name not in self.dequantized:
            found = self._dq_constant(name)
            if found is not None:
                return found
        return self.dq_input(name)


def _clamp(y: _QParams, lo_hi: tuple[float | None, float | None]) -> tuple[int, int]:
    """The integer output range after a folded Relu/Clip: QuantizeLinear(Relu(v)) equals
    max(QuantizeLinear(v), QuantizeLinear(0)) because quantizing is monotone."""
    lo, hi = _RANGES[y.dtype]
    a, b = lo_hi
    if a is not None:
        lo = max(lo, _quantize_scalar(a, y))
    if b is not None:
        hi = min(hi, _quantize_scalar(b, y))
    return lo, hi


def _quantize_scalar(value: float, y: _QParams) -> int:
    lo, hi = _RANGES[y.dtype]
    q = float(np.float32(value) / np.float32(y.s))
    return int(min(max(np.rint(q) + y.zp, lo), hi))


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


# -- the integer operators, shared by both forms -----------------------------------------


def _check_geometry(imp: _Importer, **values: tuple[int, ...]) -> None:
    """Strides, kernels and dilations of at least 1, pads of at least 0, a non-empty
    output: a model that breaks these is damaged (onnxruntime refuses it too)."""
    lengths = {"pads": 4, "strides": 2, "dilations": 2, "kernel_shape": 2}
    for name, items in values.items():
        low = 0 if name == "pads" else 1
        if name in lengths and len(items) != lengths[name]:
            raise ModelError(
                f"{imp.source}: {DAMAGED}: operator #{imp.index} {imp.node.op_type}: {name} "
                f"has {len(items)} entries, expected {lengths[name]} for a 2-D operator"
            )
        if any(int(v) < low for v in items):
            raise ModelError(
                f"{imp.source}: {DAMAGED}: operator #{imp.index} {imp.node.op_type}: {name} "
                f"{list(items)} must be at least {low}"
            )


def _check_output(imp: _Importer, shape: tuple[int, ...]) -> None:
    if any(d <= 0 for d in shape):
        raise ModelError(
            f"{imp.source}: {DAMAGED}: operator #{imp.index} {imp.node.op_type}: the output "
            f"shape {list(shape)} is empty"
        )


def _conv_geometry(imp: _Importer, node: Any, x: _Value, w: np.ndarray) -> dict[str, Any]:
    attrs = _attrs(node)
    if len(x.shape) != 4 or w.ndim != 4:
        raise imp.unsupported("only 2-D convolutions (4-D NCHW input, OIHW weights) are supported")
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise imp.unsupported("auto_pad is not supported; give explicit pads")
    if attrs.get("channels_last", 0):
        raise imp.unsupported("channels_last is not supported")
    group = int(attrs.get("group", 1))
    strides = tuple(attrs.get("strides", (1, 1)))
    dilations = tuple(attrs.get("dilations", (1, 1)))
    pads = tuple(attrs.get("pads", (0, 0, 0, 0)))
    kernel = tuple(w.shape[2:])
    _check_geometry(imp, strides=strides, dilations=dilations, pads=pads, group=(group,))
    n, c, h, wd = x.shape
    if c != w.shape[1] * group or w.shape[0] % group:
        raise imp.unsupported(
            f"weights {list(w.shape)} do not fit input {list(x.shape)}, group {group}"
        )
    out_h = (h + pads[0] + pads[2] - dilations[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    out_w = (wd + pads[1] + pads[3] - dilations[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    _check_output(imp, (n, int(w.shape[0]), int(out_h), int(out_w)))
    return {
        "out_shape": (n, int(w.shape[0]), int(out_h), int(out_w)),
        "strides": (int(strides[0]), int(strides[1])),
        "dilations": (int(dilations[0]), int(dilations[1])),
        "pads": (int(pads[0]), int(pads[1])),
        "group": group,
    }


def _weight_zp(imp: _Importer, w: _QParams) -> int:
    if len(set(w.zero_point.tolist())) != 1:
        raise imp.unsupported("per-channel weight zero points must all be equal")
    return w.zp


def _out_scales(
    imp: _Importer,
    x_scale: float,
    w: _QParams,
    y_scale: float,
    channels: int,
    alpha: float | None = None,
) -> Any:
    """float32 (x_scale * w_scale) / y_scale per channel, in onnxruntime's order."""
    from tvm import relax

    ws = w.scale.reshape(-1)
    if ws.size not in (1, channels):
        raise imp.unsupported(f"the weight scale has {ws.size} entries for {channels} channels")
    if alpha is None:
        scales = [_div32(_mul32(x_scale, s), y_scale) for s in ws]
    else:  # QGemm: (alpha * a_scale * b_scale) / y_scale
        scales = [_div32(_mul32(_mul32(alpha, x_scale), s), y_scale) for s in ws]
    if len(set(scales)) == 1:
        return scales[0]
    return relax.const(np.asarray(scales, dtype=np.float32))


def _bias(imp: _Importer, bias: np.ndarray | None, channels: int) -> Any:
    from tvm import relax

    if bias is None:
        return None
    bias = np.asarray(bias).reshape(-1)
    if bias.dtype != np.int32 or bias.size != channels:
        raise imp.unsupported(f"the bias must be int32 with {channels} entries")
    return relax.const(np.ascontiguousarray(bias))


def _conv(
    imp: _Importer,
    bb: Any,
    node: Any,
    x: _Value,
    xq: _QParams,
    w: np.ndarray,
    wq: _QParams,
    bias: np.ndarray | None,
    y: _QParams,
    lo_hi: tuple,
) -> tuple[Any, _Value]:
    from tvm import relax

    from aot.ops import onnx_int8 as ops

    imp.expect(x, ("int8", "uint8"), "the input")
    if w.dtype not in (np.int8, np.uint8):
        raise imp.unsupported(f"the weights are {w.dtype}, expected int8 or uint8")
    if wq.scale.size > 1 and wq.axis != 0:
        raise imp.unsupported("per-channel weights must be quantized along axis 0")
    geometry = _conv_geometry(imp, node, x, w)
    channels = geometry["out_shape"][1]
    scale = _out_scales(imp, xq.s, wq, y.s, channels)
    lo, hi = _clamp(y, lo_hi)
    operands = [x.expr, relax.const(np.ascontiguousarray(w)), _bias(imp, bias, channels)]
    result = imp.emit(
        bb, ops.qlinear_conv2d, *operands, scale, name="qlinear_conv2d",
        input_zp=xq.zp, weight_zp=_weight_zp(imp, wq), output_zp=y.zp, out_dtype=y.dtype,
        act_min=lo, act_max=hi, **geometry,
    )  # fmt: skip
    return result, _Value(result, geometry["out_shape"], y.dtype, y.s, y.zp)


def _matmul(
    imp: _Importer,
    bb: Any,
    x: _Value,
    xq: _QParams,
    w: np.ndarray,
    wq: _QParams,
    bias: np.ndarray | None,
    y: _QParams | None,
    lo_hi: tuple,
    transpose: bool,
    alpha: float | None = None,
) -> tuple[Any, _Value]:
    from tvm import relax

    from aot.ops import onnx_int8 as ops

    imp.expect(x, ("int8", "uint8"), "the input")
    if w.ndim != 2 or w.dtype not in (np.int8, np.uint8):
        raise imp.unsupported("the second operand must be a constant 2-D int8 or uint8 matrix")
    depth, channels = (w.shape[1], w.shape[0]) if transpose else w.shape
    if x.shape[-1] != depth:
        raise imp.unsupported(f"cannot multiply {list(x.shape)} by {list(w.shape)}")
    if wq.scale.size > 1 and wq.axis not in ((0, -2) if transpose else (1, -1)):
        raise imp.unsupported("per-channel weights must be quantized along the output axis")
    out_shape = (*x.shape[:-1], int(channels))
    scale = 1.0 if y is None else _out_scales(imp, xq.s, wq, y.s, channels, alpha)
    lo, hi = _clamp(y, lo_hi) if y is not None else (0, 0)
    weight = relax.const(np.ascontiguousarray(w))
    result = imp.emit(
        bb, ops.qlinear_matmul, x.expr, weight, _bias(imp, bias, channels), scale,
        name="qlinear_matmul" if y is not None else "matmul_integer", out_shape=out_shape,
        transpose_weight=transpose, input_zp=xq.zp, weight_zp=_weight_zp(imp, wq),
        output_zp=None if y is None else y.zp, out_dtype="int32" if y is None else y.dtype,
        act_min=lo, act_max=hi,
    )  # fmt: skip
    if y is None:
        return result, _Value(result, out_shape, "int32")
    return result, _Value(result, out_shape, y.dtype, y.s, y.zp)


def _binary_shape(
    imp: _Importer, a: _Value, b: _Value, y: _QParams, lo_hi: tuple, op: str
) -> tuple[int, ...]:
    """The broadcast output shape of a QLinear binary operator whose inputs share the
    output's dtype and that has no activation fused after it."""
    for v, role in ((a, "the first input"), (b, "the second input")):
        imp.expect(v, (y.dtype,), role)
    if lo_hi != (None, None):
        raise imp.unsupported(f"a Relu or Clip after {op} is not supported")
    try:
        return tuple(int(d) for d in np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        raise imp.unsupported(
            f"inputs {list(a.shape)} and {list(b.shape)} do not broadcast"
        ) from None


def _add(
    imp: _Importer,
    bb: Any,
    a: _Value,
    aq: _QParams,
    b: _Value,
    bq: _QParams,
    y: _QParams,
    lo_hi: tuple,
    offset: int = 0,
) -> tuple[Any, _Value]:
    """QLinearAdd; ``offset`` 128 runs it on int8 tensors as onnxruntime does on their
    uint8 form (values and zero points + 128), which rounds its fused multiply-adds
    differently."""
    from aot.ops import onnx_int8 as ops

    shape = _binary_shape(imp, a, b, y, lo_hi, "Add")
    ratio_a = _div32(aq.s, y.s)
    ratio_b = _div32(bq.s, y.s)
    a_zp, b_zp, y_zp = aq.zp + offset, bq.zp + offset, y.zp + offset
    # onnxruntime calls MLAS with the operands swapped when the first one is the scalar of
    # its broadcast spans; MLAS's fixed part is then computed with the roles swapped too.
    lhs_first = _first_is_span_scalar(a.shape, b.shape, shape)
    # (float)zp_c - (ratio_1 * zp_1 + ratio_2 * zp_2), float32 as MLAS computes it: GCC
    # contracts the inner sum into one fused multiply-add in the AVX2 build.
    if lhs_first:
        inner = fma32(ratio_b, b_zp, _mul32(ratio_a, a_zp))
    else:
        inner = fma32(ratio_a, a_zp, _mul32(ratio_b, b_zp))
    fixed = _f32(np.float32(y_zp) - np.float32(inner))
    _check_exact_fma(imp, ratio_a, ratio_b, fixed, y.dtype)
    result = imp.emit(
        bb, ops.qlinear_add, a.expr, b.expr, name="qlinear_add", out_shape=shape,
        lhs_ratio=ratio_a, rhs_ratio=ratio_b, fixed=fixed, lhs_first=lhs_first,
        out_dtype=y.dtype, offset=offset,
    )  # fmt: skip
    return result, _Value(result, shape, y.dtype, y.s, y.zp)


def _first_is_span_scalar(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]) -> bool:
    """Whether onnxruntime's broadcaster treats the first input as a scalar per span: it
    is one value, or it is broadcast along the innermost dimension the output has while
    the second input is not."""
    if int(np.prod(a)) == 1:
        return int(np.prod(b)) != 1
    rank = len(out)
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    for d in reversed(range(rank)):
        if out[d] != 1:
            return pa[d] == 1 and pb[d] == out[d]
    return False


def _check_exact_fma(imp: _Importer, ra: float, rb: float, fixed: float, dtype: str) -> None:
    """Every term of the two fused multiply-adds is a multiple of the smallest quantum and
    below the largest magnitude; when those span at most 52 bits, double holds the sums
    exactly and one rounding to float32 is the fma (see ``aot.ops.onnx_int8.qlinear_add``)."""
    import math

    def quantum(v: float) -> float:
        return math.ldexp(1.0, math.frexp(v)[1] - 24) if v else math.inf

    top = 256 * (abs(ra) + abs(rb)) + abs(fixed) + 512
    small = min(quantum(ra), quantum(rb), quantum(fixed))
    if math.log2(top) - math.log2(small) > 52:
        raise imp.unsupported("the input and output scales of QLinearAdd are too far apart")


def _gap(imp: _Importer, bb: Any, x: _Value, xq: _QParams, y: _QParams) -> tuple[Any, _Value]:
    from aot.ops import onnx_int8 as ops

    imp.expect(x, (y.dtype,), "the input")
    if len(x.shape) != 4:
        raise imp.unsupported("expected a 4-D NCHW input")
    size = x.shape[2] * x.shape[3]
    # MLAS: x_scale / (y_scale * (float)image_size), float32.
    scale = _div32(xq.s, _mul32(y.s, float(size)))
    result = imp.emit(
        bb, ops.qlinear_global_average_pool, x.expr, name="qlinear_global_average_pool",
        scale=scale, input_zp=xq.zp, output_zp=y.zp, out_dtype=y.dtype,
    )  # fmt: skip
    shape = (x.shape[0], x.shape[1], 1, 1)
    return result, _Value(result, shape, y.dtype, y.s, y.zp)


def _max_pool(imp: _Importer, bb: Any, node: Any, x: _Value) -> tuple[Any, _Value]:
    from aot.ops import onnx_int8 as ops

    imp.expect(x, ("int8", "uint8"), "the input")
    attrs = _attrs(node)
    if len(x.shape) != 4:
        raise imp.unsupported("only 2-D pooling (4-D NCHW input) is supported")
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") or attrs.get("ceil_mode", 0):
        raise imp.unsupported("auto_pad and ceil_mode are not supported")
    if attrs.get("storage_order", 0) or (len(node.output) > 1 and node.output[1]):
        raise imp.unsupported("the Indices output is not supported")
    kernel = tuple(int(k) for k in attrs["kernel_shape"])
    strides = tuple(int(s) for s in attrs.get("strides", (1, 1)))
    dilations = tuple(int(d) for d in attrs.get("dilations", (1, 1)))
    pads = tuple(int(p) for p in attrs.get("pads", (0, 0, 0, 0)))
    _check_geometry(imp, kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads)
    n, c, h, w = x.shape
    out_h = (h + pads[0] + pads[2] - dilations[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    out_w = (w + pads[1] + pads[3] - dilations[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    shape = (n, c, out_h, out_w)
    _check_output(imp, shape)
    result = imp.emit(
        bb, ops.max_pool2d, x.expr, name="max_pool2d_qlinear", out_shape=shape,
        kernel=kernel, strides=strides, pads=pads[:2], dilations=dilations,
    )  # fmt: skip
    return result, _Value(result, shape, x.dtype, x.scale, x.zero_point)


def _reshape_like(imp: _Importer, bb: Any, node: Any, x: _Value) -> tuple[Any, _Value]:
    from aot.ops import int8

    op = node.op_type
    if op == "Flatten":
        axis = int(_attrs(node).get("axis", 1)) % max(len(x.shape), 1)
        shape = (int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))
    elif op == "Reshape":
        target = [int(d) for d in imp.const(node.input[1], "the shape").reshape(-1)]
        target = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
        if -1 in target:
            known = int(np.prod([d for d in target if d != -1]))
            target[target.index(-1)] = int(np.prod(x.shape)) // max(known, 1)
        shape = tuple(target)
        if int(np.prod(shape)) != int(np.prod(x.shape)):
            raise imp.unsupported(f"cannot reshape {list(x.shape)} to {list(shape)}")
    else:  # Transpose
        perm = _attrs(node).get("perm", list(range(len(x.shape)))[::-1])
        perm = [int(p) for p in perm]
        shape = tuple(x.shape[p] for p in perm)
        result = imp.emit(bb, int8.transpose, x.expr, name="transpose_qlinear", perm=perm)
        return result, _Value(result, shape, x.dtype, x.scale, x.zero_point)
    if shape == x.shape:
        return x.expr, _Value(x.expr, shape, x.dtype, x.scale, x.zero_point)
    result = imp.emit(bb, int8.reshape, x.expr, name="reshape_qlinear", out_shape=shape)
    return result, _Value(result, shape, x.dtype, x.scale, x.zero_point)


def _mul(
    imp: _Importer,
    bb: Any,
    a: _Value,
    aq: _QParams,
    b: _Value,
    bq: _QParams,
    y: _QParams,
    lo_hi: tuple,
    offset: int = 0,
) -> tuple[Any, _Value]:
    from aot.ops import onnx_int8 as ops

    shape = _binary_shape(imp, a, b, y, lo_hi, "Mul")
    ratio = _div32(_mul32(aq.s, bq.s), y.s)
    # The SSE2 kernel converts without clamping: a product past 2**31 would saturate the
    # wrong way there, so such scales are refused rather than matched.
    if 65536 * ratio >= 2.0**31:
        raise imp.unsupported("the input scales are too large for the output scale")
    result = imp.emit(
        bb, ops.qlinear_mul, a.expr, b.expr, name="qlinear_mul", out_shape=shape,
        ratio=ratio, lhs_zp=aq.zp, rhs_zp=bq.zp, output_zp=y.zp, out_dtype=y.dtype,
        offset=offset,
    )  # fmt: skip
    return result, _Value(result, shape, y.dtype, y.s, y.zp)


def _pool_geometry(imp: _Importer, node: Any, x: _Value) -> dict[str, Any]:
    attrs = _attrs(node)
    if len(x.shape) != 4:
        raise imp.unsupported("only 2-D pooling (4-D NCHW input) is supported")
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") or attrs.get("ceil_mode", 0):
        raise imp.unsupported("auto_pad and ceil_mode are not supported")
    if attrs.get("channels_last", 0):
        raise imp.unsupported("channels_last is not supported")
    kernel = tuple(int(k) for k in attrs["kernel_shape"])
    strides = tuple(int(s) for s in attrs.get("strides", (1, 1)))
    dilations = tuple(int(d) for d in attrs.get("dilations", (1, 1)))
    pads = tuple(int(p) for p in attrs.get("pads", (0, 0, 0, 0)))
    _check_geometry(imp, kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads)
    n, c, h, w = x.shape
    out_h = (h + pads[0] + pads[2] - dilations[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    out_w = (w + pads[1] + pads[3] - dilations[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    _check_output(imp, (n, c, out_h, out_w))
    return {
        "out_shape": (n, c, out_h, out_w), "kernel": kernel, "strides": strides,
        "pads": pads[:2], "dilations": dilations,
    }  # fmt: skip


def _average_pool(
    imp: _Importer, bb: Any, node: Any, x: _Value, xq: _QParams, y: _QParams, lo_hi: tuple
) -> tuple[Any, _Value]:
    from tvm import relax

    from aot.ops import onnx_int8 as ops

    imp.expect(x, (y.dtype,), "the input")
    if lo_hi != (None, None):
        raise imp.unsupported("a Relu or Clip after AveragePool is not supported")
    geometry = _pool_geometry(imp, node, x)
    if geometry.pop("dilations") != (1, 1):
        raise imp.unsupported("dilations are not supported")
    raw = np.arange(256, dtype=np.uint8).view(xq.dtype).astype(np.int32)
    table = relax.const(np.float32(xq.s) * (raw - xq.zp).astype(np.float32))
    result = imp.emit(
        bb, ops.qlinear_average_pool, x.expr, table, name="qlinear_average_pool",
        count_include_pad=bool(_attrs(node).get("count_include_pad", 0)), output_scale=y.s,
        output_zp=y.zp, **geometry,
    )  # fmt: skip
    return result, _Value(result, geometry["out_shape"], y.dtype, y.s, y.zp)


def _requantize_table(
    xq: _QParams, y: _QParams, transform: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """onnxruntime ``QlinearBuildLookupTable``: entry ``i`` is for the input whose byte is
    i: dequantized in float32, transformed, then QuantizeLinear (x / scale, nearest even)."""
    lo, hi = _RANGES[y.dtype]
    raw = np.arange(256, dtype=np.uint8).view(xq.dtype).astype(np.int32)
    dequantized = np.float32(xq.s) * (raw - xq.zp).astype(np.float32)
    quotient = transform(dequantized).astype(np.float32) / np.float32(y.s)
    bounded = np.clip(quotient, np.float32(lo - y.zp), np.float32(hi - y.zp))
    return (np.rint(bounded).astype(np.int32) + y.zp).astype(y.dtype)


def _concat(
    imp: _Importer, bb: Any, node: Any, parts: list[tuple[_Value, _QParams]], y: _QParams
) -> tuple[Any, _Value]:
    from tvm import relax

    from aot.ops import onnx_int8 as ops

    axis = int(_attrs(node).get("axis", 0))
    rank = len(parts[0][0].shape)
    axis = axis % rank
    tables, flags = [], []
    for v, q in parts:
        imp.expect(v, (y.dtype,), "an input")
        if len(v.shape) != rank or any(
            d != e for k, (d, e) in enumerate(zip(v.shape, parts[0][0].shape)) if k != axis
        ):
            raise imp.unsupported("the inputs' shapes differ outside the concatenation axis")
        same = (q.s, q.zp) == (y.s, y.zp)
        flags.append(not same)
        if not same:
            tables.append(relax.const(_requantize_table(q, y, lambda v: v)))
    shape = list(parts[0][0].shape)
    shape[axis] = sum(v.shape[axis] for v, _ in parts)
    values = [v.expr for v, _ in parts] + tables

    def concat(*tensors: Any) -> Any:
        return ops.qlinear_concat(*tensors, axis=axis, out_shape=shape, tables=flags)

    result = imp.emit(bb, concat, *values, name="qlinear_concat")
    return result, _Value(result, tuple(shape), y.dtype, y.s, y.zp)


def _table_op(
    imp: _Importer,
    bb: Any,
    x: _Value,
    xq: _QParams,
    y: _QParams,
    transform: Callable[[np.ndarray], np.ndarray],
) -> tuple[Any, _Value]:
    """An operator that is exact per element in float32 (requantize, Relu, Clip) as a
    256-entry table of onnxruntime's DequantizeLinear -> transform -> QuantizeLinear."""
    from tvm import relax

    from aot.ops import onnx_int8 as ops

    imp.expect(x, ("int8", "uint8"), "the input")
    table = relax.const(_requantize_table(xq, y, transform))
    result = imp.emit(bb, ops.lookup_table, x.expr, table, name="requantize_table")
    return result, _Value(result, x.shape, y.dtype, y.s, y.zp)


def _ort_table(op: str, xq: _QParams, y: _QParams, attrs: dict[str, Any]) -> np.ndarray:
    """The 256-entry table onnxruntime builds for a lookup-table operator, read back by
    running it on every byte: MlasComputeLogistic is a platform-specific approximation
    (an FMA3 kernel on x86), so only onnxruntime itself can say what it computes."""
    from aot.errors import ConfigError

    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        raise ConfigError(
            f"{op} needs onnxruntime to build its lookup table: pip install onnxruntime"
        ) from None
    elem = TensorProto.INT8 if xq.dtype == "int8" else TensorProto.UINT8
    inits = [
        numpy_helper.from_array(np.float32(xq.s), "xs"),
        numpy_helper.from_array(np.array(xq.zp, xq.dtype), "xz"),
        numpy_helper.from_array(np.float32(y.s), "ys"),
        numpy_helper.from_array(np.array(y.zp, y.dtype), "yz"),
    ]
    node = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS_DOMAIN, **attrs)
    graph = helper.make_graph(
        [node], "table", [helper.make_tensor_value_info("x", elem, [256])],
        [helper.make_tensor_value_info("y", elem, [256])], inits,
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS_DOMAIN, 1)]
    )
    model.ir_version = 8
    raw = np.arange(256, dtype=np.uint8).view(xq.dtype)
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        table = session.run(None, {"x": raw})[0]
    except Exception as err:  # onnxruntime raises its own types
        detail = str(err).splitlines()[0] if str(err).strip() else type(err).__name__
        raise UnsupportedError(f"{op}: onnxruntime cannot build its table: {detail}") from None
    return np.asarray(table, dtype=y.dtype)


def _lookup(
    imp: _Importer, bb: Any, op: str, x: _Value, xq: _QParams, y: _QParams, attrs: dict[str, Any]
) -> tuple[Any, _Value]:
    from tvm import relax

    from aot.ops import onnx_int8 as ops

    imp.expect(x, (y.dtype,), "the input")
    table = relax.const(_ort_table(op, xq, y, attrs))
    name = "qlinear_sigmoid" if op == "QLinearSigmoid" else "qlinear_leaky_relu"
    result = imp.emit(bb, ops.lookup_table, x.expr, table, name=name)
    return result, _Value(result, x.shape, y.dtype, y.s, y.zp)


def softmax_table(x_scale: float, depth: int, signed: bool) -> np.ndarray:
    """onnxruntime's QLinearSoftmax exp table (``QlinearBuildLookupTableUint32``): exp in
    double of (i - 255 + shift) * x_scale, the shift keeping a row's sum below FLT_MAX."""
    import math

    flt_max = np.float32(np.finfo(np.float32).max)
    shift = math.log(float(flt_max / np.float32(depth)))
    shift = max(0.0, shift - 5.0) / float(np.float32(x_scale))
    table = np.empty(256, np.float32)
    for i in range(256):
        index = (i - 128) & 255 if signed else i
        table[index] = np.float32(math.exp((float(i) - 255 + shift) * float(np.float32(x_scale))))
    return table


def _softmax(
    imp: _Importer, bb: Any, node: Any, x: _Value, xq: _QParams, y: _QParams, opset: int
) -> tuple[Any, _Value]:
    from tvm import relax

    from aot.ops import onnx_int8 as ops

    imp.expect(x, (y.dtype,), "the input")
    attrs = _attrs(node)
    rank = len(x.shape)
    axis = int(attrs.get("axis", -1 if opset >= 13 else 1)) % rank
    if axis != rank - 1:
        raise imp.unsupported("only the last axis is supported")
    factor = float(np.floor(np.float32(1.0) / np.float32(y.s)))
    if factor >= 2.0**22:
        raise imp.unsupported("the output scale is too small")
    table = relax.const(softmax_table(xq.s, x.shape[-1], xq.dtype == "int8"))
    result = imp.emit(
        bb, ops.qlinear_softmax, x.expr, table, name="qlinear_softmax", y_factor=factor,
        output_zp=y.zp,
    )  # fmt: skip
    return result, _Value(result, x.shape, y.dtype, y.s, y.zp)


# -- QOperator handlers: (importer, bb, node) -> (result, value) ---------------------------


def _inputs(node: Any, count: int) -> list[str]:
    names = list(node.input) + [""] * count
    return names[:count]


def _qlinear_conv(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    x, xs, xz, w, ws, wz, ys, yz, b = _inputs(node, 9)
    xv = imp.activation(x)
    weight = imp.const(w, "the weight")
    xq = imp.qparams(xs, xz, xv.dtype)
    wq = imp.qparams(ws, wz, str(weight.dtype))
    wq = _QParams(wq.scale, wq.zero_point, wq.dtype, 0)
    yq = imp.qparams(ys, yz, xv.dtype)
    bias = imp.const(b, "the bias") if b else None
    return _conv(imp, bb, node, xv, xq, weight, wq, bias, yq, (None, None))


def _qlinear_matmul(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    a, as_, az, b, bs, bz, ys, yz = _inputs(node, 8)
    xv = imp.activation(a)
    weight = imp.const(b, "the second operand")
    wq = imp.qparams(bs, bz, str(weight.dtype))
    wq = _QParams(wq.scale, wq.zero_point, wq.dtype, 1)
    return _matmul(
        imp, bb, xv, imp.qparams(as_, az, xv.dtype), weight, wq, None,
        imp.qparams(ys, yz, xv.dtype), (None, None), transpose=False,
    )  # fmt: skip


def _qgemm(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    a, as_, az, b, bs, bz, c, ys, yz = _inputs(node, 9)
    attrs = _attrs(node)
    if attrs.get("transA", 0):
        raise imp.unsupported("transA is not supported")
    if not ys:
        raise imp.unsupported("a float output (no y_scale) is not supported")
    xv = imp.activation(a)
    if len(xv.shape) != 2:
        raise imp.unsupported("the first operand must be 2-D")
    transpose = bool(attrs.get("transB", 0))
    weight = imp.const(b, "the second operand")
    wq = imp.qparams(bs, bz, str(weight.dtype))
    wq = _QParams(wq.scale, wq.zero_point, wq.dtype, 0 if transpose else 1)
    bias = imp.const(c, "the bias") if c else None
    return _matmul(
        imp, bb, xv, imp.qparams(as_, az, xv.dtype), weight, wq, bias,
        imp.qparams(ys, yz, xv.dtype), (None, None), transpose=transpose,
        alpha=_f32(attrs.get("alpha", 1.0)),
    )  # fmt: skip


def _qlinear_add(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    a, as_, az, b, bs, bz, ys, yz = _inputs(node, 8)
    av, bv = imp.operand(a), imp.operand(b)
    if a in imp.constants and b in imp.constants:
        raise imp.unsupported("both inputs are constants; expected a computed tensor")
    return _add(
        imp, bb, av, imp.qparams(as_, az, av.dtype), bv, imp.qparams(bs, bz, bv.dtype),
        imp.qparams(ys, yz, av.dtype), (None, None),
    )  # fmt: skip


def _qlinear_gap(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    x, xs, xz, ys, yz = _inputs(node, 5)
    if _attrs(node).get("channels_last", 0):
        raise imp.unsupported("channels_last is not supported")
    xv = imp.activation(x)
    return _gap(imp, bb, xv, imp.qparams(xs, xz, xv.dtype), imp.qparams(ys, yz, xv.dtype))


def _conv_integer(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    from tvm import relax

    from aot.ops import onnx_int8 as ops

    x, w, xz, wz = _inputs(node, 4)
    xv = imp.activation(x)
    imp.expect(xv, ("int8", "uint8"), "the input")
    weight = imp.const(w, "the weight")
    x_zp = int(imp.const(xz, "the input zero point").reshape(-1)[0]) if xz else 0
    w_zps = imp.const(wz, "the weight zero point").reshape(-1) if wz else np.zeros(1)
    if len(set(w_zps.tolist())) != 1:
        raise imp.unsupported("per-channel weight zero points are not supported")
    geometry = _conv_geometry(imp, node, xv, weight)
    result = imp.emit(
        bb, ops.conv_integer2d, xv.expr, relax.const(np.ascontiguousarray(weight)),
        name="conv_integer2d", input_zp=x_zp, weight_zp=int(w_zps[0]), **geometry,
    )  # fmt: skip
    return result, _Value(result, geometry["out_shape"], "int32")


def _matmul_integer(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    a, b, az, bz = _inputs(node, 4)
    xv = imp.activation(a)
    weight = imp.const(b, "the second operand")
    zero = np.zeros(1, np.int64)
    xq = _QParams(
        np.ones(1, np.float32), imp.const(az, "a_zero_point").reshape(-1) if az else zero, xv.dtype
    )
    wq = _QParams(
        np.ones(1, np.float32),
        imp.const(bz, "b_zero_point").reshape(-1) if bz else zero,
        str(weight.dtype),
    )
    return _matmul(imp, bb, xv, xq, weight, wq, None, None, (None, None), transpose=False)


def _q_max_pool(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    return _max_pool(imp, bb, node, imp.activation(node.input[0]))


def _q_reshape(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    x = imp.activation(node.input[0])
    imp.expect(x, ("int8", "uint8"), "the input")
    return _reshape_like(imp, bb, node, x)


def _qlinear_mul(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    a, as_, az, b, bs, bz, ys, yz = _inputs(node, 8)
    av, bv = imp.operand(a), imp.operand(b)
    if a in imp.constants and b in imp.constants:
        raise imp.unsupported("both inputs are constants; expected a computed tensor")
    return _mul(
        imp, bb, av, imp.qparams(as_, az, av.dtype), bv, imp.qparams(bs, bz, bv.dtype),
        imp.qparams(ys, yz, av.dtype), (None, None),
    )  # fmt: skip


def _qlinear_average_pool(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    x, xs, xz, ys, yz = _inputs(node, 5)
    xv = imp.activation(x)
    return _average_pool(
        imp, bb, node, xv, imp.qparams(xs, xz, xv.dtype), imp.qparams(ys, yz, xv.dtype),
        (None, None),
    )  # fmt: skip


def _qlinear_concat(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    names = list(node.input)
    if len(names) < 5 or (len(names) - 2) % 3:
        raise ModelError(
            f"{imp.source}: {DAMAGED}: operator #{imp.index} QLinearConcat: its inputs must "
            "be Y_scale, Y_zero_point and (tensor, scale, zero point) triples"
        )
    parts = []
    for k in range(2, len(names), 3):
        v = imp.activation(names[k])
        parts.append((v, imp.qparams(names[k + 1], names[k + 2], v.dtype)))
    y = imp.qparams(names[0], names[1], parts[0][0].dtype)
    return _concat(imp, bb, node, parts, y)


def _qlinear_lookup(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    x, xs, xz, ys, yz = _inputs(node, 5)
    xv = imp.activation(x)
    attrs = {}
    if node.op_type == "QLinearLeakyRelu":
        attrs["alpha"] = _f32(_attrs(node).get("alpha", 0.01))
    return _lookup(
        imp, bb, node.op_type, xv, imp.qparams(xs, xz, xv.dtype), imp.qparams(ys, yz, xv.dtype),
        attrs,
    )  # fmt: skip


def _qlinear_softmax(imp: _Importer, bb: Any, node: Any) -> tuple[Any, _Value]:
    x, xs, xz, ys, yz = _inputs(node, 5)
    xv = imp.activation(x)
    opset = int(_attrs(node).get("opset", 13))
    return _softmax(
        imp, bb, node, xv, imp.qparams(xs, xz, xv.dtype), imp.qparams(ys, yz, xv.dtype), opset
    )


_QOPERATOR: dict[str, Callable[[_Importer, Any, Any], tuple[Any, _Value]]] = {
    "QLinearConv": _qlinear_conv,
    "QLinearMatMul": _qlinear_matmul,
    "QGemm": _qgemm,
    "QLinearAdd": _qlinear_add,
    "QLinearGlobalAveragePool": _qlinear_gap,
    "QLinearMul": _qlinear_mul,
    "QLinearAveragePool": _qlinear_average_pool,
    "QLinearConcat": _qlinear_concat,
    "QLinearSigmoid": _qlinear_lookup,
    "QLinearLeakyRelu": _qlinear_lookup,
    "QLinearSoftmax": _qlinear_softmax,
    "ConvInteger": _conv_integer,
    "MatMulInteger": _matmul_integer,
    "MaxPool": _q_max_pool,
    "Reshape": _q_reshape,
    "Flatten": _q_reshape,
    "Transpose": _q_reshape,
}


# -- QDQ group handlers: (importer, bb, node, output params, relu/clip) -> (result, value) --


def _weights(imp: _Importer, name: str, what: str) -> tuple[np.ndarray, _QParams]:
    found = imp._dq_constant(name)
    if found is None:
        raise imp.unsupported(f"{what} '{name}' must be a DequantizeLinear of a constant")
    if what == "the bias" and found[1].zero_point.any():
        # onnxruntime fuses a group only when the bias is the plain int32 accumulator term.
        raise imp.unsupported(f"the bias '{name}' must have zero point 0")
    return found


def _qdq_conv(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    x, xq = imp.dq_input(node.input[0])
    weight, wq = _weights(imp, node.input[1], "the weight")
    bias = None
    if len(node.input) > 2 and node.input[2]:
        bias, _ = _weights(imp, node.input[2], "the bias")
    return _conv(imp, bb, node, x, xq, weight, wq, bias, y, lo_hi)


def _qdq_matmul(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    x, xq = imp.dq_input(node.input[0])
    weight, wq = _weights(imp, node.input[1], "the second operand")
    bias, transpose, alpha = None, False, None
    if node.op_type == "Gemm":
        attrs = _attrs(node)
        if attrs.get("transA", 0) or _f32(attrs.get("beta", 1.0)) != 1.0:
            raise imp.unsupported("transA and beta != 1 are not supported")
        transpose = bool(attrs.get("transB", 0))
        alpha = _f32(attrs.get("alpha", 1.0))
        if len(node.input) > 2 and node.input[2]:
            bias, _ = _weights(imp, node.input[2], "the bias")
    return _matmul(imp, bb, x, xq, weight, wq, bias, y, lo_hi, transpose, alpha)


def _qdq_add(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    """onnxruntime's x86 optimizer fuses a QDQ Add into QLinearAdd when both inputs and
    the output have one type once it has turned int8 pairs into uint8 ones (then
    QLinearAdd runs on the uint8 values); otherwise, and always for an int32
    DequantizeLinear (a MatMul + Add's bias), it runs DequantizeLinear, a float32 Add
    and QuantizeLinear (docs/int8.md)."""
    return _qdq_binary(imp, bb, node, y, lo_hi, _add, "add")


def _qdq_binary(
    imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple, fused: Callable, op: str
) -> tuple:
    (a, aq), (b, bq) = imp.dq_operand(node.input[0]), imp.dq_operand(node.input[1])
    constant = [isinstance(v, np.ndarray) for v in (a, b)]
    if all(constant):
        raise imp.unsupported("both inputs are constants; expected a computed tensor")
    types = {imp.onnxruntime_dtype(name, q) for name, q in zip(node.input[:2], (aq, bq))}
    output = "uint8" if imp.group_output in imp.uint8_pairs else y.dtype
    if types != {output} or lo_hi != (None, None):
        return _float_binary(imp, bb, (a, aq), (b, bq), y, lo_hi, op)
    a = imp.constant_value(a, node.input[0]) if constant[0] else a
    b = imp.constant_value(b, node.input[1]) if constant[1] else b
    imp.per_tensor(aq, f"input '{node.input[0]}'")
    imp.per_tensor(bq, f"input '{node.input[1]}'")
    return fused(imp, bb, a, aq, b, bq, y, lo_hi, offset=128 if output != y.dtype else 0)


def _float_binary(
    imp: _Importer,
    bb: Any,
    lhs: tuple[_Value | np.ndarray, _QParams],
    rhs: tuple[_Value | np.ndarray, _QParams],
    y: _QParams,
    lo_hi: tuple,
    op: str,
) -> tuple[Any, _Value]:
    """QuantizeLinear(DequantizeLinear(a) op DequantizeLinear(b)) in float32, as
    onnxruntime runs an Add or Mul its optimizer does not fuse. A computed operand is
    dequantized through a 256-entry float table (a load: no C compiler can fuse its
    product into the add), a constant one at import time."""
    from tvm import relax

    from aot.ops import onnx_int8 as ops

    tensors, tables, shapes = [], [], []
    for value, q in (lhs, rhs):
        if isinstance(value, np.ndarray):
            axis = q.axis % max(value.ndim, 1)
            scale, zp = q.scale, q.zero_point
            if scale.size > 1:  # per-axis: one scale and zero point along ``axis``
                view = [1] * value.ndim
                view[axis] = scale.size
                scale, zp = scale.reshape(view), zp.reshape(view)
            dequantized = (value.astype(np.int64) - zp).astype(np.float32) * scale.astype(
                np.float32
            )
            tensors.append(relax.const(np.ascontiguousarray(dequantized.astype(np.float32))))
            shapes.append(tuple(int(d) for d in value.shape))
            tables.append(None)
        else:
            imp.expect(value, ("int8", "uint8"), "an input")
            imp.per_tensor(q, "the Add input")
            raw = np.arange(256, dtype=np.uint8).view(value.dtype).astype(np.int32)
            tables.append(relax.const(np.float32(q.s) * (raw - q.zp).astype(np.float32)))
            tensors.append(value.expr)
            shapes.append(value.shape)
    if all(t is None for t in tables):
        raise imp.unsupported("both inputs are constants; expected a computed tensor")
    try:
        shape = tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise imp.unsupported(
            f"inputs {list(shapes[0])} and {list(shapes[1])} do not broadcast"
        ) from None
    lo, hi = _clamp(y, lo_hi)
    kernel = ops.dequantized_add if op == "add" else ops.dequantized_mul
    result = imp.emit(
        bb, kernel, *tensors, *tables, name=f"dequantized_{op}",
        out_shape=shape, scale=y.s, zero_point=y.zp, out_dtype=y.dtype, act_min=lo, act_max=hi,
    )  # fmt: skip
    return result, _Value(result, shape, y.dtype, y.s, y.zp)


def _qdq_gap(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    x, xq = imp.dq_input(node.input[0])
    if lo_hi != (None, None):
        raise imp.unsupported("a Relu or Clip after GlobalAveragePool is not supported")
    return _gap(imp, bb, x, xq, y)


def _qdq_data_movement(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    """MaxPool, Reshape, Flatten, Transpose between a DequantizeLinear and a QuantizeLinear
    with the same parameters: onnxruntime drops the pair and moves the integers."""
    x, xq = imp.dq_input(node.input[0])
    if (xq.s, xq.zp, xq.dtype) != (y.s, y.zp, y.dtype) or lo_hi != (None, None):
        raise imp.unsupported(
            "the QuantizeLinear after it must have the DequantizeLinear's scale and zero point"
        )
    if node.op_type == "MaxPool":
        return _max_pool(imp, bb, node, x)
    return _reshape_like(imp, bb, node, x)


def _qdq_mul(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    """As ``_qdq_add``: QLinearMul where onnxruntime fuses it, else its float32 Mul."""
    return _qdq_binary(imp, bb, node, y, lo_hi, _mul, "mul")


def _qdq_average_pool(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    x, xq = imp.dq_input(node.input[0])
    return _average_pool(imp, bb, node, x, xq, y, lo_hi)


def _qdq_concat(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    if lo_hi != (None, None):
        raise imp.unsupported("a Relu or Clip after Concat is not supported")
    return _concat(imp, bb, node, [imp.dq_input(name) for name in node.input], y)


def _qdq_lookup(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    x, xq = imp.dq_input(node.input[0])
    if lo_hi != (None, None):
        raise imp.unsupported(f"a Relu or Clip after {node.op_type} is not supported")
    if node.op_type == "Sigmoid":
        return _lookup(imp, bb, "QLinearSigmoid", x, xq, y, {})
    alpha = _f32(_attrs(node).get("alpha", 0.01))
    return _lookup(imp, bb, "QLinearLeakyRelu", x, xq, y, {"alpha": alpha})


def _qdq_softmax(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    x, xq = imp.dq_input(node.input[0])
    if lo_hi != (None, None):
        raise imp.unsupported("a Relu or Clip after Softmax is not supported")
    return _softmax(imp, bb, node, x, xq, y, imp.opset)


def _qdq_relu_clip(imp: _Importer, bb: Any, node: Any, y: _QParams, lo_hi: tuple) -> tuple:
    """Relu or Clip of its own between a DequantizeLinear and a QuantizeLinear: exact in
    float32, so onnxruntime's result (whether it drops the node or runs it) is a table."""
    x, xq = imp.dq_input(node.input[0])
    if lo_hi != (None, None):
        raise imp.unsupported(f"a Relu or Clip after {node.op_type} is not supported")
    lo, hi = imp._activation_bounds(node)
    low = np.float32(-np.inf if lo is None else lo)
    high = np.float32(np.inf if hi is None else hi)
    return _table_op(imp, bb, x, xq, y, lambda v: np.minimum(np.maximum(v, low), high))


_QDQ: dict[str, Callable[..., tuple[Any, _Value]]] = {
    "Conv": _qdq_conv,
    "MatMul": _qdq_matmul,
    "Gemm": _qdq_matmul,
    "Add": _qdq_add,
    "GlobalAveragePool": _qdq_gap,
    "Mul": _qdq_mul,
    "AveragePool": _qdq_average_pool,
    "Concat": _qdq_concat,
    "Sigmoid": _qdq_lookup,
    "LeakyRelu": _qdq_lookup,
    "Softmax": _qdq_softmax,
    "Relu": _qdq_relu_clip,
    "Clip": _qdq_relu_clip,
    "MaxPool": _qdq_data_movement,
    "Reshape": _qdq_data_movement,
    "Flatten": _qdq_data_movement,
    "Transpose": _qdq_data_movement,
}

QOPERATOR_OPERATORS: tuple[str, ...] = tuple(sorted(_QOPERATOR))
QDQ_GROUP_OPERATORS: tuple[str, ...] = tuple(sorted(_QDQ))
# Every operator type the importer accepts (docs/operators.md, ``aot operators``).
SUPPORTED_OPERATORS: tuple[str, ...] = tuple(
    sorted({*_QOPERATOR, *_QDQ, "QuantizeLinear", "DequantizeLinear"})
)
