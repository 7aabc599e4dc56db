"""Helium (MVE) int8 kernels for Cortex-M55 (``features.mve``), docs/kernels.md "Helium".

Build-time work, so the kernels' inner loops are loads and VMLADAVA/VMUL only:

* the input zero point is folded into the bias (``-input_zp * sum(w)`` per channel); padded
  taps then read the zero point itself (``pad_value``), which the fold cancels exactly;
* requantization is one int32 multiplier and shift per output channel (per-tensor
  operators repeat theirs), so one vector load serves four channels; convolutions and
  fully connected interleave bias, multiplier and shift into one record per block of four
  channels (``_row_constants``), walked by one pointer;
* depthwise weights are widened to int16 and blocked
  ``[depth_multiplier][ceil(in_c / 8)][k_h * k_w][8]`` (one pointer walks a block's taps,
  eight lanes are eight input channels) and its per-channel arrays
  ``[depth_multiplier][ceil(in_c / 8)][2][4]``: per block the even channels, then the odd
  ones, the lanes of the VMULLB and VMULLT accumulators, so no load of them needs a
  predicate;
* convolution and fully connected weights (OHWI / [out, depth], one row per output
  channel) are blocked: per 4 output channels and 16-byte chunk of the row, the 4
  channels' 16 bytes, zero-padded to whole blocks, so one pointer walks them and each
  16-byte load of the input row serves 4 VMLADAVAs. The model's own weights are then
  unused and dropped (the padding costs at most 3 rows and 15 bytes per row).

Scratch: a 3x3 depthwise row run plans one row of zero points (3 * in_c bytes), an
im2col convolution one receptive field (k_h * k_w * in_c bytes; two when its kernel rows
are whole 16-byte chunks, read in place: a pair of border pixels'); a convolution over
few input channels (k_h <= 3, k_w * in_c <= 16, no column dilation) has its weights'
kernel rows padded to 16 bytes each instead and loads a window's rows straight from the
image (``aot_k_conv_rows_s8_mve``; border pixels load them clipped: no scratch).
"""

from __future__ import annotations

import numpy as np

from aot.backends.base import BackendConstant, OperatorInfo
from aot.kernels import common, quant
from aot.kernels.spec import KernelVariant, PreparedKernel
from aot.operators import AddParams, PoolParams, operator_params


def _conv_fields(info: OperatorInfo, input_offset: int) -> dict:
    fields = common.conv_params(info, input_offset)
    # What a padded tap reads when the bias has the zero point folded out (conv's im2col).
    fields["pad_value"] = common.convolution(info).input_zp
    return fields


