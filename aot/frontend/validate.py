"""One validation pass over a TFLite file, before any importer reads it.

A damaged file (bit flips, truncation, a broken converter) must never become firmware that
reads outside a buffer, and must never crash the importer with a Python exception. So
everything the importers later take on trust is checked here once:

1. the flatbuffer's structure: every offset, vtable, vector and string the importers follow
   lies inside the file (the Python flatbuffers reader has no verifier and would raise
   ``struct.error``, ``IndexError``... or silently read garbage);
2. every index: operator code, tensor, buffer;
3. every tensor: a known type, no negative dimension, an element count that fits int32,
   constant data exactly as long as shape and type need, quantization with finite, positive,
   normal scales, zero points in the type's range and per-channel vectors as long as the
   quantized dimension;
4. the graph: each tensor computed once, read only after it is computed;
5. every declared output shape equal to what its operator computes from its inputs
   (shape inference for the operators aot knows), with option fields in range.

Between 4 and 5, a graph with a dynamic batch becomes static (aot.frontend.tflite_static:
batch 1, inferred shapes over the converter's placeholders, shape arithmetic folded); the
shape checks then judge the static graph, and a stored shape that is no placeholder is
still damage. ``aot.frontend.tflite_checks.validate`` runs the three in that order (the
static step builds on this module's view, so this module does not call it).

Damage raises ``ModelError("<file>: the file is damaged or was produced by a broken
converter: operator 3 (CONV_2D): ...")``; a valid feature aot does not handle raises
``UnsupportedError`` naming it. See docs/robustness.md.
"""

from __future__ import annotations

import contextlib
import math
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aot.errors import ModelError, UnsupportedError

DAMAGED = "the file is damaged or was produced by a broken converter"
OPERATORS_DOC = "docs/operators.md"

# Zero bytes appended to the copy the tflite accessors read: a scalar field that the
# verifier placed inside its table can then never be read past the end of the bytes.
PADDING = 16

# TFLite's TensorType values -> numpy dtype; schema types aot has no numpy type for are in
# _OTHER_TYPES (valid, but unsupported when a model computes with them).
TENSOR_TYPES = {
    0: "float32",
    1: "float16",
    2: "int32",
    3: "uint8",
    4: "int64",
    6: "bool",
    7: "int16",
    9: "int8",
    10: "float64",
    12: "uint64",
    15: "uint32",
    16: "uint16",
}
_OTHER_TYPES = {5: "STRING", 8: "COMPLEX64", 11: "COMPLEX128", 13: "RESOURCE", 14: "VARIANT",
                17: "INT4", 18: "BFLOAT16"}  # fmt: skip
