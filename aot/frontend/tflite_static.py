"""Make a dynamic-batch TFLite graph static: the import step between validation and import.

Keras 3 exports a dynamic batch by default (``keras.Input(shape)`` without ``batch_size``):
model inputs carry ``shape_signature`` -1 in dimension 0, and wherever a layer's shape
depends on the batch (Flatten, Reshape, a Dense on a 3-D tensor) the converter keeps the
shape arithmetic in the graph: SHAPE -> STRIDED_SLICE / GATHER -> PACK / CONCATENATION ->
RESHAPE, with a placeholder stored shape (``[1, 1]``) on the RESHAPE's output. aot runs one
inference of batch 1, so this step

1. fixes every dynamic dimension of a model input to 1 (only the batch dimension may be
   dynamic: any other is a one-line UnsupportedError naming the input);
2. walks the operators in order, inferring each output shape (validate.py's rules where
   they exist, the rules below otherwise) and storing it over the placeholder;
3. folds every operator whose inputs are all constant integer tensors (or SHAPE, whose
   input's shape is now known) into a constant computed in numpy as TFLite's kernel
   computes it, and drops the operators nothing reads any more.

It is a transformation of validate.py's plain view (``Model``): the importers see a graph
in which every shape is static and no shape arithmetic is left. A graph without any
dynamic dimension is returned unchanged (the converter folds such arithmetic itself).
See docs/int8.md, "Dynamic batch".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from aot.errors import UnsupportedError
from aot.frontend.validate import (
    _RULES,
    Buffer,
    Model,
    Operator,
    Subgraph,
    Tensor,
    _axis,
    _Damage,
    _Op,
)

# Folding computes in numpy; a result beyond this many elements is left to run as an
# operator (no shape computation comes near it).
_MAX_FOLDED_ELEMENTS = 1 << 20
_FOLDED_TYPES = ("int32", "int64", "bool")


@dataclass(frozen=True)
class StaticReport:
    """What the step changed, for the build log and the tests."""

    fixed_inputs: tuple[str, ...] = ()  # inputs whose dynamic batch is now 1
    folded: tuple[str, ...] = ()  # labels of the operators folded into constants
    removed: tuple[str, ...] = ()  # labels of operators left without a reader
    reshaped: tuple[str, ...] = ()  # tensors whose stored (placeholder) shape was replaced

    @property
    def changed(self) -> bool:
        return bool(self.fixed_inputs or self.folded or self.removed or self.reshaped)

    def notes(self) -> tuple[str, ...]:
        if not self.changed:
            return ()
        inputs = ", ".join(repr(n) for n in self.fixed_inputs) or "none"
        return (
            f"dynamic batch fixed to 1 (inputs {inputs}); folded {len(self.folded)} shape "
            f"operators into constants, removed {len(self.removed)} unused, replaced "
            f"{len(self.reshaped)} placeholder shapes",
        )


def is_dynamic(sg: Subgraph) -> bool:
    """True when a tensor of the subgraph declares a dynamic dimension."""
    return any(d < 0 for t in sg.tensors for d in t.signature)


def make_static(model: Model, padded: bytes, source: str) -> tuple[Model, StaticReport]:
    """Subgraph 0 with batch 1, static shapes and folded shape arithmetic (see the module
    docstring). Raises UnsupportedError for a dynamic non-batch input dimension and
    validate's ``_Damage`` for an operator whose shapes do not fit."""
    sg = model.subgraphs[0]
    if not is_dynamic(sg):
        return model, StaticReport()
    tensors = [dataclasses.replace(t) for t in sg.tensors]
    static_sg = dataclasses.replace(sg, tensors=tensors, operators=list(sg.operators))
    static = Model([static_sg, *model.subgraphs[1:]], list(model.buffers))
    fixed = _fix_inputs(static_sg, source)
    step = _Step(static, static_sg, padded)
    kept: list[Operator] = []
    for op in static_sg.operators:
        if step.fold(op):
            continue
        step.infer(op)
        kept.append(op)
    kept, removed = _without_unread(static_sg, kept)
    static_sg.operators = kept
    for t in tensors:
        t.signature = ()  # every shape is the static one now
    report = StaticReport(
        fixed_inputs=tuple(fixed),
        folded=tuple(step.folded),
        removed=tuple(op.label() for op in removed),
        reshaped=tuple(step.reshaped),
    )
    return static, report


