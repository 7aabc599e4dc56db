"""Stateful int8 operators of the TFLite importer: SVDF.

Registered into ``tflite_int8``'s handler table when that module loads. A stateful
operator reads its variable tensor (a parameter of ``main`` after the inputs) and hands
its next value to ``_Importer.update_state``; the executor keeps it in the persistent
pool between inferences and ``aot_<name>_reset()`` restores the initial value.
"""

from __future__ import annotations

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


def _float32_ratio(a: float, b: float, c: float) -> float:
    """a * b / c in float32, as TFLite's Prepare computes an SVDF scale, then widened."""
    return float(np.float32(np.float32(a) * np.float32(b)) / np.float32(c))


@_handler("SVDF")
def _svdf(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from tvm import relax

    from aot.ops import state as ops

    if len(ins) != 5:
        raise imp.unsupported(f"expected 5 inputs, found {len(ins)}")
    x, wf, wt, st = (imp.tensors[ins[i]] for i in (0, 1, 2, 4))
    imp.expect(x, ["int8"], "input")
    imp.expect(wf, ["int8"], "feature weights")
    # int16 time weights and state are TFLite's form; int8 for both is TFLite Micro's
    # (its keyword benchmark), which keeps a zero point in the state.
    imp.expect(wt, ["int16", "int8"], "time weights")
    imp.expect(st, [wt.dtype], "state")
    imp.expect(out, ["int8"], "output")
    for t, role in ((x, "input"), (wf, "feature weights"), (wt, "time weights"), (st, "state")):
        imp.per_tensor(t, role)
    if st.dtype == "int16" and st.zp != 0:
        raise imp.unsupported(f"state {st.name!r} has zero point {st.zp}; TFLite needs 0")
    opts = _required_options(imp, op, "SVDFOptions")
    # TFLite's integer kernel refuses other activations and applies none itself.
    activation = _ACTIVATIONS.get(opts.FusedActivationFunction(), "?")
    if activation != "RELU":
        raise imp.unsupported(f"fused activation {activation}; the integer SVDF needs RELU")
    rank = int(opts.Rank())
    if len(x.shape) != 2 or len(wf.shape) != 2 or len(wt.shape) != 2:
        raise imp.unsupported("expected a 2-D input and 2-D feature and time weights")
    batch, depth = x.shape
    filters, memory = wt.shape
    if rank <= 0 or filters % rank or wf.shape != (filters, depth):
        raise imp.unsupported(
            f"weights {list(wf.shape)} and {list(wt.shape)} with rank {rank} do not fit "
            f"input {list(x.shape)}"
        )
    units = filters // rank
    if st.shape != (batch, filters * memory) or out.shape != (batch, units):
        raise imp.unsupported(
            f"state {list(st.shape)} or output {list(out.shape)} does not fit "
            f"{batch} batches, {filters} filters, memory {memory}"
        )
    bias = None
    if ins[3] >= 0:
        b = imp.tensors[ins[3]]
        if b.dtype != "int32" or int(np.prod(b.shape)) != units:
            raise imp.unsupported(f"bias {b.name!r} must be int32 with {units} values")
        bias = relax.const(np.ascontiguousarray(imp.constant(ins[3], "the bias").reshape(units)))
    m1, s1 = fp.checked_quantize_multiplier(_float32_ratio(x.s, wf.s, st.s))
    m2, s2 = fp.checked_quantize_multiplier(_float32_ratio(st.s, wt.s, out.s))
    next_state = imp.emit(
        bb, ops.svdf_state, imp.value(ins[0]), imp.value(ins[1]), imp.value(ins[4]),
        name="svdf_state_int8", memory=memory, input_zp=x.zp, multiplier=m1, shift=s1,
        state_zp=st.zp,
    )  # fmt: skip
    imp.update_state(ins[4], next_state, "state")
    return imp.emit(
        bb, ops.svdf_output, next_state, imp.value(ins[2]), bias, name="svdf_int8",
        rank=rank, output_zp=out.zp, multiplier=m2, shift=s2, state_zp=st.zp,
    )  # fmt: skip
