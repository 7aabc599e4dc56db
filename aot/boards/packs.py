"""CMSIS device memories from a pack's PDSC, read with cmsis-pack-manager.

A board YAML may name its device and pack (``cmsis: {device: ARMCM4, pack:
ARM::Cortex_DFP}``) instead of typing the memory map; the memories then come from the
PDSC. An explicit ``memories`` list in the YAML wins. PDSC files are looked up as
``<vendor>.<name>.pdsc`` in the folders of ``AOT_CMSIS_PACKS`` (os.pathsep-separated),
then in cmsis-pack-manager's own cache (filled from the online pack index by
``Cache.cache_descriptors()``).
"""

from __future__ import annotations

import json
import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aot.errors import ConfigError, ToolchainError

if TYPE_CHECKING:
    from aot.boards import CmsisDevice

INSTALL = "pip install 'aot[cmsis]'  (or: pip install cmsis-pack-manager)"
PACKS_ENV = "AOT_CMSIS_PACKS"


@dataclass(frozen=True)
class PackMemory:
    name: str  # as the PDSC names it (ROM, RAM_S, IRAM1, ...)
    start: int
    size: int
    read: bool
    write: bool
    execute: bool
    startup: bool


@dataclass(frozen=True)
class PackDevice:
    name: str
    core: str  # as cmsis-pack-manager spells it: CortexM4, CortexM55, ...
    fpu: str  # None, SinglePrecision, DoublePrecision
    memories: tuple[PackMemory, ...]


def _pack_manager() -> Any:
    try:
        import cmsis_pack_manager
    except ImportError:
        raise ToolchainError(
            f"reading CMSIS packs needs cmsis-pack-manager; install it with `{INSTALL}`"
        ) from None
    return cmsis_pack_manager


def _device_from_index(name: str, entry: dict[str, Any]) -> PackDevice:
    memories = tuple(
        PackMemory(
            name=mem_name,
            start=int(mem["start"]),
            size=int(mem["size"]),
            read=bool(mem["access"]["read"]),
            write=bool(mem["access"]["write"]),
            execute=bool(mem["access"]["execute"]),
            startup=bool(mem.get("startup")),
        )
        for mem_name, mem in sorted(entry["memories"].items(), key=lambda kv: kv[1]["start"])
    )
    processor = entry["processors"][0]
    return PackDevice(name, processor["core"], processor["fpu"], memories)


def _index_one(pdsc: Path, workdir: Path) -> dict[str, Any]:
    pack_manager = _pack_manager()
    workdir.mkdir(parents=True, exist_ok=True)
    index = pack_manager.Cache(True, True, json_path=str(workdir), data_path=str(workdir))
    index.add_pack_from_path(str(pdsc))
    index_file = workdir / "index.json"
    return json.loads(index_file.read_text()) if index_file.is_file() else {}


@cache
def read_pdsc(pdsc: Path) -> dict[str, PackDevice]:
    """Every device of a PDSC file that cmsis-pack-manager can parse, by name.

    cmsis-pack-manager 0.6 drops all devices of a PDSC when one of them has a core it
    does not know (Cortex_DFP lists Cortex-M52 and Cortex-A55), so each family is
    handed to it as a PDSC of its own; the families it cannot parse are left out."""
    try:
        tree = ET.parse(pdsc)
    except (OSError, ET.ParseError) as err:
        raise ConfigError(f"cannot read the pack description {pdsc}: {err}") from None
    root = tree.getroot()
    devices_node = root.find("devices")
    families = list(devices_node) if devices_node is not None else []
    devices: dict[str, PackDevice] = {}
    if devices_node is None:
        return devices
    with tempfile.TemporaryDirectory(prefix="aot-pdsc-") as tmp:
        for index, family in enumerate(families):
            devices_node[:] = [family]
            one = Path(tmp) / str(index) / pdsc.name
            one.parent.mkdir()
            tree.write(one, encoding="utf-8", xml_declaration=True)
            for name, entry in _index_one(one, Path(tmp) / str(index) / "index").items():
                devices[name] = _device_from_index(name, entry)
    return devices


def find_pdsc(pack: str) -> Path | None:
    """``<vendor>.<name>.pdsc`` in the AOT_CMSIS_PACKS folders."""
    vendor, _, name = pack.partition("::")
    for folder in os.environ.get(PACKS_ENV, "").split(os.pathsep):
        if folder:
            path = Path(folder) / f"{vendor}.{name}.pdsc"
            if path.is_file():
                return path
    return None


def _cached_index() -> dict[str, Any]:
    """cmsis-pack-manager's own index of the packs it has downloaded (may be empty)."""
    try:
        return dict(_pack_manager().Cache(True, True).index)
    except (OSError, ValueError):
        return {}


def pack_device(device: CmsisDevice) -> PackDevice:
    """The device from its pack: a local PDSC, else cmsis-pack-manager's cache."""
    pdsc = find_pdsc(device.pack)
    if pdsc is not None:
        devices = read_pdsc(pdsc.resolve())
        where = str(pdsc)
    else:
        index = _cached_index()
        devices = {
            name: _device_from_index(name, entry)
            for name, entry in index.items()
            if name == device.device
        }
        where = "cmsis-pack-manager's cache"
        if not devices:
            raise ConfigError(
                f"pack {device.pack} for device {device.device} not found: put "
                f"{device.pack.replace('::', '.')}.pdsc in a folder named by {PACKS_ENV}, "
                "or fill cmsis-pack-manager's cache from the pack index with "
                "`python -c 'import cmsis_pack_manager as m; m.Cache(False, False)"
                ".cache_descriptors()'`"
            )
    if device.device not in devices:
        raise ConfigError(
            f"device {device.device} is not in {where} ({device.pack}); it has: "
            f"{', '.join(sorted(devices)) or 'no device cmsis-pack-manager can read'}"
        )
    return devices[device.device]


def _memory_name(name: str) -> str:
    text = "".join(c if c.isalnum() else "_" for c in name.lower())
    return text if text[:1].isalpha() else f"m_{text}"


def memories_from_pack(device: CmsisDevice, source: str) -> list[dict[str, Any]]:
    """Board-YAML memory entries for the device's memories: the startup memory first
    (the boot image lives there), then read-only memories, then RAM."""
    try:
        found = pack_device(device)
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None

    def order(mem: PackMemory) -> tuple[int, int, int]:
        return (not mem.startup, mem.write, mem.start)

    entries = []
    for mem in sorted(found.memories, key=order):
        if mem.write:
            holds = ["data", "workspace", "stack"]
        else:
            holds = ["code", "constants"] if mem.execute else ["constants"]
        entries.append(
            {
                "name": _memory_name(mem.name),
                "base": mem.start,
                "size": mem.size,
                "holds": holds,
                # ROM is written by the flasher; RAM contents are copied at reset.
                "loadable": not mem.write,
                "note": f"{mem.name} of {device.device} from the {device.pack} PDSC",
            }
        )
    return entries
