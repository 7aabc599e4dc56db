"""Which operators hand-written kernels can take and their params, shared by the ISAs:
the conditions every int8 kernel needs, and the params structs' values from
``OperatorInfo`` (aot/runtime_c/kernels/include/aot_kernels.h)."""

from __future__ import annotations

import numpy as np

from aot.backends.base import OperatorInfo
from aot.kernels.quant import ROUNDING, all_constant, constant, operand

CONV, DEPTHWISE, DENSE = "conv2d_int8", "depthwise_conv2d_int8", "fully_connected_int8"
CONV_STRUCT = "struct aot_k_conv_params"
FC_STRUCT = "struct aot_k_fc_params"
_CONSTANT_OPERANDS = ("weight", "bias", "multiplier", "shift")


def int8_operator(info: OperatorInfo) -> bool:
    """int8 in and out, the importer's typed params present, every operand but the
    activation a build-time constant."""
    p = info.params
    if "rounding" not in p or p["rounding"] not in ROUNDING or "operands" not in p:
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
    multiplier = int(info.params.get("depth_multiplier", 1))
    return weight[0] == 1 and out[3] == data[3] * multiplier and weight[3] == out[3]


def conv_params(info: OperatorInfo, input_offset: int) -> dict[str, int]:
    p = info.params
    n, in_h, in_w, in_c = info.inputs[0].shape
    _, out_h, out_w, out_c = info.output.shape
    weight = info.inputs[operand(info, "weight")].shape
    return {
        "batches": n, "in_h": in_h, "in_w": in_w, "in_c": in_c,
        "out_h": out_h, "out_w": out_w, "out_c": out_c,
        "k_h": weight[1], "k_w": weight[2],
        "stride_h": p["strides"][0], "stride_w": p["strides"][1],
        "dil_h": p["dilation"][0], "dil_w": p["dilation"][1],
        "pad_top": p["padding"][0], "pad_left": p["padding"][1],
        "depth_multiplier": int(p.get("depth_multiplier", 1)),
        "input_offset": input_offset, "output_offset": p["output_zp"],
        "act_min": p["act_min"], "act_max": p["act_max"], "rounding": ROUNDING[p["rounding"]],
    }  # fmt: skip


def dense(info: OperatorInfo) -> bool:
    """A FULLY_CONNECTED the kernels handle: symmetric int8 weights [out, depth]."""
    if not int8_operator(info) or int(info.params.get("weight_zp", 0)) != 0:
        return False
    weight = info.inputs[operand(info, "weight")].shape
    size = int(np.prod(info.inputs[0].shape))
    out = info.output.shape
    return len(weight) == 2 and size % weight[1] == 0 and out[-1] == weight[0]


def fc_params(info: OperatorInfo) -> dict[str, int]:
    p = info.params
    out_c, depth = info.inputs[operand(info, "weight")].shape
    return {
        "batches": int(np.prod(info.inputs[0].shape)) // depth, "depth": depth, "out_c": out_c,
        "input_offset": 0, "output_offset": p["output_zp"],
        "act_min": p["act_min"], "act_max": p["act_max"], "rounding": ROUNDING[p["rounding"]],
    }  # fmt: skip


def weights(info: OperatorInfo) -> np.ndarray:
    data = constant(info, "weight")
    assert data is not None
    return data
