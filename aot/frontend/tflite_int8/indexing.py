"""Indexing and shape operators of the TFLite importer: EMBEDDING_LOOKUP,
DYNAMIC_UPDATE_SLICE, CUMSUM, SHAPE and BROADCAST_ARGS.

Registered into ``tflite_int8``'s handler table when that module loads. Shapes are static,
so SHAPE always folds to a constant, and BROADCAST_ARGS does when both shapes are
constant (as they are when they come from SHAPE); the folded value is the tensor's data
from then on, so an operator reading it as a constant operand (RESHAPE's shape,
BROADCAST_TO's) sees it. The arithmetic is in docs/int8.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aot.frontend.tflite_int8.importer import (
    UNSUPPORTED_REASONS,
    _handler,
    _Importer,
    _options,
    _TensorInfo,
)
from aot.ops import fixedpoint as fp

_INDEX_DTYPES = ["int32", "int64"]
# Activations these operators copy as stored: TFLite does not requantize them.
_COPIED_DTYPES = ["int8", "int16"]

# Control flow TFLite Micro runs and aot refuses for good (docs/operators.md lists them).
CONTROL_FLOW = ("IF", "WHILE")
UNSUPPORTED_REASONS.update(
    {
        "IF": "control flow is not supported: aot compiles one static graph and runs every "
        "operator once per inference, so it cannot choose between IF's branch subgraphs at "
        "run time; export the model with the branch taken (or both branches and a "
        "SELECT_V2) instead",
        "WHILE": "control flow is not supported: aot compiles one static graph and runs every "
        "operator once per inference, so it cannot loop over WHILE's body subgraph; unroll "
        "the loop when exporting (a fixed trip count) instead",
    }
)


def is_model_output(imp: _Importer, index: int) -> bool:
    return index in {int(i) for i in imp.graph.OutputsAsNumpy()}


def copied(imp: _Importer, bb: Any, value: Any, shape: tuple[int, ...]) -> Any:
    """``value``, or a kernel's copy of it when no operator computes it (a constant, a
    model input, a variable's value at the start of the inference): model outputs and
    next states must be buffers a kernel writes."""
    from tvm import relax

    from aot.ops import indexing as ops

    if isinstance(value, relax.DataflowVar):
        return value
    return imp.emit(bb, ops.copy, value, name="copy", out_shape=shape)


def _fold(imp: _Importer, bb: Any, out: _TensorInfo, value: np.ndarray) -> Any:
    """``value`` as the result of ``out``: a constant that later operators read as data,
    copied by a kernel when the model outputs it."""
    from tvm import relax

    array = np.ascontiguousarray(value.astype(out.dtype).reshape(out.shape))
    imp.tensors[out.index].data = array
    const = relax.const(array, out.dtype)  # relax.const alone narrows int64 to int32
    return copied(imp, bb, const, out.shape) if is_model_output(imp, out.index) else const


def _copied_pair(imp: _Importer, x: _TensorInfo, out: _TensorInfo, role: str) -> None:
    imp.expect(x, _COPIED_DTYPES, role)
    if out.dtype != x.dtype:
        raise imp.unsupported(f"output {out.name!r} is {out.dtype}; the {role} is {x.dtype}")


@_handler("EMBEDDING_LOOKUP")
def _embedding_lookup(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import indexing as ops

    ids, table = imp.tensors[ins[0]], imp.tensors[ins[1]]
    imp.expect(ids, ["int32"], "ids")
    hybrid = out.dtype == "float32"
    if hybrid:
        # EvalHybrid: the int8 rows times the table's one scale (its Prepare wants zp 0).
        imp.expect(table, ["int8"], "table")
        imp.per_tensor(table, "table")
        if table.zp != 0:
            raise imp.unsupported(f"the hybrid form needs table {table.name!r} at zero point 0")
    else:
        _copied_pair(imp, table, out, "table")
    if len(ids.shape) != 1 or len(table.shape) < 2:
        raise imp.unsupported("expected 1-D ids and a table of rank 2 or more")
    expected = (ids.shape[0], *table.shape[1:])
    if tuple(out.shape) != expected:
        raise imp.unsupported(f"output shape {list(out.shape)} is not {list(expected)}")
    rows = table.shape[0]
    if ids.data is not None and ((ids.data < 0).any() or (ids.data >= rows).any()):
        raise imp.unsupported(f"an id is outside [0, {rows})")
    if hybrid:
        return imp.emit(
            bb, ops.embedding_lookup_hybrid, imp.value(ins[0]), imp.value(ins[1]),
            name="embedding_lookup_hybrid", scale=table.s,
        )  # fmt: skip
    return imp.emit(
        bb, ops.embedding_lookup, imp.value(ins[0]), imp.value(ins[1]),
        name="embedding_lookup",
    )  # fmt: skip


@_handler("DYNAMIC_UPDATE_SLICE")
def _dynamic_update_slice(
    imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo
) -> Any:
    from aot.ops import indexing as ops

    operand, update, starts = (imp.tensors[i] for i in ins[:3])
    imp.expect(operand, [*_COPIED_DTYPES, "int32"], "operand")
    if update.dtype != operand.dtype or out.dtype != operand.dtype:
        raise imp.unsupported(
            f"operand, update and output must share one dtype, found {operand.dtype}, "
            f"{update.dtype} and {out.dtype}"
        )
    imp.expect(starts, _INDEX_DTYPES, "start indices")
    rank = len(operand.shape)
    if starts.shape != (rank,) or len(update.shape) != rank:
        raise imp.unsupported(
            f"expected {rank} start indices and an update of rank {rank}, found "
            f"{list(starts.shape)} and {list(update.shape)}"
        )
    if any(u > o for u, o in zip(update.shape, operand.shape)) or out.shape != operand.shape:
        raise imp.unsupported(
            f"update {list(update.shape)} does not fit operand {list(operand.shape)} "
            f"(output {list(out.shape)})"
        )
    return imp.emit(
        bb, ops.dynamic_update_slice, imp.value(ins[0]), imp.value(ins[1]),
        imp.value(ins[2]), name="dynamic_update_slice",
    )  # fmt: skip


@_handler("CUMSUM")
def _cumsum(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import indexing as ops

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8", *_INDEX_DTYPES], "input")
    if out.dtype != x.dtype or out.shape != x.shape:
        raise imp.unsupported(f"output {out.name!r} must be {x.dtype} {list(x.shape)}")
    imp.expect(imp.tensors[ins[1]], ["int32"], "axis")
    axes = imp.constant(ins[1], "the axis").reshape(-1)
    rank = len(x.shape)
    if axes.size != 1 or not -rank <= int(axes[0]) < rank:
        raise imp.unsupported(f"axis {axes.tolist()} is not one axis of a rank-{rank} input")
    opts = _options(op, "CumsumOptions")
    options = {
        "axis": int(axes[0]) % rank,
        "exclusive": bool(opts.Exclusive()) if opts is not None else False,
        "reverse": bool(opts.Reverse()) if opts is not None else False,
    }
    if x.dtype != "int8":
        return imp.emit(bb, ops.cumsum, imp.value(ins[0]), name="cumsum", **options)
    imp.per_tensor(x, "input")
    imp.per_tensor(out, "output")
    # TFLite Micro's CUMSUM Prepare: both inputs of ADD's scheme are this one input, so the
    # input multiplier is 1/2 and the output one 2 s_in / (2**20 s_out), in double.
    in_m, in_s = fp.quantize_multiplier_smaller_than_one(x.s / (2 * x.s))
    out_m, out_s = fp.quantize_multiplier_smaller_than_one(
        2 * x.s / ((1 << ops.CUMSUM_LEFT_SHIFT) * out.s)
    )
    return imp.emit(
        bb, ops.cumsum_int8, imp.value(ins[0]), name="cumsum_int8", **options,
        input_zp=x.zp, input_multiplier=in_m, input_shift=in_s, output_multiplier=out_m,
        output_shift=out_s, output_zp=out.zp,
    )  # fmt: skip


@_handler("SHAPE")
def _shape(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    x = imp.tensors[ins[0]]
    imp.expect(out, _INDEX_DTYPES, "output")
    if out.shape != (len(x.shape),):
        raise imp.unsupported(f"output shape {list(out.shape)} is not [{len(x.shape)}]")
    return _fold(imp, bb, out, np.asarray(x.shape, np.int64))


@_handler("BROADCAST_ARGS")
def _broadcast_args(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import indexing as ops

    lhs, rhs = imp.tensors[ins[0]], imp.tensors[ins[1]]
    for t, role in ((lhs, "shape 1"), (rhs, "shape 2"), (out, "output")):
        imp.expect(t, _INDEX_DTYPES, role)
        if t.dtype != lhs.dtype or len(t.shape) != 1:
            raise imp.unsupported(f"{role} {t.name!r} must be a 1-D {lhs.dtype} tensor")
    size = max(lhs.shape[0], rhs.shape[0])
    if out.shape != (size,):
        raise imp.unsupported(f"output shape {list(out.shape)} is not [{size}]")
    if lhs.data is not None and rhs.data is not None:
        try:
            shape = np.broadcast_shapes(tuple(lhs.data.tolist()), tuple(rhs.data.tolist()))
        except ValueError:
            raise imp.unsupported(
                f"shapes {lhs.data.tolist()} and {rhs.data.tolist()} do not broadcast"
            ) from None
        return _fold(imp, bb, out, np.asarray(shape, np.int64))
    return imp.emit(
        bb, ops.broadcast_args, imp.value(ins[0]), imp.value(ins[1]),
        name="broadcast_args", out_size=size,
    )  # fmt: skip
