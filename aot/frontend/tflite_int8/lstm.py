"""UNIDIRECTIONAL_SEQUENCE_LSTM, TFLite's full-integer (8x8->16) LSTM, with projection and
layer normalization.

Registered into ``tflite_int8``'s handler table when that module loads. The two variable
tensors (int8 output state, int16 cell state) live in the persistent pool like SVDF's
state; the time loop is unrolled at import into calls of three kernels that every step
shares (docs/int8.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aot.errors import UnsupportedError
from aot.frontend.tflite_int8.importer import (
    _ACTIVATIONS,
    _handler,
    _Importer,
    _required_options,
    _TensorInfo,
)
from aot.ops import fixedpoint as fp

# Input indices of TFLite's lstm::full tensors.
_INPUT, _OUTPUT_STATE, _CELL_STATE = 0, 18, 19
_W_IN = (1, 2, 3, 4)  # input_to_{input, forget, cell, output}_weights
_W_REC = (5, 6, 7, 8)
_PEEPHOLE = (9, 10, 11)
_BIAS = (12, 13, 14, 15)
_PROJECTION = (16, 17)
_LAYER_NORM = (20, 21, 22, 23)


def _f32(value: float) -> np.float32:
    return np.float32(value)


def _effective(weight_scale: float, other_scale: float, intermediate: float) -> float:
    """weight * other / intermediate in float32, as TFLite's Prepare computes it."""
    return float(_f32(_f32(weight_scale) * _f32(other_scale)) / _f32(intermediate))


def _quantized_intermediates(imp: _Importer, op: Any) -> list[_TensorInfo]:
    intermediates = list(op.IntermediatesAsNumpy()) if op.IntermediatesLength() else []
    if len(intermediates) != 5:
        raise imp.unsupported(
            f"expected 5 intermediate tensors (the converter's gate and hidden "
            f"quantization), found {len(intermediates)}"
        )
    return [imp.tensors[int(i)] for i in intermediates]


def _layer_norm_scales(
    imp: _Importer, ins: list[int], gates: list[int], n_cell: int
) -> tuple[np.ndarray, list[int]]:
    """The int16 coefficients [4, n_cell] and per gate (multiplier, shift, variance guard)
    of the coefficient scale, as TFLite's Prepare derives them."""
    weights = np.zeros((4, n_cell), np.int16)
    scales = [0, 0, 1] * 4
    for g in gates:
        info = imp.tensors[ins[_LAYER_NORM[g]]]
        imp.expect(info, ["int16"], "layer norm coefficients")
        imp.per_tensor(info, "layer norm coefficients")
        values = imp.constant(ins[_LAYER_NORM[g]], "layer norm coefficients")
        if int(np.prod(values.shape)) != n_cell:
            raise imp.unsupported(f"layer norm coefficients {info.name!r} need {n_cell} values")
        weights[g] = values.reshape(n_cell)
        multiplier, shift = fp.checked_quantize_multiplier(float(_f32(info.s)))
        # 10000 keeps the kernel's arithmetic from overflowing (TFLite's variance guard).
        guard = max(1, int(_f32(10000) * _f32(info.s)))
        scales[3 * g : 3 * g + 3] = [multiplier, shift, guard]
    return weights, scales


