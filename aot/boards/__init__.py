"""Boards as data: ``aot/boards/<name>.yaml`` validated by ``aot/boards/schema.json``.

A board says what the hardware is (core, FPU/DSP/MVE, clock, memory regions, console,
tick source, QEMU machine, Zephyr name, flash runner). Code never tests board names: it
reads fields and capability flags. Compiler flags come from a table keyed by core, so a
new board with a known core needs no Python change.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from aot.artifacts.manifest import LibraryManifest
from aot.errors import ConfigError
from aot.sizes import parse_size

DEFAULT_BOARD = "mps2_an386"

# The repository's boards folder; AOT_BOARDS_PATH (os.pathsep-separated) adds folders
# searched first, so out-of-tree boards need no edit here.
# The board YAML files ship inside the package, beside this module.
BOARDS_DIR = Path(__file__).resolve().parent
SCHEMA_PATH = BOARDS_DIR / "schema.json"

MEMORY_KINDS = ("code", "constants", "data", "workspace", "stack", "io")


@dataclass(frozen=True)
class CoreInfo:
    """What gcc needs for a core: feature name -> -mcpu extension suffix."""

    arch: str
    fpu: Mapping[str, str]  # fpu value -> "+ext" suffix ("" = the core's default)
    dsp: Mapping[bool, str]
    mve: Mapping[str, str]


# Keyed by core, never by board. The suffixes switch off what the core's default has.
CORES: Mapping[str, CoreInfo] = MappingProxyType(
    {
        "cortex-m3": CoreInfo("armv7-m", {"none": ""}, {False: ""}, {"none": ""}),
        "cortex-m4": CoreInfo("armv7e-m", {"none": "+nofp", "sp": ""}, {True: ""}, {"none": ""}),
        "cortex-m7": CoreInfo(
            "armv7e-m", {"none": "+nofp", "sp": "+nofp.dp", "dp": ""}, {True: ""}, {"none": ""}
        ),
        "cortex-m33": CoreInfo(
            "armv8-m.main",
            {"none": "+nofp", "sp": ""},
            {True: "", False: "+nodsp"},
            {"none": ""},
        ),
        "cortex-m55": CoreInfo(
            "armv8.1-m.main",
            {"none": "+nofp", "dp": ""},
            {True: ""},
            {"none": "+nomve", "int": "+nomve.fp", "float": ""},
        ),
    }
)


@dataclass(frozen=True)
class CmsisDevice:
    """A CMSIS device and the pack whose PDSC describes it (``cmsis:`` in board YAML)."""

    device: str  # Dname in the PDSC, e.g. ARMCM4
    pack: str  # vendor::name, e.g. ARM::Cortex_DFP


@dataclass(frozen=True)
class Features:
    fpu: str = "none"  # none | sp | dp
    dsp: bool = False
    mve: str = "none"  # none | int | float


@dataclass(frozen=True)
class MemoryRegion:
    name: str
    base: int
    size: int
    holds: tuple[str, ...]
    loadable: bool = False  # initialised bytes can be put here by the flasher/emulator
    note: str = ""
    zephyr_region: str | None = None  # devicetree zephyr,memory-region name

    @property
    def end(self) -> int:
        return self.base + self.size

    def may_hold(self, kind: str) -> bool:
        return kind in self.holds


@dataclass(frozen=True)
class Accelerator:
    """An accelerator on the board: its backend's name and the memories it reaches."""

    name: str
    memories: tuple[str, ...]
    note: str = ""
    base: int | None = None  # register base address, for a driver that needs it
    irq: int | None = None  # interrupt number


@dataclass(frozen=True)
class QemuConfig:
    machine: str
    cpu: str | None = None
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Console:
    kind: str  # cmsdk_uart | zephyr | stdio
    base: int | None = None
    rx_irq: int | None = None
    baud: int = 115200


@dataclass(frozen=True)
class TickSource:
    source: str  # fpgaio_counter | zephyr_cycles | host_clock
    hz: int
    unit: str  # instructions | cycles | ns
    address: int | None = None
    instructions_per_tick: int | None = None


