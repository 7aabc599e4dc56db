"""Weights and pools land in the board memories the user chose, and still run exactly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from aot.errors import ConfigError
from aot.testing.harness import build, run_many
from aot.testing.shared import shared_dir

ROOT = Path(__file__).resolve().parents[2]
MODEL = shared_dir() / "models" / "mlperf_tiny" / "kws_ref_model.tflite"


def symbol_address(elf: Path, symbol: str) -> int:
    table = subprocess.run(
        ["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    for line in table.splitlines():
        fields = line.split()
        if fields[-1] == symbol:
            return int(fields[0], 16)
    raise AssertionError(f"{symbol} not in {elf}")


@pytest.mark.emulator
def test_constants_and_pools_in_chosen_memories(tmp_path: Path) -> None:
    folder = build(
        MODEL,
        tmp_path / "out",
        "mps2_an386",
        "--constants-memory",
        "psram",
        "--pool",
        "blockram:16K",
        "--pool",
        "ssram23:1M",
    )
    elf = folder / "project" / "build" / "firmware.elf"
    # AN386 memory map: PSRAM at 0x21000000, FPGA block RAM at 0x01000000.
    # Every constant array (the hand-written kernels re-lay out weights into new ones).
    table = subprocess.run(
        ["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True
    )
    constants = [line.split()[-1] for line in table.stdout.splitlines() if "_const_" in line]
    assert constants
    for symbol in constants:
        assert 0x21000000 <= symbol_address(elf, symbol) < 0x22000000, symbol
    assert 0x01000000 <= symbol_address(elf, "aot_kws_ref_model_pool_blockram") < 0x01004000
    x = np.load(MODEL.with_suffix(".input.npy"))
    (got,) = run_many(folder, [[x]])[0]
    np.testing.assert_array_equal(got, np.load(MODEL.with_suffix(".output.npy")))


@pytest.mark.unit
def test_constants_memory_must_allow_constants(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="may not hold constants"):
        build(MODEL, tmp_path / "out", "mps2_an386", "--constants-memory", "blockram", "--no-build")
    assert not (tmp_path / "out").exists()
