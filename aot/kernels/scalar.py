"""The plain C kernels (any core; what ``--kernels auto`` picks on a core without the DSP
extension, such as the Cortex-M3 of mps2_an385): the DSP kernels' sources built without
the intrinsics (aot_kernels_simd.h's C equivalents), so they take the same operators with
the same build-time work; each DSP ``prepare`` is called with ``build="scalar"``, which
names the ``_scalar`` functions (aot/runtime_c/kernels/scalar/)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from aot.backends.base import OperatorInfo
from aot.kernels import dsp
from aot.kernels.spec import KernelVariant, PreparedKernel

# Each DSP source's plain C build: a file that includes it (copied beside it) without the
# intrinsics.
SOURCES = {
    dsp.CONV_SOURCE: "scalar/conv_scalar.c",
    dsp.DWCONV_SOURCE: "scalar/dwconv_scalar.c",
    dsp.ADD_SOURCE: "scalar/add_scalar.c",
    dsp.SHALLOW_SOURCE: "scalar/conv_shallow_scalar.c",
}


def _sources(variant: KernelVariant) -> tuple[str, ...]:
    (source,) = variant.sources
    return (SOURCES[source], source)


# Without SMLAD the first-layer kernel's gather and 2x2 steps cost more than TVM's loops
# over few output channels: vww_96_int8's first layer (3 -> 8 channels) measured 3.45M
# instructions on mps2_an385 against TVM's 3.15M; kws's (64) and pretrainedResnet's (16)
# are faster on it.
MIN_SHALLOW_CHANNELS = 16


def takes_shallow_conv(info: OperatorInfo) -> bool:
    return dsp.takes_shallow_conv(info) and dsp.weights(info).shape[0] >= MIN_SHALLOW_CHANNELS


def takes_single_channel_dwconv(info: OperatorInfo) -> bool:
    return dsp.takes_single_channel_dwconv(info) and info.output.shape[-1] >= MIN_SHALLOW_CHANNELS


def _takes(variant: KernelVariant) -> Callable[[OperatorInfo], bool]:
    if variant.takes is dsp.takes_single_channel_dwconv:
        return takes_single_channel_dwconv
    return takes_shallow_conv if variant.takes is dsp.takes_shallow_conv else variant.takes


# The plain C build runs two pixels a pass (AOT_K_PIXELS 2): GCC's C of four spills on the
# Cortex-M3 and is slower; so its scratch holds two pixels' columns.
SCALAR_PIXELS_PER_PASS = 2


def _prepare(variant: KernelVariant) -> Callable[[OperatorInfo], PreparedKernel]:
    if variant.prepare is dsp.prepare_conv:
        return partial(dsp.prepare_conv, pixels=SCALAR_PIXELS_PER_PASS, build=dsp.SCALAR)
    return partial(variant.prepare, build=dsp.SCALAR)


def _computes(variant: KernelVariant) -> Callable[[OperatorInfo], bool] | None:
    # Below MIN_SHALLOW_CHANNELS TVM's code is faster, but the kernel is as right.
    if variant.takes is dsp.takes_single_channel_dwconv:
        return dsp.takes_single_channel_dwconv
    return dsp.takes_shallow_conv if variant.takes is dsp.takes_shallow_conv else None


VARIANTS: tuple[KernelVariant, ...] = tuple(
    KernelVariant(v.kind, "scalar", _takes(v), _prepare(v), _sources(v), _computes(v))
    for v in dsp.VARIANTS
)