def _fix_inputs(sg: Subgraph, source: str) -> list[str]:
    fixed = []
    for i in sg.inputs:
        t = sg.tensors[i]
        dynamic = [d for d, n in enumerate(t.signature) if n < 0]
        if any(d != 0 for d in dynamic):
            raise UnsupportedError(
                f"{source}: input {t.name!r} has the dynamic shape {list(t.signature)}; aot "
                "fixes only a dynamic batch (dimension 0) to 1: export the model with every "
                "other dimension fixed (keras.Input(shape=...) with numbers, or the "
                "converter's concrete input shape)"
            )
        if dynamic:
            t.shape = (1, *t.shape[1:])
            fixed.append(t.name)
    return fixed


def _without_unread(sg: Subgraph, ops: list[Operator]) -> tuple[list[Operator], list[Operator]]:
    """Drop shape operators (integer outputs only) whose results nothing reads."""
    read = set(sg.outputs)
    kept: list[Operator] = []
    removed: list[Operator] = []
    for op in reversed(ops):
        outputs = [sg.tensors[i] for i in op.outputs]
        pure = outputs and all(t.dtype in _FOLDED_TYPES and not t.scale for t in outputs)
        if pure and not any(t.is_variable for t in outputs) and not read & set(op.outputs):
            removed.append(op)
            continue
        kept.append(op)
        read |= {i for i in op.inputs if i != -1}
    return kept[::-1], removed[::-1]


class _Step:
    def __init__(self, model: Model, sg: Subgraph, padded: bytes) -> None:
        self.model = model
        self.sg = sg
        self.padded = padded
        self.folded: list[str] = []
        self.reshaped: list[str] = []

    # -- constants ----------------------------------------------------------------------

    def constant(self, index: int) -> np.ndarray | None:
        if index == -1:
            return None
        t = self.sg.tensors[index]
        data = self.model.buffers[t.buffer].data
        if data is None or t.dtype is None or t.is_variable:
            return None
        dtype = np.dtype(t.dtype).newbyteorder("<")
        return np.frombuffer(data, dtype).astype(np.dtype(t.dtype)).reshape(t.shape)

    def set_constant(self, index: int, value: np.ndarray) -> None:
        t = self.sg.tensors[index]
        # np.array keeps a 0-d result 0-d (ascontiguousarray would make it 1-d).
        array = np.array(value, dtype=np.dtype(t.dtype).newbyteorder("<"), order="C")
        shape = tuple(int(d) for d in array.shape)
        if not self.set_shape(t, shape):
            raise _Damage(f"computes shape {list(shape)} but its output {t.label(False)} "
                          f"declares {list(t.shape)}")  # fmt: skip
        self.model.buffers.append(Buffer(array.tobytes()))
        t.buffer = len(self.model.buffers) - 1

    def set_shape(self, t: Tensor, shape: tuple[int, ...]) -> bool:
        """Store the inferred ``shape`` over a placeholder; False (nothing stored) when the
        stored shape is no placeholder for it, which validate then reports as damage."""
        stored = tuple(t.shape)
        if stored == shape:
            return True
        # The converter writes 1 where the signature says -1 (dynamic); any other
        # difference is damage, never repaired here.
        signature = t.signature or stored
        if len(signature) != len(shape) or len(stored) != len(shape):
            return False
        for known, old, new in zip(signature, stored, shape):
            if old != new and not (known < 0 and old == 1):
                return False
        self.reshaped.append(t.name)
        t.shape = shape
        return True

    # -- folding ------------------------------------------------------------------------

    def fold(self, op: Operator) -> bool:
        """Replace ``op`` by the constant it computes, when it can; True when it did."""
        folder = _FOLDERS.get(op.name)
        if folder is None or len(op.outputs) != 1 or op.outputs[0] in self.sg.outputs:
            return False
        out = self.sg.tensors[op.outputs[0]]
        if out.dtype not in _FOLDED_TYPES or out.scale or out.is_variable:
            return False
        if op.name == "SHAPE":
            values: list[Any] = [self.sg.tensors[op.inputs[0]].shape]
        else:
            values = [self.constant(i) for i in op.inputs]
            if any(v is None and i != -1 for v, i in zip(values, op.inputs)):
                return False
            if any(self.sg.tensors[i].scale for i in op.inputs if i != -1):
                return False  # quantized arithmetic is the importer's, not shape arithmetic
        try:
            result = folder(_Op(op, self.sg, self.model, self.padded), values)
        except _Damage as err:
            raise _Damage(f"{op.label()} {err}") from None
        except (ValueError, IndexError, TypeError, OverflowError):
            # A form the folder does not know: the operator stays, for the importer to
            # compute or refuse by name (a damaged file must never raise from here).
            return False
        if result is None or result.size > _MAX_FOLDED_ELEMENTS:
            return False
        self.set_constant(op.outputs[0], np.asarray(result).astype(out.dtype))
        self.folded.append(op.label())
        return True

    # -- shapes -------------------------------------------------------------------------

    def infer(self, op: Operator) -> None:
        """Store the shape ``op`` computes on its first output (kept when no rule knows)."""
        if not op.outputs:
            return
        out = self.sg.tensors[op.outputs[0]]
        view = _Op(op, self.sg, self.model, self.padded)
        try:
            rule = _SHAPE_RULES.get(op.name) or _RULES.get(op.name)
            shape = rule(view) if rule is not None else None
        except _Damage as err:
            raise _Damage(f"{op.label()} {err}") from None
        except (ValueError, IndexError, TypeError, OverflowError):
            shape = None  # the stored shape stays; validate's own rules judge it
        if isinstance(shape, list):  # several are valid: the stored one, else the first
            shape = tuple(out.shape) if tuple(out.shape) in map(tuple, shape) else shape[0]
        if shape is not None:
            self.set_shape(out, tuple(int(d) for d in shape))


