"""Acceptance: kws_ref_model and vww_96_int8 on the example NPU, under QEMU, bit-exact.

Each model is built with ``--accelerator example_npu`` for mps2_an386 and mps3_an547,
aot choosing a pool and the constants memory from the one memory the board's YAML says
the NPU reaches; the reference input must give the recorded LiteRT output exactly.
``metadata.json`` must put every CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED on the NPU
and every buffer the NPU touches, and the constants, in the NPU's memory. A firmware whose
device model is given another region must fail the run with
AOT_ERR_NPU_ADDRESS_OUT_OF_REGION: the device model does check.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from aot.boards import load_board
from aot.building.builder import run_make
from aot.errors import AotError
from aot.library import read_metadata
from aot.testing import run_tflite_reference
from aot.testing.harness import build, random_inputs, run_many
from aot.testing.shared import mlperf_tiny

pytestmark = [pytest.mark.emulator, pytest.mark.toolchain]

NPU = "example_npu"
NPU_KINDS = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}


@pytest.fixture(autouse=True)
def _tools() -> None:
    for tool in ("arm-none-eabi-gcc", "make", "qemu-system-arm"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (scripts/setup.sh installs it)")


def build_on_npu(model: str, board: str, out: Path, *extra: str) -> tuple[Path, str]:
    """The memory layout is left to aot: from the board's accelerator entry it adds a
    pool in the NPU's memory and puts the constants there. The NPU reads the model's
    input, which the caller keeps in CPU memory: aot copies it into the NPU's pool first
    (the example NPU asks for that, ``io_copies``) unless ``--io-in-pool`` is given."""
    memory = load_board(board).accelerator(NPU).memories[0]
    folder = build(mlperf_tiny(model), out, board, "--accelerator", NPU, "--name", "m", *extra)
    return folder, memory


@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547"])
@pytest.mark.parametrize("model", ["kws_ref_model", "vww_96_int8"])
def test_model_on_the_npu_is_bit_exact(model: str, board: str, tmp_path: Path) -> None:
    folder, memory = build_on_npu(model, board, tmp_path / "out")
    # Without --io-in-pool: one copy, of the input into the NPU's memory, before step 0
    # (the output comes from the CPU's SOFTMAX straight into the caller's buffer).
    memory_plan = read_metadata(folder)["memory"]
    (copy,) = memory_plan["copies"]
    name = read_metadata(folder)["inputs"][0]["c_name"]
    assert copy["src"].endswith(f"_{name}") and copy["before_step"] == 0
    (staged,) = [b for b in memory_plan["buffers"] if b["buffer"] == copy["dst"]]
    assert staged["pool"] == memory and staged["copy_of"] == copy["src"]
    batches = [[np.load(mlperf_tiny(model, ".input.npy"))]]
    expected = [np.load(mlperf_tiny(model, ".output.npy"))]
    if model == "kws_ref_model":  # cheap enough for a few seeded random inputs too
        extra = random_inputs(read_metadata(folder)["inputs"], 3, seed=10)
        batches += extra
        expected += [run_tflite_reference(mlperf_tiny(model), b)[0] for b in extra]
    for index, (outputs, want) in enumerate(zip(run_many(folder, batches), expected)):
        np.testing.assert_array_equal(outputs[0], want, err_msg=f"input {index}")

    metadata = read_metadata(folder)
    placed = {}
    for op in metadata["operators"]:
        for source in op["source_operators"]:
            placed[source["index"]] = (source["type"], op["backend"])
    assert placed, "no operators in metadata.json"
    for index, (kind, backend) in placed.items():
        # the rest on the CPU: TVM's kernels, or aot's hand-written ones (Helium's pool)
        cpu = backend in ("cpu", "kernels")
        assert backend == NPU if kind in NPU_KINDS else cpu, f"{kind} #{index} on {backend}"
    # Every buffer the NPU touches is in its memory (pools on a board are named after
    # theirs), and so are the weights it reads.
    touched = [b for b in metadata["memory"]["buffers"] if NPU in b["targets"]]
    assert touched and {b["pool"] for b in touched} == {memory}
    assert metadata["constants"]["memory"] == memory


def test_inputs_and_outputs_in_the_pools_need_no_copy(tmp_path: Path) -> None:
    folder, _ = build_on_npu("kws_ref_model", "mps2_an386", tmp_path / "out", "--io-in-pool")
    (outputs,) = run_many(folder, [[np.load(mlperf_tiny("kws_ref_model", ".input.npy"))]])
    np.testing.assert_array_equal(outputs[0], np.load(mlperf_tiny("kws_ref_model", ".output.npy")))
    memory_plan = read_metadata(folder)["memory"]
    assert memory_plan["copies"] == [] and memory_plan["io_in_pool"]


def test_a_buffer_outside_the_npu_region_fails_the_run(tmp_path: Path) -> None:
    """The same kws firmware, its device model told that it reaches only the block RAM:
    every operand is then outside and the first NPU step fails with the named code."""
    folder, _ = build_on_npu(
        "kws_ref_model", "mps2_an386", tmp_path / "out", "--no-build", "--io-in-pool"
    )
    blockram = load_board("mps2_an386").region("blockram")
    config = folder / "project" / "config.mk"
    text = config.read_text()
    text = re.sub(
        r"AOT_ACCEL_EXAMPLE_NPU_MEMORY0_BASE=\w+", f"AOT_ACCEL_EXAMPLE_NPU_MEMORY0_BASE="
        f"0x{blockram.base:08X}u", text,
    )  # fmt: skip
    text = re.sub(
        r"AOT_ACCEL_EXAMPLE_NPU_MEMORY0_SIZE=\w+",
        f"AOT_ACCEL_EXAMPLE_NPU_MEMORY0_SIZE=0x{blockram.size:08X}u",
        text,
    )
    assert text != config.read_text()
    config.write_text(text)
    run_make(folder / "project")
    inputs = [np.load(mlperf_tiny("kws_ref_model", ".input.npy"))]
    with pytest.raises(AotError) as info:
        run_many(folder, [inputs])
    # The RUN reply's fault record (feature FAULT): step 0, its first descriptor, the
    # operand checked first (the input, planned into the PSRAM pool by --io-in-pool) at the
    # address the firmware gave it, and the region the device was told.
    metadata = read_metadata(folder)
    step = metadata["operators"][0]
    (buffer,) = [b for b in metadata["memory"]["buffers"] if b["buffer"] == "tensor_0_input_1"]
    address = _symbol_address(folder / "project" / "build" / "firmware.elf", "aot_m_pool_psram")
    address += buffer["offset"]
    assert buffer["pool"] == "psram" and step["backend"] == NPU
    end = blockram.base + blockram.size
    assert str(info.value) == (
        f"model 'm' failed in run 1 of 1 at step 0 ({step['label']}) on example_npu: "
        f"AOT_ERR_NPU_ADDRESS_OUT_OF_REGION: descriptor 0, operand 'input' address "
        f"0x{address:08x} is outside region 'blockram' [0x{blockram.base:08x}, 0x{end:08x})"
    )


def _symbol_address(elf: Path, symbol: str) -> int:
    listing = subprocess.run(
        ["arm-none-eabi-nm", str(elf)], check=True, capture_output=True, text=True
    ).stdout
    (address,) = [
        int(line.split()[0], 16) for line in listing.splitlines() if line.endswith(f" {symbol}")
    ]
    return address


@pytest.mark.slow
@pytest.mark.parametrize("model", ["pretrainedResnet_quant", "ad01_int8"])
def test_other_reference_models_are_bit_exact(model: str, tmp_path: Path) -> None:
    """resnet's regions end in tensors that a CPU ADD reads too (region outputs and
    branches); ad01 is fully connected layers only."""
    folder, _ = build_on_npu(model, "mps2_an386", tmp_path / "out")
    (outputs,) = run_many(folder, [[np.load(mlperf_tiny(model, ".input.npy"))]])
    np.testing.assert_array_equal(outputs[0], np.load(mlperf_tiny(model, ".output.npy")))
    backends = [op["backend"] for op in read_metadata(folder)["operators"]]
    assert NPU in backends
