"""Accelerator backends: the registry, the Backend base class and the CPU backend.

See ``aot/backends/base.py`` for the API and docs/accelerators.md for a walk-through.
"""

from aot.backends.base import (
    CPU_TARGET,
    Artifact,
    Backend,
    BackendConstant,
    EmitContext,
    EmittedCode,
    OperatorInfo,
    OperatorPattern,
    Region,
    RuntimeFiles,
    TensorInfo,
    backends,
    get_backend,
)
from aot.backends.cpu import CpuBackend

backends.add(CPU_TARGET, CpuBackend)

__all__ = [
    "CPU_TARGET",
    "Artifact",
    "Backend",
    "BackendConstant",
    "CpuBackend",
    "EmitContext",
    "EmittedCode",
    "OperatorInfo",
    "OperatorPattern",
    "Region",
    "RuntimeFiles",
    "TensorInfo",
    "backends",
    "get_backend",
]
