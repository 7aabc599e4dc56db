"""TFLite's full-integer LSTM (8x8->16) as TE computes, bit for bit.

The recurrence runs over time, so the importer unrolls it into calls: per time step one
compute picks the step's input, one returns the next int16 cell state and one the next
int8 output state, the same three kernels for every step (docs/int8.md,
"UNIDIRECTIONAL_SEQUENCE_LSTM"). The gate activations are gemmlowp's int16 fixed-point
``logistic`` and ``tanh`` (as ``tensor_utils::ApplySigmoid``/``ApplyTanh`` call them),
computed here on int16 values held in int32 expressions, one elementwise stage per
intermediate value.

The 16x8 form (int16 activations, int8 weights, int64 biases) follows TFLite Micro's
kernel instead (``lstm_cell_16x8``, ``lstm_hidden_16x8``): LiteRT has none, and TFLite
Micro computes it differently (a fully connected per gate side, its int16 sigmoid and tanh
tables, an int16 MUL per product).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tvm import te, tirx

from aot.ops.fixedpoint import (
    c32,
    c64,
    clamp_expr,
    multiply_by_quantized_multiplier_expr,
    rounding_divide_by_pot_expr,
)
from aot.ops.int16_activations import logistic as logistic_int16
from aot.ops.int16_activations import tanh as tanh_int16
from aot.ops.transpose_and_norms import (
    inv_sqrt_multiplier,
    multiply_by_quantized_multiplier_int64_expr,
)

Expr = Any

_MIN16, _MAX16 = -32768, 32767
# gemmlowp writes its fixed-point constants as int32 raw values; for int16 it divides
# them by 2**16 rounding half away from zero (RescaleConstantInitializer).


def _c16(raw32: int) -> int:
    return (raw32 + (1 << 15) - (1 if raw32 < 0 else 0)) >> 16


_EXP_M1_8 = _c16(1895147668)  # exp(-1/8) in F0
_ONE_THIRD = _c16(715827883)
_48_OVER_17 = _c16(1515870810)  # in F2
_NEG_32_OVER_17 = _c16(-1010580540)
# exp(-2**k) for k = -2..4, applied bit by bit to the input's integer part.
_EXP_BARREL = tuple(
    (k, _c16(raw))
    for k, raw in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                   (2, 39332535), (3, 720401), (4, 242))
)  # fmt: skip


def _select(cond: Expr, a: Expr | int, b: Expr | int) -> Expr:
    return tirx.Select(
        cond, c32(a) if isinstance(a, int) else a, c32(b) if isinstance(b, int) else b
    )


def wrap16(x: Expr) -> Expr:
    """int16 two's-complement wrap-around of an int32 value (gemmlowp's plain Add/Sub)."""
    return ((x + c32(32768)) & c32(0xFFFF)) - c32(32768)


def sat16(x: Expr) -> Expr:
    return clamp_expr(x, _MIN16, _MAX16)


def srdhm16(a: Expr, b: Expr | int) -> Expr:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on int16: the nudge and the
    division toward zero by 2**15 equal ``(a*b + 2**14) >> 15``; only -32768 * -32768
    exceeds int16, and the clamp gives gemmlowp's saturated 32767 there."""
    b = c32(b) if isinstance(b, int) else b
    return tirx.min((a * b + c32(1 << 14)) >> c32(15), c32(_MAX16))


def rdbpot(x: Expr, exponent: int) -> Expr:
    return rounding_divide_by_pot_expr(x, exponent)


def srmbpot16(x: Expr, exponent: int) -> Expr:
    """gemmlowp ``SaturatingRoundingMultiplyByPOT`` on int16."""
    if exponent == 0:
        return x
    if exponent < 0:
        return rdbpot(x, -exponent)
    threshold = (1 << (15 - exponent)) - 1
    shifted = x * c32(1 << exponent)
    return _select(x > c32(threshold), _MAX16, _select(x < c32(-threshold), _MIN16, shifted))


