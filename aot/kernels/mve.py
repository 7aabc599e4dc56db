"""Helium (MVE) int8 kernels for Cortex-M55 (``features.mve``), docs/kernels.md "Helium".

Build-time work, so the kernels' inner loops are loads and VMLADAVA/VMUL only:

* the input zero point is folded into the bias (``-input_zp * sum(w)`` per channel); padded
  taps then read the zero point itself (``pad_value``), which the fold cancels exactly;
* requantization is one int32 multiplier and shift per output channel (per-tensor
  operators repeat theirs), so one vector load serves four channels;
* depthwise weights are blocked ``[depth_multiplier][ceil(in_c / 4)][k_h * k_w][4]`` (one
  pointer walks a block's taps) and its per-channel arrays ``[depth_multiplier][in_c]``
  padded to blocks of four, so four lanes are four input channels and no load of them
  needs a predicate;
* convolution and fully connected weights (OHWI / [out, depth], one row per output
  channel) are blocked: per 4 output channels and 16-byte chunk of the row, the 4
  channels' 16 bytes, zero-padded to whole blocks, so one pointer walks them and each
  16-byte load of the input row serves 4 VMLADAVAs. The model's own weights are then
  unused and dropped (the padding costs at most 3 rows and 15 bytes per row).

Only im2col convolutions need scratch: one receptive field (k_h * k_w * in_c bytes).
"""

from __future__ import annotations

import numpy as np

from aot.backends.base import BackendConstant, OperatorInfo
from aot.kernels import quant
from aot.kernels.spec import KernelVariant, PreparedKernel

_CONV_OPERANDS = ("data", "weight", "bias", "multiplier", "shift")


def _common(info: OperatorInfo) -> bool:
    p = info.params
    return (
        p.get("rounding") in quant.ROUNDING
        and quant.operand(info, "weight") is not None
        and quant.all_constant(info, _CONV_OPERANDS[1:])
        and info.inputs[0].dtype == "int8"
        and info.output.dtype == "int8"
    )


def _conv_shape_ok(info: OperatorInfo) -> bool:
    x, w = info.inputs[0], info.inputs[quant.operand(info, "weight")]
    return len(x.shape) == 4 and len(w.shape) == 4 and len(info.output.shape) == 4


def _conv_fields(info: OperatorInfo, k_h: int, k_w: int, depth_multiplier: int) -> dict:
    p = info.params
    batches, in_h, in_w, in_c = info.inputs[0].shape
    _, out_h, out_w, out_c = info.output.shape
    stride_h, stride_w = p["strides"]
    dil_h, dil_w = p["dilation"]
    pad_top, pad_left = p["padding"]
    return {
        "batches": batches, "in_h": in_h, "in_w": in_w, "in_c": in_c,
        "out_h": out_h, "out_w": out_w, "out_c": out_c, "k_h": k_h, "k_w": k_w,
        "stride_h": stride_h, "stride_w": stride_w, "dil_h": dil_h, "dil_w": dil_w,
        "pad_top": pad_top, "pad_left": pad_left, "depth_multiplier": depth_multiplier,
        "input_offset": 0,  # folded into the bias
        "output_offset": int(p["output_zp"]), "act_min": int(p["act_min"]),
        "act_max": int(p["act_max"]), "rounding": quant.ROUNDING[p["rounding"]],
        "pad_value": int(p["input_zp"]),
    }  # fmt: skip


def _bias(bias: np.ndarray) -> BackendConstant:
    return BackendConstant("mve_bias", np.ascontiguousarray(bias, np.int32), 4)


