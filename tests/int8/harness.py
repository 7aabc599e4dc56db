"""Shared helpers for the int8 importer tests: build a one-operator model, run both sides."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aot.frontend.tflite_int8 import import_tflite_int8
from aot.testing.reference import run_tflite_reference


def compile_vm(model_bytes_or_path: bytes | str, rounding: str = "litert"):
    """Import and compile for LLVM; returns (ImportedModel, relax.VirtualMachine)."""
    import tvm
    from tvm import relax

    imported = import_tflite_int8(model_bytes_or_path, rounding=rounding)
    executable = tvm.compile(imported.relax_module, target="llvm")
    return imported, relax.VirtualMachine(executable, tvm.cpu())


def run_vm(vm, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    import tvm

    result = vm["main"](*[tvm.runtime.tensor(np.ascontiguousarray(x)) for x in inputs])
    if hasattr(result, "numpy"):
        return [result.numpy()]
    return [r.numpy() for r in result]


def random_input(rng: np.random.Generator, shape: Sequence[int], dtype: str = "int8") -> np.ndarray:
    if dtype == "float32":
        return rng.normal(0, 3, size=shape).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape, dtype=dtype)


def assert_bit_exact(model: bytes | str, inputs_list: Sequence[Sequence[np.ndarray]]) -> None:
    """Every input set gives identical outputs in our module and in TFLite BUILTIN_REF."""
    _, vm = compile_vm(model)
    for inputs in inputs_list:
        expected = run_tflite_reference(model, list(inputs))
        actual = run_vm(vm, inputs)
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, a.shape, e.dtype, e.shape)
            if not np.array_equal(a, e):
                diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
                raise AssertionError(
                    f"{int((diff > 0).sum())} of {diff.size} values differ, max {diff.max()}"
                )