class _Stages:
    """Elementwise int32 stages over one shape. Each intermediate value is its own
    compute (a buffer), so a value used several times (the Taylor terms, Newton-Raphson)
    is computed once: inlined, the expression tree grows exponentially."""

    def __init__(self, shape: Sequence[Any], prefix: str) -> None:
        self.shape = tuple(shape)
        self.prefix = prefix
        self.count = 0

    def __call__(self, fn: Callable[..., Expr], *tensors: te.Tensor) -> te.Tensor:
        self.count += 1
        return te.compute(
            self.shape,
            lambda *i: fn(*(t[i].astype("int32") for t in tensors)),
            name=f"{self.prefix}{self.count}",
        )


def _exp_on_quarter_interval(st: _Stages, a: te.Tensor) -> te.Tensor:
    """exp(a) for a in [-1/4, 0), F0 -> F0: Taylor around -1/8."""
    x = st(lambda a: wrap16(a + c32(1 << 12)), a)
    x2 = st(lambda x: srdhm16(x, x), x)
    x3 = st(srdhm16, x2, x)
    x4 = st(lambda x2: srdhm16(x2, x2), x2)
    poly = st(
        lambda x4, x3, x2: rdbpot(
            wrap16(srdhm16(wrap16(rdbpot(x4, 2) + x3), _ONE_THIRD) + x2), 1
        ),
        x4, x3, x2,
    )  # fmt: skip
    return st(lambda x, p: sat16(c32(_EXP_M1_8) + srdhm16(c32(_EXP_M1_8), wrap16(x + p))), x, poly)


def exp_on_negative_values16(st: _Stages, a: te.Tensor, integer_bits: int) -> te.Tensor:
    """gemmlowp ``exp_on_negative_values`` for FixedPoint<int16, integer_bits> -> F0."""
    frac = 15 - integer_bits
    quarter = 1 << (frac - 2)
    amq = st(lambda a: wrap16((a & c32(quarter - 1)) - c32(quarter)), a)
    remainder = st(lambda m, a: wrap16(m - a), amq, a)
    result = _exp_on_quarter_interval(st, st(lambda m: srmbpot16(m, integer_bits), amq))
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = c32(1 << (frac + exponent))
            result = st(
                lambda r, rem, m=multiplier, bit=bit: _select(
                    (rem & bit) != c32(0), srdhm16(r, m), r
                ),
                result, remainder,
            )  # fmt: skip
    if integer_bits > 5:
        clamp = _c16(-(1 << (36 - integer_bits)))
        result = st(lambda r, a: _select(a < c32(clamp), 0, r), result, a)
    return st(lambda r, a: _select(a == c32(0), _MAX16, r), result, a)


def _rounding_half_sum16(a: Expr, b: int) -> Expr:
    s = a + c32(b)
    return _select(s >= c32(0), (s + c32(1)) >> c32(1), c32(0) - ((c32(1) - s) >> c32(1)))


def _newton_reciprocal(st: _Stages, a: te.Tensor) -> te.Tensor:
    """1 / (1 + a) / 2 in F2, three Newton-Raphson steps on half the denominator."""
    hd = st(lambda a: _rounding_half_sum16(a, _MAX16), a)
    x = st(lambda d: wrap16(c32(_48_OVER_17) + srdhm16(d, _NEG_32_OVER_17)), hd)
    for _ in range(3):
        one_minus = st(lambda d, x: wrap16(c32(1 << 13) - srdhm16(d, x)), hd, x)
        x = st(lambda x, o: wrap16(x + srmbpot16(srdhm16(x, o), 2)), x, one_minus)
    return x


def logistic16(st: _Stages, a: te.Tensor, integer_bits: int = 3) -> te.Tensor:
    """gemmlowp ``logistic`` FixedPoint<int16, integer_bits> -> F0 (raw int16 values)."""
    neg_abs = st(lambda v: _select(v > c32(0), wrap16(c32(0) - v), v), a)
    exp = exp_on_negative_values16(st, neg_abs, integer_bits)
    positive = st(lambda x: srmbpot16(x, 1), _newton_reciprocal(st, exp))
    return st(
        lambda v, rp: _select(
            v == c32(0), 1 << 14, _select(v > c32(0), rp, wrap16(c32(_MAX16) - rp))
        ),
        a, positive,
    )  # fmt: skip


