"""The registry of the TFLite int8 importer's operators: one entry per TFLite builtin.

Each entry is an :class:`~aot.operators.entries.Operator`: its row of docs/operators.md
(the dtypes and limits its handler accepts) and the kinds it is imported as whose
parameters a backend reads, each with its typed parameters dataclass, its family (the
importer module ``aot/frontend/tflite_int8/<family>.py`` that emits it, the compute module
``aot/ops/<family>.py``) and its TE compute. The importer refuses to register a handler
for a builtin without an entry here, and tests/operators checks every entry against its
handler, its compute and the docs (docs/architecture.md, "Adding an operator").
"""

from __future__ import annotations

from aot.operators.entries import CORE_FAMILY, Operator, OperatorKind
from aot.operators.params import (
    AddParams,
    ConvParams,
    FullyConnectedParams,
    PoolParams,
    TransposeConvParams,
)

# Every int8 handler requires quantized int8 tensors (``_Importer.expect``); the summary
# says they are per-tensor, so "int8" alone means exactly that.
_INT8 = "int8"
_FUSED = "fused activation NONE, RELU, RELU6 or RELU_N1_TO_1"
# Operators that copy or compare stored values: TFLite does not requantize them.
_SAME_Q = "int8; inputs and outputs with one scale and zero point"
_SAME_Q_OR_INT16 = "int8 or int16; inputs and outputs with one scale and zero point"
_INT8_OR_INT16 = "int8; int16 (zero point 0)"
_INT8_OR_INT16_ANY_ZP = "int8; int16 (per-tensor, any zero point: TFLite does not rescale)"
_RESHAPE_LIMITS = "any rank; output shape from the output tensor; no kernel when unchanged"
_INT16_ADD_SUB = (
    "16x8: int16 (zero point 0); power-of-two scales with pot_scale_int16 (the default) "
    "take TFLite's power-of-two path (one input at the output's scale, the other at most "
    "2**15 finer), any other scales the general path"
)
_INT16_TABLE = (
    "input scale below 2.67 (a power of two from Q3.12 takes TFLite's 3 << shift path, "
    "any other the general multiplier); the interpolated 256-entry sigmoid table"
)

