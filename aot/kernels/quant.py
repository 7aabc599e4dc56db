"""Build-time helpers every ISA's ``prepare`` shares: operands by name, the per-channel
requantization as two int32 arrays, and the bias with the input zero point folded in."""

from __future__ import annotations

import numpy as np

from aot.backends.base import BackendConstant, OperatorInfo
from aot.errors import InternalError
from aot.operators import OperatorParams, RequantizedParams, operator_params
from aot.ops.int8 import PACKED_SHIFT_BITS

ROUNDING = {"double": 0, "single": 1}  # the params structs' ``rounding`` field
_MULTIPLIER_MASK = (1 << 30) - 1


def operand(info: OperatorInfo, name: str) -> int | None:
    """The index of the operand the importer named ``name`` (data, weight, bias,
    multiplier, shift), or None when the operator has none."""
    p = operator_params(info, OperatorParams)
    return None if p is None else p.operand(name)


def requantized(info: OperatorInfo) -> RequantizedParams:
    """The typed parameters of a convolution or fully connected a variant took."""
    p = operator_params(info, RequantizedParams)
    if p is None:
        raise InternalError(f"a kernel prepares a {info.kind} without its requantization")
    return p


def constant(info: OperatorInfo, name: str) -> np.ndarray | None:
    index = operand(info, name)
    return None if index is None else info.inputs[index].data


def all_constant(info: OperatorInfo, names: tuple[str, ...]) -> bool:
    """Whether every named operand the operator has is a build-time constant."""
    for name in names:
        index = operand(info, name)
        if index is not None and not info.inputs[index].is_constant:
            return False
    return True