@dataclass(frozen=True)
class FlashRunner:
    runner: str  # the default runner (``aot flash --runner`` picks another)
    args: tuple[str, ...] = ()  # its arguments
    # Arguments for other runners this board can be flashed with, by runner name.
    runners: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def args_for(self, runner: str) -> tuple[str, ...] | None:
        """The board's arguments for ``runner``, or None if the board has none for it."""
        if runner == self.runner:
            return self.args
        return self.runners.get(runner)


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    kind: str  # mcu | host
    ports: Mapping[str, str]  # project template -> aot/runtime_c/ports/<port>
    core: str | None = None
    features: Features = field(default_factory=Features)
    clock_hz: int | None = None
    memories: tuple[MemoryRegion, ...] = ()
    accelerators: tuple[Accelerator, ...] = ()
    zephyr_board: str | None = None
    zephyr_sram: str | None = None  # the memory that is Zephyr's chosen zephyr,sram
    # (Zephyr version it first had the name, that name), oldest first; empty: the board
    # has had ``zephyr_board`` in every Zephyr aot supports (aot.project.zephyr_tree).
    zephyr_names: tuple[tuple[str, str], ...] = ()
    aliases: tuple[str, ...] = ()  # other names --board accepts
    cmsis: CmsisDevice | None = None
    qemu: QemuConfig | None = None
    console: Console | None = None
    ticks: TickSource | None = None
    flash: FlashRunner | None = None
    capabilities: frozenset[str] = frozenset()
    path: Path | None = None

    @property
    def emulated(self) -> bool:
        return self.qemu is not None

    @property
    def is_host(self) -> bool:
        return self.kind == "host"

    @property
    def templates(self) -> tuple[str, ...]:
        return tuple(self.ports)

    def has(self, capability: str) -> bool:
        return capability in self.capabilities

    def port_for(self, template: str) -> str:
        try:
            return self.ports[template]
        except KeyError:
            known = ", ".join(self.ports)
            raise ConfigError(
                f"board '{self.name}' has no port for project template '{template}'; "
                f"it supports: {known}"
            ) from None

    def accelerator(self, name: str) -> Accelerator:
        """The accelerator named ``name``; a one-line error naming the ones it has."""
        for accelerator in self.accelerators:
            if accelerator.name == name:
                return accelerator
        have = ", ".join(a.name for a in self.accelerators) or "none"
        raise ConfigError(
            f"board {self.name} has no accelerator '{name}' (it has: {have}); pick another "
            "--board, drop --accelerator, or declare it under 'accelerators:' in the board's YAML"
        )

    def region(self, name: str) -> MemoryRegion:
        for region in self.memories:
            if region.name == name:
                return region
        known = ", ".join(r.name for r in self.memories) or "none"
        raise ConfigError(f"board '{self.name}' has no memory region '{name}'; regions: {known}")

    def default_region(self, kind: str) -> MemoryRegion:
        """The first region (in board order) that may hold ``kind``."""
        for region in self.memories:
            if region.may_hold(kind):
                return region
        raise ConfigError(f"board '{self.name}' has no memory region that may hold {kind}")

    @property
    def boot_region(self) -> MemoryRegion:
        """Where the vector table and code go: the default code region."""
        region = self.default_region("code")
        if not region.loadable:
            raise ConfigError(f"board '{self.name}': code region '{region.name}' is not loadable")
        return region

    def gcc_flags(self) -> list[str]:
        """Target flags for arm-none-eabi-gcc derived from core + features."""
        if self.core is None:
            return []
        return gcc_flags(self.core, self.features)

    def cmsis_device(self) -> str | None:
        """The CMSIS device the board's YAML names (``cmsis.device``), if any."""
        return self.cmsis.device if self.cmsis else None

    @property
    def names(self) -> tuple[str, ...]:
        """Every name --board accepts for this board: its own, Zephyr's, the aliases."""
        extra = (self.zephyr_board,) if self.zephyr_board else ()
        extra += tuple(name for _, name in self.zephyr_names)
        return tuple(dict.fromkeys((self.name, *extra, *self.aliases)))

    def c_defines(self) -> dict[str, str]:
        """-D macros a port needs (addresses come from here, not from the C source)."""
        defines: dict[str, str] = {"AOT_BOARD_NAME": f'"{self.name}"'}
        if self.clock_hz is not None:
            defines["AOT_CLOCK_HZ"] = f"{self.clock_hz}u"
        if self.console is not None and self.console.base is not None:
            defines["AOT_UART_BASE"] = f"0x{self.console.base:08X}u"
            defines["AOT_UART_BAUD"] = f"{self.console.baud}u"
            if self.console.rx_irq is not None:
                defines["AOT_UART_RX_IRQ"] = f"{self.console.rx_irq}u"
        if self.ticks is not None:
            defines["AOT_TICKS_PER_SECOND"] = f"{self.ticks.hz}u"
            if self.ticks.address is not None:
                defines["AOT_TICKS_COUNTER_ADDR"] = f"0x{self.ticks.address:08X}u"
            if self.ticks.instructions_per_tick is not None:
                # no "u": the port's assembly pads a loop with this many nops
                defines["AOT_TICKS_INSTRUCTIONS_PER_TICK"] = str(self.ticks.instructions_per_tick)
        # Each accelerator's reachable memories, for its device model or driver:
        # AOT_ACCEL_EXAMPLE_NPU_MEMORY0_BASE / _SIZE, ... and AOT_ACCEL_<NAME>_MEMORIES.
        for accelerator in self.accelerators:
            prefix = "AOT_ACCEL_" + re.sub(r"\W", "_", accelerator.name).upper()
            defines[f"{prefix}_MEMORIES"] = f"{len(accelerator.memories)}u"
            for index, memory in enumerate(accelerator.memories):
                region = self.region(memory)
                defines[f"{prefix}_MEMORY{index}_BASE"] = f"0x{region.base:08X}u"
                defines[f"{prefix}_MEMORY{index}_SIZE"] = f"0x{region.size:08X}u"
        return defines