def _pad4(values: np.ndarray) -> np.ndarray:
    """A per-channel array padded with zeros to a multiple of 4 channels."""
    padded = np.zeros(-(-len(values) // 4) * 4, values.dtype)
    padded[: len(values)] = values
    return padded


def _blocked_rows(rows: np.ndarray) -> BackendConstant:
    """[out_c, depth] int8 -> per block of 4 channels, per 16-byte chunk of the depth, the
    4 channels' 16 bytes (aot_mve_row_times_weights); zeros pad both dimensions."""
    out_c, depth = rows.shape
    blocks, chunks = -(-out_c // 4), -(-depth // 16)
    padded = np.zeros((blocks * 4, chunks * 16), np.int8)
    padded[:out_c, :depth] = rows
    blocked = padded.reshape(blocks, 4, chunks, 16).transpose(0, 2, 1, 3)
    return BackendConstant("mve_weights", np.ascontiguousarray(blocked.reshape(-1)), 16)


def _row_constants(info: OperatorInfo, rows: np.ndarray) -> tuple[BackendConstant, ...]:
    """Blocked weights, folded bias and requantization of a row-times-weights kernel."""
    out_c = rows.shape[0]
    multiplier, shift = quant.requant(info, out_c)
    bias = quant.folded_bias(info, rows.astype(np.int64).sum(axis=1))
    return (
        _blocked_rows(rows),
        _bias(_pad4(bias)),
        *quant.requant_constants("mve", _pad4(multiplier), _pad4(shift)),
    )


# -- conv2d -------------------------------------------------------------------------------


def _conv_takes(info: OperatorInfo) -> bool:
    if not (_common(info) and _conv_shape_ok(info)):
        return False
    w = info.inputs[quant.operand(info, "weight")]
    return w.shape[3] == info.inputs[0].shape[3]  # grouped convolutions stay on TVM's


def _conv_prepare(info: OperatorInfo) -> PreparedKernel:
    weights = info.inputs[quant.operand(info, "weight")].data
    out_c, k_h, k_w, in_c = weights.shape
    fields = _conv_fields(info, k_h, k_w, 1)
    direct = k_h == 1 and k_w == 1 and fields["pad_top"] == 0 and fields["pad_left"] == 0
    return PreparedKernel(
        function="aot_k_conv_s8_mve",
        params_struct="struct aot_k_conv_params",
        params=fields,
        inputs=(0,),
        constants=_row_constants(info, weights.reshape(out_c, -1)),
        scratch_bytes=0 if direct else k_h * k_w * in_c,
        notes={"path": "1x1 direct" if direct else "im2col"},
    )


# -- depthwise conv2d ---------------------------------------------------------------------


def _dwconv_takes(info: OperatorInfo) -> bool:
    return _common(info) and _conv_shape_ok(info)


def _dwconv_prepare(info: OperatorInfo) -> PreparedKernel:
    weights = info.inputs[quant.operand(info, "weight")].data  # [1, k_h, k_w, out_c]
    _, k_h, k_w, out_c = weights.shape
    dm = int(info.params["depth_multiplier"])
    in_c = out_c // dm
    blocks = -(-in_c // 4)
    fields = _conv_fields(info, k_h, k_w, dm)
    fields["input_offset"] = -int(info.params["input_zp"])  # border pixels add it per tap
    sums = weights.astype(np.int64).sum(axis=(0, 1, 2))

    def per_channel(values: np.ndarray) -> np.ndarray:
        """[out_c] in TFLite order (c * dm + m) -> [dm][blocks * 4], padded with zeros."""
        grid = np.zeros((dm, blocks * 4), values.dtype)
        grid[:, :in_c] = values.reshape(in_c, dm).T
        return grid.reshape(-1)

    # [k_h, k_w, in_c, dm] -> [dm][block][tap][4 lanes]: a block's taps are contiguous.
    taps = np.zeros((dm, blocks * 4, k_h * k_w), np.int8)
    taps[:, :in_c, :] = weights.reshape(k_h * k_w, in_c, dm).transpose(2, 1, 0)
    blocked = taps.reshape(dm, blocks, 4, k_h * k_w).transpose(0, 1, 3, 2)
    multiplier, shift = quant.requant(info, out_c)
    return PreparedKernel(
        function="aot_k_dwconv_s8_mve",
        params_struct="struct aot_k_conv_params",
        params=fields,
        inputs=(0,),
        constants=(
            BackendConstant("mve_weights", np.ascontiguousarray(blocked.reshape(-1)), 16),
            _bias(per_channel(quant.folded_bias(info, sums))),
            *quant.requant_constants("mve", per_channel(multiplier), per_channel(shift)),
            BackendConstant(
                "mve_edge_bias", per_channel(quant.plain_bias(info, sums)).astype(np.int32), 16
            ),
        ),
        notes={"path": "3x3" if (k_h, k_w) == (3, 3) else "general"},
    )


# -- fully connected ----------------------------------------------------------------------


def _fc_takes(info: OperatorInfo) -> bool:
    if not _common(info) or int(info.params.get("weight_zp", 0)) != 0:
        return False
    w = info.inputs[quant.operand(info, "weight")]
    return len(w.shape) == 2 and info.inputs[0].size_bytes % w.shape[1] == 0


def _fc_prepare(info: OperatorInfo) -> PreparedKernel:
    weights = info.inputs[quant.operand(info, "weight")].data
    out_c, depth = weights.shape
    p = info.params
    fields = {
        "batches": info.inputs[0].size_bytes // depth,
        "depth": depth,
        "out_c": out_c,
        "input_offset": 0,  # folded into the bias
        "output_offset": int(p["output_zp"]),
        "act_min": int(p["act_min"]),
        "act_max": int(p["act_max"]),
        "rounding": quant.ROUNDING[p["rounding"]],
    }
    return PreparedKernel(
        function="aot_k_fc_s8_mve",
        params_struct="struct aot_k_fc_params",
        params=fields,
        inputs=(0,),
        constants=_row_constants(info, weights),
    )


VARIANTS: tuple[KernelVariant, ...] = (
    KernelVariant("conv2d_int8", "mve", _conv_takes, _conv_prepare, ("mve/conv_s8_mve.c",)),
    KernelVariant(
        "depthwise_conv2d_int8", "mve", _dwconv_takes, _dwconv_prepare, ("mve/dwconv_s8_mve.c",)
    ),
    KernelVariant("fully_connected_int8", "mve", _fc_takes, _fc_prepare, ("mve/fc_s8_mve.c",)),
)
