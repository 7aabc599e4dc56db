"""int16 operators of the TFLite importer that pool or reshape without rescaling (issue
13): AVERAGE_POOL_2D and MAX_POOL_2D (``reference_integer_ops`` for int16, the int8
computes on int16), RESHAPE, SQUEEZE and EXPAND_DIMS (copies). docs/int8.md, "16x8".

Each handler takes an operator whose input is int16; the int8 handler registered before
keeps the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8 import importer as base
from aot.frontend.tflite_int8.importer import _Importer, _required_options, _TensorInfo
from aot.frontend.tflite_int8.int16 import _by_input_dtype, _int16_activation

_POOLS = {"AVERAGE_POOL_2D": "average_pool2d", "MAX_POOL_2D": "max_pool2d"}


def _pool_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    for t, role in ((x, "input"), (out, "output")):
        imp.expect(t, ["int16"], role)
        imp.per_tensor(t, role)
    if len(x.shape) != 4:
        raise imp.unsupported("expected a 4-D NHWC input")
    opts = _required_options(imp, op, "Pool2DOptions")
    filt = (opts.FilterHeight(), opts.FilterWidth())
    strides = (opts.StrideH(), opts.StrideW())
    padding = base._padding(imp, opts, x.shape[1:3], filt, strides, (1, 1), out.shape[1:3])
    # pooling.cc: the int16 activation range from the output's quantization.
    act_min, act_max = _int16_activation(imp, opts, out)
    compute = _POOLS[imp.op_name]
    return imp.emit(
        bb, getattr(int8, compute), imp.value(ins[0]), name=f"{compute}_int16",
        out_shape=out.shape, filter_size=filt, strides=strides, padding=padding,
        act_min=act_min, act_max=act_max,
    )  # fmt: skip


def _reshape_16(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int16"], "input")
    imp.expect(out, ["int16"], "output")
    # A copy of the stored values, whatever the quantization (reshape.cc copies bytes).
    if int(np.prod(x.shape)) != int(np.prod(out.shape)):
        raise imp.unsupported(f"cannot reshape {list(x.shape)} to {list(out.shape)}")
    if x.shape == out.shape:
        return imp.value(ins[0])
    return imp.emit(bb, int8.reshape, imp.value(ins[0]), name="reshape_int16", out_shape=out.shape)


for _name in _POOLS:
    _by_input_dtype(_name, _pool_16)
for _name in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS"):
    _by_input_dtype(_name, _reshape_16)