def gcc_flags(core: str, features: Features) -> list[str]:
    info = CORES.get(core)
    if info is None:
        raise ConfigError(f"unknown core '{core}'; known: {', '.join(CORES)}")
    parts = []
    for what, table, value in (
        ("fpu", info.fpu, features.fpu),
        ("dsp", info.dsp, features.dsp),
        ("mve", info.mve, features.mve),
    ):
        if value not in table:
            allowed = ", ".join(str(v).lower() for v in table)
            raise ConfigError(f"{core} cannot have {what}={value!s}; allowed: {allowed}")
        parts.append(table[value])
    if features.mve == "float" and features.fpu == "none":
        raise ConfigError(f"{core}: mve=float needs an FPU")
    flags = [f"-mcpu={core}{''.join(parts)}", "-mthumb"]
    if features.fpu == "none":
        flags.append("-mfloat-abi=soft")
    else:
        flags += ["-mfpu=auto", "-mfloat-abi=hard"]
    return flags


def _search_dirs() -> list[Path]:
    extra = os.environ.get("AOT_BOARDS_PATH", "")
    return [Path(p) for p in extra.split(os.pathsep) if p] + [BOARDS_DIR]


@cache
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def validate_board_data(data: Any, source: str) -> None:
    """Raise ConfigError naming the file, the field path and the problem."""
    import jsonschema  # lazy: only board loading needs it

    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: invalid board at '{where}': {err.message}{more}")


def board_from_data(
    data: Mapping[str, Any], source: str = "<data>", path: Path | None = None
) -> Board:
    """Validate a parsed YAML mapping and turn it into a Board."""
    validate_board_data(data, source)
    cmsis = data.get("cmsis")
    cmsis_device = CmsisDevice(cmsis["device"], cmsis["pack"]) if cmsis else None
    memory_data = data.get("memories")
    if memory_data is None and cmsis_device is not None and data["kind"] == "mcu":
        # No memory map in the YAML: the device's memories from its pack's PDSC.
        from aot.boards.packs import memories_from_pack

        memory_data = memories_from_pack(cmsis_device, source)
    memories = tuple(
        MemoryRegion(
            name=m["name"],
            base=m["base"],
            size=parse_size(m["size"], f"size of memory '{m['name']}'"),
            holds=tuple(m["holds"]),
            loadable=m.get("loadable", False),
            note=m.get("note", ""),
            zephyr_region=m.get("zephyr_region"),
        )
        for m in memory_data or []
    )
    names = [m.name for m in memories]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: memory region names must be unique, got {names}")
    spans = sorted(memories, key=lambda m: m.base)
    for a, b in itertools.pairwise(spans):
        if a.end > b.base:
            raise ConfigError(f"{source}: memory regions '{a.name}' and '{b.name}' overlap")
    for m in memories:
        if m.end > 1 << 32:
            raise ConfigError(f"{source}: memory region '{m.name}' ends past 4 GiB")
    feats = data.get("features", {})
    features = Features(
        fpu=feats.get("fpu", "none"), dsp=feats.get("dsp", False), mve=feats.get("mve", "none")
    )
    qemu = data.get("qemu")
    console = data.get("console")
    ticks = data.get("ticks")
    flash = data.get("flash")
    board = Board(
        name=data["name"],
        description=data["description"],
        kind=data["kind"],
        ports=MappingProxyType(dict(data["ports"])),
        core=data.get("core"),
        features=features,
        clock_hz=data.get("clock_hz"),
        memories=memories,
        accelerators=tuple(
            Accelerator(
                a["name"], tuple(a["memories"]), a.get("note", ""), a.get("base"), a.get("irq")
            )
            for a in data.get("accelerators", [])
        ),
        zephyr_board=(data.get("zephyr") or {}).get("board"),
        zephyr_sram=(data.get("zephyr") or {}).get("sram"),
        zephyr_names=tuple(
            (str(since), name)
            for since, name in (data.get("zephyr") or {}).get("names", {}).items()
        ),
        aliases=tuple(data.get("aliases", [])),
        cmsis=cmsis_device,
        qemu=QemuConfig(qemu["machine"], qemu.get("cpu"), tuple(qemu.get("extra_args", [])))
        if qemu
        else None,
        console=Console(
            console["kind"],
            console.get("base"),
            console.get("rx_irq"),
            console.get("baud", 115200),
        )
        if console
        else None,
        ticks=TickSource(
            ticks["source"],
            ticks["hz"],
            ticks["unit"],
            ticks.get("address"),
            ticks.get("instructions_per_tick"),
        )
        if ticks
        else None,
        flash=FlashRunner(
            flash["runner"],
            tuple(flash.get("args", [])),
            MappingProxyType({k: tuple(v) for k, v in flash.get("runners", {}).items()}),
        )
        if flash
        else None,
        capabilities=frozenset(data.get("capabilities", [])),
        path=path,
    )
    if board.core is not None:
        try:
            board.gcc_flags()  # checks features against the core table
        except ConfigError as err:
            raise ConfigError(f"{source}: {err}") from None
    if board.kind == "mcu":
        for kind in ("code", "data", "stack"):
            board.default_region(kind)
    accelerator_names = [a.name for a in board.accelerators]
    if len(set(accelerator_names)) != len(accelerator_names):
        raise ConfigError(f"{source}: accelerator names must be unique, got {accelerator_names}")
    for accelerator in board.accelerators:
        unknown = [m for m in accelerator.memories if m not in names]
        if unknown:
            raise ConfigError(
                f"{source}: accelerator '{accelerator.name}' reaches unknown memories "
                f"{', '.join(unknown)}; known: {', '.join(names) or 'none'}"
            )
    if board.zephyr_sram is not None:
        try:
            board.region(board.zephyr_sram)
        except ConfigError as err:
            raise ConfigError(f"{source}: zephyr.sram: {err}") from None
    return board