def requant(info: OperatorInfo, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output channel (multiplier, shift) as int32 arrays, TFLite's convention
    (positive shift = left), whatever form the importer chose (per tensor in the params,
    per channel arrays, or the packed array with ``packed_shift_base``)."""
    p = requantized(info)
    packed = constant(info, "multiplier")
    if packed is not None and p.packed_shift_base is not None:
        words = packed.astype(np.int64) & 0xFFFFFFFF
        multiplier = (words & _MULTIPLIER_MASK) | (1 << 30)
        shift = ((words >> 30) & ((1 << PACKED_SHIFT_BITS) - 1)) + p.packed_shift_base
    else:
        multiplier = packed if packed is not None else np.asarray(p.multiplier)
        shifts = constant(info, "shift")
        shift = shifts if shifts is not None else np.asarray(p.shift)
    multiplier = np.broadcast_to(np.asarray(multiplier, np.int64).reshape(-1), (channels,))
    shift = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (channels,))
    return multiplier.astype(np.int32), shift.astype(np.int32)


def folded_bias(info: OperatorInfo, weight_sums: np.ndarray) -> np.ndarray:
    """The int32 bias with ``-input_zp * sum(weights)`` per channel folded in, so the
    kernels multiply raw inputs (if the importer has not folded it already)."""
    bias = constant(info, "bias")
    total = np.zeros(len(weight_sums), np.int64) if bias is None else bias.astype(np.int64)
    p = requantized(info)
    if not p.zero_point_in_bias:
        total = total - p.input_zp * weight_sums.astype(np.int64)
    return _int32(total)


def plain_bias(info: OperatorInfo, weight_sums: np.ndarray) -> np.ndarray:
    """The int32 bias without the zero-point term (the model's own), for kernels that add
    the input offset per tap."""
    bias = constant(info, "bias")
    total = np.zeros(len(weight_sums), np.int64) if bias is None else bias.astype(np.int64)
    p = requantized(info)
    if p.zero_point_in_bias:
        total = total + p.input_zp * weight_sums.astype(np.int64)
    return _int32(total)


def _int32(values: np.ndarray) -> np.ndarray:
    # TFLite's int32 accumulator wraps; so does the folded sum.
    return (values.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def requant_constants(
    symbol: str, multiplier: np.ndarray, shift: np.ndarray
) -> tuple[BackendConstant, BackendConstant]:
    return (
        BackendConstant(f"{symbol}_multiplier", np.ascontiguousarray(multiplier, np.int32), 4),
        BackendConstant(f"{symbol}_shift", np.ascontiguousarray(shift, np.int32), 4),
    )


# aot_kernels_requant.h: struct aot_k_rq (six int32 words per output channel) and the
# AOT_K_RQ_* forms a call's records share.
RECORD_WORDS = 6
RQ_GENERAL, RQ_HIGH, RQ_HIGH_ZP = 0, 1, 2
# zp << shift stays inside the high word (|high| < 2^30 + 2^(shift-1) before it).
MAX_ZP_FOLD_SHIFT = 22


def requant_records(
    bias: np.ndarray,
    multiplier: np.ndarray,
    shift: np.ndarray,
    rounding: str,
    output_zp: int | None = None,
) -> tuple[np.ndarray, int]:
    """Per output channel ``struct aot_k_rq`` {bias, multiplier, nudge_lo, nudge_hi, shift,
    sign_term} as an int32 array [channels, 6], and the form the kernel applies to all of
    them: ``RQ_HIGH`` when every channel's total shift is 32 or more (a right shift, or a
    zero multiplier), so the run-time path is SMLAL + SMLAL + ASR; ``RQ_HIGH_ZP`` when
    ``output_zp`` is given and also fits in every channel's high word (no ADD before the
    SSAT); else ``RQ_GENERAL`` with TFLite's multiplier and shift for aot_k_mbqm."""
    m = np.asarray(multiplier, np.int64).reshape(-1)
    s = np.asarray(shift, np.int64).reshape(-1)
    records = np.zeros((m.size, RECORD_WORDS), np.int64)
    records[:, 0] = np.asarray(bias, np.int64).reshape(-1)
    records[:, 1] = m
    if not np.all((s <= -1) | (m == 0)):
        records[:, 4] = s
        return _int32(records.reshape(-1)).reshape(m.size, RECORD_WORDS), RQ_GENERAL
    right = np.maximum(-s, 1)
    if rounding == "double":
        # gemmlowp's two roundings merged (docs/kernels.md): (acc*m + 2^30 + 2^(30+r)
        # - [acc < 0] * 2^31) >> (31 + r), the high word shifted by r - 1.
        nudge = (1 << 30) + (1 << (30 + right))
        high_shift, sign_term = right - 1, -(1 << 31)
    else:
        # One rounding: (acc*m + 2^(t-1)) >> t with t = 31 + r >= 32.
        nudge = 1 << (30 + right)
        high_shift, sign_term = right - 1, 0
    live = m != 0  # a zero multiplier gives 0 whatever the shift: an all-zero record
    records[:, 2] = np.where(live, nudge & 0xFFFFFFFF, 0)
    records[:, 3] = np.where(live, nudge >> 32, 0)
    records[:, 4] = np.where(live, high_shift, 0)
    records[:, 5] = np.where(live, sign_term, 0)
    form = RQ_HIGH
    if output_zp is not None and int(records[:, 4].max(initial=0)) <= MAX_ZP_FOLD_SHIFT:
        # floor(v / 2^(32+s)) + zp == floor((v + zp * 2^(32+s)) / 2^(32+s))
        records[:, 3] += int(output_zp) << records[:, 4]
        form = RQ_HIGH_ZP
    return _int32(records.reshape(-1)).reshape(m.size, RECORD_WORDS), form


def record_constant(records: np.ndarray) -> BackendConstant:
    """The records as one constant, 8-byte aligned so word pairs load with LDRD."""
    return BackendConstant("rq", np.ascontiguousarray(records, np.int32).reshape(-1), 8)


def rescale(values: np.ndarray, multiplier: int, shift: int, rounding: str) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp (shift <= 0) on int64
    values whose products with the multiplier fit int64 (|values| < 2^31)."""
    right = -shift
    if rounding == "single":
        return (values * multiplier + (1 << (30 + right))) >> (31 + right)
    high = (values * multiplier + (1 << 30)) >> 31  # gemmlowp's SRDHM (no saturation)
    if right == 0:
        return high
    return (high + (1 << (right - 1)) - (high < 0)) >> right  # RoundingDivideByPOT