# Builtin operators whose schema has no output tensor (they act on a resource or subgraph).
_NO_OUTPUT_OPERATORS = frozenset({"ASSIGN_VARIABLE", "CALL_ONCE"})
_INTEGER_RANGES = {
    "int8": (-128, 127),
    "uint8": (0, 255),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_MAX_ELEMENTS = 2**31 - 1  # TFLite sizes are int; no MCU model comes near
_FLT_MIN = float(np.finfo(np.float32).tiny)  # the smallest normal float32
_BUILTIN_OPTIONS_MAX = 126  # the last BuiltinOptions union member in the schema
_PADDING_CODES = {0: "SAME", 1: "VALID"}
_ACTIVATION_CODES = range(6)  # NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGN_BIT


class _Damage(Exception):
    """Raised inside this module; ``validate`` turns it into a ModelError with context."""


# -- 1. flatbuffer structure ------------------------------------------------------------


class _Flatbuffer:
    """Bounds-checked reads of a flatbuffer (what flatbuffers' C++ Verifier checks)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)

    def need(self, pos: int, length: int, what: str) -> None:
        if pos < 0 or length < 0 or pos + length > self.size:
            raise _Damage(
                f"{what}: {length} bytes at byte {pos}, outside the {self.size}-byte file "
                "(truncated or corrupt)"
            )

    def read(self, fmt: str, pos: int, what: str) -> Any:
        self.need(pos, struct.calcsize(fmt), what)
        return struct.unpack_from(fmt, self.data, pos)[0]

    def table(self, pos: int, what: str) -> _Table:
        self.need(pos, 4, what)
        vtable = pos - self.read("<i", pos, what)
        vtable_size = self.read("<H", vtable, f"the vtable of {what}")
        if vtable_size < 4 or vtable_size % 2:
            raise _Damage(f"the vtable of {what} has an invalid size {vtable_size}")
        self.need(vtable, vtable_size, f"the vtable of {what}")
        object_size = self.read("<H", vtable + 2, f"the vtable of {what}")
        if object_size < 4:
            raise _Damage(f"{what} has an invalid size {object_size}")
        self.need(pos, object_size, what)
        # Every field inside the object, as flatbuffers' Verifier demands: the generated
        # accessors read any vtable entry without a check.
        for entry in range(vtable + 4, vtable + vtable_size, 2):
            off = self.read("<H", entry, f"the vtable of {what}")
            if off >= object_size:
                field = (entry - vtable - 4) // 2
                raise _Damage(f"field {field} of {what} lies outside its table")
        return _Table(self, pos, vtable, vtable_size, object_size, what)

    def root(self) -> _Table:
        return self.table(self.read("<I", 0, "the root offset"), "the model table")


@dataclass(frozen=True)
class _Table:
    fb: _Flatbuffer
    pos: int
    vtable: int
    vtable_size: int
    object_size: int
    what: str

    def offset(self, slot: int) -> int:
        """The field's offset inside the table, 0 when absent."""
        entry = 4 + 2 * slot
        if entry + 2 > self.vtable_size:
            return 0
        return self.fb.read("<H", self.vtable + entry, f"the vtable of {self.what}")

    def scalar(self, slot: int, fmt: str, default: Any) -> Any:
        off = self.offset(slot)
        return self.fb.read(fmt, self.pos + off, self.what) if off else default

    def ref(self, slot: int, what: str) -> int | None:
        off = self.offset(slot)
        if not off:
            return None
        at = self.pos + off
        return at + self.fb.read("<I", at, what)

    def vector(self, slot: int, item_size: int, what: str) -> tuple[int, int] | None:
        """(start, length) of a vector field, or None when absent."""
        at = self.ref(slot, what)
        if at is None:
            return None
        length = self.fb.read("<I", at, f"the length of {what}")
        self.fb.need(at + 4, length * item_size, f"{what} ({length} items)")
        return at + 4, length

    def array(self, slot: int, dtype: str, what: str) -> np.ndarray | None:
        vec = self.vector(slot, np.dtype(dtype).itemsize, what)
        if vec is None:
            return None
        start, length = vec
        return np.frombuffer(self.fb.data, np.dtype(dtype), length, start)

    def string(self, slot: int, what: str) -> str | None:
        vec = self.vector(slot, 1, what)
        if vec is None:
            return None
        start, length = vec
        return self.fb.data[start : start + length].decode("utf-8", "replace")

    def table_at(self, slot: int, what: str) -> _Table | None:
        at = self.ref(slot, what)
        return None if at is None else self.fb.table(at, what)

    def tables(self, slot: int, what: str) -> list[_Table]:
        vec = self.vector(slot, 4, what)
        if vec is None:
            return []
        start, length = vec
        result = []
        for i in range(length):
            at = start + 4 * i
            name = f"{what} {i}"
            result.append(self.fb.table(at + self.fb.read("<I", at, name), name))
        return result


# -- the plain view of a verified model -------------------------------------------------


@dataclass
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    type_code: int
    buffer: int
    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    quantized_dimension: int = 0
    is_variable: bool = False
    sparse: bool = False
    signature: tuple[int, ...] = ()
    role: str = ""  # e.g. "output of operator 3 (CONV_2D)", so a message finds the operator

    @property
    def dtype(self) -> str | None:
        return TENSOR_TYPES.get(self.type_code)

    def label(self, role: bool = True) -> str:
        # Converter names join every fused op's name; the start is enough to find it.
        name = self.name if len(self.name) <= 60 else self.name[:57] + "..."
        where = f", {self.role}" if role and self.role else ""
        return f"tensor {name!r} (index {self.index}{where})"


@dataclass
class Operator:
    index: int
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options_type: int
    options_pos: int | None
    intermediates: tuple[int, ...] = ()

    def label(self) -> str:
        return f"operator {self.index} ({self.name})"


@dataclass
class Buffer:
    data: bytes | None  # None: the buffer holds nothing (buffer 0, run-time tensors)


@dataclass
class Subgraph:
    tensors: list[Tensor] = field(default_factory=list)
    operators: list[Operator] = field(default_factory=list)
    inputs: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()


@dataclass
class Model:
    subgraphs: list[Subgraph]
    buffers: list[Buffer]


def _builtin_names() -> dict[int, str]:
    from tflite.BuiltinOperator import BuiltinOperator

    return {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}


def _ints(values: np.ndarray | None) -> tuple[int, ...]:
    return () if values is None else tuple(int(v) for v in values)


def _read(data: bytes) -> Model:
    fb = _Flatbuffer(data)
    root = fb.root()
    names = _builtin_names()
    codes = []
    for code in root.tables(1, "operator code"):
        builtin = max(code.scalar(0, "<b", 0), code.scalar(3, "<i", 0))
        name = names.get(builtin, f"BUILTIN_{builtin}")
        if name == "CUSTOM":
            name = f"CUSTOM:{code.string(1, 'a custom code') or '?'}"
        elif builtin not in names:
            raise _Damage(f"operator code {len(codes)} is {builtin}, not a TFLite builtin")
        codes.append(name)
    root.string(3, "the model description")
    buffers = []
    for i, table in enumerate(root.tables(4, "buffer")):
        data_vec = table.vector(0, 1, f"the data of buffer {i}")
        offset, size = table.scalar(1, "<Q", 0), table.scalar(2, "<Q", 0)
        if offset > 1:  # large models keep constant data after the flatbuffer
            fb.need(offset, size, f"the data of buffer {i}")
            buffers.append(Buffer(data[offset : offset + size]))
        elif data_vec is not None and data_vec[1] > 0:
            buffers.append(Buffer(data[data_vec[0] : data_vec[0] + data_vec[1]]))
        else:
            buffers.append(Buffer(None))
    subgraphs = [_read_subgraph(g, i, codes) for i, g in enumerate(root.tables(2, "subgraph"))]
    return Model(subgraphs, buffers)


def _read_subgraph(graph: _Table, number: int, codes: list[str]) -> Subgraph:
    sg = Subgraph()
    graph.string(4, f"the name of subgraph {number}")
    for i, t in enumerate(graph.tables(0, "tensor")):
        name = t.string(3, f"the name of tensor {i}") or f"tensor_{i}"
        tensor = Tensor(
            index=i,
            name=name,
            shape=_ints(t.array(0, "<i4", f"the shape of tensor {i}")),
            type_code=t.scalar(1, "<b", 0),
            buffer=t.scalar(2, "<I", 0),
            is_variable=bool(t.scalar(5, "<B", 0)),
            sparse=t.offset(6) != 0,
            signature=_ints(t.array(7, "<i4", f"the shape signature of tensor {i}")),
        )
        q = t.table_at(4, f"the quantization of tensor {i}")
        if q is not None:
            q.array(0, "<f4", f"the min of tensor {i}")
            q.array(1, "<f4", f"the max of tensor {i}")
            scale = q.array(2, "<f4", f"the scales of tensor {i}")
            zero_point = q.array(3, "<i8", f"the zero points of tensor {i}")
            tensor.scale = () if scale is None else tuple(float(s) for s in scale)
            tensor.zero_point = _ints(zero_point)
            tensor.quantized_dimension = q.scalar(6, "<i", 0)
            if q.scalar(4, "<B", 0):
                q.table_at(5, f"the quantization details of tensor {i}")
        sg.tensors.append(tensor)
    sg.inputs = _ints(graph.array(1, "<i4", f"the inputs of subgraph {number}"))
    sg.outputs = _ints(graph.array(2, "<i4", f"the outputs of subgraph {number}"))
    for i, op in enumerate(graph.tables(3, "operator")):
        opcode = op.scalar(0, "<I", 0)
        if opcode >= len(codes):
            raise _Damage(f"operator {i} uses operator code {opcode}; the model has {len(codes)}")
        options_type = op.scalar(3, "<B", 0)
        options = op.table_at(4, f"the options of operator {i}") if options_type else None
        if options_type > _BUILTIN_OPTIONS_MAX:
            raise _Damage(f"operator {i} has options of type {options_type}, not in the schema")
        if options is not None:
            for slot in _VECTOR_OPTION_SLOTS.get(options_type, ()):
                options.vector(slot, 4, f"the options of operator {i}")
        op.vector(5, 1, f"the custom options of operator {i}")
        sg.operators.append(
            Operator(
                index=i,
                name=codes[opcode],
                inputs=_ints(op.array(1, "<i4", f"the inputs of operator {i}")),
                outputs=_ints(op.array(2, "<i4", f"the outputs of operator {i}")),
                options_type=options_type,
                options_pos=None if options is None else options.pos,
                intermediates=_ints(op.array(8, "<i4", f"the intermediates of operator {i}")),
            )
        )
    return sg


def _options_type(table: str) -> int:
    from tflite.BuiltinOptions import BuiltinOptions

    return int(getattr(BuiltinOptions, table))


# Options tables with a vector field the frontends read: (union type) -> slots.
_VECTOR_OPTION_SLOTS: dict[int, tuple[int, ...]] = {}


def _init_vector_slots() -> None:
    if not _VECTOR_OPTION_SLOTS:
        _VECTOR_OPTION_SLOTS[_options_type("ReshapeOptions")] = (0,)
        _VECTOR_OPTION_SLOTS[_options_type("SqueezeOptions")] = (0,)


# -- 2-4. indices, tensors, graph -------------------------------------------------------


def _name_roles(sg: Subgraph) -> None:
    """Tie each tensor to the operator that computes it, else the first that reads it."""
    count = len(sg.tensors)
    for op in sg.operators:
        for i in op.outputs:
            if 0 <= i < count and not sg.tensors[i].role.startswith("output"):
                sg.tensors[i].role = f"output of {op.label()}"
    for op in sg.operators:
        for k, i in enumerate(op.inputs):
            if 0 <= i < count and not sg.tensors[i].role:
                sg.tensors[i].role = f"input {k} of {op.label()}"


def _check_tensor(t: Tensor, buffers: list[Buffer]) -> None:
    if t.buffer >= len(buffers):
        raise _Damage(f"{t.label()} uses buffer {t.buffer}; the model has {len(buffers)}")
    if t.type_code not in TENSOR_TYPES and t.type_code not in _OTHER_TYPES:
        raise _Damage(f"{t.label()} has type code {t.type_code}, not a TFLite type")
    if any(d < 0 for d in t.shape):
        raise _Damage(f"{t.label()} has a negative dimension in its shape {list(t.shape)}")
    elements = math.prod(t.shape)
    if elements > _MAX_ELEMENTS:
        raise _Damage(f"{t.label()} has {elements} elements (shape {list(t.shape)})")
    data = buffers[t.buffer].data
    if data is not None and t.dtype is not None:
        need = elements * np.dtype(t.dtype).itemsize
        if len(data) != need:
            raise _Damage(
                f"{t.label()} of shape {list(t.shape)} and type {t.dtype} needs {need} bytes "
                f"of constant data; buffer {t.buffer} holds {len(data)}"
            )
    if t.scale and t.dtype in _INTEGER_RANGES:
        _check_quantization(t)


def _check_quantization(t: Tensor) -> None:
    for s in t.scale:
        if not math.isfinite(s) or s <= 0 or s < _FLT_MIN:
            raise _Damage(
                f"{t.label()} has a quantization scale of {s:g}; a scale must be a finite, "
                "positive, normal float32"
            )
    lo, hi = _INTEGER_RANGES[t.dtype or "int64"]
    for z in t.zero_point:
        if not lo <= z <= hi:
            raise _Damage(
                f"{t.label()} has a zero point of {z}, outside the {t.dtype} range [{lo}, {hi}]"
            )
    if len(t.zero_point) not in (0, 1, len(t.scale)):
        raise _Damage(f"{t.label()} has {len(t.scale)} scales but {len(t.zero_point)} zero points")
    if len(t.scale) > 1:
        qdim = t.quantized_dimension
        if len(t.shape) == 1:
            # A 1-D per-channel tensor (a bias) has one dimension, the channel, whatever
            # quantized_dimension says: TFLite Micro's kernels read len(scale) values
            # from it, and its converter writes the filter's axis there (person_detect's
            # biases say 3). Judge what the kernels read (docs/robustness.md).
            qdim = 0
        if not 0 <= qdim < len(t.shape):
            raise _Damage(
                f"{t.label()} is quantized along dimension {qdim} of its shape {list(t.shape)}"
            )
        if t.shape[qdim] != len(t.scale):
            raise _Damage(
                f"{t.label()} has {len(t.scale)} per-channel scales for dimension {qdim} of "
                f"size {t.shape[qdim]} (shape {list(t.shape)})"
            )


def _check_graph(sg: Subgraph, buffers: list[Buffer]) -> None:
    count = len(sg.tensors)

    def in_range(index: int, what: str) -> None:
        if not 0 <= index < count:
            raise _Damage(f"{what} is tensor {index}; the subgraph has {count} tensors")

    for i in sg.inputs:
        in_range(i, "a subgraph input")
    for i in sg.outputs:
        in_range(i, "a subgraph output")
    available = set(sg.inputs)
    available |= {t.index for t in sg.tensors if buffers[t.buffer].data is not None}
    available |= {t.index for t in sg.tensors if t.is_variable}
    for op in sg.operators:
        for i in op.inputs:
            if i != -1:
                in_range(i, f"{op.label()}: an input")
        if not op.outputs and op.name not in _NO_OUTPUT_OPERATORS:
            raise _Damage(f"{op.label()} has no outputs")
        for i in (*op.outputs, *op.intermediates):
            in_range(i, f"{op.label()}: an output")
        for i in op.inputs:
            if i != -1 and i not in available:
                raise _Damage(
                    f"{op.label()} reads {sg.tensors[i].label(False)} before any operator "
                    "computes it"
                )
        for i in op.outputs:
            if i in available:
                raise _Damage(
                    f"{op.label()} writes {sg.tensors[i].label(False)}, which is already a model "
                    "input, a constant or the output of an earlier operator"
                )
            available.add(i)
    for i in sg.outputs:
        if i not in available:
            raise _Damage(f"model output {sg.tensors[i].label(False)} is never computed")


# -- 5. shape inference -----------------------------------------------------------------


class _Op:
    """What an inference rule needs: input tensors, constants and the options table."""

    def __init__(self, op: Operator, sg: Subgraph, model: Model, padded: bytes) -> None:
        self.op = op
        self.sg = sg
        self.model = model
        self.padded = padded

    def input(self, k: int) -> Tensor | None:
        if k >= len(self.op.inputs) or self.op.inputs[k] == -1:
            return None
        return self.sg.tensors[self.op.inputs[k]]

    def need_input(self, k: int, role: str) -> Tensor:
        t = self.input(k)
        if t is None:
            raise _Damage(f"has no {role} (input {k})")
        return t

    def shape(self, k: int, role: str, rank: int | None = None) -> tuple[int, ...]:
        t = self.need_input(k, role)
        if rank is not None and len(t.shape) != rank:
            raise _Damage(
                f"its {role} {t.label(False)} has shape {list(t.shape)}, expected rank {rank}"
            )
        return t.shape

    def constant(self, k: int) -> np.ndarray | None:
        t = self.input(k)
        if t is None or t.dtype not in ("int32", "int64"):
            return None
        data = self.model.buffers[t.buffer].data
        if data is None:
            return None
        return np.frombuffer(data, np.dtype(t.dtype).newbyteorder("<")).astype(np.int64)

    def options(self, table: str) -> Any:
        """The tflite accessor over the options table, or None when the model has none."""
        import importlib

        if self.op.options_pos is None:
            return None
        if self.op.options_type != _options_type(table):
            raise _Damage(f"has options of union type {self.op.options_type}, expected {table}")
        opts = getattr(importlib.import_module(f"tflite.{table}"), table)()
        opts.Init(self.padded, self.op.options_pos)
        return opts


# Windows, strides and dilations beyond this are no converter's output, and would overflow
# the kernels' int32 index arithmetic.
_MAX_WINDOW = 1 << 16


def _positive(value: int, what: str) -> int:
    if value < 1:
        raise _Damage(f"has {what} {value}; it must be at least 1")
    if value > _MAX_WINDOW:
        raise _Damage(f"has {what} {value}, above the {_MAX_WINDOW} any converter writes")
    return value


def _padding_code(opts: Any) -> str:
    code = opts.Padding()
    if code not in _PADDING_CODES:
        raise _Damage(f"has padding code {code}; the schema knows 0 (SAME) and 1 (VALID)")
    return _PADDING_CODES[code]


def _activation(opts: Any) -> None:
    code = opts.FusedActivationFunction()
    if code not in _ACTIVATION_CODES:
        raise _Damage(f"has fused activation code {code}, not in the schema")


def _window(padding: str, size: int, filt: int, stride: int, dilation: int, axis: str) -> int:
    effective = (filt - 1) * dilation + 1
    if effective > _MAX_WINDOW:
        raise _Damage(f"has a dilated window of {effective} along its {axis}")
    out = (
        (size + stride - 1) // stride
        if padding == "SAME"
        else (size - effective + stride) // stride
    )
    if out < 1:
        raise _Damage(
            f"computes an output {axis} of {out} from input {axis} {size} and a window of "
            f"{effective}"
        )
    return out


def _spatial(
    x: tuple[int, ...], filt: tuple[int, int], opts: Any, dilated: bool
) -> tuple[int, int]:
    padding = _padding_code(opts)
    strides = (_positive(opts.StrideH(), "stride_h"), _positive(opts.StrideW(), "stride_w"))
    dilation = (1, 1)
    if dilated:
        dilation = (
            _positive(opts.DilationHFactor(), "dilation_h_factor"),
            _positive(opts.DilationWFactor(), "dilation_w_factor"),
        )
    _activation(opts)
    return (
        _window(padding, x[1], filt[0], strides[0], dilation[0], "height"),
        _window(padding, x[2], filt[1], strides[1], dilation[1], "width"),
    )


def _bias_fits(op: _Op, channels: int) -> None:
    b = op.input(2)
    if b is not None and math.prod(b.shape) != channels:
        raise _Damage(
            f"its bias {b.label(False)} has shape {list(b.shape)} for {channels} channels"
        )


def _conv2d(op: _Op) -> tuple[int, ...]:
    x = op.shape(0, "input", 4)
    w = op.shape(1, "weights", 4)
    opts = op.options("Conv2DOptions")
    if opts is None:
        raise _Damage("has no Conv2DOptions")
    if w[3] < 1 or x[3] % w[3] or w[0] % max(x[3] // w[3], 1):
        raise _Damage(f"its input channels {x[3]} do not fit weights of shape {list(w)}")
    _positive(w[1], "a filter height")
    _positive(w[2], "a filter width")
    _bias_fits(op, w[0])
    return (x[0], *_spatial(x, (w[1], w[2]), opts, True), w[0])


def _depthwise(op: _Op) -> tuple[int, ...]:
    x = op.shape(0, "input", 4)
    w = op.shape(1, "weights", 4)
    opts = op.options("DepthwiseConv2DOptions")
    if opts is None:
        raise _Damage("has no DepthwiseConv2DOptions")
    if w[0] != 1 or x[3] < 1 or w[3] % x[3]:
        raise _Damage(f"its weights of shape {list(w)} do not fit input channels {x[3]}")
    multiplier = opts.DepthMultiplier()
    if multiplier and multiplier * x[3] != w[3]:
        raise _Damage(
            f"has depth_multiplier {multiplier}, but its weights of shape {list(w)} give "
            f"{w[3] // x[3]} for {x[3]} input channels"
        )
    _positive(w[1], "a filter height")
    _positive(w[2], "a filter width")
    _bias_fits(op, w[3])
    return (x[0], *_spatial(x, (w[1], w[2]), opts, True), w[3])


def _pool(op: _Op) -> tuple[int, ...]:
    x = op.shape(0, "input", 4)
    opts = op.options("Pool2DOptions")
    if opts is None:
        raise _Damage("has no Pool2DOptions")
    filt = (
        _positive(opts.FilterHeight(), "filter_height"),
        _positive(opts.FilterWidth(), "filter_width"),
    )
    return (x[0], *_spatial(x, filt, opts, False), x[3])


def _fully_connected(op: _Op) -> tuple[int, ...] | list[tuple[int, ...]]:
    x = op.shape(0, "input")
    w = op.shape(1, "weights", 2)
    opts = op.options("FullyConnectedOptions")
    if opts is not None:
        _activation(opts)
    out_c, depth = w
    if depth < 1 or math.prod(x) % depth:
        raise _Damage(f"its input of shape {list(x)} does not fit weights of shape {list(w)}")
    _bias_fits(op, out_c)
    # keep_num_dims decides between the two; converters are not consistent about the flag.
    return [(math.prod(x) // depth, out_c), (*x[:-1], out_c)]


def _broadcast(op: _Op) -> tuple[int, ...]:
    a, b = op.shape(0, "first input"), op.shape(1, "second input")
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise _Damage(
            f"has inputs of shapes {list(a)} and {list(b)}, which do not broadcast"
        ) from None


def _same_as_input(op: _Op) -> tuple[int, ...]:
    return op.shape(0, "input")


def _softmax(op: _Op) -> tuple[int, ...]:
    opts = op.options("SoftmaxOptions")
    if opts is not None:
        beta = float(opts.Beta())
        if not math.isfinite(beta) or beta <= 0:
            raise _Damage(f"has beta {beta:g}; it must be finite and positive")
    return op.shape(0, "input")


def _reshape(op: _Op) -> None:
    x = op.shape(0, "input")
    out = op.sg.tensors[op.op.outputs[0]]
    if math.prod(x) != math.prod(out.shape):
        raise _Damage(
            f"reshapes {list(x)} ({math.prod(x)} elements) to {out.label(False)} of shape "
            f"{list(out.shape)} ({math.prod(out.shape)} elements)"
        )


def _pad(op: _Op) -> tuple[int, ...] | None:
    x = op.shape(0, "input")
    paddings = op.constant(1)
    if paddings is None:
        return None
    if paddings.size != 2 * len(x) or (paddings < 0).any():
        raise _Damage(f"has paddings {paddings.tolist()} for an input of shape {list(x)}")
    pairs = paddings.reshape(-1, 2)
    return tuple(int(d + p.sum()) for d, p in zip(x, pairs))


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise _Damage(f"has axis {axis} for rank {rank}")
    return axis % rank


def _concatenation(op: _Op) -> tuple[int, ...]:
    shapes = [op.shape(k, f"input {k}") for k in range(len(op.op.inputs))]
    if not shapes:
        raise _Damage("has no inputs")
    opts = op.options("ConcatenationOptions")
    if opts is None:
        raise _Damage("has no ConcatenationOptions")
    _activation(opts)
    rank = len(shapes[0])
    axis = _axis(opts.Axis(), rank)
    for s in shapes[1:]:
        if len(s) != rank or any(a != b for d, (a, b) in enumerate(zip(s, shapes[0])) if d != axis):
            raise _Damage(f"concatenates shapes {[list(s) for s in shapes]} along axis {axis}")
    return tuple(sum(s[axis] for s in shapes) if d == axis else shapes[0][d] for d in range(rank))


def _reduce(op: _Op) -> tuple[int, ...] | None:
    x = op.shape(0, "input")
    axes = op.constant(1)
    if axes is None:
        return None
    if not x:
        raise _Damage("reduces a scalar")
    reduced = {_axis(int(a), len(x)) for a in axes.reshape(-1)}
    opts = op.options("ReducerOptions")
    keep = bool(opts.KeepDims()) if opts is not None else False
    if keep:
        return tuple(1 if d in reduced else n for d, n in enumerate(x))
    return tuple(n for d, n in enumerate(x) if d not in reduced)


def _transpose(op: _Op) -> tuple[int, ...] | None:
    x = op.shape(0, "input")
    perm = op.constant(1)
    if perm is None:
        return None
    axes = [int(p) for p in perm.reshape(-1)]
    if sorted(a % len(x) if -len(x) <= a < len(x) else -1 for a in axes) != list(range(len(x))):
        raise _Damage(f"has permutation {axes} for an input of shape {list(x)}")
    return tuple(x[a % len(x)] for a in axes)


Rule = Callable[[_Op], Any]
_RULES: dict[str, Rule] = {
    "CONV_2D": _conv2d,
    "DEPTHWISE_CONV_2D": _depthwise,
    "AVERAGE_POOL_2D": _pool,
    "MAX_POOL_2D": _pool,
    "FULLY_CONNECTED": _fully_connected,
    "ADD": _broadcast,
    "MUL": _broadcast,
    "SUB": _broadcast,
    "SOFTMAX": _softmax,
    "RESHAPE": _reshape,
    "SQUEEZE": _reshape,
    "EXPAND_DIMS": _reshape,
    "PAD": _pad,
    "PADV2": _pad,
    "CONCATENATION": _concatenation,
    "MEAN": _reduce,
    "SUM": _reduce,
    "REDUCE_MAX": _reduce,
    "TRANSPOSE": _transpose,
    **{
        name: _same_as_input
        for name in (
            "LOGISTIC",
            "TANH",
            "RELU",
            "RELU6",
            "RELU_N1_TO_1",
            "HARD_SWISH",
            "QUANTIZE",
            "DEQUANTIZE",
            "LEAKY_RELU",
            "ABS",
            "NEG",
            "EXP",
            "SQRT",
            "RSQRT",
            "FLOOR",
            "CAST",
        )
    },
}


def _check_shapes(sg: Subgraph, model: Model, padded: bytes) -> None:
    for op in sg.operators:
        rule = _RULES.get(op.name)
        if rule is None:
            continue
        try:
            expected = rule(_Op(op, sg, model, padded))
        except _Damage as err:
            raise _Damage(f"{op.label()} {err}") from None
        if expected is None:
            continue
        out = sg.tensors[op.outputs[0]]
        candidates = expected if isinstance(expected, list) else [expected]
        if tuple(out.shape) not in [tuple(c) for c in candidates]:
            raise _Damage(
                f"{op.label()} computes shape {list(candidates[0])} but its output "
                f"{out.label(False)} declares {list(out.shape)}"
            )


# -- entry point ------------------------------------------------------------------------


@dataclass(frozen=True)
class Validated:
    """A validated file: the bytes the tflite accessors may read, and the plain view."""

    padded: bytes
    model: Model  # subgraph 0 as aot.frontend.tflite_static made it static
    static: Any = None  # its StaticReport: what that step fixed and folded


@contextlib.contextmanager
def reporting_damage(source: str) -> Iterator[None]:
    """Damage found inside the block becomes the one ModelError a user sees."""
    try:
        yield
    except _Damage as err:
        raise ModelError(f"{source}: {DAMAGED}: {err}") from None


def check_structure(data: bytes, source: str) -> Model:
    """Checks 1-4: the flatbuffer, every index, every tensor, the graph; the plain view."""
    _init_vector_slots()
    with reporting_damage(source):
        model = _read(data)
        if not model.subgraphs:
            raise _Damage("the model has no subgraph")
        for sg in model.subgraphs:
            _name_roles(sg)
            for t in sg.tensors:
                _check_tensor(t, model.buffers)
            _check_graph(sg, model.buffers)
    return model


def check_shapes(model: Model, padded: bytes, source: str) -> None:
    """Check 5 on a static graph, then whether aot handles every operator."""
    with reporting_damage(source):
        for sg in model.subgraphs:
            _check_shapes(sg, model, padded)
    _check_supported(model, source)


# Operators whose variable tensor (state) the int8 importer keeps in the persistent pool.
STATEFUL_OPERATORS = frozenset({"SVDF", "UNIDIRECTIONAL_SEQUENCE_LSTM"})


def _state_of_stateful_operators(sg: Subgraph, index: int) -> bool:
    """True when only stateful operators read the variable tensor ``index``."""
    readers = [op for op in sg.operators if index in op.inputs]
    return bool(readers) and all(op.name in STATEFUL_OPERATORS for op in readers)


def _check_supported(model: Model, source: str) -> None:
    """Valid features no aot importer handles, named (after the damage checks)."""
    for sg in model.subgraphs:
        # A resource handle is fine where VAR_HANDLE makes it (the variable's reads and
        # assignments carry its dtype).
        handles = {i for op in sg.operators if op.name == "VAR_HANDLE" for i in op.outputs}
        # An operator's intermediates that nothing reads or writes are metadata (the LSTM
        # converter's gate quantization, often shape [0]); no kernel computes them.
        computed = {*sg.inputs, *sg.outputs}
        computed |= {i for op in sg.operators for i in (*op.inputs, *op.outputs)}
        metadata = {i for op in sg.operators for i in op.intermediates} - computed
        for t in sg.tensors:
            if t.type_code in _OTHER_TYPES and t.index not in handles:
                raise UnsupportedError(
                    f"{source}: {t.label()} has type {_OTHER_TYPES[t.type_code]}, which aot "
                    f"does not support yet; see {OPERATORS_DOC}"
                )
            if t.sparse:
                raise UnsupportedError(
                    f"{source}: {t.label()} is stored sparse, which aot does not support yet; "
                    f"convert the model without sparsity (see {OPERATORS_DOC})"
                )
            if 0 in t.shape and t.index not in metadata:
                raise UnsupportedError(
                    f"{source}: {t.label()} has shape {list(t.shape)}, with no elements; aot "
                    "compiles tensors of at least one element"
                )
            if t.is_variable and not _state_of_stateful_operators(sg, t.index):
                raise UnsupportedError(
                    f"{source}: {t.label()} is a variable tensor (operator state) read by an "
                    f"operator other than SVDF and UNIDIRECTIONAL_SEQUENCE_LSTM, the stateful "
                    f"operators aot supports; see "
                    f"{OPERATORS_DOC}"
                )
