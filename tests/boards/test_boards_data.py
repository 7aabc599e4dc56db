"""Board YAML files, the schema, and the core -> compiler flags table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from aot.boards import (
    BOARDS_DIR,
    CORES,
    DEFAULT_BOARD,
    Features,
    board_from_data,
    gcc_flags,
    list_boards,
    load_board,
    parse_size,
)
from aot.errors import ConfigError

pytestmark = pytest.mark.unit

ALL = sorted(p.stem for p in BOARDS_DIR.glob("*.yaml"))
REQUIRED = {
    "mps2_an385",
    "mps2_an386",
    "mps2_an500",
    "mps2_an521",
    "mps3_an547",
    "nucleo_l4r5zi",
    "nucleo_f746zg",
    "stm32f746g_disco",
    "nrf5340dk_nrf5340_cpuapp",
    "b_u585i_iot02a",
    "host",
}


def good() -> dict:
    return yaml.safe_load((BOARDS_DIR / "mps2_an385.yaml").read_text())


def test_shipped_boards_are_listed() -> None:
    assert set(list_boards()) >= REQUIRED
    assert DEFAULT_BOARD in list_boards()


@pytest.mark.parametrize("name", ALL)
def test_every_board_validates_and_loads(name: str) -> None:
    board = load_board(name)
    assert board.name == name
    assert board.description
    if board.kind == "mcu":
        assert board.core in CORES
        assert board.memories and board.clock_hz
        assert board.gcc_flags()[0].startswith(f"-mcpu={board.core}")
        # Every MCU board can hold code, data and a stack somewhere.
        for kind in ("code", "data", "stack", "constants", "workspace"):
            board.default_region(kind)
        assert board.boot_region.loadable
    if board.emulated:
        assert board.console is not None and board.console.kind == "cmsdk_uart"
        assert board.ticks is not None and board.ticks.unit == "instructions"
        assert board.ticks.instructions_per_tick * board.ticks.hz == 1_000_000_000
        assert "cmsis" in board.ports
    elif board.kind == "mcu":
        assert board.zephyr_board and board.flash is not None
        assert board.ticks is not None and board.ticks.unit in ("cycles", "time")


def test_emulated_memory_maps() -> None:
    an385 = load_board("mps2_an385")
    assert (an385.region("ssram1").base, an385.region("ssram1").size) == (0, 4 << 20)
    assert an385.region("psram").base == 0x21000000
    assert an385.console.base == 0x40004000
    assert an385.ticks.address == 0x40028018
    an521 = load_board("mps2_an521")
    assert an521.boot_region.base == 0x10000000  # Secure alias: the core resets Secure
    assert an521.console.base == 0x50200000
    an547 = load_board("mps3_an547")
    assert an547.boot_region.name == "itcm"
    assert an547.features == Features(fpu="dp", dsp=True, mve="float")


def test_unknown_board_lists_known_names() -> None:
    with pytest.raises(ConfigError, match=r"unknown board 'nope'; known: .*mps2_an386"):
        load_board("nope")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("core"), r"at '\(top level\)': 'core' is a required property"),
        (lambda d: d["features"].update(fpu="half"), r"at 'features/fpu': 'half' is not one of"),
        (lambda d: d["memories"][0].update(size="4X"), r"at 'memories/0/size'"),
        (lambda d: d["memories"][0].update(holds=["sauce"]), r"at 'memories/0/holds/0'"),
        (lambda d: d["console"].pop("base"), r"at 'console': 'base' is a required property"),
        (lambda d: d["ticks"].pop("instructions_per_tick"), r"'instructions_per_tick' is a"),
        (lambda d: d.update(colour="red"), r"'colour' was unexpected"),
    ],
)
def test_schema_rejects_bad_board(mutate, message: str) -> None:
    data = good()
    mutate(data)
    with pytest.raises(ConfigError, match=r"^bad\.yaml: invalid board at .*" + message[:0]) as err:
        board_from_data(data, "bad.yaml")
    assert re.search(message, str(err.value)), str(err.value)


def test_semantic_checks() -> None:
    data = good()
    data["memories"][1]["base"] = 0x00100000  # inside ssram1
    with pytest.raises(ConfigError, match="overlap"):
        board_from_data(data, "bad.yaml")
    data = good()
    data["features"]["fpu"] = "sp"  # a Cortex-M3 has no FPU
    with pytest.raises(ConfigError, match=r"cortex-m3 cannot have fpu=sp; allowed: none"):
        board_from_data(data, "bad.yaml")


def test_file_name_must_match(tmp_path: Path) -> None:
    path = tmp_path / "other.yaml"
    path.write_text((BOARDS_DIR / "mps2_an385.yaml").read_text())
    with pytest.raises(ConfigError, match="must match the file name"):
        load_board(str(path))


def test_extra_board_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = good()
    data["name"] = "my_board"
    (tmp_path / "my_board.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("AOT_BOARDS_PATH", str(tmp_path))
    assert "my_board" in list_boards()
    assert load_board("my_board").core == "cortex-m3"


HARD = "-mthumb -mfpu=auto -mfloat-abi=hard"
SOFT = "-mthumb -mfloat-abi=soft"


@pytest.mark.parametrize(
    ("core", "features", "flags"),
    [
        ("cortex-m3", Features(), f"-mcpu=cortex-m3 {SOFT}"),
        ("cortex-m4", Features("none", True), f"-mcpu=cortex-m4+nofp {SOFT}"),
        ("cortex-m4", Features("sp", True), f"-mcpu=cortex-m4 {HARD}"),
        ("cortex-m7", Features("sp", True), f"-mcpu=cortex-m7+nofp.dp {HARD}"),
        ("cortex-m7", Features("dp", True), f"-mcpu=cortex-m7 {HARD}"),
        ("cortex-m33", Features("none", False), f"-mcpu=cortex-m33+nofp+nodsp {SOFT}"),
        ("cortex-m55", Features("dp", True, "int"), f"-mcpu=cortex-m55+nomve.fp {HARD}"),
        ("cortex-m55", Features("dp", True, "none"), f"-mcpu=cortex-m55+nomve {HARD}"),
        ("cortex-m55", Features("dp", True, "float"), f"-mcpu=cortex-m55 {HARD}"),
    ],
)
def test_gcc_flags_table(core: str, features: Features, flags: str) -> None:
    assert " ".join(gcc_flags(core, features)) == flags


def test_gcc_flags_rejects_impossible_features() -> None:
    with pytest.raises(ConfigError, match="cortex-m4 cannot have fpu=dp"):
        gcc_flags("cortex-m4", Features("dp", True))
    with pytest.raises(ConfigError, match="unknown core 'cortex-m0'"):
        gcc_flags("cortex-m0", Features())


def test_sizes() -> None:
    assert parse_size("512K") == 512 * 1024
    assert parse_size("4M") == 4 << 20
    assert parse_size(123) == 123
    with pytest.raises(ConfigError):
        parse_size("12Q")


def test_no_board_names_in_code() -> None:
    """Boards are data: no Python module compares a board name (rule 4 of STYLE.md)."""
    aot_dir = BOARDS_DIR.parent
    names = "|".join([*sorted(REQUIRED - {"host"}), "mps2", "mps3", "nucleo", "stm32", "nrf"])
    pattern = re.compile(rf"""(==|!=|startswith|endswith|\bin)\s*\(?\s*["']({names})""")
    offenders = [
        f"{p.relative_to(aot_dir)}: {line.strip()}"
        for p in aot_dir.rglob("*.py")
        for line in p.read_text().splitlines()
        if pattern.search(line)
    ]
    assert offenders == []


def test_c_defines_come_from_board_data() -> None:
    defines = load_board("mps2_an521").c_defines()
    assert defines["AOT_UART_BASE"] == "0x50200000u"
    assert defines["AOT_UART_RX_IRQ"] == "32u"
    assert defines["AOT_TICKS_COUNTER_ADDR"] == "0x50302018u"
    assert defines["AOT_TICKS_PER_SECOND"] == "20000000u"
