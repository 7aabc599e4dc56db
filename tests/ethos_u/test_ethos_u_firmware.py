"""The four reference models: Vela's output embedded, aot's glue and the user's Ethos-U
core driver compiled for Cortex-M55, linked for mps3_an547; every buffer the NPU touches
lies in memory the board says it reaches (never ITCM/DTCM)."""

from __future__ import annotations

from pathlib import Path

import pytest
from npu_firmware import build_firmware, symbols

from aot.backends.ethos_u.driver import find_driver
from aot.boards import load_board
from aot.testing.shared import MLPERF_TINY, shared_path

pytestmark = pytest.mark.toolchain


@pytest.mark.parametrize("name", MLPERF_TINY)
def test_reference_model_links_with_npu_buffers_in_reach(
    vela_reference, name: str, tmp_path: Path
) -> None:
    board = load_board("mps3_an547")
    vela = vela_reference(name)
    paths = find_driver(shared_path("ethos-u-core-driver"), shared_path("cmsis-core"))
    # Weights in the FPGA SRAM, arena in the SSE-300 internal SRAM: two memories it reaches.
    elf = build_firmware(board, name, vela, paths, tmp_path, constants="sram", arena="isram")
    table = symbols(elf)
    assert "ethosu_invoke_v3" in table and "ethosu_irq_handler" in table
    reach = [board.region(m) for m in board.accelerator("ethos-u55-128").memories]
    tcm = [board.region("itcm"), board.region("dtcm")]
    (sg,) = vela.subgraphs
    for suffix, size in (
        ("command_stream", len(sg.command_stream)),
        ("read_only", len(sg.read_only)),
        ("arena", sg.scratch_bytes),
    ):
        sym = table[f"aot_{name}_npu0_{suffix}"]
        assert sym.size == size  # Vela's bytes, embedded whole
        assert sym.address % 16 == 0
        end = sym.address + sym.size
        assert any(r.base <= sym.address and end <= r.base + r.size for r in reach), suffix
        assert not any(r.base <= sym.address < r.base + r.size for r in tcm), suffix
