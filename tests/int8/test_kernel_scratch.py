"""What the CPU backend's memory-saving schedule (aot/tir_to_c/fusion.py) leaves of a
kernel's intermediates: an elementwise stage read by one elementwise consumer of its
shape is computed under the consumer's loop, so HARD_SWISH (two int32 stages over the
whole tensor) needs no scratch at all; before, 4 bytes per element (147,456 B for
MobileNetV3's first 48x48x16 HARD_SWISH, above TFLite Micro's whole arena)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


def _lowered_scratch(shape: tuple[int, ...]) -> int:
    import tvm
    from tvm import te

    from aot.backends.cpu import CpuBackend
    from aot.ops.int8 import hard_swish

    data = te.placeholder(shape, "int8", name="data")
    out = hard_swish(
        data, input_zp=-3, output_zp=5, output_multiplier=20000, output_exponent=-2,
        reluish_multiplier=18000, reluish_exponent=1,
    )  # fmt: skip
    module = tvm.IRModule({"hard_swish": te.create_prim_func([data, out])})
    return CpuBackend().lower_primfunc(module, "hard_swish", "hard_swish").scratch_bytes


@pytest.mark.parametrize("shape", [(1, 48, 48, 16), (1, 7, 5, 3), (1, 1, 1, 1000)])
def test_hard_swish_needs_no_scratch(shape: tuple[int, ...]) -> None:
    assert _lowered_scratch(shape) == 0
