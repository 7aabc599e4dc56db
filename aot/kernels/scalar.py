"""The plain C kernels (any core; what ``--kernels auto`` picks on a core without the DSP
extension, such as the Cortex-M3 of mps2_an385): the DSP kernels' sources built without
the intrinsics (aot_kernels_simd.h's C equivalents), so they take the same operators with
the same build-time work; each DSP ``prepare`` is called with ``build="scalar"``, which
names the ``_scalar`` functions (aot/runtime_c/kernels/scalar/)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from aot.backends.base import BackendConstant, OperatorInfo
from aot.kernels import dsp
from aot.kernels.common import (
    CONV,
    CONV_STRUCT,
    DENSE,
    DEPTHWISE,
    FC_STRUCT,
    conv_like,
    conv_params,
    convolution,
    fc_params,
)
from aot.kernels.quant import (
    folded_bias,
    operand,
    record_constant,
    requant,
    requant_records,
    requantized,
)
from aot.kernels.spec import KernelVariant, PreparedKernel

# Each DSP source's plain C build: a file that includes it (copied beside it) without the
# intrinsics.
SOURCES = {
    dsp.CONV_SOURCE: "scalar/conv_scalar.c",
    dsp.DWCONV_SOURCE: "scalar/dwconv_scalar.c",
    dsp.ADD_SOURCE: "scalar/add_scalar.c",
    dsp.SHALLOW_SOURCE: "scalar/conv_shallow_scalar.c",
}


def _sources(variant: KernelVariant) -> tuple[str, ...]:
    (source,) = variant.sources
    return (SOURCES[source], source)


# Without SMLAD the first-layer kernel's gather and 2x2 steps cost more than TVM's loops
# over few output channels: vww_96_int8's first layer (3 -> 8 channels) measured 3.45M
# instructions on mps2_an385 against TVM's 3.15M; kws's (64) and pretrainedResnet's (16)
# are faster on it.
MIN_SHALLOW_CHANNELS = 16


def takes_shallow_conv(info: OperatorInfo) -> bool:
    return dsp.takes_shallow_conv(info) and dsp.weights(info).shape[0] >= MIN_SHALLOW_CHANNELS


def takes_single_channel_dwconv(info: OperatorInfo) -> bool:
    return dsp.takes_single_channel_dwconv(info) and info.output.shape[-1] >= MIN_SHALLOW_CHANNELS


def _takes(variant: KernelVariant) -> Callable[[OperatorInfo], bool]:
    if variant.takes is dsp.takes_single_channel_dwconv:
        return takes_single_channel_dwconv
    return takes_shallow_conv if variant.takes is dsp.takes_shallow_conv else variant.takes


# The plain C build runs two pixels a pass (AOT_K_PIXELS 2): GCC's C of four spills on the
# Cortex-M3 and is slower; so its scratch holds two pixels' columns.
SCALAR_PIXELS_PER_PASS = 2


def _prepare(variant: KernelVariant) -> Callable[[OperatorInfo], PreparedKernel]:
    if variant.prepare in (dsp.prepare_conv, dsp.prepare_transpose_conv):
        return partial(variant.prepare, pixels=SCALAR_PIXELS_PER_PASS, build=dsp.SCALAR)
    return partial(variant.prepare, build=dsp.SCALAR)


def _computes(variant: KernelVariant) -> Callable[[OperatorInfo], bool] | None:
    # Below MIN_SHALLOW_CHANNELS TVM's code is faster, but the kernel is as right.
    if variant.takes is dsp.takes_single_channel_dwconv:
        return dsp.takes_single_channel_dwconv
    return dsp.takes_shallow_conv if variant.takes is dsp.takes_shallow_conv else None


# -- two channels per multiply (conv_lanes_scalar.c) -------------------------------------

LANES_SOURCE = "scalar/conv_lanes_scalar.c"
LANE_BITS = 24
# The low lane holds one channel's sum exactly while 128 * sum(|w|) < 2^23 (inputs are raw
# int8, -128 .. 127): at most this sum of absolute weights per channel.
MOST_LANE_WEIGHT = (1 << (LANE_BITS - 1)) // 128 - 1
# A layer's weight words take twice its int8 weights' bytes in flash; larger layers keep
# the int8 kernels, so no layer grows by more than this.
LANES_MOST_BYTES = dsp.WIDE_FC_MOST_BYTES


def _pair_words(rows: np.ndarray) -> np.ndarray:
    """[out_c, K] int8 weights -> [ceil(out_c / 2), K] int64: per channel pair and depth
    w0 + w1 * 2^24 (an odd last channel pairs with zeros)."""
    wide = rows.astype(np.int64)
    if len(wide) % 2:
        wide = np.concatenate([wide, np.zeros((1, wide.shape[1]), np.int64)])
    return wide[0::2] + wide[1::2] * (1 << LANE_BITS)


def lane_pairs(rows: np.ndarray) -> np.ndarray:
    """The weights as conv_lanes_scalar.c reads them: per channel pair one int32 word per
    depth (_pair_words), K padded with zero words to a multiple of four."""
    words = _pair_words(rows)
    padded = np.zeros((len(words), -(-words.shape[1] // 4) * 4), np.int64)
    padded[:, : words.shape[1]] = words
    return np.ascontiguousarray(padded.reshape(-1), np.int32)


def lanes_fit(rows: np.ndarray) -> bool:
    """Whether every channel's sum stays in its lane and every pair's word in int32."""
    if rows.size > LANES_MOST_BYTES:
        return False
    if np.abs(rows.astype(np.int64)).sum(axis=1).max() > MOST_LANE_WEIGHT:
        return False
    words = _pair_words(rows)
    return bool(np.all((words >= -(1 << 31)) & (words < (1 << 31))))


def _conv_rows(info: OperatorInfo) -> np.ndarray:
    w = dsp.weights(info)
    return w.reshape(w.shape[0], -1)


def takes_lanes_conv(info: OperatorInfo) -> bool:
    return info.kind == CONV and conv_like(info) and lanes_fit(_conv_rows(info))


def takes_lanes_fc(info: OperatorInfo) -> bool:
    return dsp.takes_fc(info) and lanes_fit(dsp.weights(info))


def _lanes_records(info: OperatorInfo, rows: np.ndarray) -> tuple[BackendConstant, int]:
    """The records of the folded bias, an even count (a pair reads both)."""
    bias = folded_bias(info, rows.astype(np.int64).sum(axis=1))
    return dsp.channel_records(info, bias, rows.shape[0], even=True)


def _lanes_conv_fields(info: OperatorInfo, form: int) -> dict[str, int]:
    """The params of the lane convolutions: raw inputs (offset 0), padded taps reading the
    input zero point, the records' form."""
    fields = {**conv_params(info, 0), "requant_form": form}
    fields["pad_value"] = convolution(info).input_zp
    return fields