# -- shape rules validate.py has not (it checks them against the stored shape) -------------


def _static_shape(op: _Op, values: np.ndarray, what: str, input_size: int) -> tuple[int, ...]:
    """A target shape with at most one -1, resolved against ``input_size`` elements."""
    dims = [int(d) for d in values.reshape(-1)]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise _Damage(f"has {what} {dims}")
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or input_size % known:
            raise _Damage(f"cannot reshape {input_size} elements to {what} {dims}")
        dims[dims.index(-1)] = input_size // known
    return tuple(dims)


def _reshape_shape(op: _Op) -> tuple[int, ...] | None:
    size = math.prod(op.shape(0, "input"))
    shape = _constant_input(op, 1)
    if shape is not None and shape.ndim == 1:
        return _static_shape(op, shape, "target shape", size)
    opts = op.options("ReshapeOptions")
    if opts is not None and opts.NewShapeLength():
        return _static_shape(op, opts.NewShapeAsNumpy(), "new_shape", size)
    return None


def _squeeze_shape(op: _Op) -> tuple[int, ...]:
    x = op.shape(0, "input")
    opts = op.options("SqueezeOptions")
    dims = [int(d) for d in opts.SqueezeDimsAsNumpy()] if opts and opts.SqueezeDimsLength() else []
    axes = {_axis(d, len(x)) for d in dims} if dims else {d for d, n in enumerate(x) if n == 1}
    return tuple(n for d, n in enumerate(x) if d not in axes)


def _expand_dims_shape(op: _Op) -> tuple[int, ...] | None:
    x = op.shape(0, "input")
    axis = _constant_input(op, 1)
    if axis is None or axis.size != 1:
        return None
    at = _axis(int(axis.reshape(-1)[0]), len(x) + 1)
    return (*x[:at], 1, *x[at:])


def _batch_matmul_shape(op: _Op) -> tuple[int, ...]:
    x, y = op.shape(0, "first input"), op.shape(1, "second input")
    if len(x) < 2 or len(y) < 2:
        raise _Damage(f"multiplies shapes {list(x)} and {list(y)}; both need rank 2 or more")
    opts = op.options("BatchMatMulOptions")
    adj_x, adj_y = (bool(opts.AdjX()), bool(opts.AdjY())) if opts is not None else (False, False)
    rows, depth = (x[-1], x[-2]) if adj_x else (x[-2], x[-1])
    depth_y, cols = (y[-1], y[-2]) if adj_y else (y[-2], y[-1])
    if depth != depth_y:
        raise _Damage(f"multiplies shapes {list(x)} and {list(y)}, whose depths differ")
    try:
        batch = np.broadcast_shapes(tuple(x[:-2]), tuple(y[:-2]))
    except ValueError:
        raise _Damage(f"has batch shapes {list(x[:-2])} and {list(y[:-2])}") from None
    return (*batch, rows, cols)


