"""Cheap checks on a model file before it is read whole.

A file that cannot be a model (gigabytes of zeros, a disk image named .tflite) must be
refused in milliseconds, not after reading and parsing all of it. These look only at the
size and at a few bytes the format fixes: TFLite's flatbuffer identifier, root table and
its vtable; the first field tag of an ONNX protobuf. What they pass, the full validation
(aot.frontend.validate) still checks.
"""

from __future__ import annotations

import struct
from pathlib import Path

from aot.errors import ModelError, UnsupportedError
from aot.frontend.tflite_file import TFLITE_IDENTIFIER
from aot.frontend.validate import DAMAGED

# Flatbuffers address with 32-bit offsets and protobuf messages are limited to 2 GiB;
# TFLite's larger-than-2-GiB form keeps buffers outside the flatbuffer, for models no
# microcontroller holds.
FORMAT_LIMIT = 2**31 - 1
# ModelProto's field numbers (onnx.proto) and the wire type each is written with.
_ONNX_MODEL_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}


def check_model_head(path: Path, kind: str) -> None:
    """Refuse ``path`` at once if its size or first bytes rule out a ``kind`` model
    ("tflite" or "onnx")."""
    size = path.stat().st_size
    if size > FORMAT_LIMIT:
        raise UnsupportedError(
            f"{path} is {size} bytes; {'a TFLite' if kind == 'tflite' else 'an ONNX'} model "
            f"file aot reads is at most {FORMAT_LIMIT} bytes (2 GiB, the format's limit), and "
            "no microcontroller holds such a model"
        )
    with path.open("rb") as f:
        if kind == "tflite":
            _check_flatbuffer_root(path, f, size)
        else:
            _check_onnx_tag(path, f.read(1))


def _check_flatbuffer_root(path: Path, f, size: int) -> None:
    head = f.read(8)
    if head[4:8] != TFLITE_IDENTIFIER:
        raise ModelError(f"{path} is not a TFLite model (no 'TFL3' file identifier)")

    def read(offset: int, fmt: str) -> int:
        width = struct.calcsize(fmt)
        if offset < 0 or offset + width > size:
            raise ModelError(f"{path}: {DAMAGED}: the model table lies outside the file")
        f.seek(offset)
        return struct.unpack(fmt, f.read(width))[0]

    root = read(0, "<I")
    if root < 8:
        raise ModelError(f"{path}: {DAMAGED}: the root offset {root} points into the header")
    vtable = root - read(root, "<i")
    vtable_size = read(vtable, "<H")
    if vtable_size < 4 or vtable_size % 2 or vtable + vtable_size > size:
        raise ModelError(
            f"{path}: {DAMAGED}: the vtable of the model table has an invalid size {vtable_size}"
        )


def _check_onnx_tag(path: Path, first: bytes) -> None:
    if not first:
        raise ModelError(f"{path} is not a model: the file is empty")
    field, wire_type = first[0] >> 3, first[0] & 7
    if first[0] & 0x80 or _ONNX_MODEL_FIELDS.get(field) != wire_type:
        raise ModelError(
            f"{path}: {DAMAGED}: it is not a valid ONNX model (its first byte {first[0]:#04x} "
            "starts no field of an ONNX ModelProto)"
        )
