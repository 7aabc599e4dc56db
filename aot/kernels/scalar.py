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
    FC_STRUCT,
    conv_like,
    conv_params,
    convolution,
    fc_params,
)
from aot.kernels.quant import (
    folded_bias,
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
    if variant.prepare is dsp.prepare_conv:
        return partial(dsp.prepare_conv, pixels=SCALAR_PIXELS_PER_PASS, build=dsp.SCALAR)
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


def lane_pairs(rows: np.ndarray) -> np.ndarray:
    """[out_c, K] int8 weights as conv_lanes_scalar.c reads them: per channel pair, one
    int32 word per depth, w0 + w1 * 2^24 (an odd last channel pairs with zeros), K padded
    with zero words to a multiple of four."""
    out_c, k = rows.shape
    padded = np.zeros((out_c + out_c % 2, -(-k // 4) * 4), np.int64)
    padded[:out_c, :k] = rows
    words = padded[0::2] + padded[1::2] * (1 << LANE_BITS)
    return np.ascontiguousarray(words.reshape(-1), np.int32)


def lanes_fit(rows: np.ndarray) -> bool:
    """Whether every channel's sum stays in its lane and every pair's word in int32."""
    if rows.size > LANES_MOST_BYTES:
        return False
    if np.abs(rows.astype(np.int64)).sum(axis=1).max() > MOST_LANE_WEIGHT:
        return False
    padded = np.concatenate([rows, np.zeros((rows.shape[0] % 2, rows.shape[1]), rows.dtype)])
    words = padded[0::2].astype(np.int64) + padded[1::2].astype(np.int64) * (1 << LANE_BITS)
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
    p = requantized(info)
    multiplier, shift = requant(info, rows.shape[0])
    records, form = requant_records(bias, multiplier, shift, p.rounding, p.output_zp)
    if rows.shape[0] % 2:
        records = np.concatenate([records, np.zeros((1, records.shape[1]), np.int32)])
    return record_constant(records), form


def prepare_lanes_conv(info: OperatorInfo) -> PreparedKernel:
    rows = _conv_rows(info)
    records, form = _lanes_records(info, rows)
    fields = {**conv_params(info, 0), "requant_form": form}
    fields["pad_value"] = convolution(info).input_zp
    return PreparedKernel(
        function="aot_k_conv_lanes_s8_scalar",
        params_struct=CONV_STRUCT,
        params=fields,
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


# The lane kernels first: they take what they fit, the DSP sources' plain C build the rest.
VARIANTS: tuple[KernelVariant, ...] = (
    KernelVariant(CONV, "scalar", takes_lanes_conv, prepare_lanes_conv, (LANES_SOURCE,)),
    KernelVariant(DENSE, "scalar", takes_lanes_fc, prepare_lanes_fc, (LANES_SOURCE,)),
    *(
        KernelVariant(v.kind, "scalar", _takes(v), _prepare(v), _sources(v), _computes(v))
        for v in dsp.VARIANTS
    ),
)
