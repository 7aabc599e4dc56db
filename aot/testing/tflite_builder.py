"""Write TFLite flatbuffers from Python, so tests need no TensorFlow converter.

A model has one subgraph (``add_subgraph`` appends further ones). Tensors are added first
(inputs, constants, intermediates) and named by their index; operators are added in
execution order; ``build()`` serialises it::

    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 8, 8, 3), "int8", scale=0.05, zero_point=-3)
    w = b.add_constant("w", w_int8, scale=w_scales, zero_point=[0] * 4, quantized_dimension=0)
    y = b.add_tensor("y", (1, 8, 8, 4), "int8", scale=0.1, zero_point=5)
    b.add_operator("CONV_2D", inputs=[x, w, -1], outputs=[y], options={"padding": "SAME"})
    b.mark_output(y)
    model_bytes = b.build()

Operator options are generic: ``OPERATORS`` maps an operator name to the name of its
``BuiltinOptions`` table in the TFLite schema plus defaults, and option keys are the
schema's snake_case field names. The writer functions come from the ``tflite`` package
(``Conv2DOptionsAddStrideW`` for ``stride_w``), so supporting another operator is one row.

The output is deterministic: the same calls give the same bytes.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import flatbuffers
import numpy as np
from tflite.ActivationFunctionType import ActivationFunctionType
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions
from tflite.FullyConnectedOptionsWeightsFormat import FullyConnectedOptionsWeightsFormat
from tflite.MirrorPadMode import MirrorPadMode
from tflite.Padding import Padding
from tflite.TensorType import TensorType

# ``tflite/__init__`` star-imports each class over its module's name, so ``from tflite
# import Buffer`` gives the class; the module-level writer functions need the module.
_fb_buffer = importlib.import_module("tflite.Buffer")
_fb_model = importlib.import_module("tflite.Model")
_fb_operator = importlib.import_module("tflite.Operator")
_fb_operator_code = importlib.import_module("tflite.OperatorCode")
_fb_quant = importlib.import_module("tflite.QuantizationParameters")
_fb_subgraph = importlib.import_module("tflite.SubGraph")
_fb_tensor = importlib.import_module("tflite.Tensor")

NO_TENSOR = -1  # TFLite's marker for an omitted optional operator input

# TFLite schema version written into Model.version (the converter writes 3).
_SCHEMA_VERSION = 3
_FILE_IDENTIFIER = b"TFL3"
# Constant data is aligned so kernels may read it in place as int32/float/int64.
_BUFFER_ALIGNMENT = 16
# BuiltinOperator codes >= 127 live only in OperatorCode.builtin_code; the deprecated
# int8 field then holds this placeholder.
_PLACEHOLDER_FOR_GREATER_OP_CODES = 127

_TENSOR_TYPES: dict[str, int] = {
    "float32": TensorType.FLOAT32,
    "float16": TensorType.FLOAT16,
    "float64": TensorType.FLOAT64,
    "int8": TensorType.INT8,
    "int16": TensorType.INT16,
    "int32": TensorType.INT32,
    "int64": TensorType.INT64,
    "uint8": TensorType.UINT8,
    "uint16": TensorType.UINT16,
    "uint32": TensorType.UINT32,
    "bool": TensorType.BOOL,
    "resource": TensorType.RESOURCE,  # a resource variable's handle (VAR_HANDLE)
}

# Option fields whose schema type is an enum: the value may be given by member name.
_ENUM_FIELDS: dict[str, type] = {
    "padding": Padding,
    "fused_activation_function": ActivationFunctionType,
    "weights_format": FullyConnectedOptionsWeightsFormat,
    "quantized_bias_type": TensorType,
    "output_type": TensorType,
    "in_data_type": TensorType,
    "out_data_type": TensorType,
    "idx_out_type": TensorType,
    "out_type": TensorType,
    "mode": MirrorPadMode,
}
# Option fields whose schema type is a string (VAR_HANDLE's variable name).
_STRING_FIELDS = frozenset({"container", "shared_name"})


@dataclass(frozen=True)
class OperatorSpec:
    """How to write one builtin operator: its options table and defaults for its fields."""

    options: str | None  # BuiltinOptions table name, e.g. "Conv2DOptions"; None: no table
    defaults: Mapping[str, Any] = field(default_factory=dict)


# Defaults are what a converter would write where the schema's own default (0) is not a
# usable value (stride 0, softmax beta 0).
_CONV = {
    "padding": "SAME",
    "stride_w": 1,
    "stride_h": 1,
    "dilation_w_factor": 1,
    "dilation_h_factor": 1,
    "fused_activation_function": "NONE",
}
_POOL = {"padding": "VALID", "stride_w": 1, "stride_h": 1, "fused_activation_function": "NONE"}

OPERATORS: dict[str, OperatorSpec] = {
    "ABS": OperatorSpec("AbsOptions"),
    "ADD": OperatorSpec("AddOptions"),
    "ARG_MAX": OperatorSpec("ArgMaxOptions", {"output_type": "INT32"}),
    "ARG_MIN": OperatorSpec("ArgMinOptions", {"output_type": "INT32"}),
    "AVERAGE_POOL_2D": OperatorSpec("Pool2DOptions", _POOL),
    "BATCH_MATMUL": OperatorSpec("BatchMatMulOptions"),
    "CAST": OperatorSpec("CastOptions"),
    "CONCATENATION": OperatorSpec("ConcatenationOptions"),
    "CONV_2D": OperatorSpec("Conv2DOptions", _CONV),
    "DEPTHWISE_CONV_2D": OperatorSpec("DepthwiseConv2DOptions", {**_CONV, "depth_multiplier": 1}),
    "DEPTH_TO_SPACE": OperatorSpec("DepthToSpaceOptions"),
    "DEQUANTIZE": OperatorSpec("DequantizeOptions"),
    "DIV": OperatorSpec("DivOptions"),
    "EXP": OperatorSpec("ExpOptions"),
    "EXPAND_DIMS": OperatorSpec("ExpandDimsOptions"),
    "FULLY_CONNECTED": OperatorSpec("FullyConnectedOptions"),
    "GATHER": OperatorSpec("GatherOptions"),
    "GELU": OperatorSpec("GeluOptions"),
    "HARD_SWISH": OperatorSpec("HardSwishOptions"),
    "L2_NORMALIZATION": OperatorSpec("L2NormOptions"),
    "LEAKY_RELU": OperatorSpec("LeakyReluOptions", {"alpha": 0.2}),
    "LOG_SOFTMAX": OperatorSpec("LogSoftmaxOptions"),
    "LOGISTIC": OperatorSpec(None),
    "MAX_POOL_2D": OperatorSpec("Pool2DOptions", _POOL),
    "MAXIMUM": OperatorSpec("MaximumMinimumOptions"),
    "MEAN": OperatorSpec("ReducerOptions"),
    "MINIMUM": OperatorSpec("MaximumMinimumOptions"),
    "MUL": OperatorSpec("MulOptions"),
    "NEG": OperatorSpec("NegOptions"),
    "PACK": OperatorSpec("PackOptions"),
    "PAD": OperatorSpec("PadOptions"),
    "PADV2": OperatorSpec("PadV2Options"),
    "PRELU": OperatorSpec(None),
    "QUANTIZE": OperatorSpec("QuantizeOptions"),
    "REDUCE_MAX": OperatorSpec("ReducerOptions"),
    "REDUCE_MIN": OperatorSpec("ReducerOptions"),
    "RELU": OperatorSpec(None),
    "RELU6": OperatorSpec(None),
    "RELU_N1_TO_1": OperatorSpec(None),
    "RESHAPE": OperatorSpec("ReshapeOptions"),
    "RESIZE_BILINEAR": OperatorSpec("ResizeBilinearOptions"),
    "RESIZE_NEAREST_NEIGHBOR": OperatorSpec("ResizeNearestNeighborOptions"),
    "RSQRT": OperatorSpec(None),
    "SLICE": OperatorSpec("SliceOptions"),
    "SOFTMAX": OperatorSpec("SoftmaxOptions", {"beta": 1.0}),
    "SPACE_TO_DEPTH": OperatorSpec("SpaceToDepthOptions"),
    "SPLIT": OperatorSpec("SplitOptions"),
    "SPLIT_V": OperatorSpec("SplitVOptions"),
    "SQRT": OperatorSpec(None),
    "SQUARED_DIFFERENCE": OperatorSpec("SquaredDifferenceOptions"),
    "SQUEEZE": OperatorSpec("SqueezeOptions"),
    "STRIDED_SLICE": OperatorSpec("StridedSliceOptions"),
    "SUB": OperatorSpec("SubOptions"),
    "SUM": OperatorSpec("ReducerOptions"),
    # TFLite's integer SVDF accepts only a RELU (which it does not apply).
    "SVDF": OperatorSpec("SVDFOptions", {"rank": 1, "fused_activation_function": "RELU"}),
    "TANH": OperatorSpec(None),
    # The integer LSTM needs TANH here (its cell gate); clips 0 mean none.
    "UNIDIRECTIONAL_SEQUENCE_LSTM": OperatorSpec(
        "UnidirectionalSequenceLSTMOptions",
        {"fused_activation_function": "TANH", "cell_clip": 0.0, "proj_clip": 0.0},
    ),
    "TRANSPOSE": OperatorSpec("TransposeOptions"),
    "TRANSPOSE_CONV": OperatorSpec(
        "TransposeConvOptions", {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    ),
    "UNPACK": OperatorSpec("UnpackOptions"),
}

# Group D of issue 13 (comparisons, logical operators, copies, float-only), kept apart from the
# table above so that parallel additions do not collide.
OPERATORS.update(
    {
        "EQUAL": OperatorSpec("EqualOptions"),
        "NOT_EQUAL": OperatorSpec("NotEqualOptions"),
        "GREATER": OperatorSpec("GreaterOptions"),
        "GREATER_EQUAL": OperatorSpec("GreaterEqualOptions"),
        "LESS": OperatorSpec("LessOptions"),
        "LESS_EQUAL": OperatorSpec("LessEqualOptions"),
        "LOGICAL_AND": OperatorSpec("LogicalAndOptions"),
        "LOGICAL_OR": OperatorSpec("LogicalOrOptions"),
        "LOGICAL_NOT": OperatorSpec("LogicalNotOptions"),
        "SELECT_V2": OperatorSpec("SelectV2Options"),
        "MIRROR_PAD": OperatorSpec("MirrorPadOptions"),
        "REVERSE_V2": OperatorSpec("ReverseV2Options"),
        "BROADCAST_TO": OperatorSpec("BroadcastToOptions"),
        "SPACE_TO_BATCH_ND": OperatorSpec("SpaceToBatchNDOptions"),
        "BATCH_TO_SPACE_ND": OperatorSpec("BatchToSpaceNDOptions"),
        "GATHER_ND": OperatorSpec("GatherNdOptions"),
        # Float-only operators, to test their refusal by the int8 importer.
        "CEIL": OperatorSpec(None),
        "COS": OperatorSpec(None),
        "FLOOR": OperatorSpec(None),
        "L2_POOL_2D": OperatorSpec("Pool2DOptions", _POOL),
        "LOG": OperatorSpec(None),
        "ROUND": OperatorSpec(None),
        "SIN": OperatorSpec(None),
        "SQUARE": OperatorSpec("SquareOptions"),
    }
)

# Indexing, shape and resource-variable operators (aot/frontend/tflite_int8/indexing.py)
# and the control flow the int8 importer refuses.
OPERATORS.update(
    {
        "EMBEDDING_LOOKUP": OperatorSpec(None),
        "DYNAMIC_UPDATE_SLICE": OperatorSpec("DynamicUpdateSliceOptions"),
        "CUMSUM": OperatorSpec("CumsumOptions"),
        "SHAPE": OperatorSpec("ShapeOptions", {"out_type": "INT32"}),
        "BROADCAST_ARGS": OperatorSpec(None),
        "VAR_HANDLE": OperatorSpec("VarHandleOptions"),
        "READ_VARIABLE": OperatorSpec("ReadVariableOptions"),
        "ASSIGN_VARIABLE": OperatorSpec("AssignVariableOptions"),
        "CALL_ONCE": OperatorSpec("CallOnceOptions"),
        "IF": OperatorSpec("IfOptions"),
        "WHILE": OperatorSpec("WhileOptions"),
    }
)

# ADD_N, DIV, ELU, CAST, ZEROS_LIKE, FILL, REDUCE_ALL (issue 13) and the float-only
# FLOOR_DIV and FLOOR_MOD, kept apart from the tables above so that parallel additions do
# not collide.
OPERATORS.update(
    {
        "ADD_N": OperatorSpec("AddNOptions"),
        "ELU": OperatorSpec(None),
        "ZEROS_LIKE": OperatorSpec("ZerosLikeOptions"),
        "FILL": OperatorSpec("FillOptions"),
        "REDUCE_ALL": OperatorSpec("ReducerOptions"),
        "FLOOR_DIV": OperatorSpec("FloorDivOptions"),
        "FLOOR_MOD": OperatorSpec("FloorModOptions"),
    }
)

# The shape arithmetic Keras 3 writes for a dynamic batch (aot/frontend/tflite_static.py).
OPERATORS.update({"REDUCE_PROD": OperatorSpec("ReducerOptions"), "RANGE": OperatorSpec(None)})
# Keras 3's UpSampling2D.
OPERATORS["TILE"] = OperatorSpec("TileOptions")


@dataclass
class _Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    data: bytes | None  # None: filled at run time (input, intermediate, output)
    scale: list[float] | None
    zero_point: list[int] | None
    quantized_dimension: int
    shape_signature: tuple[int, ...] | None = None  # -1 marks a dynamic dimension
    is_variable: bool = False  # operator state (SVDF, LSTM), written by the model at run time


@dataclass
class _Operator:
    name: str
    inputs: list[int]
    outputs: list[int]
    options: dict[str, Any]
    version: int
    intermediates: list[int] = field(default_factory=list)


def _camel(snake: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


def _options_module(table: str) -> ModuleType:
    return importlib.import_module(f"tflite.{table}")


def _as_list(value: float | int | Sequence[float] | Sequence[int] | np.ndarray) -> list[Any]:
    if isinstance(value, np.ndarray):
        return value.reshape(-1).tolist()
    if isinstance(value, Sequence):
        return list(value)
    return [value]


class TFLiteModelBuilder:
    """Collects tensors and operators of a one-subgraph TFLite model and writes it."""

    def __init__(self, description: str = "aot.testing.tflite_builder") -> None:
        self._description = description
        self._tensors: list[_Tensor] = []
        self._operators: list[_Operator] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        # Further subgraphs (CALL_ONCE's initialization, IF's branches), numbered from 1.
        self._subgraphs: list[TFLiteModelBuilder] = []

    # -- tensors ---------------------------------------------------------------------

    def add_input(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str,
        scale: float | Sequence[float] | None = None,
        zero_point: int | Sequence[int] | None = None,
        quantized_dimension: int = 0,
        shape_signature: Sequence[int] | None = None,
    ) -> int:
        """Add a model input (in call order) and return its tensor index.

        ``shape_signature`` marks dynamic dimensions with -1 (``shape`` then holds 1 there),
        as the converter writes a model with an unknown batch size.
        """
        index = self.add_tensor(
            name, shape, dtype, scale, zero_point, quantized_dimension, shape_signature
        )
        self._inputs.append(index)
        return index

    def add_tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str,
        scale: float | Sequence[float] | None = None,
        zero_point: int | Sequence[int] | None = None,
        quantized_dimension: int = 0,
        shape_signature: Sequence[int] | None = None,
        is_variable: bool = False,
    ) -> int:
        """Add an intermediate or output tensor and return its index; ``is_variable`` marks
        operator state (as SVDF's activation state)."""
        signature = None
        if shape_signature is not None:
            signature = tuple(int(d) for d in shape_signature)
            if len(signature) != len(shape):
                raise ValueError(
                    f"tensor {name!r}: shape_signature {signature} and shape {tuple(shape)} "
                    "differ in rank"
                )
        index = self._add(
            name, tuple(int(d) for d in shape), dtype, None, scale, zero_point, quantized_dimension
        )
        self._tensors[index].shape_signature = signature
        self._tensors[index].is_variable = is_variable
        return index

    def add_constant(
        self,
        name: str,
        data: np.ndarray,
        scale: float | Sequence[float] | None = None,
        zero_point: int | Sequence[int] | None = None,
        quantized_dimension: int = 0,
        dtype: str | None = None,
    ) -> int:
        """Add a constant tensor holding ``data`` (its dtype unless ``dtype`` is given)."""
        array = np.asarray(data)
        if dtype is not None:
            array = array.astype(dtype)
        dtype_name = array.dtype.name
        # TFLite buffers are little-endian whatever the host is.
        raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
        return self._add(
            name, tuple(array.shape), dtype_name, raw, scale, zero_point, quantized_dimension
        )

    def _add(
        self,
        name: str,
        shape: tuple[int, ...],
        dtype: str,
        data: bytes | None,
        scale: float | Sequence[float] | None,
        zero_point: int | Sequence[int] | None,
        quantized_dimension: int,
    ) -> int:
        if dtype not in _TENSOR_TYPES:
            raise ValueError(
                f"tensor {name!r}: dtype {dtype!r} is not supported; "
                f"expected one of {sorted(_TENSOR_TYPES)}"
            )
        scales: list[float] | None = None
        zero_points: list[int] | None = None
        if scale is not None or zero_point is not None:
            scales = [float(s) for s in _as_list(scale if scale is not None else 1.0)]
            zero_points = [int(z) for z in _as_list(zero_point if zero_point is not None else 0)]
            # A scalar on one side broadcasts to the per-channel length of the other.
            if len(scales) == 1 and len(zero_points) > 1:
                scales *= len(zero_points)
            if len(zero_points) == 1 and len(scales) > 1:
                zero_points *= len(scales)
            if len(scales) != len(zero_points):
                raise ValueError(
                    f"tensor {name!r}: {len(scales)} scales but {len(zero_points)} zero points"
                )
            if len(scales) > 1:
                if not 0 <= quantized_dimension < len(shape):
                    raise ValueError(
                        f"tensor {name!r}: quantized_dimension {quantized_dimension} is out of "
                        f"range for shape {shape}"
                    )
                if shape[quantized_dimension] != len(scales):
                    raise ValueError(
                        f"tensor {name!r}: {len(scales)} per-channel scales but dimension "
                        f"{quantized_dimension} of shape {shape} has {shape[quantized_dimension]}"
                    )
        self._tensors.append(
            _Tensor(name, shape, dtype, data, scales, zero_points, quantized_dimension)
        )
        return len(self._tensors) - 1

    # -- operators and outputs ------------------------------------------------------

    def add_operator(
        self,
        op: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: Mapping[str, Any] | None = None,
        version: int = 1,
    ) -> int:
        """Append a builtin operator (execution order is call order); return its index.

        ``inputs`` may contain ``-1`` for an omitted optional input. ``options`` keys are
        the snake_case fields of the operator's options table; enum fields take member
        names ("SAME", "RELU6"), vector fields take a list of ints.
        """
        spec = OPERATORS.get(op)
        if spec is None:
            raise ValueError(
                f"operator {op!r} is not in aot.testing.tflite_builder.OPERATORS; "
                "add a row naming its BuiltinOptions table"
            )
        for index in (*inputs, *outputs):
            if index != NO_TENSOR and not 0 <= index < len(self._tensors):
                raise ValueError(f"operator {op}: tensor index {index} does not exist")
        if NO_TENSOR in outputs:
            raise ValueError(f"operator {op}: outputs cannot be omitted (-1)")
        merged = {**spec.defaults, **(options or {})}
        if merged and spec.options is None:
            raise ValueError(f"operator {op} takes no options, got {sorted(merged)}")
        encoded = {key: _encode_option(op, spec.options, key, v) for key, v in merged.items()}
        self._operators.append(_Operator(op, list(inputs), list(outputs), encoded, version))
        return len(self._operators) - 1

    def set_intermediates(self, op_index: int, tensors: Sequence[int]) -> None:
        """Attach intermediate tensors to operator ``op_index``: the integer LSTM reads
        the quantization of its gate results and hidden state from them."""
        for index in tensors:
            if not 0 <= index < len(self._tensors):
                raise ValueError(f"intermediate tensor index {index} does not exist")
        self._operators[op_index].intermediates = list(tensors)

    def mark_output(self, index: int) -> None:
        """Make tensor ``index`` the next model output."""
        if not 0 <= index < len(self._tensors):
            raise ValueError(f"tensor index {index} does not exist")
        self._outputs.append(index)

    def add_subgraph(self, subgraph: TFLiteModelBuilder) -> int:
        """Append ``subgraph``'s tensors and operators as a further subgraph of this model
        and return its index (1 for the first): what CALL_ONCE's ``init_subgraph_index``
        or IF's branch indices name. Its outputs may be empty (an initialization)."""
        if subgraph is self or subgraph._subgraphs:
            raise ValueError("a subgraph must be another builder without subgraphs of its own")
        self._subgraphs.append(subgraph)
        return len(self._subgraphs)

    # -- serialisation --------------------------------------------------------------

    def build(self, strip_strings: bool = False) -> bytes:
        """Serialise the model to TFLite flatbuffer bytes; ``strip_strings`` leaves out the
        tensor and subgraph names and the description, as TFLite's strip_strings tool does."""
        if not self._outputs:
            raise ValueError("the model has no outputs; call mark_output()")
        fbb = flatbuffers.Builder(1024)
        graphs = [self, *self._subgraphs]

        # Buffer 0 is the schema's empty sentinel; every tensor gets its own buffer after it,
        # empty unless the tensor is a constant (as the converter does).
        buffers = [self._write_buffer(fbb, None)]
        for graph in graphs:
            buffers += [self._write_buffer(fbb, t.data) for t in graph._tensors]

        codes: list[tuple[str, int]] = []
        for graph in graphs:
            for op in graph._operators:
                if (op.name, op.version) not in codes:
                    codes.append((op.name, op.version))
        # Every graph's tensors and operators, then the operator codes, then the subgraph
        # tables: for one subgraph the order the builder always wrote, so files it made
        # before (examples/) come out byte for byte the same.
        contents = []
        first_buffer = 1
        for graph in graphs:
            contents.append(graph._write_contents(fbb, codes, first_buffer, strip_strings))
            first_buffer += len(graph._tensors)
        operator_codes = [self._write_operator_code(fbb, name, version) for name, version in codes]
        subgraphs = [
            graph._write_subgraph(
                fbb, *written, "main" if number == 0 else f"subgraph_{number}", strip_strings
            )
            for number, (graph, written) in enumerate(zip(graphs, contents))
        ]

        m_codes = _offset_vector(fbb, _fb_model.ModelStartOperatorCodesVector, operator_codes)
        m_subgraphs = _offset_vector(fbb, _fb_model.ModelStartSubgraphsVector, subgraphs)
        m_description = None if strip_strings else fbb.CreateString(self._description)
        m_buffers = _offset_vector(fbb, _fb_model.ModelStartBuffersVector, buffers)
        _fb_model.ModelStart(fbb)
        _fb_model.ModelAddVersion(fbb, _SCHEMA_VERSION)
        _fb_model.ModelAddOperatorCodes(fbb, m_codes)
        _fb_model.ModelAddSubgraphs(fbb, m_subgraphs)
        if m_description is not None:
            _fb_model.ModelAddDescription(fbb, m_description)
        _fb_model.ModelAddBuffers(fbb, m_buffers)
        model = _fb_model.ModelEnd(fbb)
        fbb.Finish(model, file_identifier=_FILE_IDENTIFIER)
        return bytes(fbb.Output())

    def _write_contents(
        self,
        fbb: flatbuffers.Builder,
        codes: list[tuple[str, int]],
        first_buffer: int,
        strip_strings: bool,
    ) -> tuple[list[int], list[int]]:
        tensors = [
            self._write_tensor(fbb, t, first_buffer + i, strip_strings)
            for i, t in enumerate(self._tensors)
        ]
        operators = [
            self._write_operator(fbb, op, codes.index((op.name, op.version)))
            for op in self._operators
        ]
        return tensors, operators

    def _write_subgraph(
        self,
        fbb: flatbuffers.Builder,
        tensors: list[int],
        operators: list[int],
        name: str,
        strip_strings: bool,
    ) -> int:
        sg_tensors = _offset_vector(fbb, _fb_subgraph.SubGraphStartTensorsVector, tensors)
        sg_inputs = _int32_vector(fbb, self._inputs)
        sg_outputs = _int32_vector(fbb, self._outputs)
        sg_operators = _offset_vector(fbb, _fb_subgraph.SubGraphStartOperatorsVector, operators)
        sg_name = None if strip_strings else fbb.CreateString(name)
        _fb_subgraph.SubGraphStart(fbb)
        _fb_subgraph.SubGraphAddTensors(fbb, sg_tensors)
        _fb_subgraph.SubGraphAddInputs(fbb, sg_inputs)
        _fb_subgraph.SubGraphAddOutputs(fbb, sg_outputs)
        _fb_subgraph.SubGraphAddOperators(fbb, sg_operators)
        if sg_name is not None:
            _fb_subgraph.SubGraphAddName(fbb, sg_name)
        return _fb_subgraph.SubGraphEnd(fbb)

    @staticmethod
    def _write_buffer(fbb: flatbuffers.Builder, data: bytes | None) -> int:
        data_offset = None
        if data:
            fbb.StartVector(1, len(data), _BUFFER_ALIGNMENT)
            fbb.head -= len(data)
            fbb.Bytes[fbb.head : fbb.head + len(data)] = data
            data_offset = fbb.EndVector()
        _fb_buffer.BufferStart(fbb)
        if data_offset is not None:
            _fb_buffer.BufferAddData(fbb, data_offset)
        return _fb_buffer.BufferEnd(fbb)

    @staticmethod
    def _write_tensor(
        fbb: flatbuffers.Builder, tensor: _Tensor, buffer: int, strip_strings: bool = False
    ) -> int:
        quant = None
        if tensor.scale is not None and tensor.zero_point is not None:
            scale = fbb.CreateNumpyVector(np.asarray(tensor.scale, dtype="<f4"))
            zero_point = fbb.CreateNumpyVector(np.asarray(tensor.zero_point, dtype="<i8"))
            _fb_quant.QuantizationParametersStart(fbb)
            _fb_quant.QuantizationParametersAddScale(fbb, scale)
            _fb_quant.QuantizationParametersAddZeroPoint(fbb, zero_point)
            _fb_quant.QuantizationParametersAddQuantizedDimension(fbb, tensor.quantized_dimension)
            quant = _fb_quant.QuantizationParametersEnd(fbb)
        shape = _int32_vector(fbb, tensor.shape)
        signature = None
        if tensor.shape_signature is not None:
            signature = _int32_vector(fbb, tensor.shape_signature)
        name = None if strip_strings else fbb.CreateString(tensor.name)
        _fb_tensor.TensorStart(fbb)
        _fb_tensor.TensorAddShape(fbb, shape)
        _fb_tensor.TensorAddType(fbb, _TENSOR_TYPES[tensor.dtype])
        _fb_tensor.TensorAddBuffer(fbb, buffer)
        if name is not None:
            _fb_tensor.TensorAddName(fbb, name)
        if quant is not None:
            _fb_tensor.TensorAddQuantization(fbb, quant)
        if signature is not None:
            _fb_tensor.TensorAddShapeSignature(fbb, signature)
        if tensor.is_variable:
            _fb_tensor.TensorAddIsVariable(fbb, True)
        return _fb_tensor.TensorEnd(fbb)

    @staticmethod
    def _write_operator_code(fbb: flatbuffers.Builder, name: str, version: int) -> int:
        code = getattr(BuiltinOperator, name)
        _fb_operator_code.OperatorCodeStart(fbb)
        _fb_operator_code.OperatorCodeAddDeprecatedBuiltinCode(
            fbb, min(code, _PLACEHOLDER_FOR_GREATER_OP_CODES)
        )
        _fb_operator_code.OperatorCodeAddBuiltinCode(fbb, code)
        _fb_operator_code.OperatorCodeAddVersion(fbb, version)
        return _fb_operator_code.OperatorCodeEnd(fbb)

    @staticmethod
    def _write_operator(fbb: flatbuffers.Builder, op: _Operator, opcode_index: int) -> int:
        table = OPERATORS[op.name].options
        options = _write_options(fbb, table, op.options) if table is not None else None
        inputs = _int32_vector(fbb, op.inputs)
        outputs = _int32_vector(fbb, op.outputs)
        intermediates = _int32_vector(fbb, op.intermediates) if op.intermediates else None
        _fb_operator.OperatorStart(fbb)
        _fb_operator.OperatorAddOpcodeIndex(fbb, opcode_index)
        _fb_operator.OperatorAddInputs(fbb, inputs)
        _fb_operator.OperatorAddOutputs(fbb, outputs)
        if intermediates is not None:
            _fb_operator.OperatorAddIntermediates(fbb, intermediates)
        if options is not None and table is not None:
            _fb_operator.OperatorAddBuiltinOptionsType(fbb, getattr(BuiltinOptions, table))
            _fb_operator.OperatorAddBuiltinOptions(fbb, options)
        return _fb_operator.OperatorEnd(fbb)


def _encode_option(op: str, table: str | None, key: str, value: Any) -> Any:
    """Check one option against the schema; return an int, float, bool or tuple of ints."""
    assert table is not None  # add_operator rejects options for option-less operators
    if not hasattr(_options_module(table), f"{table}Add{_camel(key)}"):
        raise ValueError(f"operator {op}: {table} has no field {key!r}")
    if isinstance(value, str) and key in _STRING_FIELDS:
        return value
    if isinstance(value, str):
        enum = _ENUM_FIELDS.get(key)
        if enum is None:
            raise ValueError(f"operator {op}: {table}.{key} is not an enum field; got {value!r}")
        if not hasattr(enum, value.upper()):
            members = sorted(m for m in vars(enum) if not m.startswith("_"))
            raise ValueError(
                f"operator {op}: {table}.{key} is {value!r}; expected one of {members}"
            )
        return getattr(enum, value.upper())
    if isinstance(value, Sequence | np.ndarray):
        return tuple(int(v) for v in value)
    if isinstance(value, bool | int | float | np.number):
        return value.item() if isinstance(value, np.number) else value
    raise ValueError(f"operator {op}: {table}.{key} has unsupported value {value!r}")


def _write_options(fbb: flatbuffers.Builder, table: str, options: Mapping[str, Any]) -> int:
    module = _options_module(table)
    # Vectors must be written before the table is started (flatbuffers builds bottom-up).
    vectors = {k: _int32_vector(fbb, v) for k, v in options.items() if isinstance(v, tuple)}
    vectors.update({k: fbb.CreateString(v) for k, v in options.items() if isinstance(v, str)})
    getattr(module, f"{table}Start")(fbb)
    for key, value in options.items():
        getattr(module, f"{table}Add{_camel(key)}")(fbb, vectors.get(key, value))
    return getattr(module, f"{table}End")(fbb)


def _int32_vector(fbb: flatbuffers.Builder, values: Sequence[int]) -> int:
    return fbb.CreateNumpyVector(np.asarray(values, dtype="<i4"))


def _offset_vector(fbb: flatbuffers.Builder, start: Any, offsets: Sequence[int]) -> int:
    start(fbb, len(offsets))
    for offset in reversed(offsets):
        fbb.PrependUOffsetTRelative(offset)
    return fbb.EndVector()
