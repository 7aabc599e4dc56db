"""More int8 operators of the TFLite importer (issue 13, group B): EXP, BATCH_MATMUL.

Registered into ``tflite_int8``'s handler table when that module loads; the arithmetic of
each is written down in docs/int8.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8 import _expf, _handler, _Importer, _lut, _options, _TensorInfo
from aot.ops import fixedpoint as fp


@_handler("EXP")
def _exp(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import int8

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    imp.per_tensor(out, "output")
    # LiteRT's int8 EXP is a 256-entry table of expf, built like LOGISTIC's.
    table = relax.const(_lut(x, out, _expf))
    return imp.emit(bb, int8.lookup_table, imp.value(ins[0]), table, name="exp_int8")


@_handler("BATCH_MATMUL")
def _batch_matmul(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8_math

    a, b = imp.tensors[ins[0]], imp.tensors[ins[1]]
    for t, role in ((a, "input 1"), (b, "input 2"), (out, "output")):
        imp.expect(t, ["int8"], role)
        imp.per_tensor(t, role)
    opts = _options(op, "BatchMatMulOptions")
    adj_x = bool(opts.AdjX()) if opts is not None else False
    adj_y = bool(opts.AdjY()) if opts is not None else False
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise imp.unsupported("both inputs must have at least 2 dimensions")
    rows, depth = (a.shape[-1], a.shape[-2]) if adj_x else (a.shape[-2], a.shape[-1])
    depth_b, cols = (b.shape[-1], b.shape[-2]) if adj_y else (b.shape[-2], b.shape[-1])
    if depth != depth_b:
        raise imp.unsupported(f"inner dimensions {depth} and {depth_b} differ")
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        raise imp.unsupported(
            f"batch dimensions {list(a.shape[:-2])} and {list(b.shape[:-2])} do not broadcast"
        ) from None
    if out.shape != (*batch, rows, cols):
        raise imp.unsupported(f"output shape {list(out.shape)} is not {[*batch, rows, cols]}")
    # batch_matmul.cc's Prepare: the double product of the float scales.
    m, s = fp.checked_quantize_multiplier(a.s * b.s / out.s)
    return imp.emit(
        bb, int8_math.batch_matmul, imp.value(ins[0]), imp.value(ins[1]),
        name="batch_matmul_int8", out_shape=out.shape, adj_x=adj_x, adj_y=adj_y,
        lhs_zp=a.zp, rhs_zp=b.zp, output_zp=out.zp, multiplier=m, shift=s,
    )  # fmt: skip
