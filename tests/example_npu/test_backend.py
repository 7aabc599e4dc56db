"""The example NPU backend in Python: what it claims, the descriptors it derives from the
importer's typed parameters, and the C it emits (compiled with the device model)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from aot.backends import get_backend
from aot.backends.example_npu import ExampleNpu, descriptor
from aot.compiler import CompileOptions, compile_model
from aot.frontend.tflite_int8 import import_tflite_int8
from aot.partition import partition, region_operators
from aot.planning.memory_map import MemoryMap
from aot.planning.model import PoolSpec
from aot.testing.shared import mlperf_tiny
from aot.testing.tflite_builder import TFLiteModelBuilder

pytestmark = pytest.mark.unit


def _claimed(model) -> list[str]:
    parted = partition(model, [ExampleNpu()])
    return [
        op.kind
        for name in parted.regions
        for op in region_operators(parted.module, parted.module[name])
    ]


def test_registered_and_describes_what_it_takes() -> None:
    backend = get_backend("example_npu")
    assert isinstance(backend, ExampleNpu) and backend.target == "example_npu"
    assert backend.describe() == [
        "conv2d: conv2d_int8",
        "depthwise_conv2d: depthwise_conv2d_int8",
        "fully_connected: fully_connected_int8",
    ]


@pytest.mark.parametrize("model", ["kws_ref_model", "vww_96_int8"])
def test_takes_every_conv_depthwise_and_fully_connected(model: str) -> None:
    imported = import_tflite_int8(mlperf_tiny(model))
    claimed = _claimed(imported)
    wanted = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}
    assert len(claimed) == sum(op in wanted for op in imported.operators)


def _grouped_conv() -> bytes:
    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 5, 5, 4), "int8", scale=0.05, zero_point=3)
    w = b.add_constant("w", np.ones((4, 3, 3, 2), np.int8), scale=[0.01] * 4, zero_point=[0] * 4)
    bias = b.add_constant("b", np.zeros(4, np.int32), scale=[0.0005] * 4, zero_point=[0] * 4)
    y = b.add_tensor("y", (1, 5, 5, 4), "int8", scale=0.1, zero_point=-2)
    b.add_operator("CONV_2D", inputs=[x, w, bias], outputs=[y], options={"padding": "SAME"})
    b.mark_output(y)
    return b.build()


def test_grouped_convolution_stays_on_the_cpu() -> None:
    assert _claimed(import_tflite_int8(_grouped_conv())) == []


def test_descriptors_follow_the_importers_parameters() -> None:
    """kws: packed per-channel convolutions with the zero point folded into the bias
    (double rounding); a per-tensor fully connected layer (single rounding, LiteRT's)."""
    imported = import_tflite_int8(mlperf_tiny("kws_ref_model"))
    parted = partition(imported, [ExampleNpu()])
    ops = [
        op for name in parted.regions for op in region_operators(parted.module, parted.module[name])
    ]
    first, dense = descriptor(ops[0]), descriptor(ops[-1])
    assert (first.in_h, first.in_w, first.out_h, first.out_w, first.out_c) == (49, 10, 25, 5, 64)
    assert (first.stride, first.padding, first.input_offset) == ((2, 2), (4, 1), 0)
    assert first.pad_value == ops[0].params.input_zp
    assert (first.requant.mode, first.requant.rounding) == ("packed", "double")
    assert (dense.batches, dense.depth, dense.out_c) == (1, 64, 12)
    assert (dense.requant.mode, dense.requant.rounding) == ("per_tensor", "single")
    # With double rounding everywhere the importer says so and the descriptor follows.
    double = import_tflite_int8(mlperf_tiny("kws_ref_model"), rounding="double")
    parted = partition(double, [ExampleNpu()])
    last = [op for n in parted.regions for op in region_operators(parted.module, parted.module[n])]
    assert descriptor(last[-1]).requant.rounding == "double"


@pytest.mark.toolchain
def test_emitted_library_compiles_with_the_device_model(tmp_path: Path) -> None:
    pools = (PoolSpec("workspace", None, ("cpu", "example_npu")),)  # both reach it
    options = CompileOptions(
        name="kws", memory=MemoryMap(pools=pools), accelerators=("example_npu",)
    )
    compile_model(mlperf_tiny("kws_ref_model"), tmp_path, options)
    src = tmp_path / "model" / "src"
    device_model = src / "backends" / "example_npu" / "example_npu.c"  # its own folder
    assert device_model.is_file()
    kernels = (src / "aot_kws_kernels.c").read_text()
    assert kernels.count("= (struct aot_npu_conv2d){") == 9
    assert kernels.count("= (struct aot_npu_fully_connected){") == 1
    subprocess.run(
        ["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-c",
         f"-I{tmp_path / 'model' / 'include'}", f"-I{src}", *map(str, sorted(src.glob("*.c"))),
         str(device_model)],
        check=True, capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
