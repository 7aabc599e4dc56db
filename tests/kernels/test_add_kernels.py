"""The DSP and scalar ADD kernels (add_dsp.c) on every pair of int8 values, in both
rounding modes: LiteRT's BUILTIN_REF for double rounding (what its ADD uses), aot's own
TVM kernels imported in single rounding for the other. The quantizations put the output
shift at 0 and above, with and without a clamp narrower than int8, so each of the
kernel's exact forms (docs/kernels.md "ADD") runs on all 65536 input pairs; broadcast
operands run on random data. All cases run in one bare-metal firmware per ISA
(tests/kernels/mve_firmware.py), on the Cortex-M4 and the Cortex-M3."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.testing.tflite_builder import TFLiteModelBuilder
from tests.kernels.mve_firmware import KernelCase, operator_of, run_cases

pytestmark = [pytest.mark.toolchain, pytest.mark.emulator]

EVERY_PAIR = (1, 64, 64, 16)  # lhs = i // 256 - 128, rhs = i % 256 - 128
# (lhs scale, rhs scale, output scale, zero points, activation): the output shift is
# log2(2 * max scale / (2^20 * output scale)) rounded, so 3e-6 gives a shift of 0.
QUANTIZATIONS = [
    (0.05, 0.02, 0.1, (3, -7, 5), "NONE"),
    (0.011, 0.13, 0.07, (-128, 127, -20), "RELU"),
    (1.0, 0.75, 2.9e-6, (0, 1, -2), "NONE"),
    (0.3, 0.2, 3.1e-6, (-5, 0, 0), "RELU_N1_TO_1"),
    (0.004, 0.2, 0.003, (10, -100, 127), "RELU6"),
]
# Broadcast operands (the output's shape, the lhs's, the rhs's).
BROADCASTS = [
    ((1, 6, 5, 12), (1, 6, 5, 12), (12,)),
    ((2, 3, 3, 7), (7,), (2, 3, 3, 7)),
    ((1, 4, 4, 5), (1, 4, 4, 5), (1,)),
    ((1, 2, 3, 9), (1, 1, 1, 9), (1, 2, 3, 9)),
]


def _model(shapes: tuple, quantization: tuple) -> bytes:
    out_shape, lhs_shape, rhs_shape = shapes
    lhs_scale, rhs_scale, out_scale, (lhs_zp, rhs_zp, out_zp), act = quantization
    b = TFLiteModelBuilder()
    x = b.add_input("x", lhs_shape, "int8", scale=lhs_scale, zero_point=lhs_zp)
    y = b.add_input("y", rhs_shape, "int8", scale=rhs_scale, zero_point=rhs_zp)
    z = b.add_tensor("z", out_shape, "int8", scale=out_scale, zero_point=out_zp)
    b.add_operator("ADD", inputs=[x, y], outputs=[z], options={"fused_activation_function": act})
    b.mark_output(z)
    return b.build()


def _expected(model: bytes, mode: str, data: list[np.ndarray]) -> np.ndarray:
    if mode == "double":
        from aot.testing.reference import run_tflite_reference

        return run_tflite_reference(model, data)[0]
    from tests.int8.harness import compile_vm, run_vm

    return run_vm(compile_vm(model, rounding=mode)[1], data)[0]


def _cases() -> list[KernelCase]:
    pairs = np.arange(65536)
    every = [
        (pairs // 256 - 128).astype(np.int8).reshape(EVERY_PAIR),
        (pairs % 256 - 128).astype(np.int8).reshape(EVERY_PAIR),
    ]
    rng = np.random.default_rng(31)
    found = []
    for mode in ("double", "single"):
        for i, quantization in enumerate(QUANTIZATIONS):
            model = _model((EVERY_PAIR,) * 3, quantization)
            info = operator_of(model, rounding="litert" if mode == "double" else mode)
            expected = _expected(model, mode, every)
            found.append(KernelCase(f"{mode}-pairs{i}", info, every[0], expected, (every[1],)))
        for i, shapes in enumerate(BROADCASTS):
            model = _model(shapes, QUANTIZATIONS[i % len(QUANTIZATIONS)])
            data = [rng.integers(-128, 128, s, dtype=np.int8) for s in shapes[1:]]
            info = operator_of(model, rounding="litert" if mode == "double" else mode)
            expected = _expected(model, mode, data)
            found.append(KernelCase(f"{mode}-broadcast{i}", info, data[0], expected, (data[1],)))
    return found


@pytest.mark.parametrize("isa", ["dsp", "scalar"])
def test_add_matches_tflite_on_every_pair(isa: str, tmp_path: Path) -> None:
    cases = _cases()
    shifts = {c.info.params.output_shift for c in cases}
    assert 0 in shifts and min(shifts) < 0, shifts  # both the shifted and the unshifted form
    for case, got in zip(cases, run_cases(cases, isa, tmp_path), strict=True):
        wrong = int((got != case.expected).sum())
        assert wrong == 0, f"{isa} {case.name}: {wrong} of {got.size} outputs differ"