@_handler("UNIDIRECTIONAL_SEQUENCE_LSTM")
def _lstm(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import lstm as ops

    if len(ins) not in (20, 24):
        raise imp.unsupported(f"expected 20 or 24 inputs, found {len(ins)}")
    present = lambda i: i < len(ins) and ins[i] >= 0  # noqa: E731
    x = imp.tensors[ins[_INPUT]]
    opts = _required_options(imp, op, "UnidirectionalSequenceLSTMOptions")
    activation = _ACTIVATIONS.get(opts.FusedActivationFunction(), "?")
    if activation != "TANH":
        raise imp.unsupported(f"fused activation {activation}; the integer LSTM needs TANH")
    if opts.DiagonalRecurrentTensors():
        raise imp.unsupported("diagonal recurrent tensors are not supported")
    if x.dtype == "int16":
        return _lstm_16x8(imp, bb, ins, out, opts)
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    time_major = bool(opts.TimeMajor())
    cifg = not present(_W_IN[0])
    if cifg != (not present(_W_REC[0])) or cifg == present(_BIAS[0]):
        raise imp.unsupported("the input gate's weights and bias must be all present or none")
    if len(x.shape) != 3:
        raise imp.unsupported(f"expected a 3-D input, found {list(x.shape)}")
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    n_input = x.shape[2]
    h, c = imp.tensors[ins[_OUTPUT_STATE]], imp.tensors[ins[_CELL_STATE]]
    imp.expect(h, ["int8"], "output state")
    imp.expect(c, ["int16"], "cell state")
    gates = [g for g in range(4) if not (cifg and g == 0)]
    # TFLite decides layer normalization by the forget gate's coefficients.
    layer_norm = present(_LAYER_NORM[1])
    if layer_norm and any(not present(_LAYER_NORM[g]) for g in gates):
        raise imp.unsupported("layer norm coefficients must be present for every gate or none")
    projection = present(_PROJECTION[0])
    if present(_PROJECTION[1]) and not projection:
        raise imp.unsupported("a projection bias needs projection weights")
    w_in, w_rec = {}, {}
    for g in gates:
        for table, index, role in (
            (w_in, _W_IN[g], "input weights"),
            (w_rec, _W_REC[g], "recurrent weights"),
        ):
            table[g] = _symmetric_weights(imp, ins[index], role)
    n_cell = w_in[1][1].shape[0]
    n_output = w_rec[1][1].shape[1]
    for g in gates:
        if w_in[g][1].shape != (n_cell, n_input) or w_rec[g][1].shape != (n_cell, n_output):
            raise imp.unsupported("the gate weights' shapes do not fit the input and state sizes")
    if n_output != n_cell and not projection:
        raise imp.unsupported("output size differs from the cell count without projection")
    if int(np.prod(h.shape)) != batch * n_output or int(np.prod(c.shape)) != batch * n_cell:
        raise imp.unsupported("the state tensors do not fit the batch and cell sizes")
    if c.zp != 0:
        raise imp.unsupported(f"cell state {c.name!r} has zero point {c.zp}; TFLite needs 0")
    mantissa, exponent = math.frexp(c.s)
    cell_scale = exponent - 1
    # TFLite's ApplyTanh takes 0-6 integer bits (15 + cell_scale); outside it leaves
    # the output unwritten.
    if mantissa != 0.5 or not -15 <= cell_scale <= -9:
        raise imp.unsupported(
            f"cell state scale {c.s} must be a power of two between 2**-15 and 2**-9"
        )
    intermediates = _quantized_intermediates(imp, op)
    hidden = intermediates[4]
    if not hidden.quantized:
        raise imp.unsupported(f"intermediate {hidden.name!r} has no quantization parameters")
    # Q3.12 without layer norm, as TFLite's Prepare fixes it; with layer norm the gate
    # results before the norm are quantized as the converter calibrated them.
    gate_scales = [2.0**-12] * 4
    if layer_norm:
        for g in gates:
            if not intermediates[g].quantized:
                raise imp.unsupported(
                    f"intermediate {intermediates[g].name!r} has no quantization parameters"
                )
            gate_scales[g] = intermediates[g].s

    # Effective biases: the gate bias (unless layer norm adds it after the norm) plus
    # -zero_point times each weight row's sum.
    w_in_all = np.zeros((4, n_cell, n_input), np.int8)
    w_rec_all = np.zeros((4, n_cell, n_output), np.int8)
    bias_all = np.zeros((8, n_cell), np.int64)
    gate_bias = np.zeros((4, n_cell), np.int64)
    scales: list[int] = [0, 0, 0, 0] * 4
    for g in gates:
        (wi, wi_data), (wr, wr_data) = w_in[g], w_rec[g]
        w_in_all[g], w_rec_all[g] = wi_data, wr_data
        b = imp.tensors[ins[_BIAS[g]]]
        if b.dtype != "int32" or int(np.prod(b.shape)) != n_cell:
            raise imp.unsupported(f"bias {b.name!r} must be int32 with {n_cell} values")
        gate_bias[g] = imp.constant(ins[_BIAS[g]], "the bias").reshape(n_cell).astype(np.int64)
        bias_all[2 * g] = -x.zp * wi_data.sum(axis=1) + (0 if layer_norm else gate_bias[g])
        bias_all[2 * g + 1] = -h.zp * wr_data.sum(axis=1)
        m_in, s_in = fp.checked_quantize_multiplier(_effective(wi.s, x.s, gate_scales[g]))
        m_rec, s_rec = fp.checked_quantize_multiplier(_effective(wr.s, h.s, gate_scales[g]))
        scales[4 * g : 4 * g + 4] = [m_in, s_in, m_rec, s_rec]
    # Peephole weights: int16 [n_cell] per gate (none for the cell gate, nor the input
    # gate with CIFG); scale 2**cell_scale * w_s / gate scale in double, stored as float.
    peephole = None
    peephole_scales = [0] * 8
    peep_gates = [g for g in (0, 1, 3) if g in gates]
    if any(present(i) for i in _PEEPHOLE):
        peephole = np.zeros((4, n_cell), np.int16)
        for g in peep_gates:
            index = _PEEPHOLE[(0, 1, None, 2)[g]]
            if not present(index):
                raise imp.unsupported("peephole weights must be present for every gate or none")
            info = imp.tensors[ins[index]]
            imp.expect(info, ["int16"], "peephole weights")
            imp.per_tensor(info, "peephole weights")
            values = imp.constant(ins[index], "peephole weights")
            if int(np.prod(values.shape)) != n_cell:
                raise imp.unsupported(f"peephole weights {info.name!r} must have {n_cell} values")
            peephole[g] = values.reshape(n_cell)
            scale = float(_f32(2.0**cell_scale * info.s / float(_f32(gate_scales[g]))))
            peephole_scales[2 * g : 2 * g + 2] = fp.checked_quantize_multiplier(scale)
    layer_norm_weights, layer_norm_scales = None, [0] * 12
    if layer_norm:
        layer_norm_weights, layer_norm_scales = _layer_norm_scales(imp, ins, gates, n_cell)
    # 2**-15 / hidden_scale * 2**-15 in double, stored in a float, as TFLite does.
    hidden_scale = float(_f32(2.0**-15 / float(_f32(hidden.s)) * 2.0**-15))
    m_h, s_h = fp.checked_quantize_multiplier(hidden_scale)
    projection_weights = projection_bias = None
    m_p = s_p = projection_clip = 0
    if projection:
        imp.expect(hidden, ["int8"], "hidden intermediate")
        pw, projection_weights = _symmetric_weights(imp, ins[_PROJECTION[0]], "projection weights")
        if projection_weights.shape != (n_output, n_cell):
            raise imp.unsupported(f"projection weights must be {n_output}x{n_cell}")
        # The hidden state's zero point times each row's sum, plus the bias if any.
        projection_bias = hidden.zp * projection_weights.sum(axis=1).astype(np.int64)
        if present(_PROJECTION[1]):
            pb = imp.tensors[ins[_PROJECTION[1]]]
            if pb.dtype != "int32" or int(np.prod(pb.shape)) != n_output:
                raise imp.unsupported(
                    f"projection bias {pb.name!r} must be int32 with {n_output} values"
                )
            projection_bias += imp.constant(ins[_PROJECTION[1]], "the projection bias").reshape(
                n_output
            )
        m_p, s_p = fp.checked_quantize_multiplier(_effective(pw.s, hidden.s, h.s))
        if opts.ProjClip() > 0:
            projection_clip = int(min(max(_f32(opts.ProjClip()) / _f32(h.s), -128.0), 127.0))
    for values in (bias_all, gate_bias, projection_bias):
        if values is not None and np.abs(values).max(initial=0) >= 2**31:
            raise imp.unsupported("an effective bias exceeds int32")
    cell_clip = 0
    if opts.CellClip() > 0:
        cell_clip = int(min(max(_f32(opts.CellClip()) / _f32(c.s), -32768.0), 32767.0))

    def const(values: np.ndarray | None, dtype: Any) -> Any:
        return None if values is None else relax.const(values.astype(dtype))

    w_in_c, w_rec_c = relax.const(w_in_all), relax.const(w_rec_all)
    bias_c = const(bias_all, np.int32)
    peephole_c = const(peephole, np.int16)
    ln_weights_c = const(layer_norm_weights, np.int16)
    ln_bias_c = const(gate_bias if layer_norm else None, np.int32)
    projection_c = const(projection_weights, np.int8)
    projection_bias_c = const(projection_bias, np.int32)
    common = dict(
        scales=scales, peephole_scales=peephole_scales, layer_norm_scales=layer_norm_scales,
        cell_scale=cell_scale,
    )  # fmt: skip
    gate_args = (w_in_c, w_rec_c, bias_c, peephole_c, ln_weights_c, ln_bias_c)
    return _unrolled(
        imp, bb, ins, (batch, n_output, n_cell, steps, time_major), "int8",
        (ops.lstm_cell, gate_args, dict(cifg=cifg, cell_clip=cell_clip, **common)),
        (ops.lstm_hidden, (*gate_args, projection_c, projection_bias_c), dict(
            hidden_multiplier=m_h, hidden_shift=s_h, hidden_zp=hidden.zp,
            projection_multiplier=m_p, projection_shift=s_p, output_zp=h.zp,
            projection_clip=projection_clip, **common,
        )),
    )  # fmt: skip


def _unrolled(
    imp: _Importer,
    bb: Any,
    ins: list[int],
    sizes: tuple[int, int, int, int, bool],
    kind: str,
    cell_step: tuple[Any, tuple, dict],
    hidden_step: tuple[Any, tuple, dict],
) -> Any:
    """The time loop unrolled: per step the step's input, the next cell state, the next
    output state (each ``(compute, constant arguments, parameters)`` after the step's
    input and both states); the states written back and the steps' outputs stacked."""
    from tvm import relax

    from aot.ops import lstm as ops

    batch, n_output, n_cell, steps, time_major = sizes
    h, c = imp.tensors[ins[_OUTPUT_STATE]], imp.tensors[ins[_CELL_STATE]]
    data = imp.value(ins[_INPUT])
    out_state = imp.value(ins[_OUTPUT_STATE])
    cell = imp.value(ins[_CELL_STATE])
    if h.shape != (batch, n_output):
        out_state = bb.emit(relax.op.reshape(out_state, (batch, n_output)))
    if c.shape != (batch, n_cell):
        cell = bb.emit(relax.op.reshape(cell, (batch, n_cell)))
    outputs = []
    (cell_fn, cell_args, cell_kwargs), (hidden_fn, hidden_args, hidden_kwargs) = (
        cell_step,
        hidden_step,
    )
    for t in range(steps):
        # The step index is data, not part of a compute: all steps share three kernels.
        x_t = imp.emit(
            bb, ops.lstm_step_input, data, relax.const(np.array([t], np.int32)),
            name=f"lstm_step_input_{kind}", time_major=time_major,
        )  # fmt: skip
        cell = imp.emit(
            bb, cell_fn, x_t, out_state, cell, *cell_args, name=f"lstm_cell_{kind}",
            **cell_kwargs,
        )  # fmt: skip
        out_state = imp.emit(
            bb, hidden_fn, x_t, out_state, cell, *hidden_args, name=f"lstm_hidden_{kind}",
            **hidden_kwargs,
        )  # fmt: skip
        outputs.append(out_state)
    if h.shape != (batch, n_output):
        out_state = bb.emit(relax.op.reshape(out_state, h.shape))
    if c.shape != (batch, n_cell):
        cell = bb.emit(relax.op.reshape(cell, c.shape))
    imp.update_state(ins[_OUTPUT_STATE], out_state, "output state")
    imp.update_state(ins[_CELL_STATE], cell, "cell state")
    return imp.emit(
        bb, ops.lstm_sequence, *outputs, name=f"lstm_output_{kind}", time_major=time_major
    )


# TFLite Micro's 16x8 kernel is the standard LSTM only: it refuses these at Prepare.
_TFLM_16X8_LACKS = (
    (_PEEPHOLE, "peephole weights"),
    (_PROJECTION, "projection"),
    (_LAYER_NORM, "layer normalization"),
)


def _refuse_16x8(imp: _Importer, option: str) -> UnsupportedError:
    return imp.unsupported(
        f"{option} in a 16x8 LSTM is not supported: TFLite Micro's 16x8 kernel (the "
        "reference) has only the standard LSTM"
    )


def _lstm_16x8(imp: _Importer, bb: Any, ins: list[int], out: _TensorInfo, opts: Any) -> Any:
    """The 16x8 LSTM as TFLite Micro's kernel computes it (docs/int8.md): per gate an
    int16-output fully connected of the input (int64 bias) and of the output state, the
    int16 sigmoid/tanh tables, int16 MULs for the cell and hidden updates."""
    from tvm import relax

    from aot.ops import lstm as ops
    from aot.ops.int16_activations import sigmoid_table

    if len(ins) != 24:
        raise imp.unsupported(f"a 16x8 LSTM needs 24 inputs (TFLite Micro's), found {len(ins)}")
    if ins[_W_IN[0]] < 0:
        raise _refuse_16x8(imp, "CIFG (no input gate)")
    for indices, option in _TFLM_16X8_LACKS:
        if any(ins[i] >= 0 for i in indices):
            raise _refuse_16x8(imp, option)
    x, h, c = (imp.tensors[ins[i]] for i in (_INPUT, _OUTPUT_STATE, _CELL_STATE))
    for info, role in ((x, "input"), (out, "output"), (h, "output state")):
        imp.expect(info, ["int16"], role)
        imp.per_tensor(info, role)
    imp.expect(c, ["int16"], "cell state")
    for info, role in ((x, "input"), (h, "output state"), (c, "cell state")):
        if info.zp != 0:
            raise imp.unsupported(
                f"{role} {info.name!r} has zero point {info.zp}; a 16x8 LSTM needs 0"
            )
    if len(x.shape) != 3:
        raise imp.unsupported(f"expected a 3-D input, found {list(x.shape)}")
    time_major = bool(opts.TimeMajor())
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    n_input = x.shape[2]
    mantissa, exponent = math.frexp(c.s)
    cell_scale = exponent - 1
    if mantissa != 0.5 or cell_scale > 0:
        raise imp.unsupported(f"cell state scale {c.s} must be a power of two below 1")
    w_in = [_symmetric_weights(imp, ins[_W_IN[g]], "input weights") for g in range(4)]
    w_rec = [_symmetric_weights(imp, ins[_W_REC[g]], "recurrent weights") for g in range(4)]
    n_cell = w_in[0][1].shape[0]
    for g in range(4):
        if w_in[g][1].shape != (n_cell, n_input) or w_rec[g][1].shape != (n_cell, n_cell):
            raise imp.unsupported("the gate weights' shapes do not fit the input and state sizes")
    if int(np.prod(h.shape)) != batch * n_cell or int(np.prod(c.shape)) != batch * n_cell:
        raise imp.unsupported("the state tensors do not fit the batch and cell sizes")
    bias = np.zeros((4, n_cell), np.int64)
    scales: list[int] = []
    for g in range(4):
        info = imp.tensors[ins[_BIAS[g]]]
        if info.dtype != "int64" or int(np.prod(info.shape)) != n_cell:
            raise imp.unsupported(f"bias {info.name!r} must be int64 with {n_cell} values")
        bias[g] = imp.constant(ins[_BIAS[g]], "the bias").reshape(n_cell)
        # GetQuantizedConvolutionMultipler: the scales' product in float, over Q3.12.
        for weights, other in ((w_in[g][0], x), (w_rec[g][0], h)):
            scales += fp.checked_quantize_multiplier(
                float(_f32(weights.s) * _f32(other.s)) / 2**-12
            )
    # CreateInterGateMulParams, in double: Q0.15 gates times the cell (forget), times
    # each other (input), times tanh of the cell (hidden).
    m_f, s_f = fp.checked_quantize_multiplier(2.0**-15)
    m_i, s_i = fp.checked_quantize_multiplier(2.0**-30 / c.s)
    m_h, s_h = fp.checked_quantize_multiplier(2.0**-30 / h.s)
    cell_clip = 0
    if opts.CellClip() > 0:
        cell_clip = int(min(max(float(_f32(opts.CellClip())) / c.s, -32768.0), 32767.0))
    w_in_c = relax.const(np.stack([w for _, w in w_in]).astype(np.int8))
    w_rec_c = relax.const(np.stack([w for _, w in w_rec]).astype(np.int8))
    args = (w_in_c, w_rec_c, relax.const(bias), relax.const(sigmoid_table()))
    return _unrolled(
        imp, bb, ins, (batch, n_cell, n_cell, steps, time_major), "int16x8",
        (ops.lstm_cell_16x8, args, dict(
            scales=scales, forget_multiplier=m_f, forget_shift=s_f, input_multiplier=m_i,
            input_shift=s_i, cell_clip=cell_clip,
        )),
        (ops.lstm_hidden_16x8, args, dict(
            scales=scales, cell_scale=cell_scale, hidden_multiplier=m_h, hidden_shift=s_h,
            output_zp=h.zp,
        )),
    )  # fmt: skip


def _symmetric_weights(imp: _Importer, index: int, role: str) -> tuple[_TensorInfo, np.ndarray]:
    """An int8 per-tensor weight with zero point 0 (as TFLite's integer LSTM needs)."""
    info = imp.tensors[index]
    imp.expect(info, ["int8"], role)
    imp.per_tensor(info, role)
    if info.zp != 0:
        raise imp.unsupported(f"{role} {info.name!r} has zero point {info.zp}; TFLite needs 0")
    return info, imp.constant(index, role).astype(np.int32)