def _pad4(values: np.ndarray, pad: int = 0) -> np.ndarray:
    """A per-channel array padded with `pad` to a multiple of 4 channels."""
    padded = np.full(-(-len(values) // 4) * 4, pad, values.dtype)
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
    """Blocked weights and, per block of four channels, one record of int32 [folded
    bias][4], [multiplier][4], [shift][4] (AOT_MVE_REC_* in aot_kernels_mve.h: one pointer
    walks a row-times-weights kernel's requantization)."""
    out_c = rows.shape[0]
    multiplier, shift = quant.requant(info, out_c)
    bias = quant.folded_bias(info, rows.astype(np.int64).sum(axis=1))
    # padded channels shift right (-1), so aot_mve_requant_form reads whole blocks
    fields = [
        _pad4(np.asarray(v, np.int64), pad) for v, pad in ((bias, 0), (multiplier, 0), (shift, -1))
    ]
    records = np.stack([f.reshape(-1, 4) for f in fields], axis=1)  # [blocks][3][4]
    return (
        _blocked_rows(rows),
        BackendConstant("mve_records", np.ascontiguousarray(records, np.int32).reshape(-1), 16),
    )


def _form_defines(family: str, info: OperatorInfo, fields: dict) -> dict[str, str]:
    """The call's requantization form (aot_mve_requant_form in aot_kernels_mve.h: every
    shift a right shift or not, times the rounding) as the define that keeps its loops
    compiled: AOT_MVE_<family>_<form>."""
    _, shift = quant.requant(info, info.output.shape[-1])
    right = bool(np.all(np.asarray(shift) < 0))
    single = bool(fields["rounding"])
    form = ("SINGLE_RIGHT" if single else "RIGHT") if right else ("SINGLE" if single else "DOUBLE")
    return {"AOT_MVE_FORMS_KNOWN": "1", f"AOT_MVE_{family}_{form}": "1"}


# -- conv2d -------------------------------------------------------------------------------


def _conv_prepare(info: OperatorInfo) -> PreparedKernel:
    weights = info.inputs[quant.operand(info, "weight")].data
    out_c, k_h, k_w, in_c = weights.shape
    fields = _conv_fields(info, 0)  # the bias has the input zero point folded in
    direct = k_h == 1 and k_w == 1 and fields["pad_top"] == 0 and fields["pad_left"] == 0
    if not direct and k_h <= 3 and k_w * in_c <= 16 and fields["dil_w"] == 1:
        # Few input channels (a first layer): each kernel row zero-padded to one 16-byte
        # chunk, so a window's kernel row is one predicated load from the image.
        padded = np.zeros((out_c, k_h, 16), np.int8)
        padded[:, :, : k_w * in_c] = weights.reshape(out_c, k_h, k_w * in_c)
        return PreparedKernel(
            function="aot_k_conv_rows_s8_mve",
            params_struct=common.CONV_STRUCT,
            params=fields,
            inputs=(0,),
            constants=_row_constants(info, padded.reshape(out_c, -1)),
            notes={"path": "kernel rows"},
            defines=_form_defines("CONV", info, fields),
        )
    return PreparedKernel(
        function="aot_k_conv_s8_mve",
        params_struct=common.CONV_STRUCT,
        params=fields,
        inputs=(0,),
        constants=_row_constants(info, weights.reshape(out_c, -1)),
        # im2col: one receptive field; read in place (kernel rows of whole 16-byte chunks):
        # two, a pair of border pixels'
        scratch_bytes=0 if direct else k_h * k_w * in_c * (2 if (k_w * in_c) % 16 == 0 else 1),
        notes={"path": "1x1 direct" if direct else "im2col"},
        defines=_form_defines("CONV", info, fields),
    )


# -- depthwise conv2d ---------------------------------------------------------------------


def _dwconv_prepare(info: OperatorInfo) -> PreparedKernel:
    weights = info.inputs[quant.operand(info, "weight")].data  # [1, k_h, k_w, out_c]
    _, k_h, k_w, out_c = weights.shape
    p = common.convolution(info)
    dm = p.depth_multiplier
    in_c = out_c // dm
    blocks = -(-in_c // 8)
    # Inside the image the bias is folded; border pixels add input_offset per tap.
    fields = _conv_fields(info, -p.input_zp)
    sums = weights.astype(np.int64).sum(axis=(0, 1, 2))

    def per_channel(values: np.ndarray, pad: int = 0) -> np.ndarray:
        """[out_c] in TFLite order (c * dm + m) -> [dm][blocks][2][4]: per block of eight
        channels the even ones, then the odd ones (VMULLB's and VMULLT's lanes), `pad`
        past in_c."""
        grid = np.full((dm, blocks * 8), pad, np.int64)
        grid[:, :in_c] = np.asarray(values, np.int64).reshape(in_c, dm).T
        return grid.reshape(dm, blocks, 4, 2).transpose(0, 1, 3, 2).reshape(dm, blocks, 8)

    # [k_h, k_w, in_c, dm] -> [dm][block][tap][8 lanes] int16: a block's taps contiguous.
    taps = np.zeros((dm, blocks * 8, k_h * k_w), np.int16)
    taps[:, :in_c, :] = weights.reshape(k_h * k_w, in_c, dm).transpose(2, 1, 0)
    blocked = taps.reshape(dm, blocks, 8, k_h * k_w).transpose(0, 1, 3, 2)
    multiplier, shift = quant.requant(info, out_c)
    folded = quant.folded_bias(info, sums)

    def column_out(kx: int) -> np.ndarray:
        """A window's start value when its column kx is outside the image: the folded bias
        gives back what it took for those taps, which read nothing (int32, wrapping)."""
        column = weights[0, :, kx, :].astype(np.int64).sum(axis=0)
        total = folded.astype(np.int64) + p.input_zp * column
        return (total & 0xFFFFFFFF).astype(np.uint32).view(np.int32)

    # One record per block (REC_* in dwconv_s8_mve.c): folded bias, edge bias, multiplier,
    # shift, the start values without the left and without the right column, eight int32
    # each.
    records = np.stack(
        [
            per_channel(folded),
            per_channel(quant.plain_bias(info, sums)),
            per_channel(multiplier),
            per_channel(shift, -1),  # a right shift: right_shifts_only reads every lane
            per_channel(column_out(0)),
            per_channel(column_out(k_w - 1)),
        ],
        axis=2,
    )
    # 3x3 row runs (runs_3x3 in the C): kernel rows above or below the image read a row of
    # zero points in scratch
    runs = (k_h, k_w) == (3, 3) and dm == 1 and fields["dil_w"] == 1 and in_c >= 8
    return PreparedKernel(
        function="aot_k_dwconv_s8_mve",
        params_struct=common.CONV_STRUCT,
        params=fields,
        inputs=(0,),
        constants=(
            BackendConstant("mve_weights", np.ascontiguousarray(blocked.reshape(-1)), 16),
            BackendConstant("mve_records", np.ascontiguousarray(records, np.int32).reshape(-1), 16),
        ),
        scratch_bytes=3 * in_c if runs else 0,
        notes={"path": "3x3 runs" if runs else "general"},
    )


# -- fully connected ----------------------------------------------------------------------


def _fc_prepare(info: OperatorInfo) -> PreparedKernel:
    weights = info.inputs[quant.operand(info, "weight")].data
    fields = common.fc_params(info)  # input_offset 0: folded into the bias
    return PreparedKernel(
        function="aot_k_fc_s8_mve",
        params_struct=common.FC_STRUCT,
        params=fields,
        inputs=(0,),
        constants=_row_constants(info, weights),
        defines=_form_defines("FC", info, fields),
    )


# -- add ----------------------------------------------------------------------------------


def _add_takes(info: OperatorInfo) -> bool:
    """Same-shape int8 ADD (broadcasting ones stay on TVM's) whose inputs' rescaling is a
    table (TFLite's: right shifts, left_shift 20)."""
    p = operator_params(info, AddParams)
    if p is None or p.rounding not in quant.ROUNDING or len(info.inputs) != 2:
        return False
    if p.lhs_shift > 0 or p.rhs_shift > 0 or not 0 <= p.left_shift <= 22:
        return False
    shape = info.output.shape
    return all(t.dtype == "int8" and t.shape == shape for t in (*info.inputs, info.output))


def _add_table(info: OperatorInfo, side: str) -> BackendConstant:
    """One input's rescaled value for each int8 value, indexed by the byte read as
    unsigned (0..127, then -128..-1): add_s8_mve.c's widening loads are zero-extending."""
    p = common.addition(info)
    offset, multiplier, shift = p.side(side)
    values = np.arange(256, dtype=np.int64).astype(np.uint8).view(np.int8).astype(np.int64)
    table = quant.rescale((values + offset) << p.left_shift, multiplier, shift, p.rounding)
    return BackendConstant(f"{side}_table", np.ascontiguousarray(table, np.int32), 16)


def _add_prepare(info: OperatorInfo) -> PreparedKernel:
    fields = {"size": int(np.prod(info.output.shape)), **common.add_fields(common.addition(info))}
    return PreparedKernel(
        function="aot_k_add_s8_mve",
        params_struct="struct aot_k_add_params",
        params=fields,
        inputs=(0, 1),
        constants=(_add_table(info, "lhs"), _add_table(info, "rhs")),
    )


# -- average pool -------------------------------------------------------------------------

POOL = "average_pool2d_int8"


def _pool_takes(info: OperatorInfo) -> bool:
    """int8 NHWC AVERAGE_POOL_2D whose windows' int16 sums cannot overflow (at most 256
    taps)."""
    p = operator_params(info, PoolParams)
    if p is None or len(info.inputs) != 1:
        return False
    data, out = info.inputs[0], info.output
    if data.dtype != "int8" or out.dtype != "int8" or len(data.shape) != 4:
        return False
    return len(out.shape) == 4 and p.filter_size[0] * p.filter_size[1] <= 256


def _pool_prepare(info: OperatorInfo) -> PreparedKernel:
    p = operator_params(info, PoolParams)
    batches, in_h, in_w, channels = info.inputs[0].shape
    _, out_h, out_w, _ = info.output.shape
    fields = {
        "batches": batches, "in_h": in_h, "in_w": in_w, "channels": channels,
        "out_h": out_h, "out_w": out_w, "filter_h": p.filter_size[0],
        "filter_w": p.filter_size[1], "stride_h": p.strides[0], "stride_w": p.strides[1],
        "pad_top": p.padding[0], "pad_left": p.padding[1], "act_min": p.act_min,
        "act_max": p.act_max,
    }  # fmt: skip
    return PreparedKernel(
        function="aot_k_avgpool_s8_mve",
        params_struct="struct aot_k_pool_params",
        params={k: int(v) for k, v in fields.items()},
        inputs=(0,),
    )


# Every shape the shared conditions allow (no grouped convolutions, FULLY_CONNECTED with
# symmetric weights): Helium beats TVM's loops on all of them.
VARIANTS: tuple[KernelVariant, ...] = (
    KernelVariant(common.CONV, "mve", common.conv_like, _conv_prepare, ("mve/conv_s8_mve.c",)),
    KernelVariant(
        common.DEPTHWISE, "mve", common.conv_like, _dwconv_prepare, ("mve/dwconv_s8_mve.c",)
    ),
    KernelVariant(common.DENSE, "mve", common.dense, _fc_prepare, ("mve/fc_s8_mve.c",)),
    KernelVariant(common.ADD, "mve", _add_takes, _add_prepare, ("mve/add_s8_mve.c",)),
    KernelVariant(POOL, "mve", _pool_takes, _pool_prepare, ("mve/pool_s8_mve.c",)),
)