def _gather_shape(op: _Op) -> tuple[int, ...]:
    params, indices = op.shape(0, "params"), op.shape(1, "indices")
    axis, batch_dims = _gather_axes(op, len(params), len(indices))
    return (*params[:axis], *indices[batch_dims:], *params[axis + 1 :])


def _pack_shape(op: _Op) -> tuple[int, ...]:
    shapes = [op.shape(k, f"input {k}") for k in range(len(op.op.inputs))]
    if not shapes or any(s != shapes[0] for s in shapes):
        raise _Damage(f"packs inputs of shapes {[list(s) for s in shapes]}")
    opts = op.options("PackOptions")
    axis = _axis(opts.Axis() if opts is not None else 0, len(shapes[0]) + 1)
    return (*shapes[0][:axis], len(shapes), *shapes[0][axis:])


def _strided_slice_shape(op: _Op) -> tuple[int, ...] | None:
    x = op.shape(0, "input")
    bounds = [_constant_input(op, k) for k in (1, 2, 3)]
    if any(b is None for b in bounds):
        return None
    picked = _strided_slice_indices(op, x, *bounds)  # type: ignore[arg-type]
    return None if picked is None else picked[1]


def _slice_shape(op: _Op) -> tuple[int, ...] | None:
    x = op.shape(0, "input")
    begin, size = _constant_input(op, 1), _constant_input(op, 2)
    if begin is None or size is None:
        return None
    return tuple(s for s in (_slice_bounds(x, begin, size)[1]))


def _block_and_pairs(op: _Op, what: str) -> tuple[list[int], list[tuple[int, int]]] | None:
    block, pairs = _constant_input(op, 1), _constant_input(op, 2)
    if block is None or pairs is None:
        return None
    blocks = [int(b) for b in block.reshape(-1)]
    if pairs.size != 2 * len(blocks) or any(b < 1 for b in blocks):
        raise _Damage(f"has block {blocks} and {what} {pairs.reshape(-1).tolist()}")
    return blocks, [(int(a), int(b)) for a, b in pairs.reshape(-1, 2)]


