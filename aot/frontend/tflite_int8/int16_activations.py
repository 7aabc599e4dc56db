"""int16 activations of the TFLite importer (issue 13): LOGISTIC, TANH and SOFTMAX with
int16 input and output (zero point 0), as LiteRT's reference kernels compute them
(docs/int8.md, "16x8"); HARD_SWISH int16, which no TFLite kernel runs, is refused.

Each handler takes an operator whose input is int16 and leaves the rest to the int8
handler registered before it (``int16._by_input_dtype``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8.importer import _Importer, _required_options, _TensorInfo
from aot.frontend.tflite_int8.int16 import _by_input_dtype, _symmetric, checked_log2
from aot.ops import fixedpoint as fp

# The tables' input unit: 1/(3*4096), so the int16 range after scaling covers +-10.7.
_TABLE_INPUT_SCALE = 4096.0 * 3.0


def _table_input_scaling(
    imp: _Importer, x: _TensorInfo, pot_shifts: tuple[int, ...]
) -> dict[str, int]:
    """SigmoidPrepare/TanhPrepare for int16: a power-of-two input scale whose shift from
    Q3.12 is one of ``pot_shifts`` is scaled by 3 << shift; any other scale by an integer
    multiplier in (2**14, 2**15) and a right shift, both found by doubling."""
    exponent = checked_log2(x.s)
    if exponent is not None and 12 + exponent in pot_shifts:
        return {"input_multiplier": 3 << (12 + exponent), "input_left_shift": 0}
    multiplier = x.s * _TABLE_INPUT_SCALE
    left_shift = 0
    while multiplier <= 32767.0 / 2.0 and left_shift <= 30:
        left_shift += 1
        multiplier *= 2.0
    if multiplier >= 32768.0:
        raise imp.unsupported(
            f"input {x.name!r} has scale {x.s:g}; int16 {imp.op_name} needs a scale below "
            f"{32768.0 / _TABLE_INPUT_SCALE:g}"
        )
    return {"input_multiplier": int(multiplier), "input_left_shift": left_shift}


def _q015_output(imp: _Importer, out: _TensorInfo) -> None:
    if checked_log2(out.s) != -15:
        raise imp.unsupported(f"the int16 output scale must be 2**-15, found {out.s:g}")


def _logistic_tanh_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import int16_activations as act

    x = imp.tensors[ins[0]]
    _symmetric(imp, x, "input")
    _symmetric(imp, out, "output")
    logistic = imp.op_name == "LOGISTIC"
    if logistic and out.s != 1 / 32768:
        raise imp.unsupported(f"the int16 output scale must be 1/32768, found {out.s:g}")
    _q015_output(imp, out)
    # TANH's table is read at twice the argument, so it also takes Q4.11 inputs exactly.
    scaling = _table_input_scaling(imp, x, (0,) if logistic else (0, 1))
    table = relax.const(act.sigmoid_table())
    fn = act.logistic if logistic else act.tanh
    return imp.emit(
        bb, fn, imp.value(ins[0]), table, name=f"{imp.op_name.lower()}_int16", **scaling
    )


def _softmax_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import int16_activations as act

    x = imp.tensors[ins[0]]
    _symmetric(imp, x, "input")
    _symmetric(imp, out, "output")
    if abs(out.s - 1 / 32768) > 0.001 / 32768:
        raise imp.unsupported(f"the int16 output scale must be 1/32768, found {out.s:g}")
    if not x.shape:
        raise imp.unsupported("the input must have at least one dimension")
    beta = np.float32(_required_options(imp, op, "SoftmaxOptions").Beta())
    # scale * beta in float32 (both are floats in TFLite), then to the exp table's
    # input unit: [-65535, 0] ~ [-10, 0].
    real = float(np.float32(np.float32(x.s) * beta)) / (10.0 / 65535.0)
    multiplier, shift = fp.checked_quantize_multiplier(real)
    exp_lut, reciprocal_lut = act.softmax_tables()
    return imp.emit(
        bb, act.softmax, imp.value(ins[0]), relax.const(exp_lut), relax.const(reciprocal_lut),
        name="softmax_int16", input_multiplier=multiplier, input_left_shift=shift,
    )  # fmt: skip


def _hard_swish_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    raise imp.unsupported(
        "int16 HARD_SWISH has no TFLite kernel to follow (LiteRT and TensorFlow Lite Micro "
        "run it in float32, uint8 and int8 only); quantize that operator to int8"
    )


for _name in ("LOGISTIC", "TANH"):
    _by_input_dtype(_name, _logistic_tanh_16)
_by_input_dtype("SOFTMAX", _softmax_16)
_by_input_dtype("HARD_SWISH", _hard_swish_16)
