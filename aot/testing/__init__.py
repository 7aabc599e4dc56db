"""Helpers for tests, benchmarks and examples: build small models, run reference runtimes.

Nothing in the compiler imports this package; it exists so tests need no TensorFlow and
every test compares against the same reference.
"""

from __future__ import annotations

from aot.testing.reference import run_onnx_reference, run_tflite_reference, run_tflm_reference
from aot.testing.tflite_builder import OPERATORS, TFLiteModelBuilder

__all__ = [
    "OPERATORS",
    "TFLiteModelBuilder",
    "run_onnx_reference",
    "run_tflite_reference",
    "run_tflm_reference",
]
