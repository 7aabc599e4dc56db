"""Run a model once in a reference runtime: the outputs generated C must reproduce.

The runtimes themselves (LiteRT's reference kernels, onnxruntime without graph
optimisation) live in ``aot.validate.reference``, which ``aot validate`` uses to load a
model once for many inputs; these helpers load, run one input set and return the outputs.
TensorFlow Lite Micro's interpreter (``pip install tflite-micro``, a test dependency only)
is the reference for the int8 kernels LiteRT lacks (ADD_N, ZEROS_LIKE, CUMSUM) and the
cross-check of the int8 path against the runtime a device would otherwise run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from aot.errors import ModelError, ToolchainError
from aot.validate.reference import ModelSource, OnnxReference, TFLiteReference

__all__ = [
    "ModelSource",
    "TFLMReference",
    "run_onnx_reference",
    "run_tflite_reference",
    "run_tflm_reference",
]


def run_tflite_reference(model: ModelSource, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run a TFLite model with the LiteRT reference kernels; return outputs in model order.

    ``inputs`` are in model input order and must match each input's dtype and shape; a
    dimension the model declares dynamic (-1 in its shape signature) takes any size.
    """
    return TFLiteReference(model).run(inputs)


def run_onnx_reference(model: ModelSource, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run an ONNX model in onnxruntime (CPU, no graph optimisation); outputs in model order."""
    return OnnxReference(model).run(inputs)


TFLM_MIN_ARENA_BYTES = 8 << 20


class TFLMReference:
    """A TFLite model loaded once in TensorFlow Lite Micro's Python interpreter (its
    reference kernels, double rounding, as the default TFLite Micro build)."""

    def __init__(self, model: ModelSource) -> None:
        try:
            from tflite_micro.python.tflite_micro import runtime
        except ImportError as exc:
            raise ToolchainError(
                "TensorFlow Lite Micro's interpreter is not installed; install it with "
                "`pip install tflite-micro` (or `pip install aot[dev]`)"
            ) from exc
        self.source = "<bytes>" if isinstance(model, bytes | bytearray) else os.fspath(model)
        data = bytes(model) if isinstance(model, bytes | bytearray) else Path(model).read_bytes()
        # The package's default arena (10x the model) is too small for a tiny model with
        # large activations; an arena is host memory here, so a generous floor costs nothing.
        arena = max(10 * len(data), TFLM_MIN_ARENA_BYTES)
        try:
            self.interpreter = runtime.Interpreter.from_bytes(data, arena_size=arena)
        except RuntimeError as exc:
            raise ModelError(f"{self.source}: TFLite Micro cannot load the model: {exc}") from exc
        # The wrapper exposes no output count (and logs to stderr when asked past the end).
        self.output_count = _output_count(data)

    def run(self, inputs: Sequence[np.ndarray], *, reset: bool = True) -> list[np.ndarray]:
        """Outputs in model order for ``inputs`` in model order. The interpreter is reset
        first, so a stateful model starts from its initial state, unless ``reset`` is
        false: then its state carries over from the previous call."""
        if reset:
            self.interpreter.reset()
        for index, value in enumerate(inputs):
            self.interpreter.set_input(np.asarray(value), index)
        try:
            self.interpreter.invoke()
        except RuntimeError as exc:
            raise ModelError(f"{self.source}: TFLite Micro failed to run the model: {exc}") from exc
        # Copies: the interpreter reuses its arena on the next invoke.
        return [np.array(self.interpreter.get_output(i)) for i in range(self.output_count)]


def run_tflm_reference(model: ModelSource, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run a TFLite model (a path or its bytes) in TensorFlow Lite Micro's interpreter once;
    return the outputs in model order."""
    return TFLMReference(model).run(inputs)


def _output_count(data: bytes) -> int:
    import tflite

    return tflite.Model.GetRootAsModel(data, 0).Subgraphs(0).OutputsLength()
