"""What each frontend supports, operator by operator: the data behind docs/operators.md.

The operator *names* come from the importers' own tables (``tflite_int8.SUPPORTED_OPERATORS``,
the Relax TFLite converter's ``convert_map``, the Relax ONNX ``_get_convert_map()``); the
dtype and limit text is written here, keyed by the same names, except the int8 TFLite
importer's, which is each operator's registry entry (aot/operators/table.py).
tests/operators checks that the keys equal the importers' sets, so a new handler without
an entry fails, and that docs/operators.md is exactly ``render_markdown()``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn, TypeVar

from aot.operators import OPERATORS

T = TypeVar("T")

# Frontends in the order they are documented (the --frontend names of `aot build`).
FRONTEND_NAMES = ("tflite-int8", "onnx-int8", "relax-tflite", "relax-onnx")


@dataclass(frozen=True)
class OperatorEntry:
    name: str
    dtypes: str
    limits: str
    tested: bool = False  # compiled and checked against a reference runtime by aot's tests
    versions: tuple[int, ...] = ()  # ONNX: the converter's _impl_v<N> versions


@dataclass(frozen=True)
class FrontendTable:
    name: str
    title: str
    source: str  # where the operator list comes from
    summary: str
    operators: tuple[OperatorEntry, ...]
    not_yet_supported: tuple[str, ...] = ()
    float_only: tuple[str, ...] = ()  # refused for good: float32-only kernels in TFLite Micro
    control_flow: tuple[str, ...] = ()  # refused for good: a static graph runs no subgraphs


# -- tflite-int8: aot's own importer (aot/frontend/tflite_int8.py) -------------------------

# Each operator's dtypes and limits are its registry entry's (aot/operators/table.py,
# where its typed kinds are too), read off its handler: the ``expect`` dtypes,
# ``per_tensor`` checks, options honoured and the shape checks it makes.
INT8_OPERATORS: dict[str, tuple[str, str]] = {
    name: (entry.dtypes, entry.limits) for name, entry in OPERATORS.items()
}

INT8_SUMMARY = (
    "aot's own integer importer, picked by `--frontend auto` when every model input and "
    "output is quantized. It follows TFLite's reference integer kernels bit for bit (see "
    "docs/int8.md). Tensors between operators are int8 with per-tensor quantization, "
    "plus the int32 and bool tensors that index, arg-reduction and comparison operators "
    "give and take. Static shapes (a dynamic batch dimension runs at "
    "the stored size); one subgraph runs (CALL_ONCE's initialization is folded; IF and "
    "WHILE are refused). int16 activations (16x8) only where the dtypes column says int16 "
    "(int16 zero points 0 unless it says otherwise). Not supported: uint8 or float32 "
    "tensors between operators, hybrid operators (float activations, int8 weights; "
    "EMBEDDING_LOOKUP's hybrid form excepted)."
)

# The builtin operators of TensorFlow Lite Micro's MicroMutableOpResolver (its Add<Op>()
# methods in tensorflow/lite/micro/micro_mutable_op_resolver.h), as TFLite builtin names.
TFLM_REVISION = "commit 90b983c2, 2026-08-20"
TFLM_BUILTIN_OPERATORS: tuple[str, ...] = (
    "ABS", "ADD", "ADD_N", "ARG_MAX", "ARG_MIN", "ASSIGN_VARIABLE", "AVERAGE_POOL_2D",
    "BATCH_MATMUL", "BATCH_TO_SPACE_ND", "BROADCAST_ARGS", "BROADCAST_TO", "CALL_ONCE",
    "CAST", "CEIL", "CONCATENATION", "CONV_2D", "COS", "CUMSUM", "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE", "DEQUANTIZE", "DIV", "DYNAMIC_UPDATE_SLICE", "ELU", "EMBEDDING_LOOKUP",
    "EQUAL", "EXP", "EXPAND_DIMS", "FILL", "FLOOR", "FLOOR_DIV", "FLOOR_MOD",
    "FULLY_CONNECTED", "GATHER", "GATHER_ND", "GREATER", "GREATER_EQUAL", "HARD_SWISH", "IF",
    "L2_NORMALIZATION", "L2_POOL_2D", "LEAKY_RELU", "LESS", "LESS_EQUAL", "LOG",
    "LOGICAL_AND", "LOGICAL_NOT", "LOGICAL_OR", "LOGISTIC", "LOG_SOFTMAX", "MAXIMUM",
    "MAX_POOL_2D", "MEAN", "MINIMUM", "MIRROR_PAD", "MUL", "NEG", "NOT_EQUAL", "PACK", "PAD",
    "PADV2", "PRELU", "QUANTIZE", "READ_VARIABLE", "REDUCE_ALL", "REDUCE_MAX", "REDUCE_MIN",
    "RELU", "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", "REVERSE_V2",
    "ROUND", "RSQRT", "SELECT_V2", "SHAPE", "SIN", "SLICE", "SOFTMAX", "SPACE_TO_BATCH_ND",
    "SPACE_TO_DEPTH", "SPLIT", "SPLIT_V", "SQRT", "SQUARE", "SQUARED_DIFFERENCE", "SQUEEZE",
    "STRIDED_SLICE", "SUB", "SUM", "SVDF", "TANH", "TRANSPOSE", "TRANSPOSE_CONV",
    "UNIDIRECTIONAL_SEQUENCE_LSTM", "UNPACK", "VAR_HANDLE", "WHILE", "ZEROS_LIKE",
)  # fmt: skip

# Its custom operators (registered by name, reached as CUSTOM:<name> in aot's messages).
TFLM_CUSTOM_OPERATORS: tuple[str, ...] = (
    "CIRCULAR_BUFFER", "TFLite_Detection_PostProcess", "ethos-u", "TFLM_DECODE",
    "SignalDelay", "SignalEnergy", "SignalFftAutoScale", "SignalFilterBank",
    "SignalFilterBankLog", "SignalFilterBankSquareRoot", "SignalFilterBankSpectralSubtraction",
    "SignalFramer", "SignalIrfft", "SignalOverlapAdd", "SignalPCAN", "SignalRfft",
    "SignalStacker", "SignalWindow",
)  # fmt: skip


# -- relax-tflite: TVM's Relax TFLite frontend ---------------------------------------------


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _notes(groups: Iterable[tuple[T, str]]) -> dict[str, T]:
    """Operator name -> note, from (note, "NAME NAME ...") groups that share one note."""
    return {name: note for note, names in groups for name in sorted(_names(names))}


_STATIC = "compiles when it legalizes to static-shape TIR kernels"
# The converter emits call_dps_packed (a TVM runtime function): aot's lowering refuses it.
_NO_C = "calls a TVM runtime function, which aot cannot lower to C"

RELAX_TFLITE_GROUPS: tuple[tuple[str, str], ...] = (
    (
        "elementwise, numpy broadcasting",
        "ABS ADD ADD_N ATAN2 CEIL COS DIV EXP FLOOR FLOOR_DIV FLOOR_MOD LOG MAXIMUM MINIMUM "
        "MUL NEG POW ROUND RSQRT SIGN SIN SQRT SQUARE SQUARED_DIFFERENCE SUB TAN",
    ),
    (
        "comparison or logic, bool result (bool only between operators)",
        "EQUAL NOT_EQUAL GREATER GREATER_EQUAL LESS LESS_EQUAL LOGICAL_AND LOGICAL_OR LOGICAL_NOT",
    ),
    ("integer bit operation", "BITWISE_XOR RIGHT_SHIFT"),
    (
        "activation",
        "ELU GELU HARD_SWISH LEAKY_RELU LOGISTIC PRELU RELU RELU6 RELU_0_TO_1 RELU_N1_TO_1 TANH",
    ),
    (
        "normalization over the last axis",
        "SOFTMAX LOG_SOFTMAX L2_NORMALIZATION LOCAL_RESPONSE_NORMALIZATION",
    ),
    (
        "NHWC convolution, SAME/VALID padding, strides, dilation, fused activation",
        "CONV_2D DEPTHWISE_CONV_2D TRANSPOSE_CONV CONV_3D CONV_3D_TRANSPOSE",
    ),
    (
        "NHWC pooling, SAME/VALID padding, fused activation",
        "AVERAGE_POOL_2D MAX_POOL_2D L2_POOL_2D",
    ),
    ("matrix product, fused activation on FULLY_CONNECTED", "FULLY_CONNECTED BATCH_MATMUL"),
    (
        "reduction over constant axes",
        "MEAN SUM REDUCE_MAX REDUCE_MIN REDUCE_PROD REDUCE_ALL REDUCE_ANY ARG_MAX ARG_MIN CUMSUM",
    ),
    (
        "layout or copy; shape, index and padding operands must be constant",
        "RESHAPE SQUEEZE EXPAND_DIMS TRANSPOSE CONCATENATION PACK UNPACK SPLIT SPLIT_V SLICE "
        "STRIDED_SLICE PAD PADV2 MIRROR_PAD TILE BROADCAST_TO GATHER GATHER_ND DEPTH_TO_SPACE "
        "SPACE_TO_DEPTH BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND REVERSE_V2 REVERSE_SEQUENCE "
        "MATRIX_DIAG MATRIX_SET_DIAG SCATTER_ND SPARSE_TO_DENSE EMBEDDING_LOOKUP "
        "EMBEDDING_LOOKUP_SPARSE DILATE DENSIFY ONE_HOT FILL ZEROS_LIKE",
    ),
    ("element type change", "CAST BITCAST"),
    ("selection", "SELECT SELECT_V2 WHERE BUCKETIZE"),
    ("resize, NHWC", "RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR"),
    (f"shape computation; {_STATIC} (constant inputs)", "SHAPE RANK BROADCAST_ARGS RANGE"),
    (
        "recurrent layer, unrolled by the converter",
        "LSTM UNIDIRECTIONAL_SEQUENCE_LSTM BIDIRECTIONAL_SEQUENCE_LSTM "
        "UNIDIRECTIONAL_SEQUENCE_RNN BIDIRECTIONAL_SEQUENCE_RNN SVDF",
    ),
    (
        "quantization: the converter works in float32 around it (use tflite-int8 for "
        "integer models)",
        "QUANTIZE DEQUANTIZE FAKE_QUANT",
    ),
    (
        f"data-dependent output (sorting, suppression, segments); {_STATIC}",
        "TOPK_V2 UNIQUE NON_MAX_SUPPRESSION_V4 NON_MAX_SUPPRESSION_V5 DETECTION_POSTPROCESS "
        "SEGMENT_SUM UNSORTED_SEGMENT_MAX UNSORTED_SEGMENT_MIN UNSORTED_SEGMENT_PROD "
        "UNSORTED_SEGMENT_SUM",
    ),
    (f"random numbers; {_NO_C}", "MULTINOMIAL RANDOM_STANDARD_NORMAL RANDOM_UNIFORM"),
    (
        "complex numbers (COMPLEX64 tensors, which aot cannot pass at the model boundary)",
        "RFFT2D COMPLEX_ABS REAL IMAG",
    ),
    (
        "control flow over subgraphs; aot's executor runs one static graph",
        "IF WHILE CALL CALL_ONCE",
    ),
    (
        "resource or hash table; the converter accepts only constant initialisation (in CALL_ONCE)",
        "VAR_HANDLE READ_VARIABLE ASSIGN_VARIABLE HASHTABLE HASHTABLE_FIND HASHTABLE_IMPORT "
        "HASHTABLE_LOOKUP HASHTABLE_SIZE",
    ),
    (
        "a marker, not an operator: the converter refuses it",
        "DELEGATE PLACEHOLDER_FOR_GREATER_OP_CODES",
    ),
)
RELAX_TFLITE_NOTES: dict[str, str] = _notes(RELAX_TFLITE_GROUPS)

# StableHLO operators inside TFLite files (rare in microcontroller models).
_STABLEHLO_NOTE = "StableHLO operator in a TFLite file"

RELAX_TFLITE_SUMMARY = (
    "TVM's Relax TFLite frontend, used for float models (`--frontend auto` picks it when "
    "an input or output is not quantized). Tensors are float32; the operators marked "
    "*int8 via float* also take int8/uint8 quantized tensors, which the converter turns "
    "into dequantize -> float32 operator -> quantize (weights stored as float32, not "
    "bit-exact: use tflite-int8 for integer models). Every operator must legalize to a "
    "static-shape TIR kernel; anything else stops `aot build` with 'survived "
    "legalization'."
)


# -- relax-onnx: TVM's Relax ONNX frontend -------------------------------------------------

_FLOAT = "float32, float64"

RELAX_ONNX_GROUPS: tuple[tuple[tuple[str, str], str], ...] = (
    (
        (_FLOAT, "elementwise, numpy broadcasting"),
        "Abs Acos Acosh Add Asin Asinh Atan Atanh Ceil Cos Cosh Div Erf Exp Floor Log Max "
        "Mean Min Mod Mul Neg Pow Reciprocal Round Sign Sin Sinh Sqrt Sub Sum Tan Tanh Clip",
    ),
    (
        ("float or integer in, bool out", "comparison or test"),
        "Equal Greater GreaterOrEqual Less LessOrEqual IsInf IsNaN",
    ),
    (
        ("bool or integer", "logic or bit operation"),
        "And Or Xor Not BitShift BitwiseAnd BitwiseNot BitwiseOr BitwiseXor",
    ),
    (
        (_FLOAT, "activation"),
        "Relu LeakyRelu PRelu Elu Selu Sigmoid HardSigmoid HardSwish Softplus Softsign Mish "
        "Gelu FastGelu BiasGelu ThresholdedRelu Shrink",
    ),
    (
        (_FLOAT, "normalization along an axis"),
        "Softmax LogSoftmax Hardmax LRN BatchNormalization InstanceNormalization "
        "LayerNormalization GroupNormalization RMSNormalization MeanVarianceNormalization "
        "EmbedLayerNormalization SkipLayerNormalization",
    ),
    (
        (_FLOAT, "NCHW convolution: pads, strides, dilations, groups"),
        "Conv ConvTranspose",
    ),
    (
        (_FLOAT, "NCHW pooling"),
        "AveragePool MaxPool GlobalAveragePool GlobalMaxPool GlobalLpPool LpPool MaxUnpool "
        "MaxRoiPool RoiAlign",
    ),
    (
        (_FLOAT, "matrix product"),
        "MatMul Gemm Einsum Attention",
    ),
    (
        ("int8 or uint8 in, int32 out", "integer matrix product"),
        "MatMulInteger MatMulInteger16",
    ),
    (
        (_FLOAT, "reduction over constant axes"),
        "ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin "
        "ReduceProd ReduceSum ReduceSumSquare ArgMax ArgMin CumSum",
    ),
    (
        ("any", "layout or copy; shape, index and padding operands must be constant"),
        "Reshape Flatten Squeeze Unsqueeze Transpose Concat Split Slice Pad Tile Expand Gather "
        "GatherElements GatherND Scatter ScatterElements ScatterND DepthToSpace SpaceToDepth "
        "Identity Dropout Constant ConstantOfShape EyeLike OneHot Trilu Where",
    ),
    (("any", "element type change"), "Cast CastLike"),
    (
        (_FLOAT, "resize and sampling"),
        "Resize Upsample GridSample AffineGrid",
    ),
    (
        ("any", f"shape computation; {_STATIC} (constant inputs)"),
        "Shape Size Range",
    ),
    (
        ("float32 <-> int8/uint8", "quantization, converted to float arithmetic"),
        "QuantizeLinear DequantizeLinear DynamicQuantizeLinear",
    ),
    (
        ("any", f"data-dependent output size; {_STATIC}"),
        "NonZero Unique TopK NonMaxSuppression AllClassNMS Compress",
    ),
    (
        ("any", "sequence or optional value; aot's executor passes plain tensors only"),
        "SequenceAt SequenceConstruct SequenceEmpty SequenceErase SequenceInsert "
        "SequenceLength ConcatFromSequence SplitToSequence Optional OptionalGetElement "
        "OptionalHasElement",
    ),
)
RELAX_ONNX_NOTES: dict[str, tuple[str, str]] = _notes(RELAX_ONNX_GROUPS)

RELAX_ONNX_SUMMARY = (
    "TVM's Relax ONNX frontend, used for every .onnx model. Tensors are float32 or float64 "
    "(float64 compiles to C `double`: hardware on the double-precision FPUs of the "
    "Cortex-M7 (fpu:dp) and Cortex-M55, software doubles elsewhere); model inputs and "
    "outputs are int8, uint8, int16, int32, float32 or float64. The *converter versions* "
    "are the operator's `_impl_v<N>` in TVM: for a model of opset K the converter uses the "
    "newest version <= K (the oldest if K is lower). Every operator must legalize to a "
    "static-shape TIR kernel; shapes are fixed at import (no dynamic dimensions)."
)

# Operators aot's tests compile and compare against the reference runtime
# (tests/compiler/test_float_models.py, tests/operators/test_onnx_float64.py);
# tests/operators checks these sets against the operators in those models.
TESTED: dict[str, frozenset[str]] = {
    # tests/int8/test_ops*.py: bit-exact with LiteRT; SQUEEZE and EXPAND_DIMS share
    # RESHAPE's handler but no test model uses them.
    "tflite-int8": frozenset(INT8_OPERATORS) - {"SQUEEZE", "EXPAND_DIMS"},
    "relax-tflite": _names(
        "ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D FULLY_CONNECTED "
        "MAX_POOL_2D MUL RELU RELU6 RESHAPE SOFTMAX"
    ),
    "relax-onnx": _names(
        "Add AveragePool Clip Concat Conv Exp Gemm Log MatMul MaxPool Mul Relu Reshape "
        "Sigmoid Softmax Tanh"
    ),
}


# -- onnx-int8: aot's integer ONNX importer (aot/frontend/onnx_int8.py) ---------------------

_QDQ = "QDQ group: DequantizeLinear inputs, one QuantizeLinear after it"
_Q8 = "int8 or uint8 activations (one type per operator)"
_W8 = "; weights int8 or uint8, per-tensor or per-channel (equal zero points); bias int32"

# Each entry is read off the handler in onnx_int8.py: the forms it is reached in (QOperator
# node, QDQ group), the ``expect`` dtypes and the attribute and shape checks it makes.
ONNX_INT8_OPERATORS: dict[str, tuple[str, str]] = {
    "Add": (_Q8, f"{_QDQ}; numpy broadcasting; either input may be a DequantizeLinear of a "
            "constant (int8, uint8 or an int32 bias: a MatMul + Add); as QLinearAdd where "
            "onnxruntime fuses it, else its float32 Add (docs/int8.md)"),
    "AveragePool": (_Q8, f"{_QDQ}; as QLinearAveragePool"),
    "Concat": (_Q8, f"{_QDQ}; as QLinearConcat"),
    "Conv": (_Q8 + _W8, f"{_QDQ} (a Relu or Clip between Conv and it folds into the "
             "range); as QLinearConv"),
    "ConvInteger": (
        "int8 or uint8 input and weights -> int32",
        "2-D (4-D NCHW), explicit pads, any stride, dilation and group; constant weights "
        "and zero points (per-tensor)",
    ),
    "DequantizeLinear": (
        "int8 or uint8 -> float32, per-tensor",
        "at the model output; of a constant it is the weight or bias of the group using it",
    ),
    "Flatten": (_Q8, "QOperator (an int8 tensor) or QDQ group with equal parameters; no kernel "
                "when the shape is unchanged"),
    "GlobalAveragePool": (_Q8, f"{_QDQ}; as QLinearGlobalAveragePool"),
    "Gemm": (_Q8 + _W8, f"{_QDQ}; constant B, transB, alpha; no transA, beta 1; as QGemm"),
    "LeakyRelu": (_Q8, f"{_QDQ}; as QLinearLeakyRelu"),
    "MatMul": (_Q8 + _W8, f"{_QDQ}; constant 2-D B; as QLinearMatMul"),
    "MatMulInteger": (
        "int8 or uint8 -> int32",
        "constant 2-D B; A of any rank; per-tensor zero points",
    ),
    "MaxPool": (_Q8, "QOperator (an int8 tensor) or QDQ group with equal parameters; 2-D, "
                "explicit pads, any kernel, stride and dilation; no ceil_mode, no Indices"),
    "Mul": (_Q8, f"{_QDQ}; either input may be a DequantizeLinear of a constant; as "
            "QLinearMul where onnxruntime fuses it, else its float32 Mul (docs/int8.md)"),
    "QGemm": (_Q8 + _W8, "com.microsoft; constant B, transB, alpha; no transA; quantized "
              "output (y_scale given)"),
    "QLinearAdd": (_Q8, "com.microsoft; numpy broadcasting; either input may be a "
                   "constant; input and output scales within 2**52 of each other"),
    "QLinearAveragePool": (_Q8, "com.microsoft; 2-D NCHW, explicit pads, count_include_pad; "
                           "no ceil_mode, dilation or channels_last"),
    "QLinearConcat": (_Q8, "com.microsoft; any axis and number of inputs; inputs with other "
                      "parameters than the output are requantized by a 256-entry table"),
    "QLinearConv": (_Q8 + _W8, "2-D (4-D NCHW input, OIHW weights), explicit pads, any "
                    "stride, dilation and group; no auto_pad"),
    "QLinearGlobalAveragePool": (_Q8, "com.microsoft; 4-D NCHW; no channels_last"),
    "QLinearLeakyRelu": (_Q8, "com.microsoft; onnxruntime's 256-entry table"),
    "QLinearMatMul": (_Q8 + _W8, "constant 2-D B; A of any rank"),
    "QLinearMul": (_Q8, "com.microsoft; numpy broadcasting; either input may be a constant"),
    "QLinearSigmoid": (_Q8, "com.microsoft; onnxruntime's 256-entry table (read from "
                       "onnxruntime at import)"),
    "QLinearSoftmax": (_Q8, "com.microsoft; last axis only; output scale above 2**-22"),
    "QuantizeLinear": (
        "float32 -> int8 or uint8, per-tensor",
        "at the model input; after a DequantizeLinear of the same parameters it is dropped "
        "(other parameters are refused)",
    ),
    "Relu": (_Q8, f"{_QDQ}, or folded into the Conv/MatMul/Gemm before it; else a 256-entry "
             "table of the float32 result"),
    "Clip": (_Q8, f"{_QDQ} with constant bounds, or folded into the Conv/MatMul/Gemm before "
             "it; else a 256-entry table of the float32 result"),
    "Reshape": (_Q8, "QOperator (an int8 tensor) or QDQ group with equal parameters; constant "
                "shape (0 and -1 allowed)"),
    "Sigmoid": (_Q8, f"{_QDQ}; as QLinearSigmoid"),
    "Softmax": (_Q8, f"{_QDQ}; last axis only; as QLinearSoftmax"),
    "Transpose": (_Q8, "QOperator (an int8 tensor) or QDQ group with equal parameters; any "
                  "permutation"),
}  # fmt: skip

# All of them run in tests/onnx_int8 against onnxruntime (tests/onnx_int8/test_table.py
# checks that every name appears there).
ONNX_INT8_TESTED: frozenset[str] = frozenset(ONNX_INT8_OPERATORS)

ONNX_INT8_SUMMARY = (
    "aot's own integer ONNX importer, picked by `--frontend auto` for an .onnx model that "
    "contains a QuantizeLinear/DequantizeLinear, a `QLinear*` or an `*Integer` operator. It "
    "reads QOperator models (onnxruntime's com.microsoft operators included) and QDQ models "
    "as `onnxruntime.quantization.quantize_static` writes them, folding each "
    "DequantizeLinear -> operator -> QuantizeLinear group into the integer operator "
    "onnxruntime's optimizer makes of it, and follows onnxruntime's CPU kernels bit for bit "
    "(float32 requantization rounded to nearest even, see docs/int8.md). Weights stay int8 "
    "or uint8, biases int32, activations int8 or uint8 (NCHW, as in the file); float32 "
    "exists only at a QuantizeLinear input or DequantizeLinear output. A float operator "
    "outside a QDQ group is refused."
)


# -- the importers' own sets -----------------------------------------------------------------


def int8_supported() -> set[str]:
    from aot.frontend.tflite_int8 import SUPPORTED_OPERATORS

    return set(SUPPORTED_OPERATORS)


def onnx_int8_supported() -> set[str]:
    from aot.frontend.onnx_int8 import SUPPORTED_OPERATORS

    return set(SUPPORTED_OPERATORS)


def relax_tflite_supported() -> set[str]:
    from aot.frontend.relax_tflite import _supported_operators

    return _supported_operators()


def relax_tflite_quantized() -> frozenset[str]:
    """Operators the Relax TFLite converter accepts with quantized tensors."""
    from tvm.relax.frontend.tflite import tflite_frontend

    return frozenset(getattr(tflite_frontend.OperatorConverter, "_SUPPORTED_QUANTIZED_OPS", ()))


def relax_onnx_supported() -> dict[str, tuple[int, ...]]:
    from aot.frontend.relax_onnx import supported_operators

    return supported_operators()


def _relax_tflite_note(name: str) -> str | None:
    if name.startswith("STABLEHLO_"):
        return _STABLEHLO_NOTE
    return RELAX_TFLITE_NOTES.get(name)


# -- tables ----------------------------------------------------------------------------------


def _missing(frontend: str, names: Iterable[str]) -> NoReturn:
    from aot.errors import InternalError

    raise InternalError(
        f"aot/frontend/operators.py has no {frontend} entry for {', '.join(sorted(names))}; "
        "add one (tests/operators checks this)"
    )


def int8_table() -> FrontendTable:
    from aot.frontend.tflite_int8.indexing import CONTROL_FLOW
    from aot.frontend.tflite_int8.logic import FLOAT_ONLY

    supported = int8_supported()
    float_only = set(FLOAT_ONLY) & set(TFLM_BUILTIN_OPERATORS)
    control_flow = set(CONTROL_FLOW) & set(TFLM_BUILTIN_OPERATORS)
    if supported - set(INT8_OPERATORS):
        _missing("tflite-int8", supported - set(INT8_OPERATORS))
    entries = tuple(
        OperatorEntry(name, *INT8_OPERATORS[name], tested=name in TESTED["tflite-int8"])
        for name in sorted(supported)
    )
    return FrontendTable(
        name="tflite-int8",
        title="TFLite int8 (aot's importer)",
        source="aot.frontend.tflite_int8.SUPPORTED_OPERATORS",
        summary=INT8_SUMMARY,
        operators=entries,
        not_yet_supported=tuple(
            sorted(set(TFLM_BUILTIN_OPERATORS) - supported - float_only - control_flow)
        )
        + tuple(f"CUSTOM:{name}" for name in TFLM_CUSTOM_OPERATORS),
        float_only=tuple(sorted(float_only)),
        control_flow=tuple(sorted(control_flow)),
    )


def onnx_int8_table() -> FrontendTable:
    supported = onnx_int8_supported()
    if supported - set(ONNX_INT8_OPERATORS):
        _missing("onnx-int8", supported - set(ONNX_INT8_OPERATORS))
    entries = tuple(
        OperatorEntry(name, *ONNX_INT8_OPERATORS[name], tested=name in ONNX_INT8_TESTED)
        for name in sorted(supported)
    )
    return FrontendTable(
        name="onnx-int8",
        title="ONNX int8 (aot's importer)",
        source="aot.frontend.onnx_int8.SUPPORTED_OPERATORS",
        summary=ONNX_INT8_SUMMARY,
        operators=entries,
    )


def relax_tflite_table() -> FrontendTable:
    supported = relax_tflite_supported()
    missing = {n for n in supported if _relax_tflite_note(n) is None}
    if missing:
        _missing("relax-tflite", missing)
    quantized = relax_tflite_quantized()
    entries = []
    for name in sorted(supported):
        dtypes = "float32, int8 via float" if name in quantized else "float32"
        tested = name in TESTED["relax-tflite"]
        entries.append(OperatorEntry(name, dtypes, _relax_tflite_note(name) or "", tested))
    return FrontendTable(
        name="relax-tflite",
        title="TFLite float (TVM Relax TFLite frontend)",
        source="tvm.relax.frontend.tflite OperatorConverter.convert_map",
        summary=RELAX_TFLITE_SUMMARY,
        operators=tuple(entries),
    )


def relax_onnx_table() -> FrontendTable:
    supported = relax_onnx_supported()
    if set(supported) - set(RELAX_ONNX_NOTES):
        _missing("relax-onnx", set(supported) - set(RELAX_ONNX_NOTES))
    entries = tuple(
        OperatorEntry(
            name,
            *RELAX_ONNX_NOTES[name],
            tested=name in TESTED["relax-onnx"],
            versions=supported[name],
        )
        for name in sorted(supported)
    )
    return FrontendTable(
        name="relax-onnx",
        title="ONNX (TVM Relax ONNX frontend)",
        source="tvm.relax.frontend.onnx.onnx_frontend._get_convert_map()",
        summary=RELAX_ONNX_SUMMARY,
        operators=entries,
    )


def tables(frontend: str | None = None) -> list[FrontendTable]:
    builders = {
        "tflite-int8": int8_table,
        "onnx-int8": onnx_int8_table,
        "relax-tflite": relax_tflite_table,
        "relax-onnx": relax_onnx_table,
    }
    names = FRONTEND_NAMES if frontend is None else (frontend,)
    return [builders[name]() for name in names]


# -- renderings ------------------------------------------------------------------------------


def table_to_json(table: FrontendTable) -> dict[str, object]:
    operators: list[dict[str, object]] = []
    for entry in table.operators:
        item: dict[str, object] = {
            "name": entry.name,
            "dtypes": entry.dtypes,
            "limits": entry.limits,
            "tested": entry.tested,
        }
        if table.name == "relax-onnx":
            item["converter_versions"] = list(entry.versions)
        operators.append(item)
    data: dict[str, object] = {
        "frontend": table.name,
        "title": table.title,
        "source": table.source,
        "summary": table.summary,
        "operators": operators,
    }
    if table.not_yet_supported:
        data["not_yet_supported"] = list(table.not_yet_supported)
        data["not_yet_supported_source"] = "TensorFlow Lite Micro MicroMutableOpResolver"
    if table.float_only:
        data["float_only"] = list(table.float_only)
    if table.control_flow:
        data["control_flow"] = list(table.control_flow)
    return data


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


MARKDOWN_INTRO = """\
# Supported operators