# Each entry is read off the handler in tflite_int8.py: the ``expect`` dtypes,
# ``per_tensor`` checks, options honoured and the shape checks it makes.
_TABLE: dict[str, Operator] = {
    "ABS": Operator(
        _INT8_OR_INT16, "any rank; requantizes when the input and output scales differ"
    ),
    "ADD": Operator(
        f"int8, both inputs per-tensor. {_INT16_ADD_SUB}",
        f"any rank, numpy broadcasting (output = broadcast shape; the int16 power-of-two "
        f"path needs equal shapes); {_FUSED}",
        kinds=(OperatorKind("add_int8", AddParams, CORE_FAMILY, "add"),),
    ),
    "ARG_MAX": Operator(
        "int8 -> int32 or int64 (int64 only between operators: the model boundary takes int32)",
        "any rank; one constant axis (negative allowed); the first index of the maximum",
    ),
    "ARG_MIN": Operator(
        "int8 -> int32 or int64 (int64 only between operators: the model boundary takes int32)",
        "any rank; one constant axis (negative allowed); the first index of the minimum",
    ),
    "AVERAGE_POOL_2D": Operator(
        _INT8_OR_INT16_ANY_ZP,
        f"4-D NHWC; SAME or VALID padding (padded taps are not counted); any filter and "
        f"stride, no dilation; {_FUSED}",
        kinds=(OperatorKind("average_pool2d_int8", PoolParams, CORE_FAMILY, "average_pool2d"),),
    ),
    "BATCH_MATMUL": Operator(
        "int8, both inputs per-tensor (any zero points); the second may be a constant",
        "rank >= 2, numpy broadcasting over the batch dimensions; adj_x and adj_y",
    ),
    "CONCATENATION": Operator(
        "int8; inputs with other scales or zero points than the output are requantized. "
        "int16 (zero points 0): copied whatever the scales, as TFLite does",
        "any rank, any axis (negative allowed); any number of inputs; no fused activation",
    ),
    "CONV_2D": Operator(
        "int8; weights int8 per-tensor or per-channel, zero point 0; bias int32. 16x8: "
        "int16 (zero point 0), bias int64",
        f"4-D NHWC input, OHWI weights; SAME or VALID padding; any stride and dilation; "
        f"grouped when the input channels are a multiple of the weights' depth; {_FUSED}",
        kinds=(OperatorKind("conv2d_int8", ConvParams, CORE_FAMILY, "conv2d"),),
    ),
    "DEPTHWISE_CONV_2D": Operator(
        "int8; weights int8 [1, H, W, C] per-tensor or per-channel, zero point 0; bias int32. "
        "16x8: int16 (zero point 0), bias int64, optional",
        f"4-D NHWC; depth multiplier >= 1; SAME or VALID padding; any stride and dilation; "
        f"{_FUSED}",
        kinds=(OperatorKind("depthwise_conv2d_int8", ConvParams, CORE_FAMILY, "depthwise_conv2d"),),
    ),
    "DEPTH_TO_SPACE": Operator(_SAME_Q, "4-D NHWC; any block size (DCR order)"),
    "DEQUANTIZE": Operator(
        "int8, uint8 or int16 -> float32",
        "any rank; meant for the model boundary",
    ),
    "EXP": Operator(_INT8, "any rank; 256-entry table"),
    "EXPAND_DIMS": Operator(
        _INT8_OR_INT16_ANY_ZP,
        _RESHAPE_LIMITS,
    ),
    "FULLY_CONNECTED": Operator(
        "int8; weights int8 [out, depth] per-tensor (any zero point) or per-channel (zero "
        "point 0); bias int32, optional. 16x8: int16 input and output (zero point 0), "
        "bias int64 (int32 with quantized_bias_type INT32), optional",
        f"input of any rank read as [batches, depth]; DEFAULT weights format only; {_FUSED}",
        kinds=(
            OperatorKind(
                "fully_connected_int8", FullyConnectedParams, CORE_FAMILY, "fully_connected"
            ),
        ),
    ),
    "TILE": Operator(
        f"{_SAME_Q}; int8 or int16; multiples int32 or int64, constant",
        "any rank; one multiple >= 1 per dimension (Keras 3's UpSampling2D exports it; "
        "TensorFlow Lite Micro has no TILE)",
    ),
    "GATHER": Operator(
        f"{_SAME_Q}; indices int32 or int64, constant or computed",
        "any rank, any axis (negative allowed), batch_dims 0; constant indices must lie in "
        "range, computed ones are clamped to it",
    ),
    "HARD_SWISH": Operator(
        "int8 (int16 is refused: no TFLite kernel runs it)",
        "any rank; the output scale must exceed 1/128 of the input scale",
    ),
    "L2_NORMALIZATION": Operator(
        _INT8,
        "last axis, any rank, at most 33025 values per row (the int32 sum of squares); "
        "output zero point 0 and scale 1/128 (as TFLite requires); no fused activation",
    ),
    "LEAKY_RELU": Operator(_INT8_OR_INT16, "any rank; alpha >= 0"),
    "LOG_SOFTMAX": Operator(
        _INT8,
        "last axis, any rank; output zero point 127 and scale 16/256 (as TFLite requires)",
    ),
    "LOGISTIC": Operator(
        _INT8_OR_INT16,
        "any rank; int8: output scale 1/256 (as TFLite requires), 256-entry table; int16: "
        f"output scale 2**-15, {_INT16_TABLE}",
    ),
    "MAXIMUM": Operator(_SAME_Q_OR_INT16, "any rank, numpy broadcasting; compares stored values"),
    "MAX_POOL_2D": Operator(
        _INT8_OR_INT16_ANY_ZP,
        f"4-D NHWC; SAME or VALID padding; any filter and stride, no dilation; {_FUSED}",
    ),
    "MEAN": Operator(
        _INT8_OR_INT16,
        "any rank; constant axes (negative allowed); keep_dims honoured",
    ),
    "MINIMUM": Operator(_SAME_Q_OR_INT16, "any rank, numpy broadcasting; compares stored values"),
    "MUL": Operator(
        "int8, both inputs per-tensor. 16x8: int16 (zero point 0)",
        f"any rank, numpy broadcasting (output = broadcast shape); {_FUSED}",
    ),
    "NEG": Operator(
        f"{_SAME_Q}; float32 between a DEQUANTIZE and a QUANTIZE",
        "any rank; negates the stored value (as TFLite; -128 stays -128); float32 exactly "
        "(Keras LayerNormalization's export negates its mean in float)",
    ),
    "PACK": Operator(
        _SAME_Q_OR_INT16, "any rank, any axis (negative allowed); inputs of one shape"
    ),
    "PAD": Operator(
        _INT8_OR_INT16_ANY_ZP,
        "any rank; constant non-negative paddings, one pair per dimension; pads with the "
        "output zero point",
    ),
    "PADV2": Operator(
        _INT8_OR_INT16_ANY_ZP,
        "any rank; constant non-negative paddings, one pair per dimension; constant pad value",
    ),
    "PRELU": Operator(
        "int8; alpha int8 per-tensor, constant or computed",
        "up to 4-D, alpha broadcast to the input (numpy rules)",
    ),
    "QUANTIZE": Operator(
        "float32, int8 or uint8 -> int8 or uint8; float32, int8 or int16 -> int16; int16 "
        "-> int8 (int16 -> int16 with zero points 0); int16 -> int32 with zero point 0 "
        "(TFLite Micro)",
        "any rank; float32 -> int8/uint8/int16 at the model boundary, the integer ones requantize",
    ),
    "REDUCE_MAX": Operator(
        _SAME_Q, "any rank; constant axes (negative allowed); keep_dims honoured"
    ),
    "RELU": Operator(_INT8_OR_INT16, "any rank; requantizes when input and output scales differ"),
    "RELU6": Operator(_INT8_OR_INT16, "any rank; requantizes when input and output scales differ"),
    "RELU_N1_TO_1": Operator(
        "int8 (int16 is refused: no TFLite kernel runs it)",
        "any rank; requantizes when input and output scales differ",
    ),
    "RESHAPE": Operator(_INT8_OR_INT16_ANY_ZP, _RESHAPE_LIMITS),
    "RESIZE_BILINEAR": Operator(
        _SAME_Q,
        "4-D NHWC; constant size; align_corners or half_pixel_centers (not both); "
        "integer interpolation (ResizeBilinearInteger)",
    ),
    "RESIZE_NEAREST_NEIGHBOR": Operator(
        _SAME_Q_OR_INT16,
        "4-D NHWC; constant size; align_corners or half_pixel_centers (not both)",
    ),
    "RSQRT": Operator(
        _INT8,
        "any rank; 256-entry table; inputs at or below the zero point give 127 (LiteRT "
        "refuses those below it at run time)",
    ),
    "SLICE": Operator(
        _SAME_Q_OR_INT16,
        "any rank; constant begin and size (int32 or int64, size -1 = to the end)",
    ),
    "SOFTMAX": Operator(
        _INT8_OR_INT16,
        "last axis; any beta; output zero point -128 and scale 1/256 (int8) or zero point 0 "
        "and scale 1/32768 (int16), as TFLite requires; int16 through TFLite's 513-entry "
        "exp and 1/(1+x) tables; int8 -> int16 with output zero point -32768 and scale "
        "1/65536 (TFLite Micro)",
    ),
    "SPACE_TO_DEPTH": Operator(_SAME_Q, "4-D NHWC; any block size dividing height and width"),
    "SPLIT": Operator(
        f"{_SAME_Q_OR_INT16}; float32 between a DEQUANTIZE and QUANTIZEs",
        "any rank; constant axis; equal parts (num_splits); float32 copied exactly (Keras' "
        "unrolled LSTM splits its gates in float)",
    ),
    "SPLIT_V": Operator(_SAME_Q_OR_INT16, "any rank; constant axis and sizes (one may be -1)"),
    "SQUARED_DIFFERENCE": Operator(
        "int8, both inputs per-tensor",
        "any rank, numpy broadcasting; the output scale must keep TFLite's output "
        "multiplier below 1 (output scale > 4 max(input scale)^2 / 2^14)",
    ),
    "SQUEEZE": Operator(_INT8_OR_INT16_ANY_ZP, _RESHAPE_LIMITS),
    "STRIDED_SLICE": Operator(
        _INT8_OR_INT16_ANY_ZP,
        "any rank; constant begin, end and strides (one per dimension, stride != 0); "
        "begin, end and shrink-axis masks and offset; no ellipsis or new-axis mask",
    ),
    "SUB": Operator(
        f"int8, both inputs per-tensor. {_INT16_ADD_SUB}",
        f"any rank, numpy broadcasting (output = broadcast shape); {_FUSED}",
    ),
    "SUM": Operator(
        _INT8,
        "any rank; constant axes (negative allowed); keep_dims honoured; requantized by "
        "the input/output scale ratio",
    ),
    "SVDF": Operator(
        "int8 input and output, per-tensor; feature weights int8, time weights and state "
        "both int16 (state zero point 0) or both int8 (TFLite Micro's form, any state zero "
        "point), bias int32, optional",
        "2-D input [batch, depth]; any rank and memory size; fused activation RELU (as "
        "TFLite's integer kernel requires; it applies none); the state is kept between "
        "inferences in the persistent pool and reset by aot_<name>_reset()",
    ),
    "TANH": Operator(
        _INT8_OR_INT16,
        f"any rank; int8: 256-entry table; int16: output scale 2**-15, {_INT16_TABLE}",
    ),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": Operator(
        "8x8: int8 input, output and output state, per-tensor; int8 weights (zero point 0), "
        "int32 biases, int16 cell state (zero point 0, scale 2**-15..2**-9), int16 "
        "peephole and layer norm weights; 16x8: int16 input, output and output state "
        "(zero point 0), int8 weights (zero point 0), int64 biases, int16 cell state "
        "(zero point 0, power-of-two scale)",
        "3-D input, batch- or time-major; 8x8 (as LiteRT): CIFG, peephole, layer "
        "normalization, projection (int8 weights, optional int32 bias, projection clip), "
        "cell clip, fused activation TANH and the converter's 5 intermediate tensors; "
        "16x8 (as TFLite Micro, which LiteRT cannot run): the standard LSTM with cell "
        "clip and TANH, 24 inputs, intermediates ignored; CIFG, peephole, projection and "
        "layer norm refused (TFLite Micro has none); every time step calls the same 3 "
        "kernels; both states are kept in the persistent pool and reset by "
        "aot_<name>_reset()",
    ),
    "TRANSPOSE": Operator(_INT8_OR_INT16_ANY_ZP, "any rank; constant permutation"),
    "TRANSPOSE_CONV": Operator(
        "int8; weights int8 OHWI per-tensor or per-channel, zero point 0; bias int32, optional. "
        "16x8: int16 (zero point 0), bias int64 (int64 sums) or, with quantized_bias_type "
        "INT32, int32 (int32 sums, as LiteRT)",
        f"4-D NHWC; constant output shape; SAME or VALID padding; any stride, no dilation; "
        f"{_FUSED}",
        kinds=(
            OperatorKind(
                "transpose_conv2d_int8",
                TransposeConvParams,
                "transpose_and_norms",
                "transpose_conv2d",
            ),
        ),
    ),
    "UNPACK": Operator(_SAME_Q_OR_INT16, "any rank, any axis (negative allowed)"),
}

