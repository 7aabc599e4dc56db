"""The kernel seam: what one hand-written C kernel variant declares and prepares.

A :class:`KernelVariant` is one C implementation of one operator kind for one ISA
(``scalar``: plain C; ``dsp``: the Armv7E-M/Armv8-M DSP extension; ``mve``: Helium). Its
``takes`` says which operators it handles (shapes, strides, quantization); its ``prepare``
does the build-time work for one operator and returns a :class:`PreparedKernel`: the C
function to call, the values of its ``static const`` params struct, which of the
operator's own operands it reads and the extra constants (re-laid-out weights, folded
bias, per-channel requantization) it reads after them.

The C call the backend emits is always::

    function(&params, operands[inputs[0]], ..., constants[0], ..., output, scratch_or_NULL);

This module imports nothing but the backend API's data types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from aot.backends.base import BackendConstant, OperatorInfo

ISAS = ("scalar", "dsp", "mve")


@dataclass(frozen=True)
class PreparedKernel:
    """One operator's call of a kernel variant, decided at build time."""

    function: str  # the C function, e.g. aot_k_conv_s8_dsp
    params_struct: str  # its params struct type, e.g. "struct aot_k_conv_params"
    params: Mapping[str, int]  # field -> value, written as one static const struct
    inputs: tuple[int, ...]  # operand indices of the operator passed on, activation first
    constants: tuple[BackendConstant, ...] = ()  # passed after the inputs, in order
    scratch_bytes: int = 0  # planned by the memory planner; NULL is passed when 0
    notes: Mapping[str, str] = field(default_factory=dict)  # for reports (e.g. the path)
    # Preprocessor switches its sources need (the build defines the union over its calls),
    # e.g. the requantization forms whose loops the Helium kernels compile.
    defines: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KernelVariant:
    """One C kernel for one operator kind on one ISA (see the module docstring)."""

    kind: str  # the importer's operator kind, e.g. conv2d_int8
    isa: str  # one of ISAS
    takes: Callable[[OperatorInfo], bool]
    prepare: Callable[[OperatorInfo], PreparedKernel]
    sources: tuple[str, ...]  # C files relative to aot/runtime_c/kernels/
    # Every operator the kernel computes right, where ``takes`` is those it is the fastest
    # choice for (None: the same); a build with --ram-budget takes these, so that a patch
    # stage can tile them (docs/memory_planning.md).
    computes: Callable[[OperatorInfo], bool] | None = None

    def __post_init__(self) -> None:
        if self.isa not in ISAS:
            raise ValueError(f"kernel ISA {self.isa!r} is not one of {', '.join(ISAS)}")