def prepare_lanes_conv(info: OperatorInfo) -> PreparedKernel:
    rows = _conv_rows(info)
    records, form = _lanes_records(info, rows)
    return PreparedKernel(
        function="aot_k_conv_lanes_s8_scalar",
        params_struct=CONV_STRUCT,
        params=_lanes_conv_fields(info, form),
        inputs=(0,),
        constants=(BackendConstant("weights", lane_pairs(rows), 4), records),
        # four pixels' receptive fields, interleaved, K rounded up to four
        scratch_bytes=4 * (-(-rows.shape[1] // 4) * 4),
        notes={"path": "lanes"},
    )


def prepare_lanes_fc(info: OperatorInfo) -> PreparedKernel:
    rows = dsp.weights(info)
    records, form = _lanes_records(info, rows)
    return PreparedKernel(
        function="aot_k_fc_lanes_s8_scalar",
        params_struct=FC_STRUCT,
        params={**fc_params(info), "requant_form": form},
        inputs=(0,),
        constants=(BackendConstant("weights", lane_pairs(rows), 4), records),
        notes={"path": "lanes"},
    )


def _dw_columns(stride: int, dilation: int, k_w: int) -> int:
    """How many input columns a pair of neighbouring outputs reads (conv_lanes_scalar.c's
    dw_columns_of)."""
    first = {kx * dilation for kx in range(k_w)}
    return len(first | {stride + x for x in first})


DW_MOST_COLUMNS, DW_MOST_WORDS = 16, 64  # conv_lanes_scalar.c's per-channel stack tables
MIN_DW_ROW = 4  # output columns: one pass of four (see takes_lanes_dwconv)


def dw_lanes_scratch(fields: dict[str, int]) -> int:
    """The padded channel plane aot_k_dwconv_lanes reads (conv_lanes_scalar.c dw_plane)."""
    even_w = fields["out_w"] + fields["out_w"] % 2
    rows = (fields["out_h"] - 1) * fields["stride_h"] + (fields["k_h"] - 1) * fields["dil_h"] + 1
    cols = (even_w - 1) * fields["stride_w"] + (fields["k_w"] - 1) * fields["dil_w"] + 1
    return rows * cols


def takes_lanes_dwconv(info: OperatorInfo) -> bool:
    if info.kind != DEPTHWISE or not conv_like(info):
        return False
    p = convolution(info)
    _, k_h, k_w, _ = dsp.weights(info).shape  # [1, KH, KW, C]
    columns = _dw_columns(p.strides[1], p.dilation[1], k_w)
    if p.depth_multiplier != 1 or columns > DW_MOST_COLUMNS or k_h * columns > DW_MOST_WORDS:
        return False
    # Measured on mps2_an385 (vww_96_int8): at stride 2 a pair shares one column of three
    # per row, and below four outputs a row no pass of four runs, while each channel's
    # plane and words cost the same; there the 3x3 kernel of dwconv_dsp.c's plain C build
    # is faster (stride 2: 8.1-9.6 against 7.1-7.8 instructions per MAC; a 3x3 image 11.3
    # against 6.9).
    if p.strides[1] != 1 or info.output.shape[2] < MIN_DW_ROW:
        return False
    # -127 .. 127 keeps every word in int32; the lane bound as for the convolutions
    taps = dsp.weights(info).reshape(k_h * k_w, -1).astype(np.int64)
    return int(taps.min()) > -128 and int(np.abs(taps).sum(axis=0).max()) <= MOST_LANE_WEIGHT


def prepare_lanes_dwconv(info: OperatorInfo) -> PreparedKernel:
    w = dsp.weights(info)
    taps = w.reshape(-1, w.shape[3])
    p = requantized(info)
    multiplier, shift = requant(info, w.shape[3])
    bias = folded_bias(info, taps.astype(np.int64).sum(axis=0))
    records, form = requant_records(bias, multiplier, shift, p.rounding, p.output_zp)
    fields = _lanes_conv_fields(info, form)
    return PreparedKernel(
        function="aot_k_dwconv_lanes_s8_scalar",
        params_struct=CONV_STRUCT,
        params=fields,
        inputs=(0, operand(info, "weight")),
        constants=(record_constant(records),),
        scratch_bytes=dw_lanes_scratch(fields),
        notes={"path": "lanes"},
    )


# The lane kernels first: they take what they fit, the DSP sources' plain C build the rest.
VARIANTS: tuple[KernelVariant, ...] = (
    KernelVariant(CONV, "scalar", takes_lanes_conv, prepare_lanes_conv, (LANES_SOURCE,)),
    KernelVariant(DENSE, "scalar", takes_lanes_fc, prepare_lanes_fc, (LANES_SOURCE,)),
    KernelVariant(DEPTHWISE, "scalar", takes_lanes_dwconv, prepare_lanes_dwconv, (LANES_SOURCE,)),
    *(
        KernelVariant(v.kind, "scalar", _takes(v), _prepare(v), _sources(v), _computes(v))
        for v in dsp.VARIANTS
    ),
)
