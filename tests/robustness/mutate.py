"""Seeded mutations of TFLite files, one class at a time (docs/robustness.md).

``field_map`` walks a valid model with the bounds-checked reader of aot.frontend.validate
and records where each kind of field lives in the file; ``mutate`` rewrites one such field
(or cuts the file), so every mutant is damaged in the way its class names.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

from aot.frontend.validate import _Flatbuffer, _Table

CLASSES = (
    "offset",  # a flatbuffer offset or vector length points outside the file
    "op_index",  # an operator input/output index out of range
    "buffer",  # a buffer index out of range, or a buffer shorter than its tensor
    "shape",  # a dimension 0, negative, huge, or one intermediate's dimension changed
    "scale",  # 0, negative, NaN, inf, subnormal, huge
    "zero_point",  # outside the type's range
    "per_channel",  # per-channel vectors whose lengths do not match
    "options",  # strides 0, dilation 0, padding codes, filter sizes, activation codes
    "truncation",  # the file cut short
    "bitflip",  # one bit flipped anywhere in the fields above (not in constant data)
)


@dataclass
class FieldMap:
    offsets: list[int] = field(default_factory=list)  # uoffset fields (u32)
    lengths: list[int] = field(default_factory=list)  # vector length fields (u32)
    op_indices: list[int] = field(default_factory=list)  # i32 operator inputs/outputs
    buffer_indices: list[int] = field(default_factory=list)  # u32 Tensor.buffer
    data_lengths: list[int] = field(default_factory=list)  # u32 length of buffer data
    constant_dims: list[int] = field(default_factory=list)  # i32 dims of constants
    dims: list[int] = field(default_factory=list)  # i32 dims of run-time tensors
    scales: list[int] = field(default_factory=list)  # f32
    zero_points: list[tuple[int, str]] = field(default_factory=list)  # (i64 pos, dtype)
    channel_lengths: list[int] = field(default_factory=list)  # u32 per-channel vector lengths
    quantized_dims: list[int] = field(default_factory=list)  # i32 quantized_dimension
    options: list[tuple[int, str, str]] = field(default_factory=list)  # (pos, fmt, kind)


# (union type name, slot) -> (struct format, kind) of the option fields worth mutating.
_OPTION_FIELDS = {
    "Conv2DOptions": {0: ("<b", "padding"), 1: ("<i", "stride"), 2: ("<i", "stride"),
                      3: ("<b", "activation"), 4: ("<i", "dilation"), 5: ("<i", "dilation")},
    "DepthwiseConv2DOptions": {0: ("<b", "padding"), 1: ("<i", "stride"), 2: ("<i", "stride"),
                               4: ("<b", "activation"), 5: ("<i", "dilation"),
                               6: ("<i", "dilation")},
    "Pool2DOptions": {0: ("<b", "padding"), 1: ("<i", "stride"), 2: ("<i", "stride"),
                      3: ("<i", "filter"), 4: ("<i", "filter"), 5: ("<b", "activation")},
    "FullyConnectedOptions": {0: ("<b", "activation")},
    "SoftmaxOptions": {0: ("<f", "beta")},
    "ConcatenationOptions": {0: ("<i", "axis"), 1: ("<b", "activation")},
    "AddOptions": {0: ("<b", "activation")},
}  # fmt: skip
_DTYPE_CODES = {9: "int8", 3: "uint8", 7: "int16", 2: "int32"}


def _option_tables() -> dict[int, dict[int, tuple[str, str]]]:
    from tflite.BuiltinOptions import BuiltinOptions

    return {getattr(BuiltinOptions, name): slots for name, slots in _OPTION_FIELDS.items()}


def _ref_pos(table: _Table, slot: int) -> int | None:
    off = table.offset(slot)
    return table.pos + off if off else None


def _vector(table: _Table, slot: int, map_: FieldMap) -> tuple[int, int] | None:
    pos = _ref_pos(table, slot)
    if pos is None:
        return None
    map_.offsets.append(pos)
    start, length = table.vector(slot, 1, "v") or (0, 0)
    map_.lengths.append(start - 4)
    return start, length


def field_map(data: bytes) -> FieldMap:
    fb = _Flatbuffer(data)
    root = fb.root()
    m = FieldMap()
    options = _option_tables()
    buffers = root.tables(4, "buffer")
    for b in buffers:
        vec = _vector(b, 0, m)
        if vec is not None:
            m.data_lengths.append(vec[0] - 4)
    constant = [b.vector(0, 1, "d") is not None for b in buffers]
    for slot in (1, 2, 4):
        _vector(root, slot, m)
    for graph in root.tables(2, "subgraph"):
        for slot in (0, 1, 2, 3):
            _vector(graph, slot, m)
        for t in graph.tables(0, "tensor"):
            shape = _vector(t, 0, m)
            buffer_pos = _ref_pos(t, 2)
            is_constant = False
            if buffer_pos is not None:
                m.buffer_indices.append(buffer_pos)
                is_constant = constant[t.scalar(2, "<I", 0)]
            if shape is not None:
                start, length = t.vector(0, 4, "shape") or (0, 0)
                dims = [start + 4 * i for i in range(length)]
                (m.constant_dims if is_constant else m.dims).extend(dims)
            dtype = _DTYPE_CODES.get(t.scalar(1, "<b", 0), "int8")
            q = t.table_at(4, "q")
            if q is None:
                continue
            m.offsets.append(_ref_pos(t, 4) or 0)
            scales = q.vector(2, 4, "s")
            zps = q.vector(3, 8, "z")
            if scales is not None:
                m.scales.extend(scales[0] + 4 * i for i in range(scales[1]))
                if scales[1] > 1:
                    m.channel_lengths.append(scales[0] - 4)
            if zps is not None:
                m.zero_points.extend((zps[0] + 8 * i, dtype) for i in range(zps[1]))
                if zps[1] > 1:
                    m.channel_lengths.append(zps[0] - 4)
            qdim = _ref_pos(q, 6)
            if qdim is not None and scales is not None and scales[1] > 1:
                m.quantized_dims.append(qdim)
        for op in graph.tables(3, "operator"):
            for slot in (1, 2):
                vec = op.vector(slot, 4, "io")
                if vec is not None:
                    m.op_indices.extend(vec[0] + 4 * i for i in range(vec[1]))
            opts_type = op.scalar(3, "<B", 0)
            opts = op.table_at(4, "o")
            if opts is not None:
                m.offsets.append(_ref_pos(op, 4) or 0)
                for slot, (fmt, kind) in options.get(opts_type, {}).items():
                    pos = _ref_pos(opts, slot)
                    if pos is not None:
                        m.options.append((pos, fmt, kind))
    return m


_SCALES = [0.0, -0.05, -1.0, float("nan"), float("inf"), float("-inf"), 1e-45, 1e-40,
           3e38, 1e30, 1e-30, 1e20]  # fmt: skip
_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
           "int32": (-(2**31), 2**31 - 1)}  # fmt: skip
_OPTION_VALUES = {
    "padding": [2, 3, 7, -1, 127],
    "stride": [0, -1, -(2**31), 2**31 - 1, 1000],
    "dilation": [0, -1, -5, 2**20],
    "filter": [0, -1, 2**30, 1000],
    "activation": [6, 7, 100, -1],
    "axis": [5, -5, 100, -(2**31)],
    "beta": [0.0, -1.0, float("nan"), float("inf"), 1e-45, 1e38],
}


def _put(data: bytearray, fmt: str, pos: int, value: object) -> None:
    struct.pack_into(fmt, data, pos, value)


def mutate(data: bytes, fields: FieldMap, kind: str, rng: random.Random) -> bytes | None:
    """One mutant of class ``kind``; None when the model has no field of that kind."""
    out = bytearray(data)

    def pick(positions: list) -> object | None:
        return rng.choice(positions) if positions else None

    if kind == "offset":
        use_lengths = rng.random() < 0.4
        pos = pick(fields.lengths if use_lengths else fields.offsets)
        if pos is None:
            return None
        value = rng.choice([len(data), len(data) + rng.randrange(1, 1 << 16), 0xFFFFFFF0,
                            rng.randrange(1 << 32), 2**31 + rng.randrange(1 << 20)])  # fmt: skip
        _put(out, "<I", pos, value)
    elif kind == "op_index":
        pos = pick(fields.op_indices)
        if pos is None:
            return None
        current = struct.unpack_from("<i", data, pos)[0]
        value = rng.choice([current + 1000, 2**31 - 1, -2, -(2**31), rng.randrange(256, 1 << 20)])
        _put(out, "<i", pos, value)
    elif kind == "buffer":
        if rng.random() < 0.5 and fields.data_lengths:
            pos = pick(fields.data_lengths)
            current = struct.unpack_from("<I", data, pos)[0]
            _put(out, "<I", pos, max(0, current - rng.choice([1, 2, 4, current // 2 or 1])))
        elif rng.random() < 0.5 and fields.constant_dims:
            pos = pick(fields.constant_dims)
            current = struct.unpack_from("<i", data, pos)[0]
            _put(out, "<i", pos, current + rng.choice([1, 2, 7]))
        else:
            pos = pick(fields.buffer_indices)
            if pos is None:
                return None
            _put(
                out, "<I", pos, rng.choice([10_000, 2**32 - 1, 2**31, rng.randrange(300, 1 << 24)])
            )
    elif kind == "shape":
        pos = pick(fields.dims + fields.constant_dims)
        if pos is None:
            return None
        current = struct.unpack_from("<i", data, pos)[0]
        value = rng.choice([0, -1, -7, 2**31 - 1, 65536, 1 << 20, current + 1, current - 1,
                            current * 2, current + rng.randrange(2, 64)])  # fmt: skip
        _put(out, "<i", pos, value)
    elif kind == "scale":
        pos = pick(fields.scales)
        if pos is None:
            return None
        _put(out, "<f", pos, rng.choice(_SCALES))
    elif kind == "zero_point":
        item = pick(fields.zero_points)
        if item is None:
            return None
        pos, dtype = item  # type: ignore[misc]
        lo, hi = _RANGES.get(dtype, _RANGES["int8"])
        value = rng.choice([lo - 1, hi + 1, lo - rng.randrange(1, 1 << 20), hi + 1000,
                            -(2**40), 2**40, -(2**63), 2**63 - 1])  # fmt: skip
        _put(out, "<q", pos, value)
    elif kind == "per_channel":
        if rng.random() < 0.3 and fields.quantized_dims:
            _put(out, "<i", pick(fields.quantized_dims), rng.choice([1, 2, 3, 4, -1, 99]))
        else:
            pos = pick(fields.channel_lengths)
            if pos is None:
                return None
            current = struct.unpack_from("<I", data, pos)[0]
            _put(out, "<I", pos, max(0, current + rng.choice([-1, -2, 1, -(current // 2)])))
    elif kind == "options":
        item = pick(fields.options)
        if item is None:
            return None
        pos, fmt, what = item  # type: ignore[misc]
        value = rng.choice(_OPTION_VALUES[what])
        if fmt == "<b":
            value = max(-128, min(127, int(value)))
        _put(out, fmt, pos, value)
    elif kind == "truncation":
        return bytes(out[: rng.randrange(8, len(data))])
    elif kind == "bitflip":
        positions = [
            *fields.offsets, *fields.lengths, *fields.op_indices, *fields.buffer_indices,
            *fields.data_lengths, *fields.constant_dims, *fields.dims, *fields.scales,
            *(p for p, _ in fields.zero_points), *fields.channel_lengths,
            *fields.quantized_dims, *(p for p, _, _ in fields.options),
        ]  # fmt: skip
        at = rng.choice(positions) + rng.randrange(4)
        out[at] ^= 1 << rng.randrange(8)
    else:
        raise ValueError(kind)
    return bytes(out)
