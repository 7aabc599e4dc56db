"""Which operators hand-written kernels can take and their params, shared by the ISAs:
the conditions every int8 kernel needs, and the params structs' values from
``OperatorInfo`` (aot/runtime_c/kernels/include/aot_kernels.h)."""

from __future__ import annotations

import numpy as np

from aot.backends.base import OperatorInfo
from aot.errors import InternalError
from aot.kernels.quant import ROUNDING, all_constant, constant, operand, requantized
from aot.operators import (
    AddParams,
    ConvParams,
    FullyConnectedParams,
    OperatorParams,
    operator_params,
)

CONV, DEPTHWISE, DENSE = "conv2d_int8", "depthwise_conv2d_int8", "fully_connected_int8"
ADD = "add_int8"
CONV_STRUCT = "struct aot_k_conv_params"
FC_STRUCT = "struct aot_k_fc_params"
_CONSTANT_OPERANDS = ("weight", "bias", "multiplier", "shift")


def int8_operator(info: OperatorInfo) -> bool:
    """int8 in and out, the importer's typed params present, every operand but the
    activation a build-time constant."""
    p = operator_params(info, OperatorParams)
    if p is None or p.rounding not in ROUNDING:
        return False
    if operand(info, "data") != 0 or info.inputs[0].is_constant:
        return False
    if info.inputs[0].dtype != "int8" or info.output.dtype != "int8":
        return False
    weight = operand(info, "weight")
    if weight is None or info.inputs[weight].dtype != "int8":
        return False
    return all_constant(info, _CONSTANT_OPERANDS)


def conv_like(info: OperatorInfo) -> bool:
    """A CONV_2D or DEPTHWISE_CONV_2D the kernels handle: NHWC, no groups."""
    if not int8_operator(info):
        return False
    data, out = info.inputs[0].shape, info.output.shape
    weight = info.inputs[operand(info, "weight")].shape
    if len(data) != 4 or len(out) != 4 or len(weight) != 4 or data[0] != out[0]:
        return False
    if info.kind == CONV:
        return weight[3] == data[3] and weight[0] == out[3]
    multiplier = convolution(info).depth_multiplier
    return weight[0] == 1 and out[3] == data[3] * multiplier and weight[3] == out[3]


def convolution(info: OperatorInfo) -> ConvParams:
    """The typed parameters of a CONV_2D or DEPTHWISE_CONV_2D a variant took."""
    p = operator_params(info, ConvParams)
    if p is None:
        raise InternalError(f"a convolution kernel looks at a {info.kind}")
    return p


def conv_params(info: OperatorInfo, input_offset: int) -> dict[str, int]:
    """The values of ``struct aot_k_conv_params``."""
    p = convolution(info)
    n, in_h, in_w, in_c = info.inputs[0].shape
    _, out_h, out_w, out_c = info.output.shape
    weight = info.inputs[operand(info, "weight")].shape
    return {
        "batches": n, "in_h": in_h, "in_w": in_w, "in_c": in_c,
        "out_h": out_h, "out_w": out_w, "out_c": out_c,
        "k_h": weight[1], "k_w": weight[2],
        "stride_h": p.strides[0], "stride_w": p.strides[1],
        "dil_h": p.dilation[0], "dil_w": p.dilation[1],
        "pad_top": p.padding[0], "pad_left": p.padding[1],
        "depth_multiplier": p.depth_multiplier,
        "input_offset": input_offset, "output_offset": p.output_zp,
        "act_min": p.act_min, "act_max": p.act_max, "rounding": ROUNDING[p.rounding],
    }  # fmt: skip


def dense(info: OperatorInfo) -> bool:
    """A FULLY_CONNECTED the kernels handle: symmetric int8 weights [out, depth]."""
    if not int8_operator(info):
        return False
    p = operator_params(info, FullyConnectedParams)
    if p is None or p.weight_zp != 0:
        return False
    weight = info.inputs[operand(info, "weight")].shape
    size = int(np.prod(info.inputs[0].shape))
    out = info.output.shape
    return len(weight) == 2 and size % weight[1] == 0 and out[-1] == weight[0]


def fc_params(info: OperatorInfo) -> dict[str, int]:
    """The values of ``struct aot_k_fc_params``."""
    p = requantized(info)
    out_c, depth = info.inputs[operand(info, "weight")].shape
    return {
        "batches": int(np.prod(info.inputs[0].shape)) // depth, "depth": depth, "out_c": out_c,
        "input_offset": 0, "output_offset": p.output_zp,
        "act_min": p.act_min, "act_max": p.act_max, "rounding": ROUNDING[p.rounding],
    }  # fmt: skip


def addition(info: OperatorInfo) -> AddParams:
    """The typed parameters of an ADD a variant took."""
    p = operator_params(info, AddParams)
    if p is None:
        raise InternalError(f"an ADD kernel looks at a {info.kind}")
    return p


def add_fields(p: AddParams) -> dict[str, int]:
    """The values of ``struct aot_k_add_params`` that come from the parameters (``size``
    and ``rhs_size`` come from the shapes), in the struct's order."""
    return {
        "lhs_offset": p.lhs_offset, "rhs_offset": p.rhs_offset, "left_shift": p.left_shift,
        "lhs_multiplier": p.lhs_multiplier, "lhs_shift": p.lhs_shift,
        "rhs_multiplier": p.rhs_multiplier, "rhs_shift": p.rhs_shift,
        "output_multiplier": p.output_multiplier, "output_shift": p.output_shift,
        "output_offset": p.output_zp, "act_min": p.act_min, "act_max": p.act_max,
        "rounding": ROUNDING[p.rounding],
    }  # fmt: skip


def weights(info: OperatorInfo) -> np.ndarray:
    data = constant(info, "weight")
    assert data is not None
    return data
