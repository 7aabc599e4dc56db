"""The runtime with a fixture model on emulated Cortex-M boards, over QEMU's serial port.

Uses the cmsis project template, the cmsdk port and the QEMU runner of other stages, so
it checks the runtime where it matters: real UART, real ticks, real stack bounds.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from device_c_build import FIXTURES, RUNTIME, runtime_sources

from aot.boards import Board, load_board
from aot.device import DeviceClient, SerialTransport
from aot.errors import ProtocolError

pytestmark = pytest.mark.emulator

REPO = RUNTIME.parent.parent


def _build(board_name: str, model: str, dest: Path) -> tuple[Board, Path]:
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm", "make"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found")
    from aot.building.toolchain import build_with_make
    from aot.project.cmsis import cmsis_build_config, write_build_config
    from aot.project.linker import render_linker_script

    board = load_board(board_name)
    shutil.copytree(REPO / "aot" / "project" / "templates" / "cmsis", dest)
    (dest / "board.ld").write_text(render_linker_script(board, {}))
    sources = [*map(str, runtime_sources())]
    sources += [str(RUNTIME / "ports" / board.port_for("cmsis") / "port.c")]
    sources += [str(FIXTURES / f"{model}.c")]
    includes = [str(RUNTIME / "include"), str(RUNTIME / "src")]
    config = cmsis_build_config(board, sources=sources, includes=includes, target="app")
    write_build_config(dest, config)
    return board, build_with_make(dest, target="app")


@pytest.mark.parametrize("board_name", ["mps2_an385", "mps2_an386"])
def test_mul_add_on_qemu(board_name: str, tmp_path: Path) -> None:
    from aot.emulator.qemu import QemuInstance

    board, elf = _build(board_name, "mul_add_model", tmp_path / "project")
    with QemuInstance(board, elf) as qemu, DeviceClient(SerialTransport(qemu.url), 30) as client:
        info = client.hello()
        assert info.name == "mul_add" and info.ticks_per_second > 0
        a = np.arange(300, dtype=np.float32).reshape(1, 300)
        b = np.full((1, 300), 0.25, dtype=np.float32)
        result = client.run([a, b], repeats=3)
        np.testing.assert_array_equal(result.outputs[0], 2 * a + b)
        assert result.runs == 3 and 0 < result.ticks_min <= result.ticks_max
        # A corrupt frame is answered and the session goes on.
        client.transport.write(b"\x05\x01\x00")
        with pytest.raises(ProtocolError, match="AOT_ERR_PROTOCOL_BAD_ENCODING"):
            client.stats()
        stats = client.stats()
        assert stats.frames_bad == 1 and stats.runs == 3
        # The linker script defines aot_stack_limit, so the whole stack is measured.
        assert stats.stack_painted_bytes > 1024 and not stats.stack_exhausted
        assert stats.model_stack_bytes is not None
        client.quit()