def tanh16(st: _Stages, a: te.Tensor, integer_bits: int) -> te.Tensor:
    """gemmlowp ``tanh`` FixedPoint<int16, integer_bits> -> F0 (raw int16 values)."""
    neg_abs = st(lambda v: _select(v < c32(0), v, wrap16(c32(0) - v)), a)
    # ExactMulByPot<1>: the same raw value read with one more integer bit.
    exp = exp_on_negative_values16(st, neg_abs, integer_bits + 1)
    t = st(lambda x: srmbpot16(wrap16(x - c32(1 << 13)), 2), _newton_reciprocal(st, exp))
    return st(
        lambda v, t: _select(v == c32(0), 0, _select(v < c32(0), wrap16(c32(0) - t), t)),
        a, t,
    )  # fmt: skip


def fixedpoint16(data: te.Tensor, *, function: str, integer_bits: int) -> te.Tensor:
    """``logistic16`` or ``tanh16`` elementwise on an int16 tensor (tested on its own)."""
    st = _Stages(data.shape, function)
    fn = logistic16 if function == "logistic" else tanh16
    result = fn(st, data, integer_bits)
    return te.compute(data.shape, lambda *i: result[i].astype("int16"), name=function)


def lstm_step_input(data: te.Tensor, step: te.Tensor, *, time_major: bool) -> te.Tensor:
    """The input of time step ``step[0]`` (an int32 tensor, not a constant of the compute,
    so that every step shares this kernel, and the two below): [batch, n_input]."""
    if time_major:
        shape = (int(data.shape[1]), int(data.shape[2]))
        return te.compute(shape, lambda b, k: data[step[0], b, k], name="lstm_step_input")
    shape = (int(data.shape[0]), int(data.shape[2]))
    return te.compute(shape, lambda b, k: data[b, step[0], k], name="lstm_step_input")


def _gate_products(
    x: te.Tensor,
    state: te.Tensor,
    w_in: te.Tensor,
    w_rec: te.Tensor,
    gate: int,
    shape: tuple[int, int],
    accumulator: str,
) -> tuple[te.Tensor, te.Tensor]:
    """The gate's input x input weights and state x recurrent weights, [batch, n_cell]
    sums in ``accumulator`` (int32 for int8 activations, int64 for int16)."""

    def product(data: te.Tensor, weights: te.Tensor, side: str) -> te.Tensor:
        k = te.reduce_axis((0, int(data.shape[1])), f"k{side}{gate}")
        return te.compute(
            shape,
            lambda b, c: te.sum(
                data[b, k].astype(accumulator) * weights[gate, c, k].astype(accumulator), axis=k
            ),
            name=f"acc_{side}{gate}",
        )

    return product(x, w_in, "in"), product(state, w_rec, "rec")


def _gate_pre(
    x: te.Tensor,
    state: te.Tensor,
    w_in: te.Tensor,
    w_rec: te.Tensor,
    bias: te.Tensor,
    gate: int,
    scales: Sequence[int],
    shape: tuple[int, int],
    peephole: tuple[te.Tensor, te.Tensor, int, int] | None = None,
    layer_norm: LayerNorm | None = None,
) -> te.Tensor:
    """The int16 gate input before its activation: the input and recurrent products,
    each requantized and added with int16 saturation (MatrixBatchVectorMultiplyAccumulate
    twice), then the peephole term (weights, cell state, multiplier, shift) likewise,
    then the layer normalization if any."""
    m_in, s_in, m_rec, s_rec = scales
    acc_in, acc_rec = _gate_products(x, state, w_in, w_rec, gate, shape, "int32")

    def body(b: Expr, c: Expr) -> Expr:
        first = sat16(
            multiply_by_quantized_multiplier_expr(acc_in[b, c] + bias[2 * gate, c], m_in, s_in)
        )
        second = multiply_by_quantized_multiplier_expr(
            acc_rec[b, c] + bias[2 * gate + 1, c], m_rec, s_rec
        )
        total = sat16(second + first)
        if peephole is not None:
            weights, cell, multiplier, shift = peephole
            product = weights[gate, c].astype("int32") * cell[b, c].astype("int32")
            total = sat16(multiply_by_quantized_multiplier_expr(product, multiplier, shift) + total)
        return total.astype("int16")

    pre = te.compute(shape, body, name=f"gate{gate}")
    return pre if layer_norm is None else layer_norm.apply(pre, gate)


