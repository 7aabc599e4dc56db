"""Models and names the Ethos-U tests share (conftest.py keeps only fixtures: test modules
import this file, not conftest, whose name other test folders use too)."""

from __future__ import annotations

import numpy as np

from aot.testing.tflite_builder import TFLiteModelBuilder

ACCELERATOR = "ethos-u55-128"


def mixed_model() -> bytes:
    """conv -> L2_NORMALIZATION -> conv: Vela runs the convolutions on the NPU and leaves
    L2_NORMALIZATION (not supported on Ethos-U55) to the CPU, so two NPU subgraphs."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 8, 8, 4), "int8", scale=0.05, zero_point=-3)
    w = b.add_constant(
        "w",
        np.ones((4, 3, 3, 4), np.int8),
        scale=[0.01] * 4,
        zero_point=[0] * 4,
        quantized_dimension=0,
    )
    bias = b.add_constant("b", np.zeros(4, np.int32), scale=[0.0005] * 4, zero_point=[0] * 4)
    y = b.add_tensor("conv1", (1, 8, 8, 4), "int8", scale=0.1, zero_point=5)
    b.add_operator("CONV_2D", inputs=[x, w, bias], outputs=[y], options={"padding": "SAME"})
    z = b.add_tensor("l2", (1, 8, 8, 4), "int8", scale=1 / 128, zero_point=0)
    b.add_operator("L2_NORMALIZATION", inputs=[y], outputs=[z])
    y2 = b.add_tensor("conv2", (1, 8, 8, 4), "int8", scale=0.1, zero_point=5)
    b.add_operator("CONV_2D", inputs=[z, w, bias], outputs=[y2], options={"padding": "SAME"})
    b.mark_output(y2)
    return b.build()


def npu_cpu_npu_model() -> bytes:
    """conv -> 9x9 SAME AVERAGE_POOL_2D -> conv: aot compiles all three, Vela leaves the
    pool to the CPU (Ethos-U55 pools with padding take at most 8x8)."""
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 8, 8, 4), "int8", scale=0.05, zero_point=-3)
    y = _conv(b, x, "conv1")
    z = b.add_tensor("pool", (1, 8, 8, 4), "int8", scale=0.1, zero_point=5)
    b.add_operator(
        "AVERAGE_POOL_2D",
        inputs=[y],
        outputs=[z],
        options={"padding": "SAME", "filter_width": 9, "filter_height": 9},
    )
    b.mark_output(_conv(b, z, "conv2"))
    return b.build()


def _conv(b: TFLiteModelBuilder, x: int, name: str) -> int:
    w = b.add_constant(
        f"{name}_w",
        # Different weights per layer, so their NPU subgraphs differ too.
        (np.arange(144).reshape(4, 3, 3, 4) * (len(name) + ord(name[-1])) % 7 - 3).astype(np.int8),
        scale=[0.01] * 4,
        zero_point=[0] * 4,
        quantized_dimension=0,
    )
    bias = b.add_constant(
        f"{name}_b", np.arange(4, dtype=np.int32), scale=[0.0005] * 4, zero_point=[0] * 4
    )
    y = b.add_tensor(name, (1, 8, 8, 4), "int8", scale=0.1, zero_point=5)
    b.add_operator("CONV_2D", inputs=[x, w, bias], outputs=[y], options={"padding": "SAME"})
    return y
