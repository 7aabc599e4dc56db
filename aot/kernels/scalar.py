"""The plain C kernels (any core; what ``--kernels auto`` picks on a core without the DSP
extension, such as the Cortex-M3 of mps2_an385): the DSP kernels' sources built without
the intrinsics (aot_kernels_simd.h's C equivalents) under ``_scalar`` names, so they take
the same operators with the same build-time work (aot/runtime_c/kernels/scalar/)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from aot.backends.base import OperatorInfo
from aot.kernels import dsp
from aot.kernels.spec import KernelVariant, PreparedKernel


def _scalar(prepare: Callable[[OperatorInfo], PreparedKernel]) -> Callable:
    def run(info: OperatorInfo) -> PreparedKernel:
        kernel = prepare(info)
        return replace(kernel, function=kernel.function.replace("_s8_dsp", "_s8_scalar"))

    return run


def _sources(variant: KernelVariant) -> tuple[str, ...]:
    # The scalar file includes the DSP one, which is copied beside it.
    (source,) = variant.sources
    name = source.removeprefix("dsp/").replace("_dsp.c", "_scalar.c")
    return (f"scalar/{name}", source)


VARIANTS: tuple[KernelVariant, ...] = tuple(
    KernelVariant(v.kind, "scalar", v.takes, _scalar(v.prepare), _sources(v)) for v in dsp.VARIANTS
)