def _space_to_batch_shape(op: _Op) -> tuple[int, ...] | None:
    """The batch grows by the block's size (a dilated Conv1D's export): the converter's
    stored batch of 1 is a placeholder there too."""
    x = op.shape(0, "input")
    found = _block_and_pairs(op, "paddings")
    if found is None:
        return None
    block, pads = found
    if len(x) < 1 + len(block):
        raise _Damage(f"has block {block} for an input of shape {list(x)}")
    spatial = []
    for size, b, (before, after) in zip(x[1:], block, pads):
        if min(before, after) < 0 or (size + before + after) % b:
            raise _Damage(f"pads {size} by {[before, after]}, not a multiple of the block {b}")
        spatial.append((size + before + after) // b)
    return (x[0] * math.prod(block), *spatial, *x[1 + len(block) :])


def _batch_to_space_shape(op: _Op) -> tuple[int, ...] | None:
    x = op.shape(0, "input")
    found = _block_and_pairs(op, "crops")
    if found is None:
        return None
    block, crops = found
    count = math.prod(block)
    if len(x) < 1 + len(block) or x[0] % count:
        raise _Damage(f"has block {block} for an input of shape {list(x)}")
    spatial = []
    for size, b, (before, after) in zip(x[1:], block, crops):
        if min(before, after) < 0 or size * b - before - after < 1:
            raise _Damage(f"crops {[before, after]} from {size * b}")
        spatial.append(size * b - before - after)
    return (x[0] // count, *spatial, *x[1 + len(block) :])


def _tile_shape(op: _Op) -> tuple[int, ...] | None:
    x = op.shape(0, "input")
    multiples = _constant_input(op, 1)
    if multiples is None:
        return None
    counts = [int(m) for m in multiples.reshape(-1)]
    if len(counts) != len(x) or any(m < 1 for m in counts):
        raise _Damage(f"has multiples {counts} for an input of shape {list(x)}")
    return tuple(n * m for n, m in zip(x, counts))


_SHAPE_RULES: dict[str, Callable[[_Op], Any]] = {
    "SPACE_TO_BATCH_ND": _space_to_batch_shape,
    "BATCH_TO_SPACE_ND": _batch_to_space_shape,
    "TILE": _tile_shape,
    "RESHAPE": _reshape_shape,
    "SQUEEZE": _squeeze_shape,
    "EXPAND_DIMS": _expand_dims_shape,
    "BATCH_MATMUL": _batch_matmul_shape,
    "GATHER": _gather_shape,
    "PACK": _pack_shape,
    "STRIDED_SLICE": _strided_slice_shape,
    "SLICE": _slice_shape,
}


def _constant_input(op: _Op, k: int) -> np.ndarray | None:
    """An integer constant input as numpy (validate's ``_Op.constant`` flattens it)."""
    t = op.input(k)
    values = op.constant(k)
    if t is None or values is None:
        return None
    return values.reshape(t.shape)


# -- folding: each as TFLite's reference kernel computes it on integers -------------------

Folder = Callable[[_Op, list[Any]], np.ndarray | None]


def _gather_axes(op: _Op, params_rank: int, indices_rank: int) -> tuple[int, int]:
    opts = op.options("GatherOptions")
    axis = opts.Axis() if opts is not None else 0
    batch_dims = opts.BatchDims() if opts is not None else 0
    axis = _axis(axis, params_rank)
    if batch_dims < 0:
        batch_dims += indices_rank
    if not 0 <= batch_dims <= min(axis, indices_rank):
        raise _Damage(f"has batch_dims {batch_dims} for axis {axis}")
    return axis, batch_dims


def _fold_shape(op: _Op, values: list[Any]) -> np.ndarray:
    return np.asarray(values[0], np.int64).reshape(len(values[0]))


def _fold_gather(op: _Op, values: list[Any]) -> np.ndarray | None:
    params, indices = values[0], values[1]
    axis, batch_dims = _gather_axes(op, params.ndim, indices.ndim)
    if batch_dims:
        return None
    size = params.shape[axis]
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        raise _Damage(f"gathers indices {indices.reshape(-1).tolist()} from an axis of {size}")
    return np.take(params, indices.astype(np.int64), axis=axis)


def _fold_pack(op: _Op, values: list[Any]) -> np.ndarray:
    shape = _pack_shape(op)
    opts = op.options("PackOptions")
    return np.stack(values, axis=_axis(opts.Axis() if opts is not None else 0, len(shape)))


def _fold_concatenation(op: _Op, values: list[Any]) -> np.ndarray | None:
    opts = op.options("ConcatenationOptions")
    if opts is None or opts.FusedActivationFunction() != 0:
        return None
    shape = _RULES["CONCATENATION"](op)
    return np.concatenate(values, axis=_axis(opts.Axis(), len(shape)))


def _fold_reshape(op: _Op, values: list[Any]) -> np.ndarray | None:
    shape = _reshape_shape(op) if op.op.name == "RESHAPE" else _SHAPE_RULES[op.op.name](op)
    if shape is None:
        return None
    if math.prod(shape) != values[0].size:
        raise _Damage(f"reshapes {values[0].size} elements to {list(shape)}")
    return values[0].reshape(shape)


def _strided_slice_indices(
    op: _Op, shape: tuple[int, ...], begin: np.ndarray, end: np.ndarray, strides: np.ndarray
) -> tuple[tuple[slice, ...], tuple[int, ...]] | None:
    """TFLite's StartForAxis / StopForAxis (strided_slice_logic.h): per-axis slices, and the
    output shape (shrunk axes removed). None for the ellipsis and new-axis forms."""
    opts = op.options("StridedSliceOptions")
    masks = (0, 0, 0, 0, 0, False)
    if opts is not None:
        masks = (opts.BeginMask(), opts.EndMask(), opts.EllipsisMask(), opts.NewAxisMask(),
                 opts.ShrinkAxisMask(), bool(opts.Offset()))  # fmt: skip
    begin_mask, end_mask, ellipsis, new_axis, shrink, offset = masks
    if ellipsis or new_axis:
        return None
    begin, end, strides = (np.asarray(v, np.int64).reshape(-1) for v in (begin, end, strides))
    if not len(begin) == len(end) == len(strides) <= len(shape):
        raise _Damage(f"has begin, end and strides of lengths {len(begin)}, {len(end)}, "
                      f"{len(strides)} for an input of shape {list(shape)}")  # fmt: skip
    slices, out = [], []
    for axis, size in enumerate(shape):
        if axis >= len(begin):
            slices.append(slice(None))
            out.append(size)
            continue
        stride = int(strides[axis])
        if stride == 0:
            raise _Damage(f"has stride 0 on axis {axis}")
        lo, hi = (0, size) if stride > 0 else (-1, size - 1)
        start = int(begin[axis])
        if begin_mask >> axis & 1:
            start = lo if stride > 0 else hi
        start = min(max(start + size if start < 0 else start, lo), hi)
        if shrink >> axis & 1:
            stop = start + 1
            stride = 1
        else:
            stop = int(end[axis]) + (int(begin[axis]) if offset else 0)
            if end_mask >> axis & 1:
                stop = hi if stride > 0 else lo
            stop = min(max(stop + size if stop < 0 else stop, lo), hi)
        count = max(0, -(-(stop - start) // stride))
        # numpy reads stop -1 as "the last element"; None reaches past the start.
        slices.append(slice(start, None if stop < 0 else stop, stride))
        if not shrink >> axis & 1:
            out.append(count)
        elif count != 1:
            raise _Damage(f"shrinks axis {axis} of size {size} at index {start}")
    return tuple(slices), tuple(out)


def _fold_strided_slice(op: _Op, values: list[Any]) -> np.ndarray | None:
    x = values[0]
    picked = _strided_slice_indices(op, x.shape, *values[1:4])
    if picked is None:
        return None
    slices, shape = picked
    return x[slices].reshape(shape)


def _slice_bounds(
    shape: tuple[int, ...], begin: np.ndarray, size: np.ndarray
) -> tuple[tuple[slice, ...], tuple[int, ...]]:
    begin, size = (np.asarray(v, np.int64).reshape(-1) for v in (begin, size))
    if len(begin) != len(shape) or len(size) != len(shape):
        raise _Damage(f"has begin {begin.tolist()} and size {size.tolist()} for {list(shape)}")
    slices, out = [], []
    for b, s, n in zip(begin.tolist(), size.tolist(), shape):
        s = n - b if s == -1 else s
        if b < 0 or s < 0 or b + s > n:
            raise _Damage(f"slices [{b}, {b + s}) from an axis of {n}")
        slices.append(slice(b, b + s))
        out.append(s)
    return tuple(slices), tuple(out)


def _fold_slice(op: _Op, values: list[Any]) -> np.ndarray:
    slices, _ = _slice_bounds(values[0].shape, values[1], values[2])
    return values[0][slices]


_INT32_ACTIVATIONS = {0: None, 1: (0, None), 2: (-1, 1), 3: (0, 6)}


def _arithmetic(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], table: str) -> Folder:
    """Integer ADD, SUB, MUL...: computed wide, wrapped to the type as int32 C code does,
    then the fused activation's clamp (TFLite's CalculateActivationRange<int32_t>)."""

    def fold(op: _Op, values: list[Any]) -> np.ndarray | None:
        a, b = values
        if a.dtype.kind != "i" or b.dtype != a.dtype:
            return None
        opts = op.options(table) if table else None
        clamp = _INT32_ACTIVATIONS.get(opts.FusedActivationFunction() if opts else 0, "?")
        if clamp == "?":
            return None
        wide = np.asarray(fn(a.astype(np.int64), b.astype(np.int64)), np.int64)
        result = wide.astype(a.dtype)  # wraps, as the kernel's int32 arithmetic would
        if clamp is not None:
            result = np.clip(result, clamp[0], clamp[1] if clamp[1] is not None else None)
        return result

    return fold


def _divide(kind: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def fn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if (b == 0).any():
            raise _Damage("divides by a constant 0")
        if kind == "floor_div":
            return np.floor_divide(a, b)
        if kind == "floor_mod":
            return np.mod(a, b)
        quotient = np.abs(a) // np.abs(b)  # C's integer division truncates toward zero
        return np.where((a < 0) != (b < 0), -quotient, quotient)

    return fn


def _reduction(fn: Callable[..., np.ndarray]) -> Folder:
    def fold(op: _Op, values: list[Any]) -> np.ndarray:
        x, axes = values[0], values[1]
        opts = op.options("ReducerOptions")
        keep = bool(opts.KeepDims()) if opts is not None else False
        if x.ndim == 0:
            raise _Damage("reduces a scalar")
        axis = tuple(sorted({_axis(int(a), x.ndim) for a in axes.reshape(-1)}))
        return fn(x.astype(np.int64), axis=axis, keepdims=keep).astype(x.dtype)

    return fold


def _fold_cast(op: _Op, values: list[Any]) -> np.ndarray | None:
    x = values[0]
    return x if x.dtype.kind in "iub" else None


def _fold_fill(op: _Op, values: list[Any]) -> np.ndarray | None:
    dims, value = values
    if dims.ndim != 1 or value.size != 1 or (dims < 0).any():
        raise _Damage(f"fills the shape {dims.tolist()} with {value.size} values")
    if math.prod(dims.tolist()) > _MAX_FOLDED_ELEMENTS:
        return None
    return np.full(tuple(int(d) for d in dims), value.reshape(-1)[0], value.dtype)


def _fold_range(op: _Op, values: list[Any]) -> np.ndarray:
    start, limit, delta = (int(v.reshape(-1)[0]) for v in values)
    if delta == 0 or (limit - start) * delta < 0:
        raise _Damage(f"has the range start {start}, limit {limit}, delta {delta}")
    return np.arange(start, limit, delta, dtype=values[0].dtype)


def _fold_broadcast_args(op: _Op, values: list[Any]) -> np.ndarray:
    try:
        return np.asarray(np.broadcast_shapes(*(tuple(v.tolist()) for v in values)), np.int64)
    except ValueError:
        raise _Damage(f"broadcasts shapes {[v.tolist() for v in values]}") from None


def _fold_transpose(op: _Op, values: list[Any]) -> np.ndarray:
    shape = _RULES["TRANSPOSE"](op)
    perm = [_axis(int(p), values[0].ndim) for p in values[1].reshape(-1)]
    return np.transpose(values[0], perm).reshape(shape)


_FOLDERS: dict[str, Folder] = {
    "SHAPE": _fold_shape,
    "GATHER": _fold_gather,
    "PACK": _fold_pack,
    "CONCATENATION": _fold_concatenation,
    "RESHAPE": _fold_reshape,
    "SQUEEZE": _fold_reshape,
    "EXPAND_DIMS": _fold_reshape,
    "STRIDED_SLICE": _fold_strided_slice,
    "SLICE": _fold_slice,
    "ADD": _arithmetic(np.add, "AddOptions"),
    "SUB": _arithmetic(np.subtract, "SubOptions"),
    "MUL": _arithmetic(np.multiply, "MulOptions"),
    "FLOOR_DIV": _arithmetic(_divide("floor_div"), ""),
    "FLOOR_MOD": _arithmetic(_divide("floor_mod"), ""),
    "DIV": _arithmetic(_divide("truncate"), "DivOptions"),
    "MAXIMUM": _arithmetic(np.maximum, ""),
    "MINIMUM": _arithmetic(np.minimum, ""),
    "REDUCE_PROD": _reduction(np.prod),
    "SUM": _reduction(np.sum),
    "REDUCE_MAX": _reduction(np.max),
    "REDUCE_MIN": _reduction(np.min),
    "CAST": _fold_cast,
    "FILL": _fold_fill,
    "RANGE": _fold_range,
    "BROADCAST_ARGS": _fold_broadcast_args,
    "TRANSPOSE": _fold_transpose,
    "TILE": lambda op, values: np.tile(values[0], [int(m) for m in values[1].reshape(-1)]),
}

# The names this step folds, for docs/operators.md's "What converters emit".
FOLDED_OPERATORS = tuple(sorted(_FOLDERS))
