"""mps3_an547 declares its Ethos-U55, which reaches the SRAMs but not the core's TCMs."""

from __future__ import annotations

import pytest

from aot.boards import load_board

pytestmark = pytest.mark.unit


def test_mps3_an547_ethos_u55_does_not_reach_the_tcms() -> None:
    board = load_board("mps3_an547")
    npu = board.accelerator("ethos-u55-128")
    assert "itcm" not in npu.memories and "dtcm" not in npu.memories
    assert {"sram", "isram"} <= set(npu.memories)
    # Everything the NPU reaches can hold its weights or its arena.
    for name in npu.memories:
        assert set(board.region(name).holds) & {"constants", "workspace"}
    # The driver's register base (Secure alias) and interrupt, for aot's glue.
    assert (npu.base, npu.irq) == (0x58102000, 56)
