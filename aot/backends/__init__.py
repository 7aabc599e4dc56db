"""Accelerator backends: the registry, the Backend base class and the CPU backend.

The kernel backend (aot's hand-written C kernels) registers itself from ``aot.kernels``.

See ``aot/backends/base.py`` for the API and docs/accelerators.md for a walk-through.
"""

from aot.backends.base import (
    CPU_TARGET,
    Artifact,
    Backend,
    BackendConstant,
    EmitContext,
    EmittedCode,
    LowerContext,
    OperatorInfo,
    OperatorPattern,
    Region,
    RuntimeFiles,
    TensorInfo,
    backends,
    get_backend,
)
from aot.backends.cpu import CpuBackend
from aot.backends.ethos_u import EthosUBackend  # registers ethos-u55-*; Vela loads lazily
from aot.backends.example_npu import ExampleNpu

backends.add(CPU_TARGET, CpuBackend)
backends.add(ExampleNpu.name, ExampleNpu)

__all__ = [
    "CPU_TARGET",
    "Artifact",
    "Backend",
    "BackendConstant",
    "CpuBackend",
    "EmitContext",
    "EmittedCode",
    "EthosUBackend",
    "LowerContext",
    "OperatorInfo",
    "OperatorPattern",
    "Region",
    "RuntimeFiles",
    "TensorInfo",
    "backends",
    "get_backend",
]
