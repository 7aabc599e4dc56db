"""Run a model in a reference runtime: the outputs generated C must reproduce.

TFLite models run in LiteRT with the *reference* kernels (``BUILTIN_REF``), not the
optimised ones: the reference kernels define the integer arithmetic the generated C is
bit-exact against. ONNX models run in onnxruntime on the CPU with graph optimisations off,
so each node computes exactly what the ONNX specification says (no fusions).

The runtimes are optional (``pip install -e .[dev]``) and imported only when called.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from aot.errors import ConfigError, ModelError, ToolchainError

ModelSource = bytes | bytearray | str | os.PathLike[str]


def run_tflite_reference(model: ModelSource, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run a TFLite model with the LiteRT reference kernels; return outputs in model order.

    ``inputs`` are in model input order and must match each input's dtype and shape; a
    dimension the model declares dynamic (-1 in its shape signature) takes any size.
    """
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as exc:
        raise ToolchainError(
            "the TFLite reference runtime ai-edge-litert is not installed; install it with "
            "`pip install ai-edge-litert==2.3.0` (or `pip install -e .[dev]`)"
        ) from exc

    source = _describe(model)
    try:
        if isinstance(model, bytes | bytearray):
            interpreter = Interpreter(
                model_content=bytes(model),
                experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                num_threads=1,
            )
        else:
            interpreter = Interpreter(
                model_path=os.fspath(model),
                experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                num_threads=1,
            )
        interpreter.allocate_tensors()
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"{source}: LiteRT cannot load the model: {exc}") from exc

    details = interpreter.get_input_details()
    _check_count(source, len(details), inputs)
    arrays = [np.asarray(value) for value in inputs]
    resized = False
    for detail, array in zip(details, arrays, strict=True):
        expected_shape = tuple(int(d) for d in detail["shape"])
        signature = tuple(int(d) for d in detail.get("shape_signature", expected_shape))
        expected_dtype = np.dtype(detail["dtype"])
        fits_signature = len(signature) == array.ndim and all(
            s in (-1, d) for s, d in zip(signature, array.shape, strict=True)
        )
        if array.dtype != expected_dtype or not (array.shape == expected_shape or fits_signature):
            raise ConfigError(
                f"{source}: input {detail['name']!r} expects {expected_dtype.name}"
                f"{list(signature)}, got {array.dtype.name}{list(array.shape)}"
            )
        if array.shape != expected_shape:
            # A dynamic dimension (-1 in the signature) takes the size of the given input.
            interpreter.resize_tensor_input(detail["index"], list(array.shape))
            resized = True
    if resized:
        interpreter.allocate_tensors()
    for detail, array in zip(details, arrays, strict=True):
        interpreter.set_tensor(detail["index"], array)
    try:
        interpreter.invoke()
    except RuntimeError as exc:
        raise ModelError(f"{source}: LiteRT failed to run the model: {exc}") from exc
    # Copies: the interpreter reuses its tensor memory on the next invoke.
    return [np.array(interpreter.get_tensor(d["index"])) for d in interpreter.get_output_details()]


def run_onnx_reference(model: ModelSource, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run an ONNX model in onnxruntime (CPU, no graph optimisation); outputs in model order."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise ToolchainError(
            "the ONNX reference runtime onnxruntime is not installed; install it with "
            "`pip install onnxruntime` (or `pip install -e .[dev]`)"
        ) from exc

    source = _describe(model)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    payload = bytes(model) if isinstance(model, bytes | bytearray) else os.fspath(model)
    try:
        session = ort.InferenceSession(
            payload, sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own unexported exception types
        raise ModelError(f"{source}: onnxruntime cannot load the model: {exc}") from exc

    declared = session.get_inputs()
    _check_count(source, len(declared), inputs)
    feed = {d.name: np.asarray(v) for d, v in zip(declared, inputs, strict=True)}
    try:
        outputs = session.run(None, feed)
    except Exception as exc:
        raise ConfigError(f"{source}: onnxruntime rejected the inputs or failed: {exc}") from exc
    return [np.asarray(o) for o in outputs]


def _describe(model: ModelSource) -> str:
    if isinstance(model, bytes | bytearray):
        return f"<model of {len(model)} bytes>"
    return os.fspath(model)


def _check_count(source: str, expected: int, inputs: Sequence[np.ndarray]) -> None:
    if len(inputs) != expected:
        raise ConfigError(f"{source}: the model takes {expected} inputs, got {len(inputs)}")
