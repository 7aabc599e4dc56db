"""Run a model once in a reference runtime: the outputs generated C must reproduce.

The runtimes themselves (LiteRT's reference kernels, onnxruntime without graph
optimisation) live in ``aot.validate.reference``, which ``aot validate`` uses to load a
model once for many inputs; these helpers load, run one input set and return the outputs.
TensorFlow Lite Micro's interpreter (``pip install tflite-micro``, a test dependency only)
is the reference for the int8 kernels LiteRT lacks (ADD_N, ZEROS_LIKE, CUMSUM) and the
cross-check of the int8 path against the runtime a device would otherwise run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aot.validate.reference import ModelSource, OnnxReference, TFLiteReference
from aot.validate.reference import TFLMReference as _TFLMRuntime

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


class TFLMReference(_TFLMRuntime):
    """A TFLite model loaded once in TensorFlow Lite Micro's interpreter; each :meth:`run`
    starts from the initial state unless ``reset`` is false (tests compare one inference
    at a time)."""

    def run(self, inputs: Sequence[np.ndarray], *, reset: bool = True) -> list[np.ndarray]:
        return super().run(inputs, reset=reset)


def run_tflm_reference(model: ModelSource, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run a TFLite model (a path or its bytes) in TensorFlow Lite Micro's interpreter once;
    return the outputs in model order."""
    return TFLMReference(model).run(inputs)