Generated by `python3 -m aot operators --markdown > docs/operators.md` from the frontends'
own tables (aot/frontend/operators.py); `tests/operators` fails when this page and the code
differ, or when an importer gains an operator without an entry. `aot operators` prints the
same lists (`--frontend NAME`, `--json`, `aot operators CONV_2D` for one operator).

`aot build --frontend auto` picks **tflite-int8** for a `.tflite` whose inputs and outputs
are all quantized, **relax-tflite** for other `.tflite` files, **onnx-int8** for `.onnx`
files with quantization operators (QuantizeLinear/DequantizeLinear, `QLinear*`,
`*Integer`) and **relax-onnx** for other `.onnx` files. An operator a frontend does not
list stops `aot build` with its name and position in the graph. *tested* marks operators
aot's tests check against the reference runtime: int8 bit-exact with LiteRT on random
models (tests/int8/test_ops.py), int8 ONNX bit-exact with onnxruntime (tests/onnx_int8),
float compiled to C and run on the host against TFLite / onnxruntime (tests/compiler,
tests/operators). The others are accepted by the frontend and compile when they legalize
to static-shape TIR kernels.
"""

# "What converters emit": graph patterns converters write that aot handles at import, and
# what it still refuses, each with the converter setting that avoids it. Rows are
# (pattern, what aot does, converter setting); other importers' rows may be appended.
CONVERTER_PATTERNS: list[tuple[str, str, str]] = [
    (
        "Keras 3 dynamic batch (`keras.Input(shape)` without `batch_size`): inputs with "
        "`shape_signature` -1 in dimension 0",
        "folded at import (aot/frontend/tflite_static.py): the batch is fixed to 1 and the "
        "build log says so; shapes are inferred operator by operator over the converter's "
        "placeholders (a RESHAPE output stored as `[1, 1]`)",
        "none needed; `keras.Input(shape, batch_size=1)` makes the converter fold it itself",
    ),
    (
        "Shape arithmetic on a dynamic batch: SHAPE -> STRIDED_SLICE / GATHER -> "
        "REDUCE_PROD -> PACK / CONCATENATION -> RESHAPE (Flatten, Reshape, a Dense on a "
        "3-D tensor)",
        "folded into constants at import, computed as TFLite's kernels compute them; the "
        "operators left without a reader are removed. Folded when every input is constant: "
        "{folded}",
        "none needed; a fixed batch (`batch_size=1`) gives the same graph without it",
    ),
    (
        "Float islands in an int8 export: Keras LayerNormalization's MEAN -> DEQUANTIZE -> "
        "NEG (float32) -> QUANTIZE; an unrolled Keras LSTM's DEQUANTIZE -> SPLIT (float32) "
        "-> QUANTIZE",
        "runs: float32 NEG and SPLIT are exact, DEQUANTIZE and QUANTIZE are TFLite's",
        "none needed",
    ),
    (
        "A dynamic dimension other than the batch (`keras.Input((None, 16))`, a variable "
        "sequence length)",
        "refused with a one-line error naming the input: aot compiles one static shape",
        "fix the dimension when exporting (`keras.Input((8, 16))`, or the converter's "
        "concrete input shape)",
    ),
    (
        "Keras 3 `UpSampling2D`: EXPAND_DIMS -> TILE -> RESHAPE, TILE on int8 (version 3)",
        "imported (TILE is a copy). TensorFlow Lite Micro has no TILE; LiteRT 2.3's "
        "reference resolver registers TILE up to version 2, so `aot validate` and the tests "
        "run such a model with its TILE read as version 2 (the same kernel, which copies "
        "int8)",
        "none needed; for a model TensorFlow Lite Micro must run too, "
        "`keras.layers.Resizing(h, w, interpolation='nearest')` exports "
        "RESIZE_NEAREST_NEIGHBOR",
    ),
    (
        "Integer arithmetic on int32 tensors that are not constant (an int32 model input "
        "feeding GATHER, STRIDED_SLICE, CONCATENATION, PACK, ADD or MUL)",
        "refused with the operator's name and dtype: these operators take int8 (and int16) "
        "data; int32 reaches them only as folded shape arithmetic",
        "keep integer index arithmetic out of the exported graph, or feed indices to "
        "GATHER / EMBEDDING_LOOKUP, which take int32 indices",
    ),
]


def _converter_patterns_markdown() -> str:
    from aot.frontend.tflite_static import FOLDED_OPERATORS

    folded = ", ".join(f"`{name}`" for name in FOLDED_OPERATORS)
    out = [
        "## What converters emit\n",
        "Graph patterns converters write that aot handles at import, and what it still "
        "refuses, with the converter setting that avoids each (docs/int8.md, section "
        "'Dynamic batch', describes the import step).\n",
        "| pattern | aot | converter setting |",
        "|---|---|---|",
    ]
    for pattern, handling, setting in CONVERTER_PATTERNS:
        row = [pattern, handling.format(folded=folded), setting]
        out.append("| " + " | ".join(_cell(text) for text in row) + " |")
    return "\n".join(out) + "\n"


MARKDOWN_OUTRO = """\
## Data types at the model boundary

