"""int16 elementwise operators of the TFLite importer (issue 13): LEAKY_RELU, ABS and
CONCATENATION with int16 activations (zero points 0, as LiteRT's kernels require),
bit-exact with LiteRT's reference kernels (docs/int8.md, "16x8").

Each handler takes an operator whose input is int16; the int8 handler registered before
keeps the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8.elementwise import _f32_ratio
from aot.frontend.tflite_int8.importer import (
    _ACTIVATIONS,
    _Importer,
    _required_options,
    _TensorInfo,
)
from aot.frontend.tflite_int8.int16 import _by_input_dtype, _symmetric
from aot.ops import fixedpoint as fp


def _leaky_relu_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int16

    x = imp.tensors[ins[0]]
    _symmetric(imp, x, "input")
    _symmetric(imp, out, "output")
    alpha = float(np.float32(_required_options(imp, op, "LeakyReluOptions").Alpha()))
    if not alpha >= 0.0:
        raise imp.unsupported(f"alpha {alpha:g} is negative")
    # LeakyReluPrepare: the float32 products and ratios of the scales, QuantizeMultiplier.
    identity = fp.checked_quantize_multiplier(_f32_ratio(x.s, divisor=out.s))
    slope = fp.checked_quantize_multiplier(_f32_ratio(x.s, alpha, divisor=out.s), allow_zero=True)
    return imp.emit(
        bb, int16.rescale_by_sign, imp.value(ins[0]), name="leaky_relu_int16",
        positive=identity, negative=slope, mirror_negative=False,
    )  # fmt: skip


def _abs_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int16

    x = imp.tensors[ins[0]]
    _symmetric(imp, x, "input")
    _symmetric(imp, out, "output")
    # AbsEvalQuantized rescales only when the float32 scales differ.
    factor = None
    if np.float32(x.s) != np.float32(out.s):
        factor = fp.checked_quantize_multiplier(_f32_ratio(x.s, divisor=out.s))
    return imp.emit(
        bb, int16.rescale_by_sign, imp.value(ins[0]), name="abs_int16", positive=factor,
        negative=factor, mirror_negative=True,
    )  # fmt: skip


def _concatenation_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    _symmetric(imp, out, "output")
    for i in ins:
        _symmetric(imp, imp.tensors[i], "input")
    opts = _required_options(imp, op, "ConcatenationOptions")
    if _ACTIVATIONS.get(opts.FusedActivationFunction()) != "NONE":
        raise imp.unsupported("a fused activation on CONCATENATION is not supported")
    # concatenation.cc copies int16 values whatever their scales (zero points 0).
    return imp.emit(
        bb, int8.concatenate, *[imp.value(i) for i in ins], name="concatenation_int16",
        axis=opts.Axis() % len(out.shape), out_shape=out.shape,
    )  # fmt: skip


_by_input_dtype("LEAKY_RELU", _leaky_relu_16)
_by_input_dtype("ABS", _abs_16)
_by_input_dtype("CONCATENATION", _concatenation_16)