# Issue 13, group D (aot/frontend/tflite_int8/logic.py), kept apart from the table above so
# that parallel additions do not collide.
_COMPARISON = (
    "int8 (per-tensor, scales in (0, 1)) or int32 -> bool; both inputs of one dtype",
    "any rank, numpy broadcasting; int8 inputs are compared after TFLite's scaling (left "
    "shift 8 and each input's own scale), so values quantized differently compare as reals",
)
_LOGICAL = ("bool", "any rank, numpy broadcasting")
_TABLE.update(
    {
        "EQUAL": Operator(*_COMPARISON),
        "NOT_EQUAL": Operator(*_COMPARISON),
        "GREATER": Operator(*_COMPARISON),
        "GREATER_EQUAL": Operator(*_COMPARISON),
        "LESS": Operator(*_COMPARISON),
        "LESS_EQUAL": Operator(*_COMPARISON),
        "LOGICAL_AND": Operator(*_LOGICAL),
        "LOGICAL_OR": Operator(*_LOGICAL),
        "LOGICAL_NOT": Operator("bool", "any rank"),
        "SELECT_V2": Operator(
            "condition bool; x, y and output int8 with one scale and zero point, or int32",
            "up to 5-D, numpy broadcasting of all three inputs; copies stored values",
        ),
        "REDUCE_MIN": Operator(
            _SAME_Q, "any rank; constant axes (negative allowed); keep_dims honoured"
        ),
        "MIRROR_PAD": Operator(
            _SAME_Q,
            "any rank; constant paddings (int32 or int64), each at most the dimension (minus "
            "one in REFLECT mode); REFLECT or SYMMETRIC",
        ),
        "REVERSE_V2": Operator(
            _SAME_Q, "any rank; constant axes (negative allowed), one or several"
        ),
        "BROADCAST_TO": Operator(_SAME_Q, "any rank; constant shape; numpy broadcasting"),
        "SPACE_TO_BATCH_ND": Operator(
            f"{_SAME_Q}; int16 (a dilated Conv1D in a 16x8 export)",
            "3-D or 4-D (as TFLite); constant block shape and paddings; padded values are "
            "the output zero point",
        ),
        "BATCH_TO_SPACE_ND": Operator(
            f"{_SAME_Q}; int16 (a dilated Conv1D in a 16x8 export)",
            "3-D or 4-D (as TFLite); constant block shape and crops",
        ),
        "GATHER_ND": Operator(
            f"{_SAME_Q}; indices int32, int64 or int16, constant or computed",
            "any rank; index depth up to the input's rank; constant indices must lie in "
            "range, computed ones are clamped to it",
        ),
    }
)

