"""int16 operators of the TFLite importer that rescale one value at a time (issue 13):
QUANTIZE to and from int16, DEQUANTIZE of int16, RELU and RELU6 with int16 activations,
as LiteRT's reference kernels and TensorFlow Lite Micro run them (docs/int8.md, "16x8").

They reuse the int8 computes (``int8.quantize``, ``int8.requantize``,
``int8.dequantize``) with int16 ranges; each handler takes an operator whose input (for
QUANTIZE: or output) is int16, the int8 handler registered before keeps the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8.importer import _Importer, _TensorInfo
from aot.frontend.tflite_int8.int16 import _by_input_dtype, _symmetric
from aot.ops import fixedpoint as fp

_RANGES = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1)}


def _quantize_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["float32", "int8", "int16"], "input")
    # int16 -> int32: TFLite Micro's quantize.cc (keyword_scrambled's last operator).
    imp.expect(out, ["int8", "int16", "int32"] if x.dtype == "int16" else ["int8", "int16"],
               "output")  # fmt: skip
    imp.per_tensor(out, "output")
    if out.dtype == "int32" and out.zp != 0:
        # Requantize adds the zero point in int32 after the product; with 0 nothing wraps.
        raise imp.unsupported(f"the int32 output has zero point {out.zp}; aot needs 0")
    if x.dtype == "float32":
        return imp.emit(
            bb, int8.quantize, imp.value(ins[0]), name="quantize_int16", scale=out.s,
            zero_point=out.zp, out_dtype="int16",
        )  # fmt: skip
    imp.per_tensor(x, "input")
    if x.dtype == out.dtype == "int16":  # quantize.cc: int16 -> int16 is symmetric
        _symmetric(imp, x, "input")
        _symmetric(imp, out, "output")
    # quantize.cc: the double ratio of the float32 scales, QuantizeMultiplier, Requantize.
    m, s = fp.checked_quantize_multiplier(x.s / out.s)
    lo, hi = _RANGES[out.dtype]
    return imp.emit(
        bb, int8.requantize, imp.value(ins[0]), name=f"requantize_{x.dtype}_{out.dtype}",
        input_zp=x.zp, output_multiplier=m, output_shift=s, output_zp=out.zp, act_min=lo,
        act_max=hi, out_dtype=out.dtype,
    )  # fmt: skip


def _dequantize_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int16"], "input")
    imp.expect(out, ["float32"], "output")
    imp.per_tensor(x, "input")
    # The float32 product of a 16-bit integer and a float32 scale is the exact product
    # rounded once, as TFLite's double product cast to float is.
    return imp.emit(
        bb, int8.dequantize, imp.value(ins[0]), name="dequantize_int16", scale=x.s,
        zero_point=x.zp,
    )  # fmt: skip


def _relu_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    if imp.op_name == "RELU_N1_TO_1":
        raise imp.unsupported(
            "int16 RELU_N1_TO_1 has no TFLite kernel to follow (LiteRT runs it in float32, "
            "uint8 and int8 only)"
        )
    _symmetric(imp, x, "input")
    _symmetric(imp, out, "output")
    # ReluPrepare divides the float32 scales in float; QuantizedReluX<int16_t> clamps.
    m, s = fp.checked_quantize_multiplier(float(np.float32(x.s) / np.float32(out.s)))
    hi = 32767 if imp.op_name == "RELU" else min(32767, fp.quantize_f32(6.0, out.s, 0))
    return imp.emit(
        bb, int8.requantize, imp.value(ins[0]), name=f"{imp.op_name.lower()}_int16",
        input_zp=0, output_multiplier=m, output_shift=s, output_zp=0,
        act_min=max(-32768, fp.quantize_f32(0.0, out.s, 0)), act_max=hi, out_dtype="int16",
    )  # fmt: skip


_by_input_dtype("QUANTIZE", _quantize_16, or_output=True)
_by_input_dtype("DEQUANTIZE", _dequantize_16)
for _name in ("RELU", "RELU6", "RELU_N1_TO_1"):
    _by_input_dtype(_name, _relu_16)
