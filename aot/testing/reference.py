"""Run a model once in a reference runtime: the outputs generated C must reproduce.

The runtimes themselves (LiteRT's reference kernels, onnxruntime without graph
optimisation) live in ``aot.validate.reference``, which ``aot validate`` uses to load a
model once for many inputs; these helpers load, run one input set and return the outputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aot.validate.reference import ModelSource, OnnxReference, TFLiteReference

__all__ = ["ModelSource", "run_onnx_reference", "run_tflite_reference"]


def run_tflite_reference(model: ModelSource, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run a TFLite model with the LiteRT reference kernels; return outputs in model order.

    ``inputs`` are in model input order and must match each input's dtype and shape; a
    dimension the model declares dynamic (-1 in its shape signature) takes any size.
    """
    return TFLiteReference(model).run(inputs)


def run_onnx_reference(model: ModelSource, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run an ONNX model in onnxruntime (CPU, no graph optimisation); outputs in model order."""
    return OnnxReference(model).run(inputs)