# Indexing, shape and resource-variable operators (aot/frontend/tflite_int8/indexing.py and
# resource_variables.py), kept apart from the tables above so that parallel additions do
# not collide.
_COPIED = "int8 or int16 (quantized), copied as stored: no requantization"
_VARIABLES = (
    "the persistent pool: kept between inferences, set by aot_<name>_reset() to what "
    "CALL_ONCE assigned"
)
_TABLE.update(
    {
        "EMBEDDING_LOOKUP": Operator(
            f"ids int32; table {_COPIED}; hybrid: an int8 table (zero point 0) -> float32",
            "1-D ids, a table of rank >= 2 (constant or computed); constant ids must lie in "
            "range, computed ones are clamped to it (TFLite fails the inference); a hybrid "
            "lookup's float32 model output needs --frontend tflite-int8 (auto takes a "
            "float output for a float model)",
        ),
        "DYNAMIC_UPDATE_SLICE": Operator(
            f"operand and update {_COPIED}, or int32; start indices int32 or int64, "
            "constant or computed",
            "any rank; the update no larger than the operand in any dimension; each start "
            "clamped to [0, operand - update] (as TFLite)",
        ),
        "CUMSUM": Operator(
            "int8 (per-tensor; TFLite's fixed-point reference, as TFLite Micro runs it), "
            "int32 or int64",
            "any rank; one constant axis (negative allowed); exclusive and reverse; an int8 "
            "sum whose |x - zp| add up to 4096 or more overflows int32, as in TFLite",
        ),
        "SHAPE": Operator(
            "any input -> int32 or int64",
            "static shapes: folded to a constant at import time (a kernel only when it is "
            "a model output)",
        ),
        "BROADCAST_ARGS": Operator(
            "int32 or int64, both inputs one dtype",
            "1-D shapes; folded to a constant when both are constant (as from SHAPE), else "
            "computed; incompatible computed shapes give the first's entry (TFLite fails)",
        ),
        "VAR_HANDLE": Operator(
            "resource",
            "a shared_name is required; one variable per container and shared name",
        ),
        "READ_VARIABLE": Operator(
            "any dtype the reading operators take",
            "reads the variable's current value (a copy only for a model output); a "
            "variable no CALL_ONCE initializes must be assigned first",
        ),
        "ASSIGN_VARIABLE": Operator(
            "any dtype; one shape and dtype per variable",
            f"a variable the main subgraph assigns is state in {_VARIABLES}; the last "
            "assignment of an inference is kept (a model input assigned is copied by a "
            "kernel); a variable only read is a constant",
        ),
        "CALL_ONCE": Operator(
            "-",
            "its initialization subgraph may hold only VAR_HANDLE and ASSIGN_VARIABLE of "
            "constants, folded at import time into the variables' initial values; it must "
            "come before the variables' first use",
        ),
    }
)