Model inputs and outputs are int8, uint8, int16, int32, float32 or float64 (`aot_dtype_t`
in aot/runtime_c/include/aot/model.h, codes 0-5; the serial protocol carries the same
codes). Other types (int64, bool) exist only between operators. An ONNX input or output
of any other element type (float16, bfloat16, strings, ...) is refused with the type's
name and code: convert the model to one of these types first.

Decision, float64: ONNX models with double tensors compile as they are (C `double`,
double libm functions, exact hex literals) rather than being refused or narrowed to
float32, because TVM converts them and the results then match onnxruntime in double
precision (relative error below 1e-12). The Cortex-M7 (fpu:dp) and Cortex-M55 boards
run them on their double-precision FPU; the other cores use the compiler's software
doubles (slower, same results). tests/operators/test_onnx_float64.py checks the host,
Cortex-M4 (soft doubles) and Cortex-M55 (`vmul.f64` in the firmware).
"""


def render_markdown(selected: list[FrontendTable] | None = None) -> str:
    out = [MARKDOWN_INTRO]
    for table in selected if selected is not None else tables():
        count = len(table.operators)
        out.append(f"## {table.title}: `{table.name}`\n")
        out.append(f"{table.summary}\n")
        out.append(f"{count} operators, from `{table.source}`.\n")
        if table.name == "relax-onnx":
            out.append("| operator | dtypes | limits | converter versions | tested |")
            out.append("|---|---|---|---|---|")
        else:
            out.append("| operator | dtypes | limits | tested |")
            out.append("|---|---|---|---|")
        for e in table.operators:
            row = [f"`{e.name}`", _cell(e.dtypes), _cell(e.limits)]
            if table.name == "relax-onnx":
                row.append(", ".join(str(v) for v in e.versions))
            row.append("yes" if e.tested else "")
            out.append("| " + " | ".join(row) + " |")
        out.append("")
        if table.not_yet_supported:
            builtins = [n for n in table.not_yet_supported if not n.startswith("CUSTOM:")]
            custom = [n for n in table.not_yet_supported if n.startswith("CUSTOM:")]
            out.append("### Not yet supported (offered by TensorFlow Lite Micro)\n")
            resolver = (
                f"TensorFlow Lite Micro's `MicroMutableOpResolver` (tflite-micro {TFLM_REVISION})"
            )
            if builtins:
                out.append(
                    f"Builtin operators {resolver} registers that this importer does not "
                    f"({len(builtins)}): " + ", ".join(f"`{n}`" for n in builtins) + ".\n"
                )
            else:  # every builtin is supported, float-only or control flow (listed below)
                out.append(
                    f"Every builtin operator {resolver} registers is supported above, runs "
                    "in float32 only or is control flow (below).\n"
                )
            out.append(
                "Its custom operators, none supported: "
                + ", ".join(f"`{n}`" for n in custom)
                + ".\n"
            )
        if table.float_only:
            out.append("### Float only (use the float frontend)\n")
            out.append(
                f"Operators TensorFlow Lite Micro runs in float32 only ({len(table.float_only)}), "
                "so an int8 model cannot contain them; this importer refuses them with a "
                "one-line error naming the float frontend (`--frontend relax-tflite`): "
                + ", ".join(f"`{n}`" for n in table.float_only)
                + ".\n"
            )
        if table.control_flow:
            out.append("### Control flow (refused)\n")
            out.append(
                f"Operators that run a subgraph chosen or repeated at run time "
                f"({len(table.control_flow)}): aot compiles one static graph whose every "
                "operator runs once per inference, so this importer refuses them with a "
                "one-line error that says so and what to export instead (the branch taken, "
                "or the loop unrolled): "
                + ", ".join(f"`{n}`" for n in table.control_flow)
                + ". CALL_ONCE, which runs its subgraph once before the first inference, is "
                "supported: its constant assignments are folded into the variables' "
                "initial values.\n"
            )
    if selected is None:
        out.append(_converter_patterns_markdown())
    out.append(MARKDOWN_OUTRO)
    return "\n".join(out).rstrip("\n") + "\n"


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def render_text(selected: list[FrontendTable], width: int = 100) -> str:
    lines: list[str] = []
    for table in selected:
        count = len(table.operators)
        noun = "operator" if count == 1 else "operators"
        lines.append(f"{table.title} [{table.name}]: {count} {noun}")
        name_w = max((len(e.name) + 4 for e in table.operators), default=10)
        dtype_w = min(max((len(e.dtypes) for e in table.operators), default=6), 28)
        onnx = table.name == "relax-onnx"
        version_w = 10 if onnx else 0
        header = f"  {'OPERATOR':<{name_w}}"
        if onnx:
            header += f"{'VERSIONS':<{version_w}}"
        lines.append(f"{header}{'DTYPES':<{dtype_w}}  LIMITS")
        limit_w = max(width - name_w - version_w - dtype_w - 4, 30)
        for e in table.operators:
            name = e.name + (" *" if e.tested else "")
            if onnx:
                name = f"{name:<{name_w}}" + ",".join(str(v) for v in e.versions)
            dtypes, limits = _wrap(e.dtypes, dtype_w), _wrap(e.limits, limit_w)
            for i in range(max(len(dtypes), len(limits))):
                left = name if i == 0 else ""
                mid = dtypes[i] if i < len(dtypes) else ""
                right = limits[i] if i < len(limits) else ""
                line = f"  {left:<{name_w + version_w}}{mid:<{dtype_w}}  {right}"
                lines.append(line.rstrip())
        if table.not_yet_supported:
            lines.append("  not yet supported (TensorFlow Lite Micro has them):")
            lines.extend("    " + line for line in _wrap(", ".join(table.not_yet_supported), 96))
        if table.float_only:
            lines.append("  float only (use --frontend relax-tflite):")
            lines.extend("    " + line for line in _wrap(", ".join(table.float_only), 96))
        if table.control_flow:
            lines.append("  control flow (refused: one static graph):")
            lines.extend("    " + line for line in _wrap(", ".join(table.control_flow), 96))
        lines.append("")
    lines.append("* tested: checked against the reference runtime by aot's tests")
    if any(t.name == "relax-onnx" for t in selected):
        lines.append("VERSIONS: ONNX converter versions; a model of opset K uses the newest <= K")
    return "\n".join(lines)


def find(name: str, selected: list[FrontendTable]) -> list[FrontendTable]:
    """The tables reduced to the operator called ``name`` (any case)."""
    found = []
    for table in selected:
        entries = tuple(e for e in table.operators if e.name.lower() == name.lower())
        if entries:
            found.append(
                FrontendTable(table.name, table.title, table.source, table.summary, entries)
            )
    return found
