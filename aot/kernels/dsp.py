"""The DSP-extension kernels (Cortex-M4, M7, M33 with ``features.dsp``): SMLAD on
SXTB16-unpacked pairs, 2x2 output blocking (aot/runtime_c/kernels/dsp/, docs/kernels.md)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from aot.backends.base import BackendConstant, OperatorInfo
from aot.errors import InternalError
from aot.kernels.common import (
    ADD,
    CONV,
    CONV_STRUCT,
    DENSE,
    DEPTHWISE,
    FC_STRUCT,
    add_fields,
    addition,
    conv_like,
    conv_params,
    convolution,
    dense,
    fc_params,
    int8_operator,
    weights,
)
from aot.kernels.quant import (
    ROUNDING,
    RQ_HIGH,
    folded_bias,
    operand,
    plain_bias,
    record_constant,
    requant,
    requant_constants,
    requant_records,
    requantized,
    rescale,
)
from aot.kernels.spec import KernelVariant, PreparedKernel
from aot.operators import AddParams, TransposeConvParams, operator_params

# The two builds of these sources: ``dsp`` with the SIMD intrinsics, ``scalar`` with their
# plain C equivalents (aot_kernels_simd.h, aot/kernels/scalar.py); every function name
# ends in its build (aot_k_conv_s8_dsp, aot_k_conv_s8_scalar), and every ``prepare``
# takes the build it names.
DSP, SCALAR = "dsp", "scalar"
CONV_SOURCE = "dsp/conv_dsp.c"
DWCONV_SOURCE = "dsp/dwconv_dsp.c"


def _bias(data: np.ndarray) -> BackendConstant:
    return BackendConstant("bias", np.ascontiguousarray(data, np.int32), 4)


def channel_groups(rows: np.ndarray, size: int) -> np.ndarray:
    """[out_c, K] int8 weights in groups of ``size`` channels (conv_dsp.c): per group,
    each run of four weights of its channels in turn, then their K % 4 tails; channels
    past the last full group stay plain rows. Same size, so group g starts at g*size*K."""
    out_c, k = rows.shape
    groups, k4 = out_c // size, k // 4 * 4
    head = rows[: size * groups]
    runs = head[:, :k4].reshape(groups, size, k4 // 4, 4).transpose(0, 2, 1, 3)
    quads = runs.reshape(groups, size * k4)
    tails = head[:, k4:].reshape(groups, size * (k - k4))
    body = np.concatenate([quads, tails], axis=1).reshape(-1)
    return np.ascontiguousarray(np.concatenate([body, rows[size * groups :].reshape(-1)]), np.int8)


def _weights(rows: np.ndarray, size: int = 2) -> BackendConstant:
    return BackendConstant("weights", channel_groups(rows, size), 4)


# Below these sizes TVM's kernel was measured faster on mps2_an386 (per-output
# requantization dominates and the 2x2 block has little to reuse; docs/kernels.md), so
# the variant leaves them to TVM and --kernels auto stays the fastest per operator.
# 1x1 over 8 channels to 16: 6.93 vs TVM's 5.89 instructions/MAC with one requantization
# for all channels, but 6.93 vs 10.22 per channel (TVM then reads the tables per output).
MIN_DIRECT_DEPTH = 16  # 1x1 with per-tensor requantization: K = in_c
MIN_IM2COL_CHANNELS = 16  # im2col with in_c % 4 != 0 (RGB 3x3 to 8: 6.25 vs 5.51)
# ... unless in_c % 4 == 0, which takes the interleaved LDRD-fed loop (pair_q15): per-tensor
# 1x1 48x48 from 8 channels to 16 5.26 vs TVM's 5.89 even with a narrow activation range
# (OUT_ANY); from 4 channels 9.45 vs 8.69, so that one stays on TVM
MIN_INTERLEAVED_DIRECT_DEPTH = 8


def takes_conv(info: OperatorInfo) -> bool:
    if info.kind != CONV or not conv_like(info):
        return False
    w = weights(info)
    if direct_conv(info):
        multiplier, shift = requant(info, w.shape[0])
        per_tensor = len(set(multiplier.tolist())) == 1 and len(set(shift.tolist())) == 1
        interleaved = w.shape[3] % 4 == 0 and w.shape[3] >= MIN_INTERLEAVED_DIRECT_DEPTH
        return w.shape[3] >= MIN_DIRECT_DEPTH or not per_tensor or interleaved
    return w.shape[3] % 4 == 0 or w.shape[0] >= MIN_IM2COL_CHANNELS


def direct_conv(info: OperatorInfo) -> bool:
    """1x1 without padding: the kernel reads the input rows in place."""
    w = weights(info)
    return w.shape[1] == 1 and w.shape[2] == 1 and convolution(info).padding == (0, 0)


def even_records(records: np.ndarray) -> np.ndarray:
    """Records padded with a zero one to an even count: kernels that read channels in
    pairs read the second record of an odd last channel (which they do not store)."""
    if len(records) % 2 == 0:
        return records
    return np.concatenate([records, np.zeros((1, records.shape[1]), records.dtype)])


def channel_records(
    info: OperatorInfo, bias: np.ndarray, out_c: int, even: bool = False
) -> tuple[BackendConstant, int]:
    """The per-channel requantization records (quant.requant_records) and their form;
    `even`: padded to an even count (even_records)."""
    multiplier, shift = requant(info, out_c)
    p = requantized(info)
    records, form = requant_records(bias, multiplier, shift, p.rounding, p.output_zp)
    return record_constant(even_records(records) if even else records), form


# Output pixels per pass of conv_dsp.c's interleaved loop (AOT_K_PIXELS): four with the
# DSP extension (quad_q15), two in the plain C build (pair_q15, aot/kernels/scalar.py).
PIXELS_PER_PASS = 4


def prepare_conv(
    info: OperatorInfo, pixels: int = PIXELS_PER_PASS, build: str = DSP
) -> PreparedKernel:
    w = weights(info)
    out_c = w.shape[0]
    depth = int(np.prod(w.shape[1:]))
    sums = w.reshape(out_c, -1).astype(np.int64).sum(axis=1)
    # in_c % 4 == 0: a pass's pixels' columns as int16 in the scratch, interleaved by
    # groups of four (conv_dsp.c quad_q15 / pair_q15): pixels x K halfwords
    interleaved = w.shape[3] % 4 == 0
    if direct_conv(info):
        bias, offset, path = folded_bias(info, sums), 0, "1x1"
        # ... else a 1x1 reads its input rows in place
        scratch = 2 * pixels * depth if interleaved else 0
    else:
        # ... else the im2col of two pixels: 2 x K halfwords
        bias, offset = plain_bias(info, sums), -convolution(info).input_zp
        scratch, path = (2 * pixels if interleaved else 4) * depth, "im2col"
    records, form = channel_records(info, bias, out_c)
    return PreparedKernel(
        function=f"aot_k_conv_s8_{build}",
        params_struct=CONV_STRUCT,
        params={**conv_params(info, offset), "requant_form": form},
        inputs=(0,),
        constants=(_weights(w.reshape(out_c, -1)), records),
        scratch_bytes=scratch,
        notes={"path": path},
    )


def takes_fc(info: OperatorInfo) -> bool:
    return info.kind == DENSE and dense(info)


# A batch-1 layer with at most this many bytes of int8 weights gets them widened to int16
# (conv_dsp.c fc_wide: about 1.06 instructions per multiply-accumulate on mps2_an386
# instead of 1.4), for twice their bytes in flash; larger layers keep int8 weights, so
# no model grows by more than this per layer.
WIDE_FC_MOST_BYTES = 128 * 1024


def wide_channel_quads(rows: np.ndarray) -> np.ndarray:
    """[out_c, K] int8 weights as conv_dsp.c's fc_wide reads them, int16: per quad of
    channels and group of four depths, each channel's (w0, w2, w1, w3); then the quad's
    K % 4 tails, channel after channel; channels past the last quad as plain rows. A quad
    takes 4 * K halfwords, so channel c of a plain row starts at c * K."""
    out_c, k = rows.shape
    quads, k4 = out_c // 4, k // 4 * 4
    head = rows[: 4 * quads].astype(np.int16)
    groups = head[:, :k4].reshape(quads, 4, k4 // 4, 4)[..., [0, 2, 1, 3]]
    body = groups.transpose(0, 2, 1, 3).reshape(quads, 4 * k4)
    tails = head[:, k4:].reshape(quads, 4 * (k - k4))
    wide = np.concatenate([body, tails], axis=1).reshape(-1)
    rest = rows[4 * quads :].astype(np.int16).reshape(-1)
    return np.ascontiguousarray(np.concatenate([wide, rest]), np.int16)


def prepare_fc(info: OperatorInfo, build: str = DSP) -> PreparedKernel:
    w = weights(info)
    bias = folded_bias(info, w.astype(np.int64).sum(axis=1))
    records, form = channel_records(info, bias, w.shape[0])
    fields = {**fc_params(info), "requant_form": form}
    if fields["batches"] == 1 and w.size <= WIDE_FC_MOST_BYTES:
        return PreparedKernel(
            function=f"aot_k_fc_wide_s8_{build}",
            params_struct=FC_STRUCT,
            params=fields,
            inputs=(0,),
            constants=(BackendConstant("weights", wide_channel_quads(w), 4), records),
            notes={"path": "wide"},
        )
    return PreparedKernel(
        function=f"aot_k_fc_s8_{build}",
        params_struct=FC_STRUCT,
        params=fields,
        inputs=(0,),
        # A single row takes four channels at a time, more rows two (conv_dsp.c).
        constants=(_weights(w, 4 if fields["batches"] == 1 else 2), records),
    )


def takes_dwconv(info: OperatorInfo) -> bool:
    return info.kind == DEPTHWISE and conv_like(info)


def _has_border(p: dict[str, int]) -> bool:
    """Whether some output pixel has a tap outside the input (padding on any side)."""
    last_y = (p["out_h"] - 1) * p["stride_h"] - p["pad_top"] + (p["k_h"] - 1) * p["dil_h"]
    last_x = (p["out_w"] - 1) * p["stride_w"] - p["pad_left"] + (p["k_w"] - 1) * p["dil_w"]
    return p["pad_top"] > 0 or p["pad_left"] > 0 or last_y >= p["in_h"] or last_x >= p["in_w"]


def prepare_dwconv(info: OperatorInfo, build: str = DSP) -> PreparedKernel:
    w = weights(info)  # [1, KH, KW, C*M]
    _, k_h, k_w, out_c = w.shape
    taps = w.reshape(k_h * k_w, out_c)
    multiplier, shift = requant(info, out_c)
    # The input offset folded into the bias; the kernel takes it back for padded taps.
    folded = folded_bias(info, taps.astype(np.int64).sum(axis=0))
    p = convolution(info)
    fields = conv_params(info, -p.input_zp)
    if p.depth_multiplier != 1 or out_c % 4 or k_h * k_w > 32:
        return PreparedKernel(
            f"aot_k_dwconv_s8_{build}", CONV_STRUCT, fields, (0, operand(info, "weight")),
            (_bias(folded), *requant_constants("rq", multiplier, shift)), notes={"path": "any"},
        )  # fmt: skip
    # [channel group][tap][channels 0 2 1 3] as int16: one pointer walks a group's taps,
    # and the halfword pairs are what SMLABB/SMLATT read (no SXTB16 on them).
    grouped = taps.reshape(k_h * k_w, out_c // 4, 4).transpose(1, 0, 2)[..., [0, 2, 1, 3]]
    # Passed as the int8 bytes of little-endian halfwords (every Cortex-M and host).
    halves = np.ascontiguousarray(grouped, "<i2").reshape(-1).view(np.int8)
    relaid = BackendConstant("weights", halves, 4)
    # Border pixels read the zero point for padded taps from a scratch of one pixel's
    # channels instead of testing each tap.
    scratch = out_c if _has_border(fields) else 0
    if (k_h, k_w) == (3, 3):
        # The bias and requantization as one record per channel (struct aot_k_rq), without
        # the output zero point (never RQ_HIGH_ZP): dwconv3x3 folds it into its per-group
        # blocks itself and adds it in the border pixels.
        records, form = requant_records(folded, multiplier, shift, p.rounding)
        return PreparedKernel(
            f"aot_k_dwconv3x3_s8_{build}", CONV_STRUCT, {**fields, "requant_form": form}, (0,),
            (relaid, record_constant(records)), scratch_bytes=scratch, notes={"path": "3x3"},
        )  # fmt: skip
    return PreparedKernel(
        f"aot_k_dwconv_s8_{build}", CONV_STRUCT, fields, (0,),
        (relaid, _bias(folded), *requant_constants("rq", multiplier, shift)),
        scratch_bytes=scratch, notes={"path": "quads"},
    )  # fmt: skip


# -- transpose convolution ------------------------------------------------------------------

TRANSPOSE = "transpose_conv2d_int8"


def _transposed(info: OperatorInfo) -> TransposeConvParams | None:
    return operator_params(info, TransposeConvParams)


def takes_transpose_conv(info: OperatorInfo) -> bool:
    """TRANSPOSE_CONV over in_c % 4 == 0 (conv_dsp.c's interleaved loop) whose kernel is at
    least its stride, so every output phase has a tap."""
    p = _transposed(info)
    if info.kind != TRANSPOSE or p is None or not int8_operator(info):
        return False
    data, out = info.inputs[0].shape, info.output.shape
    w = weights(info)
    if len(data) != 4 or len(out) != 4 or w.ndim != 4 or data[0] != out[0]:
        return False
    out_c, k_h, k_w, in_c = w.shape
    return (
        in_c == data[3] and out_c == out[3] and in_c % 4 == 0
        and k_h >= p.strides[0] and k_w >= p.strides[1]
    )  # fmt: skip


def phase_weights(w: np.ndarray, strides: tuple[int, int]) -> np.ndarray:
    """OHWI weights as aot_k_transpose_conv reads them: per output phase (ty, tx), row-major,
    its taps ky = ty, ty + stride_h, ... and kx = tx, ... in channel pairs (channel_groups),
    the phases one after another."""
    out_c = w.shape[0]
    sh, sw = strides
    blocks = [
        channel_groups(np.ascontiguousarray(w[:, ty::sh, tx::sw, :]).reshape(out_c, -1), 2)
        for ty in range(sh)
        for tx in range(sw)
    ]
    return np.ascontiguousarray(np.concatenate(blocks), np.int8)


def prepare_transpose_conv(
    info: OperatorInfo, pixels: int = PIXELS_PER_PASS, build: str = DSP
) -> PreparedKernel:
    p = _transposed(info)
    w = weights(info)
    out_c, k_h, k_w, in_c = w.shape
    bias = plain_bias(info, w.reshape(out_c, -1).astype(np.int64).sum(axis=1))
    records, form = channel_records(info, bias, out_c)
    n, in_h, in_w, _ = info.inputs[0].shape
    _, out_h, out_w, _ = info.output.shape
    (sh, sw), (pad_top, pad_left) = p.strides, p.padding
    fields = {
        "batches": n, "in_h": in_h, "in_w": in_w, "in_c": in_c,
        "out_h": out_h, "out_w": out_w, "out_c": out_c, "k_h": k_h, "k_w": k_w,
        "stride_h": sh, "stride_w": sw, "dil_h": 1, "dil_w": 1,
        "pad_top": pad_top, "pad_left": pad_left, "depth_multiplier": 1,
        "input_offset": -p.input_zp, "output_offset": p.output_zp,
        "act_min": p.act_min, "act_max": p.act_max, "rounding": ROUNDING[p.rounding],
        "requant_form": form,
    }  # fmt: skip
    # the largest phase's taps: pixels of int16 each
    depth = -(-k_h // sh) * -(-k_w // sw) * in_c
    return PreparedKernel(
        function=f"aot_k_transpose_conv_s8_{build}",
        params_struct=CONV_STRUCT,
        params=fields,
        inputs=(0,),
        constants=(BackendConstant("weights", phase_weights(w, p.strides), 4), records),
        scratch_bytes=2 * pixels * depth,
        notes={"path": "phases"},
    )


# -- add ----------------------------------------------------------------------------------

ADD_SOURCE = "dsp/add_dsp.c"
_INT8_VALUES = np.arange(-128, 128, dtype=np.int64)


def _add_table(info: OperatorInfo, side: str) -> np.ndarray:
    """Twice the rescaled value of each int8 input (add_dsp.c): 256 int32, -128 first."""
    p = addition(info)
    offset, multiplier, shift = p.side(side)
    return 2 * rescale((_INT8_VALUES + offset) << p.left_shift, multiplier, shift, p.rounding)


def _repeats_over(small: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether ``small`` broadcast to ``shape`` repeats one contiguous block: it is the
    trailing part of ``shape`` (leading ones aside) or a single element."""
    core = list(small)
    while core and core[0] == 1:
        core.pop(0)
    return not core or tuple(core) == tuple(shape[len(shape) - len(core) :])


def _add_operands(info: OperatorInfo) -> tuple[int, int] | None:
    """(full, repeated) operand indices, or None when neither input has the output's
    shape or the other does not repeat contiguously over it."""
    shape = tuple(info.output.shape)
    for full, repeated in ((0, 1), (1, 0)):
        if tuple(info.inputs[full].shape) == shape and _repeats_over(
            tuple(info.inputs[repeated].shape), shape
        ):
            return full, repeated
    return None


def _sum_fits(info: OperatorInfo) -> bool:
    """Whether SMMLAR's accumulate with the zero point folded in stays in int32."""
    p = addition(info)
    largest = int(np.abs(_add_table(info, "lhs")).max() + np.abs(_add_table(info, "rhs")).max())
    right = -p.output_shift
    nudge = (1 << max(right - 1, 0)) + abs(p.output_zp) * (1 << right)
    return (largest * p.output_multiplier >> 32) + 1 + nudge < 2**31


def takes_add(info: OperatorInfo) -> bool:
    """int8 ADD of equal shapes, or with one operand repeating over the other (per
    channel or scalar), per-tensor with no left shift on the output (TFLite's always)."""
    p = operator_params(info, AddParams)
    if info.kind != ADD or len(info.inputs) != 2 or p is None or p.rounding not in ROUNDING:
        return False
    if any(t.dtype != "int8" for t in (*info.inputs, info.output)):
        return False
    shifts = (p.lhs_shift, p.rhs_shift, p.output_shift)
    if any(s > 0 for s in shifts) or not 0 <= p.left_shift <= 22:
        return False
    return _add_operands(info) is not None and _sum_fits(info)


def prepare_add(info: OperatorInfo, build: str = DSP) -> PreparedKernel:
    full, repeated = _add_operands(info)
    # ADD commutes: the repeated operand becomes the kernel's rhs, with its table.
    sides = ("lhs", "rhs") if full == 0 else ("rhs", "lhs")
    fields = {"size": int(np.prod(info.output.shape)), **add_fields(addition(info))}
    fields["rhs_size"] = int(np.prod(info.inputs[repeated].shape))
    tables = tuple(
        BackendConstant(f"{name}_table", _add_table(info, side).astype(np.int32), 4)
        for name, side in zip(("lhs", "rhs"), sides, strict=True)
    )
    return PreparedKernel(
        function=f"aot_k_add_s8_{build}",
        params_struct="struct aot_k_add_params",
        params=fields,
        inputs=(full, repeated),
        constants=tables,
        notes={"path": "equal shapes" if fields["rhs_size"] == fields["size"] else "repeated"},
    )


# -- conv2d over few input channels -----------------------------------------------------

SHALLOW_SOURCE = "dsp/conv_shallow_dsp.c"
MAX_SHALLOW_DEPTH = 64  # K = k_h * k_w * in_c; the scratch is 4 bytes per K for two pixels


def takes_shallow_conv(info: OperatorInfo) -> bool:
    """A first-layer convolution: in_c % 4 != 0 and K % 4 != 0 (the general kernel's groups
    of four would straddle taps and leave tails), a window larger than one tap, no
    dilation, K at most 64, and right shifts only (the requantization records' high
    form)."""
    if info.kind != CONV or not conv_like(info):
        return False
    out_c, k_h, k_w, in_c = weights(info).shape
    multiplier, shift = requant(info, out_c)
    return (
        in_c % 4 != 0
        and k_h * k_w > 1
        and k_h * k_w * in_c <= MAX_SHALLOW_DEPTH
        and convolution(info).dilation == (1, 1)
        # the records' high form only (a left shift goes to the general kernel), so the
        # kernel has one requantization path: its text counts against the 48 KB budget
        and bool(np.all((shift <= -1) | (multiplier == 0)))
    )


def shallow_weights(w: np.ndarray) -> np.ndarray:
    """OHWI int8 weights -> the int16 layout of conv_shallow_dsp.c as bytes: each kernel
    row's k_w * in_c weights padded to even, channels padded to even, then per channel
    pair and int16 pair the two channels' words side by side."""
    out_c, k_h, k_w, in_c = w.shape
    row, pairs = k_w * in_c, k_h * (-(-k_w * in_c // 2))
    padded = np.zeros((out_c + out_c % 2, k_h, 2 * (-(-row // 2))), np.int16)
    padded[:out_c, :, :row] = w.reshape(out_c, k_h, row)
    words = padded.reshape(-1, 2, pairs, 2).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(words, "<i2").reshape(-1).view(np.int8)


def prepare_shallow_conv(info: OperatorInfo, build: str = DSP) -> PreparedKernel:
    w = weights(info)
    out_c, k_h, k_w, in_c = w.shape
    multiplier, shift = requant(info, out_c)
    bias = plain_bias(info, w.reshape(out_c, -1).astype(np.int64).sum(axis=1))
    p = convolution(info)
    records, form = requant_records(bias, multiplier, shift, p.rounding)
    if form != RQ_HIGH:
        raise InternalError("the first-layer kernel took a convolution with a left shift")
    fields = {**conv_params(info, -p.input_zp), "requant_form": form}
    pairs = k_h * (-(-k_w * in_c // 2))
    return PreparedKernel(
        function=f"aot_k_conv_shallow_s8_{build}",
        params_struct=CONV_STRUCT,
        params=fields,
        inputs=(0,),
        constants=(
            BackendConstant("weights", shallow_weights(w), 4),
            record_constant(even_records(records)),
        ),
        scratch_bytes=8 * pairs,
        notes={"path": "shallow"},
    )


# -- depthwise over one input channel ---------------------------------------------------


def as_convolution(info: OperatorInfo) -> OperatorInfo:
    """A depthwise convolution of one input channel as the convolution it is: its M output
    channels are M filters over that channel ([1, KH, KW, M] weights as [M, KH, KW, 1]),
    the same sums, requantized per output channel the same way."""
    index = operand(info, "weight")
    weight = info.inputs[index]
    data = np.ascontiguousarray(np.asarray(weight.data).transpose(3, 1, 2, 0))
    inputs = list(info.inputs)
    inputs[index] = replace(weight, shape=data.shape, data=data)
    params = replace(convolution(info), depth_multiplier=1)
    return replace(info, kind=CONV, inputs=tuple(inputs), params=params)


def takes_single_channel_dwconv(info: OperatorInfo) -> bool:
    """person_detect's first layer (96x96x1 to 8 channels): the depthwise kernels walk
    channel groups, which one channel leaves empty; the first-layer convolution fits."""
    if info.kind != DEPTHWISE or not conv_like(info) or info.inputs[0].shape[-1] != 1:
        return False
    return takes_shallow_conv(as_convolution(info))


def prepare_single_channel_dwconv(info: OperatorInfo, build: str = DSP) -> PreparedKernel:
    return prepare_shallow_conv(as_convolution(info), build)


VARIANTS: tuple[KernelVariant, ...] = (
    KernelVariant(
        DEPTHWISE,
        "dsp",
        takes_single_channel_dwconv,
        prepare_single_channel_dwconv,
        (SHALLOW_SOURCE,),
    ),
    KernelVariant(DEPTHWISE, "dsp", takes_dwconv, prepare_dwconv, (DWCONV_SOURCE,)),
    # Before the general convolution, which would take these shapes too.
    KernelVariant(CONV, "dsp", takes_shallow_conv, prepare_shallow_conv, (SHALLOW_SOURCE,)),
    KernelVariant(CONV, "dsp", takes_conv, prepare_conv, (CONV_SOURCE,)),
    KernelVariant(DENSE, "dsp", takes_fc, prepare_fc, (CONV_SOURCE,)),
    KernelVariant(TRANSPOSE, "dsp", takes_transpose_conv, prepare_transpose_conv, (CONV_SOURCE,)),
    KernelVariant(ADD, "dsp", takes_add, prepare_add, (ADD_SOURCE,)),
)
