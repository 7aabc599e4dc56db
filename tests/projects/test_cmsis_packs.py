"""Board memories from a CMSIS pack's PDSC (cmsis-pack-manager), with
../shared/cmsis-packs as the offline stand-in for the pack index."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from projects_helpers import shared

from aot.boards import CmsisDevice, board_from_data, load_all_boards, load_board
from aot.errors import ConfigError, ToolchainError

pytestmark = pytest.mark.unit

CMSIS_BOARDS = [b.name for b in load_all_boards() if b.cmsis is not None]
CORE_NAMES = {  # aot core -> cmsis-pack-manager's spelling of the PDSC's Dcore
    "cortex-m3": "CortexM3",
    "cortex-m4": "CortexM4",
    "cortex-m7": "CortexM7",
    "cortex-m33": "CortexM33",
    "cortex-m55": "CortexM55",
}
# What the PDSC says for the devices the emulated boards name: Arm's generic reference
# devices, not the MPS2/MPS3 FPGA images (4 MiB SSRAMs, Secure aliases). So those boards
# keep their memory map in YAML, which wins over the pack.
PDSC_MEMORIES = {
    "ARMCM3": [("ROM", 0x0, 0x40000), ("RAM", 0x20000000, 0x20000)],
    "ARMCM4": [("ROM", 0x0, 0x40000), ("RAM", 0x20000000, 0x20000)],
    "ARMCM7": [("ROM", 0x0, 0x40000), ("RAM", 0x20000000, 0x20000)],
    "ARMCM33": [
        ("ROM_S", 0x0, 0x200000), ("ROM_NS", 0x200000, 0x200000),
        ("RAM_S", 0x20000000, 0x20000), ("RAM_NS", 0x20200000, 0x20000),
    ],
    "ARMCM55": [
        ("ROM_S", 0x0, 0x200000), ("ROM_NS", 0x200000, 0x200000),
        ("RAM_S", 0x20000000, 0x20000), ("RAM_NS", 0x20200000, 0x20000),
    ],
}  # fmt: skip


@pytest.fixture(autouse=True)
def offline_packs(monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("cmsis_pack_manager")
    folder = shared("cmsis-packs")
    monkeypatch.setenv("AOT_CMSIS_PACKS", str(folder))
    return folder


def test_pdsc_is_valid_against_pack_xsd(offline_packs: Path) -> None:
    xmlschema = pytest.importorskip("xmlschema")
    schema = xmlschema.XMLSchema(str(offline_packs / "PACK.xsd"))
    errors = [str(e.reason) for e in schema.iter_errors(str(offline_packs / "ARM.Cortex_DFP.pdsc"))]
    assert not errors, errors[:5]


@pytest.mark.parametrize("name", CMSIS_BOARDS)
def test_board_device_is_in_the_pack_with_its_core(name: str) -> None:
    from aot.boards.packs import pack_device

    board = load_board(name)
    device = pack_device(board.cmsis)
    assert device.core == CORE_NAMES[board.core]
    assert [(m.name, m.start, m.size) for m in device.memories] == PDSC_MEMORIES[device.name]


@pytest.mark.parametrize("name", CMSIS_BOARDS)
def test_derived_memories_versus_the_yaml(name: str) -> None:
    """The memories aot derives for each emulated board's device, against the YAML:
    they do not match. On the non-TrustZone MPS2 images the derived boot ROM and first
    RAM start where the YAML's default code and data memories do, but are far smaller
    (256 KiB and 128 KiB against 4 MiB SSRAMs); on the Secure AN521/AN547 images the
    YAML uses Secure aliases (bit 28) the generic device does not have, and other sizes
    (AN547 ITCM is 512 KiB, the device's ROM_S 2 MiB)."""
    from aot.boards.packs import memories_from_pack

    board = load_board(name)
    derived = memories_from_pack(board.cmsis, name)
    rom, ram = derived[0], next(m for m in derived if "data" in m["holds"])
    code, data = board.default_region("code"), board.default_region("data")
    assert (rom["size"], ram["size"]) != (code.size, data.size)
    if board.has("secure_state"):
        assert (rom["base"], ram["base"]) != (code.base, data.base)
    else:
        assert (rom["base"], ram["base"]) == (code.base, data.base)


def board_data(**extra: object) -> dict:
    data = yaml.safe_load((Path(load_board("mps2_an386").path)).read_text())
    data.update(name="pack_board", **extra)
    data.pop("zephyr")  # its sram names a YAML memory
    return data


def test_memories_come_from_the_pdsc_when_the_yaml_has_none() -> None:
    data = board_data()
    del data["memories"]
    data.pop("accelerators", None)  # they name memories of the YAML's own list
    board = board_from_data(data, "pack_board.yaml")
    assert [(m.name, m.base, m.size, m.holds, m.loadable) for m in board.memories] == [
        ("rom", 0x0, 0x40000, ("code", "constants"), True),
        ("ram", 0x20000000, 0x20000, ("data", "workspace", "stack"), False),
    ]
    assert board.default_region("workspace").name == "ram"


def test_explicit_yaml_memories_win() -> None:
    board = board_from_data(board_data(), "pack_board.yaml")
    assert [m.name for m in board.memories] == ["ssram1", "ssram23", "psram", "blockram"]


def test_unknown_device_names_what_the_pack_has() -> None:
    data = board_data(cmsis={"device": "ARMCM4_FP", "pack": "ARM::Cortex_DFP"})
    del data["memories"]
    with pytest.raises(ConfigError, match=r"pack_board.yaml: device ARMCM4_FP is not in .*ARMCM4,"):
        board_from_data(data, "pack_board.yaml")


def test_missing_pack_says_where_to_put_it(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from aot.boards.packs import pack_device

    monkeypatch.setenv("AOT_CMSIS_PACKS", str(tmp_path))
    monkeypatch.setattr("aot.boards.packs._cached_index", lambda: {})
    with pytest.raises(ConfigError, match=r"ARM.Cortex_DFP.pdsc in a folder named by AOT_CMSIS"):
        pack_device(CmsisDevice("ARMCM4", "ARM::Cortex_DFP"))


def test_missing_cmsis_pack_manager_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from aot.boards import packs

    monkeypatch.setitem(sys.modules, "cmsis_pack_manager", None)  # import fails
    packs.read_pdsc.cache_clear()
    with pytest.raises(ToolchainError, match=r"pip install 'aot\[cmsis\]'"):
        packs.read_pdsc(shared("cmsis-packs", "ARM.Cortex_DFP.pdsc"))
    packs.read_pdsc.cache_clear()
