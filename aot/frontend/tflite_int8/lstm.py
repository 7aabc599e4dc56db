"""UNIDIRECTIONAL_SEQUENCE_LSTM, TFLite's full-integer (8x8->16) LSTM.

Registered into ``tflite_int8``'s handler table when that module loads. The two variable
tensors (int8 output state, int16 cell state) live in the persistent pool like SVDF's
state; the time loop is unrolled at import, two kernels per step (docs/int8.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

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


@_handler("UNIDIRECTIONAL_SEQUENCE_LSTM")
def _lstm(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import int8_lstm

    if len(ins) not in (20, 24):
        raise imp.unsupported(f"expected 20 or 24 inputs, found {len(ins)}")
    present = lambda i: i < len(ins) and ins[i] >= 0  # noqa: E731
    x = imp.tensors[ins[_INPUT]]
    if x.dtype == "int16":
        raise imp.unsupported("int16 input (16x8 LSTM) is not supported yet; use an int8 model")
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    if any(present(i) for i in _LAYER_NORM):
        raise imp.unsupported("layer normalization is not supported yet")
    if any(present(i) for i in _PROJECTION):
        raise imp.unsupported("projection weights are not supported yet")
    opts = _required_options(imp, op, "UnidirectionalSequenceLSTMOptions")
    activation = _ACTIVATIONS.get(opts.FusedActivationFunction(), "?")
    if activation != "TANH":
        raise imp.unsupported(f"fused activation {activation}; the integer LSTM needs TANH")
    if opts.DiagonalRecurrentTensors():
        raise imp.unsupported("diagonal recurrent tensors are not supported")
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
    w_in, w_rec = {}, {}
    for g in gates:
        for table, index, role in (
            (w_in, _W_IN[g], "input weights"),
            (w_rec, _W_REC[g], "recurrent weights"),
        ):
            info = imp.tensors[ins[index]]
            imp.expect(info, ["int8"], role)
            imp.per_tensor(info, role)
            if info.zp != 0:
                raise imp.unsupported(
                    f"{role} {info.name!r} has zero point {info.zp}; TFLite needs 0"
                )
            table[g] = (info, imp.constant(ins[index], role).astype(np.int32))
    n_cell = w_in[1][1].shape[0]
    n_output = w_rec[1][1].shape[1]
    for g in gates:
        if w_in[g][1].shape != (n_cell, n_input) or w_rec[g][1].shape != (n_cell, n_output):
            raise imp.unsupported("the gate weights' shapes do not fit the input and state sizes")
    if n_output != n_cell:
        raise imp.unsupported("output size differs from the cell count (needs projection)")
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
    intermediates = list(op.IntermediatesAsNumpy()) if op.IntermediatesLength() else []
    if len(intermediates) != 5:
        raise imp.unsupported(
            f"expected 5 intermediate tensors (the converter's gate and hidden "
            f"quantization), found {len(intermediates)}"
        )
    hidden = imp.tensors[int(intermediates[4])]
    if not hidden.quantized:
        raise imp.unsupported(f"intermediate {hidden.name!r} has no quantization parameters")
    gate_scale = 2.0**-12  # Q3.12 without layer norm, as TFLite's Prepare fixes it

    # Effective biases: the gate bias plus -zero_point times each weight row's sum.
    w_in_all = np.zeros((4, n_cell, n_input), np.int8)
    w_rec_all = np.zeros((4, n_cell, n_output), np.int8)
    bias_all = np.zeros((8, n_cell), np.int64)
    scales: list[int] = [0, 0, 0, 0] * 4
    for g in gates:
        (wi, wi_data), (wr, wr_data) = w_in[g], w_rec[g]
        w_in_all[g], w_rec_all[g] = wi_data, wr_data
        b = imp.tensors[ins[_BIAS[g]]]
        if b.dtype != "int32" or int(np.prod(b.shape)) != n_cell:
            raise imp.unsupported(f"bias {b.name!r} must be int32 with {n_cell} values")
        bias_all[2 * g] = imp.constant(ins[_BIAS[g]], "the bias").reshape(n_cell).astype(np.int64)
        bias_all[2 * g] += -x.zp * wi_data.sum(axis=1)
        bias_all[2 * g + 1] = -h.zp * wr_data.sum(axis=1)
        m_in, s_in = fp.checked_quantize_multiplier(_effective(wi.s, x.s, gate_scale))
        m_rec, s_rec = fp.checked_quantize_multiplier(_effective(wr.s, h.s, gate_scale))
        scales[4 * g : 4 * g + 4] = [m_in, s_in, m_rec, s_rec]
    # Peephole weights: int16 [n_cell] per gate (none for the cell gate, nor the input
    # gate with CIFG); scale 2**cell_scale * w_s / 2**-12 in double, stored as float.
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
            scale = float(_f32(2.0**cell_scale * info.s / float(_f32(gate_scale))))
            peephole_scales[2 * g : 2 * g + 2] = fp.checked_quantize_multiplier(scale)
    if np.abs(bias_all).max(initial=0) >= 2**31:
        raise imp.unsupported("an effective gate bias exceeds int32")
    # 2**-15 / hidden_scale * 2**-15 in double, stored in a float, as TFLite does.
    hidden_scale = float(_f32(2.0**-15 / float(_f32(hidden.s)) * 2.0**-15))
    m_h, s_h = fp.checked_quantize_multiplier(hidden_scale)
    cell_clip = 0
    if opts.CellClip() > 0:
        cell_clip = int(min(max(_f32(opts.CellClip()) / _f32(c.s), -32768.0), 32767.0))

    w_in_c = relax.const(w_in_all)
    w_rec_c = relax.const(w_rec_all)
    bias_c = relax.const(bias_all.astype(np.int32))
    peephole_c = None if peephole is None else relax.const(peephole)
    data = imp.value(ins[_INPUT])
    out_state = imp.value(ins[_OUTPUT_STATE])
    cell = imp.value(ins[_CELL_STATE])
    if h.shape != (batch, n_output):
        out_state = bb.emit(relax.op.reshape(out_state, (batch, n_output)))
    if c.shape != (batch, n_cell):
        cell = bb.emit(relax.op.reshape(cell, (batch, n_cell)))
    outputs = []
    for t in range(steps):
        common = dict(
            step=t, time_major=time_major, scales=scales, peephole_scales=peephole_scales,
            cell_scale=cell_scale,
        )  # fmt: skip
        cell = imp.emit(
            bb, int8_lstm.lstm_cell, data, out_state, cell, w_in_c, w_rec_c, bias_c, peephole_c,
            name="lstm_cell_int8", cifg=cifg, cell_clip=cell_clip, **common,
        )  # fmt: skip
        out_state = imp.emit(
            bb, int8_lstm.lstm_hidden, data, out_state, cell, w_in_c, w_rec_c, bias_c, peephole_c,
            name="lstm_hidden_int8", hidden_multiplier=m_h, hidden_shift=s_h,
            hidden_zp=hidden.zp, **common,
        )  # fmt: skip
        outputs.append(out_state)
    if h.shape != (batch, n_output):
        out_state = bb.emit(relax.op.reshape(out_state, h.shape))
    if c.shape != (batch, n_cell):
        cell = bb.emit(relax.op.reshape(cell, c.shape))
    imp.update_state(ins[_OUTPUT_STATE], out_state, "output state")
    imp.update_state(ins[_CELL_STATE], cell, "cell state")
    return imp.emit(
        bb, int8_lstm.lstm_sequence, *outputs, name="lstm_output_int8", time_major=time_major
    )