# Issue 13: ADD_N, DIV, ELU, CAST, ZEROS_LIKE, FILL, REDUCE_ALL
# (aot/frontend/tflite_int8/division_cast_fill.py), kept apart from the tables above so that
# parallel additions do not collide.
_TABLE.update(
    {
        "ADD_N": Operator(
            "int8 (all inputs with one scale and zero point, as TFLite Micro; LiteRT has no "
            "int8 ADD_N) or int32",
            "any rank, equal shapes (no broadcasting); int8: at most 15 inputs, the output "
            "multiplier below 1 (output scale > input scale / 2**19)",
        ),
        "CAST": Operator(
            "int8, int16, int32 or bool -> int8, int16 or int32 (the stored values; "
            "quantization ignored)",
            "any rank; narrowing keeps the low bits (two's complement)",
        ),
        "DIV": Operator(
            "int8, all per-tensor; or int32 without quantization",
            f"any rank, numpy broadcasting; {_FUSED}; int8: the output multiplier (scale 1 / "
            "(scale 2 x output scale)) between 2**-25 and 2**22; a divisor at its zero point "
            "(int8) or 0 (int32) is undefined in TFLite (LiteRT refuses it at run time) and "
            "gives a defined value (docs/int8.md)",
        ),
        "ELU": Operator(
            _INT8, "any rank; 256-entry table (as TFLite Micro's and LiteRT's kernels)"
        ),
        "FILL": Operator(
            "int8 (the value quantized as the output) or int32",
            "constant dims (int32 or int64) equal to the output shape; a scalar value, "
            "constant or computed",
        ),
        "REDUCE_ALL": Operator(
            "bool", "any rank; constant axes (negative allowed); keep_dims honoured"
        ),
        "ZEROS_LIKE": Operator(
            "int8 (TFLite Micro; LiteRT has no int8 ZEROS_LIKE) or int32",
            "any rank; stores 0 (not the zero point), as TFLite Micro",
        ),
    }
)


OPERATORS: dict[str, Operator] = dict(sorted(_TABLE.items()))
