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
from aot.backends.ethos_u import EthosUBackend  # registers ethos-u55-*; Vela loads lazily
from aot.backends.example_npu import ExampleNpu
from aot.backends.kernels import KernelBackend

backends.add(CPU_TARGET, CpuBackend)
backends.add(ExampleNpu.name, ExampleNpu)
backends.add(KernelBackend.name, KernelBackend)

__all__ = [
    "CPU_TARGET",
    "Artifact",
    "Backend",
    "BackendConstant",
    "CpuBackend",
    "EmitContext",
    "EmittedCode",
    "EthosUBackend",
    "KernelBackend",
    "OperatorInfo",
    "OperatorPattern",
    "Region",
    "RuntimeFiles",
    "TensorInfo",
    "backends",
    "get_backend",
]
