"""The artifact of the import stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Quantization:
    """Affine quantization: real = scale * (q - zero_point). Per-tensor has one entry."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None  # the per-channel axis, None when per-tensor

    def to_json(self) -> dict[str, Any]:
        return {"scale": list(self.scale), "zero_point": list(self.zero_point), "axis": self.axis}


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output as the user sees it."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name: "int8", "uint8", "int16", "int32", "float32"
    quantization: Quantization | None = None

    @property
    def size_bytes(self) -> int:
        import numpy as np

        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "size_bytes": self.size_bytes,
            "quantization": self.quantization.to_json() if self.quantization else None,
        }


@dataclass(frozen=True)
class SourceOperator:
    """An operator of the source model, as its author knows it: position in the file's
    operator list, type (``CONV_2D``, ``Conv``) and the name of its output tensor.

    ``values`` are the Relax variables that hold its result in the imported module, so
    lowering can tell which kernel computes it (empty when the importer cannot say).
    """

    index: int
    type: str
    output: str = ""
    values: tuple[str, ...] = field(default=(), compare=False)

    @property
    def label(self) -> str:
        return f"{self.type} #{self.index}"

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "type": self.type, "output": self.output}


@dataclass(frozen=True)
class StateSpec:
    """Operator state kept between inferences (a TFLite variable tensor, e.g. SVDF's
    activation state): ``main`` takes it after the inputs and returns its next value
    after the outputs, in this order. ``initial`` is its value at start and after reset
    (None: zeros, as TFLite resets variable tensors)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    initial: Any = field(default=None, compare=False, repr=False)  # numpy array or None

    @property
    def size_bytes(self) -> int:
        import numpy as np

        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "size_bytes": self.size_bytes,
            "initial": "zeros" if self.initial is None else "constant",
        }


@dataclass(frozen=True)
class ImportedModel:
    """A model imported into a Relax IRModule whose ``main`` takes the inputs in order."""

    relax_module: Any  # tvm.IRModule; typed loosely so this module imports without TVM
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    source_path: str
    source_format: str  # "tflite" or "onnx"
    frontend: str  # the importer that produced the module, e.g. "relax-tflite"
    operators: tuple[str, ...] = field(default=())  # source operator types in graph order
    # The same operators with index and output tensor; an importer that knows no more than
    # the types may leave it empty (see ``sources``).
    source_operators: tuple[SourceOperator, ...] = field(default=())
    # Persistent operator state: extra trailing parameters and results of ``main``.
    states: tuple[StateSpec, ...] = field(default=())
    # What the import changed on the way, one line each for the build log (e.g. a
    # dynamic batch fixed to 1 and shape arithmetic folded, see aot.frontend.tflite_static).
    notes: tuple[str, ...] = field(default=())

    @property
    def sources(self) -> tuple[SourceOperator, ...]:
        if self.source_operators:
            return self.source_operators
        return tuple(SourceOperator(i, t) for i, t in enumerate(self.operators))