def load_board_file(path: Path) -> Board:
    import yaml  # lazy

    try:
        data = yaml.safe_load(path.read_text())
    except OSError as err:
        raise ConfigError(f"cannot read board file {path}: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    board = board_from_data(data, str(path), path)
    if board.name != path.stem:
        raise ConfigError(f"{path}: board name '{board.name}' must match the file name")
    return board


def list_boards() -> list[str]:
    names: set[str] = set()
    for folder in _search_dirs():
        if folder.is_dir():
            names.update(p.stem for p in folder.glob("*.yaml"))
    return sorted(names)


def _board_file(name: str) -> Path | None:
    for folder in _search_dirs():
        path = folder / f"{name}.yaml"
        if path.is_file():
            return path
    return None


def load_board(name: str) -> Board:
    """Load ``aot/boards/<name>.yaml``, a board by another of its names (Zephyr's, e.g.
    ``mps2/an386``, or an alias), or a path to a board YAML file."""
    if name.endswith((".yaml", ".yml")):
        return load_board_file(Path(name))
    path = _board_file(name) if re.fullmatch(r"[a-z0-9_]+", name) else None
    if path is not None:
        return load_board_file(path)
    boards = load_all_boards()
    for board in boards:
        if name in board.names:
            return board
    if os.sep in name and Path(name).is_file():
        return load_board_file(Path(name))
    raise ConfigError(unknown_board_message(name, boards))


def board_file_for_metadata(board: Board) -> str | None:
    """What metadata.json records for a board given as a file (``--board path/b.yaml``):
    its absolute path, so that run, bench, flash and validate load that file and not a
    built-in of the same name (None for a board found by name)."""
    if board.path is None:
        return None
    found = _board_file(board.name)
    if found is not None and found.resolve() == board.path.resolve():
        return None
    return str(board.path.resolve())


def load_build_board(manifest: LibraryManifest) -> Board:
    """The board a build was made for: the board file it recorded, else by name."""
    if not manifest.board_file:
        return load_board(manifest.board)
    path = Path(manifest.board_file)
    if not path.is_file():
        raise ConfigError(
            f"the board file {path} this folder was built with (--board) is gone; put it "
            "back, or build again with --board naming it"
        )
    return load_board_file(path)


def unknown_board_message(name: str, boards: list[Board]) -> str:
    import difflib

    # Compare separator-blind, so mps2-an386 and MPS2_AN386 find mps2_an386.
    def key(text: str) -> str:
        return re.sub(r"[^a-z0-9]", "", text.lower())

    by_key = {key(other): board.name for board in boards for other in board.names}
    guess = by_key.get(key(name))
    if guess is None:
        close = difflib.get_close_matches(key(name), list(by_key), n=1, cutoff=0.6)
        guess = by_key[close[0]] if close else None
    hint = f"did you mean '{guess}'? " if guess else ""
    return (
        f"unknown board '{name}'; {hint}known: {', '.join(b.name for b in boards)} "
        "('aot boards' lists them)"
    )


def load_all_boards() -> list[Board]:
    boards = []
    for name in list_boards():
        path = _board_file(name)
        if path is not None:
            boards.append(load_board_file(path))
    return boards
