"""The DSP-extension kernels (Cortex-M4, M7, M33 with ``features.dsp``): SMLAD on
SXTB16-unpacked pairs, 2x2 output blocking (aot/runtime_c/kernels/dsp/, docs/kernels.md)."""

from __future__ import annotations

import numpy as np

from aot.backends.base import BackendConstant, OperatorInfo
from aot.kernels.common import (
    CONV,
    CONV_STRUCT,
    DENSE,
    DEPTHWISE,
    FC_STRUCT,
    conv_like,
    conv_params,
    dense,
    fc_params,
    weights,
)
from aot.kernels.quant import folded_bias, operand, plain_bias, requant, requant_constants
from aot.kernels.spec import KernelVariant, PreparedKernel

CONV_SOURCE = "dsp/conv_dsp.c"
DWCONV_SOURCE = "dsp/dwconv_dsp.c"


def _bias(data: np.ndarray) -> BackendConstant:
    return BackendConstant("bias", np.ascontiguousarray(data, np.int32), 4)


def takes_conv(info: OperatorInfo) -> bool:
    return info.kind == CONV and conv_like(info)


def direct_conv(info: OperatorInfo) -> bool:
    """1x1 without padding: the kernel reads the input rows in place."""
    w = weights(info)
    return w.shape[1] == 1 and w.shape[2] == 1 and tuple(info.params["padding"]) == (0, 0)


def prepare_conv(info: OperatorInfo) -> PreparedKernel:
    w = weights(info)
    out_c = w.shape[0]
    depth = int(np.prod(w.shape[1:]))
    sums = w.reshape(out_c, -1).astype(np.int64).sum(axis=1)
    multiplier, shift = requant(info, out_c)
    if direct_conv(info):
        bias, offset, scratch, path = folded_bias(info, sums), 0, 0, "1x1"
    else:
        # im2col of two pixels as int16 with the offset added: 2 x K halfwords.
        bias, offset, scratch = plain_bias(info, sums), -int(info.params["input_zp"]), 4 * depth
        path = "im2col"
    return PreparedKernel(
        function="aot_k_conv_s8_dsp",
        params_struct=CONV_STRUCT,
        params=conv_params(info, offset),
        inputs=(0, operand(info, "weight")),
        constants=(_bias(bias), *requant_constants("rq", multiplier, shift)),
        scratch_bytes=scratch,
        notes={"path": path},
    )


def takes_fc(info: OperatorInfo) -> bool:
    return info.kind == DENSE and dense(info)


def prepare_fc(info: OperatorInfo) -> PreparedKernel:
    w = weights(info)
    sums = w.astype(np.int64).sum(axis=1)
    multiplier, shift = requant(info, w.shape[0])
    return PreparedKernel(
        function="aot_k_fc_s8_dsp",
        params_struct=FC_STRUCT,
        params=fc_params(info),
        inputs=(0, operand(info, "weight")),
        constants=(_bias(folded_bias(info, sums)), *requant_constants("rq", multiplier, shift)),
    )


def takes_dwconv(info: OperatorInfo) -> bool:
    return info.kind == DEPTHWISE and conv_like(info)


def prepare_dwconv(info: OperatorInfo) -> PreparedKernel:
    w = weights(info)  # [1, KH, KW, C*M]
    _, k_h, k_w, out_c = w.shape
    taps = w.reshape(k_h * k_w, out_c)
    multiplier, shift = requant(info, out_c)
    # The input offset folded into the bias; the kernel takes it back for padded taps.
    bias = _bias(folded_bias(info, taps.astype(np.int64).sum(axis=0)))
    params = conv_params(info, -int(info.params["input_zp"]))
    rq = requant_constants("rq", multiplier, shift)
    if params["depth_multiplier"] == 1 and out_c % 4 == 0 and k_h * k_w <= 32:
        # [channel group][tap][4]: one pointer walks a group's taps.
        grouped = taps.reshape(k_h * k_w, out_c // 4, 4).transpose(1, 0, 2).reshape(-1)
        relaid = BackendConstant("weights", np.ascontiguousarray(grouped, np.int8), 4)
        return PreparedKernel(
            "aot_k_dwconv_s8_dsp", CONV_STRUCT, params, (0,), (relaid, bias, *rq),
            notes={"path": "3x3" if (k_h, k_w) == (3, 3) else "quads"},
        )  # fmt: skip
    return PreparedKernel(
        "aot_k_dwconv_s8_dsp", CONV_STRUCT, params, (0, operand(info, "weight")), (bias, *rq),
        notes={"path": "any"},
    )  # fmt: skip


VARIANTS: tuple[KernelVariant, ...] = (
    KernelVariant(DEPTHWISE, "dsp", takes_dwconv, prepare_dwconv, (DWCONV_SOURCE,)),
    KernelVariant(CONV, "dsp", takes_conv, prepare_conv, (CONV_SOURCE,)),
    KernelVariant(DENSE, "dsp", takes_fc, prepare_fc, (CONV_SOURCE,)),
)