class LayerNorm:
    """TFLite's integer ``ApplyLayerNorm`` of a gate: the row's mean and variance in
    2**10 units, 1 / stddev as a multiplier by ``GetInvSqrtQuantizedMultiplierExp``, then
    coefficient and bias (in coefficient_scale / 1024 units) and a requantization to
    Q3.12. ``scales`` holds per gate (multiplier, shift, variance guard)."""

    def __init__(self, weights: te.Tensor, bias: te.Tensor, scales: Sequence[int]) -> None:
        self.weights, self.bias, self.scales = weights, bias, scales

    def apply(self, pre: te.Tensor, gate: int) -> te.Tensor:
        batch, n = (int(d) for d in pre.shape)
        multiplier, shift, guard = self.scales[3 * gate : 3 * gate + 3]
        r = te.reduce_axis((0, n), f"ln_r{gate}")
        rs = te.reduce_axis((0, n), f"ln_rs{gate}")
        total = te.compute(
            (batch,), lambda b: te.sum(pre[b, r].astype("int64"), axis=r), name="ln_sum"
        )
        squares = te.compute(
            (batch,),
            lambda b: te.sum((pre[b, rs].astype("int32") * pre[b, rs].astype("int32")).astype(
                "int64"), axis=rs),
            name="ln_sum_sq",
        )  # fmt: skip
        mean = te.compute(
            (batch,), lambda b: tirx.truncdiv(total[b] * c64(1024), c64(n)).astype("int32"),
            name="ln_mean",
        )  # fmt: skip

        def variance_body(b: Expr) -> Expr:
            m = mean[b].astype("int64")
            value = tirx.truncdiv(squares[b] * c64((1 << 20) // n) - m * m, c64(1 << 20))
            value = value.astype("int32")
            return _select(value < c32(1), guard, value)

        variance = te.compute((batch,), variance_body, name="ln_variance")
        inv_multiplier, inv_shift = inv_sqrt_multiplier(variance, (batch,))
        weights, bias = self.weights, self.bias

        def body(b: Expr, c: Expr) -> Expr:
            shifted = c32(1024) * pre[b, c].astype("int32") - mean[b]
            rescaled = multiply_by_quantized_multiplier_expr(
                shifted, inv_multiplier[b], inv_shift[b]
            )
            scaled = rescaled.astype("int64") * weights[gate, c].astype("int64") + bias[
                gate, c
            ].astype("int64")
            rounded = tirx.truncdiv(
                tirx.Select(scaled > c64(0), scaled + c64(512), scaled - c64(512)), c64(1024)
            ).astype("int32")
            return sat16(
                multiply_by_quantized_multiplier_expr(rounded, multiplier, shift + 12)
            ).astype("int16")

        return te.compute((batch, n), body, name=f"layer_norm{gate}")


def _peephole(
    weights: te.Tensor | None, cell: te.Tensor, scales: Sequence[int], gate: int
) -> tuple[te.Tensor, te.Tensor, int, int] | None:
    if weights is None or gate == 2:  # the cell gate has no peephole
        return None
    return weights, cell, scales[2 * gate], scales[2 * gate + 1]


def _layer_norm(
    weights: te.Tensor | None, bias: te.Tensor | None, scales: Sequence[int]
) -> LayerNorm | None:
    return None if weights is None or bias is None else LayerNorm(weights, bias, scales)


def lstm_cell(
    x: te.Tensor,
    output_state: te.Tensor,
    cell_state: te.Tensor,
    w_in: te.Tensor,
    w_rec: te.Tensor,
    bias: te.Tensor,
    peephole: te.Tensor | None,
    layer_norm_weights: te.Tensor | None,
    layer_norm_bias: te.Tensor | None,
    *,
    cifg: bool,
    scales: Sequence[int],
    peephole_scales: Sequence[int],
    layer_norm_scales: Sequence[int],
    cell_scale: int,
    cell_clip: int,
) -> te.Tensor:
    """The next int16 cell state [batch, n_cell] from the step's input ``x``.

    ``w_in``/``w_rec`` stack the gates (input, forget, cell, output) on axis 0; ``bias``
    holds per gate the input-side and the recurrent-side effective bias (rows 2g, 2g+1);
    ``scales`` four (multiplier, shift) pairs flattened per gate: input then recurrent.
    ``peephole`` [4, n_cell] int16 (or None) with ``peephole_scales`` a (multiplier,
    shift) pair per gate; the input and forget gates read the previous cell state.
    ``layer_norm_weights`` [4, n_cell] int16 and ``layer_norm_bias`` [4, n_cell] int32
    (or None) with ``layer_norm_scales`` (multiplier, shift, variance guard) per gate.
    """
    batch, n_cell = (int(d) for d in cell_state.shape)
    shape = (batch, n_cell)
    norm = _layer_norm(layer_norm_weights, layer_norm_bias, layer_norm_scales)
    pre = {
        g: _gate_pre(
            x,
            output_state,
            w_in,
            w_rec,
            bias,
            g,
            scales[4 * g : 4 * g + 4],
            shape,
            _peephole(peephole, cell_state, peephole_scales, g),
            norm,
        )
        for g in ((1, 2) if cifg else (0, 1, 2))
    }

    st = _Stages(shape, "act")
    forget = logistic16(st, pre[1])
    gate_in = st(lambda f: c32(_MAX16) - f, forget) if cifg else logistic16(st, pre[0])
    candidate = tanh16(st, pre[2], 3)

    def body(b: Expr, c: Expr) -> Expr:
        f, i, g = (t[b, c].astype("int32") for t in (forget, gate_in, candidate))
        kept = wrap16(rdbpot(f * cell_state[b, c].astype("int32"), 15))
        new = wrap16(rdbpot(i * g, 30 + cell_scale))
        total = sat16(kept + new)
        if cell_clip > 0:
            total = clamp_expr(total, -cell_clip, cell_clip)
        return total.astype("int16")

    return te.compute(shape, body, name="lstm_cell")


def lstm_hidden(
    x: te.Tensor,
    output_state: te.Tensor,
    cell_state: te.Tensor,
    w_in: te.Tensor,
    w_rec: te.Tensor,
    bias: te.Tensor,
    peephole: te.Tensor | None,
    layer_norm_weights: te.Tensor | None,
    layer_norm_bias: te.Tensor | None,
    projection: te.Tensor | None,
    projection_bias: te.Tensor | None,
    *,
    scales: Sequence[int],
    peephole_scales: Sequence[int],
    layer_norm_scales: Sequence[int],
    cell_scale: int,
    hidden_multiplier: int,
    hidden_shift: int,
    hidden_zp: int,
    projection_multiplier: int,
    projection_shift: int,
    output_zp: int,
    projection_clip: int,
) -> te.Tensor:
    """The next int8 output state [batch, n_output] of the step with input ``x``, from the
    output gate (reading the previous output state) and the new cell state; with
    ``projection`` [n_output, n_cell] int8, the int8 hidden state [batch, n_cell] times
    it plus ``projection_bias`` (the effective bias, [n_output] int32), requantized to
    the output state and clipped to +-``projection_clip`` (0: no clip)."""
    batch, n_cell = (int(d) for d in cell_state.shape)
    # The output gate's peephole reads the new cell state.
    gate = _gate_pre(
        x, output_state, w_in, w_rec, bias, 3, scales[12:16], (batch, n_cell),
        _peephole(peephole, cell_state, peephole_scales, 3),
        _layer_norm(layer_norm_weights, layer_norm_bias, layer_norm_scales),
    )  # fmt: skip

    st = _Stages((batch, n_cell), "act")
    gate_out = logistic16(st, gate)
    cell_tanh = tanh16(st, cell_state, 15 + cell_scale)
    # Without projection the hidden state is the output state; with it TFLite stores
    # the hidden state offset by -zero_point and adds zero_point * row sums to the bias.
    zp = hidden_zp if projection is None else -hidden_zp

    def body(b: Expr, c: Expr) -> Expr:
        product = gate_out[b, c].astype("int32") * cell_tanh[b, c].astype("int32")
        scaled = multiply_by_quantized_multiplier_expr(product, hidden_multiplier, hidden_shift)
        return clamp_expr(scaled + c32(zp), -128, 127).astype("int8")

    hidden = te.compute((batch, n_cell), body, name="lstm_hidden")
    if projection is None or projection_bias is None:
        return hidden
    n_output = int(projection.shape[0])
    k = te.reduce_axis((0, n_cell), "kp")
    acc = te.compute(
        (batch, n_output),
        lambda b, o: te.sum(
            hidden[b, k].astype("int32") * projection[o, k].astype("int32"), axis=k
        ),
        name="projection_acc",
    )

    def project(b: Expr, o: Expr) -> Expr:
        value = multiply_by_quantized_multiplier_expr(
            acc[b, o] + projection_bias[o], projection_multiplier, projection_shift
        )
        value = clamp_expr(value + c32(output_zp), -128, 127)
        if projection_clip > 0:
            value = clamp_expr(value, -projection_clip, projection_clip)
        return value.astype("int8")

    return te.compute((batch, n_output), project, name="lstm_projection")


def lstm_sequence(*steps: te.Tensor, time_major: bool) -> te.Tensor:
    """The operator's output: the output state of every time step, [batch, time, n]
    (or [time, batch, n] when time-major)."""
    batch, n = (int(d) for d in steps[0].shape)

    def body(i: Expr, j: Expr, k: Expr) -> Expr:
        b, t = (j, i) if time_major else (i, j)
        value = steps[-1][b, k]
        for index in range(len(steps) - 2, -1, -1):
            value = tirx.Select(t == index, steps[index][b, k], value)
        return value

    shape = (len(steps), batch, n) if time_major else (batch, len(steps), n)
    return te.compute(shape, body, name="lstm_output")


# -- 16x8, as TFLite Micro's lstm_eval computes it ------------------------------------------


def tanh_scaling(cell_scale_power: int) -> tuple[int, int]:
    """The (input multiplier, left shift) with which TFLite Micro's int16 ``Tanh`` reads a
    Q(15 + power) value, after ``reference_integer_ops::Tanh`` resolves its power-of-two
    case: the table wants Q3.12 times 3."""
    shift = 15 + cell_scale_power - 3
    return (3 << shift, 0) if shift >= 0 else (3, -shift)


def _fully_connected_16x8(acc: Expr, multiplier: int, shift: int) -> Expr:
    """An int64 accumulator requantized and clamped to int16, in int32 (the int16-output
    ``FullyConnected`` with no fused activation)."""
    value = multiply_by_quantized_multiplier_int64_expr(acc, multiplier, shift)
    return tirx.max(tirx.min(value, c64(_MAX16)), c64(_MIN16)).astype("int32")


def _gate_16x8(
    x: te.Tensor,
    state: te.Tensor,
    w_in: te.Tensor,
    w_rec: te.Tensor,
    bias: te.Tensor,
    gate: int,
    scales: Sequence[int],
) -> te.Tensor:
    """The int16 gate input in Q3.12: the input side (with the int64 bias) and the
    recurrent side (no bias), each a fully connected to int16, added with saturation."""
    m_in, s_in, m_rec, s_rec = scales
    shape = (int(x.shape[0]), int(w_in.shape[1]))
    acc_in, acc_rec = _gate_products(x, state, w_in, w_rec, gate, shape, "int64")

    def body(b: Expr, c: Expr) -> Expr:
        first = _fully_connected_16x8(acc_in[b, c] + bias[gate, c], m_in, s_in)
        second = _fully_connected_16x8(acc_rec[b, c], m_rec, s_rec)
        return sat16(first + second).astype("int16")

    return te.compute(shape, body, name=f"gate{gate}")


def _int16_mul(a: Expr, b: Expr, multiplier: int, shift: int, zero_point: int = 0) -> Expr:
    """``MulElementwise`` of two int16 values (zero points 0) to int16."""
    product = a.astype("int32") * b.astype("int32")
    return sat16(
        multiply_by_quantized_multiplier_expr(product, multiplier, shift) + c32(zero_point)
    )


def _sigmoid_16x8(pre: te.Tensor, table: te.Tensor) -> te.Tensor:
    # Q3.12 in, as TFLite Micro's Sigmoid calls Logistic with multiplier 0 (meaning 3).
    return logistic_int16(pre, table, input_multiplier=3, input_left_shift=0)


def lstm_cell_16x8(
    x: te.Tensor,
    output_state: te.Tensor,
    cell_state: te.Tensor,
    w_in: te.Tensor,
    w_rec: te.Tensor,
    bias: te.Tensor,
    table: te.Tensor,
    *,
    scales: Sequence[int],
    forget_multiplier: int,
    forget_shift: int,
    input_multiplier: int,
    input_shift: int,
    cell_clip: int,
) -> te.Tensor:
    """The next int16 cell state of a 16x8 LSTM step: forget * cell + input * candidate,
    each an int16 MUL, added with saturation, then the cell clip (0: none). ``bias`` is
    [4, n_cell] int64, ``table`` TFLite's sigmoid table, ``scales`` four (multiplier,
    shift) pairs per gate (input side, recurrent side)."""
    pre = {
        g: _gate_16x8(x, output_state, w_in, w_rec, bias, g, scales[4 * g : 4 * g + 4])
        for g in (0, 1, 2)
    }
    forget, gate_in = _sigmoid_16x8(pre[1], table), _sigmoid_16x8(pre[0], table)
    multiplier, shift = tanh_scaling(-12)
    candidate = tanh_int16(pre[2], table, input_multiplier=multiplier, input_left_shift=shift)

    def body(b: Expr, c: Expr) -> Expr:
        kept = _int16_mul(forget[b, c], cell_state[b, c], forget_multiplier, forget_shift)
        new = _int16_mul(gate_in[b, c], candidate[b, c], input_multiplier, input_shift)
        total = sat16(kept + new)
        if cell_clip > 0:
            total = clamp_expr(total, -cell_clip, cell_clip)
        return total.astype("int16")

    return te.compute(tuple(cell_state.shape), body, name="lstm_cell")


def lstm_hidden_16x8(
    x: te.Tensor,
    output_state: te.Tensor,
    cell_state: te.Tensor,
    w_in: te.Tensor,
    w_rec: te.Tensor,
    bias: te.Tensor,
    table: te.Tensor,
    *,
    scales: Sequence[int],
    cell_scale: int,
    hidden_multiplier: int,
    hidden_shift: int,
    output_zp: int,
) -> te.Tensor:
    """The next int16 output state of a 16x8 LSTM step: the output gate (reading the
    previous output state) times tanh of the new cell state, an int16 MUL."""
    gate = _sigmoid_16x8(_gate_16x8(x, output_state, w_in, w_rec, bias, 3, scales[12:16]), table)
    multiplier, shift = tanh_scaling(cell_scale)
    cell_tanh = tanh_int16(cell_state, table, input_multiplier=multiplier, input_left_shift=shift)

    def body(b: Expr, c: Expr) -> Expr:
        value = _int16_mul(cell_tanh[b, c], gate[b, c], hidden_multiplier, hidden_shift, output_zp)
        return value.astype("int16")

    return te.compute(tuple(cell_state.shape), body, name="lstm_hidden")
