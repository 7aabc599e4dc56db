"""The exact command line of every flash runner for every physical board."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from flash_helpers import ELF, FIRMWARE, physical_boards

from aot.boards import board_from_data, load_all_boards, load_board
from aot.errors import ConfigError
from aot.flash import (
    CAPABILITIES,
    Firmware,
    FlashOptions,
    FlashRunner,
    flash_runners,
    last_error_line,
    runner_for,
)
from aot.flash.core import WEST_BUILD_DIR
from aot.project import build_command, load_template

pytestmark = pytest.mark.unit

BUILD = str(FIRMWARE.build_dir)
WEST = ["west", "flash", "--build-dir", BUILD, "--runner"]


def openocd(*cfg: str) -> list[str]:
    return ["openocd", *cfg, "-c", f"program {ELF} verify reset exit"]


# board -> runner -> argv, or None where the board has no arguments for that runner.
EXPECTED: dict[str, dict[str, list[str] | None]] = {
    "nucleo_f746zg": {
        "west": [*WEST, "openocd"],
        "pyocd": ["pyocd", "flash", "-t", "stm32f746zgtx", ELF],
        "openocd": openocd("-f", "board/st_nucleo_f7.cfg"),
    },
    "nucleo_l4r5zi": {
        "west": [*WEST, "openocd"],
        "pyocd": ["pyocd", "flash", "-t", "stm32l4r5zitx", ELF],
        "openocd": openocd("-f", "board/st_nucleo_l4.cfg"),
    },
    "stm32f746g_disco": {
        "west": [*WEST, "openocd"],
        "pyocd": ["pyocd", "flash", "-t", "stm32f746nghx", ELF],
        "openocd": openocd("-f", "board/stm32f746g-disco.cfg"),
    },
    "b_u585i_iot02a": {
        "west": [*WEST, "stm32cubeprogrammer"],
        "pyocd": ["pyocd", "flash", "-t", "stm32u585aiix", ELF],
        "openocd": openocd(
            "-f",
            "interface/stlink-dap.cfg",
            "-c",
            "transport select dapdirect_swd",
            "-f",
            "target/stm32u5x.cfg",
        ),
    },
    "nrf5340dk_nrf5340_cpuapp": {
        "west": [*WEST, "nrfjprog"],
        "pyocd": None,
        "openocd": None,
    },
}

BUILTIN = ["openocd", "pyocd", "west"]


def test_table_covers_every_physical_board_and_builtin_runner() -> None:
    assert sorted(EXPECTED) == physical_boards()
    for runners in EXPECTED.values():
        assert sorted(runners) == BUILTIN


@pytest.mark.parametrize(("board", "runner"), [(b, r) for b in sorted(EXPECTED) for r in BUILTIN])
def test_exact_command(board: str, runner: str) -> None:
    expected = EXPECTED[board][runner]
    flasher = flash_runners.get(runner)()
    if expected is None:
        with pytest.raises(ConfigError, match=f"no arguments for flash runner '{runner}'"):
            flasher.command(load_board(board), FIRMWARE)
    else:
        assert flasher.command(load_board(board), FIRMWARE) == expected


def test_default_runner_is_the_boards() -> None:
    board = load_board("nucleo_f746zg")
    assert runner_for(board).name == "west"
    assert runner_for(board, "pyocd").name == "pyocd"


@pytest.mark.parametrize(
    ("runner", "expected"),
    [
        (
            "west",
            [*WEST, "openocd", "--dev-id", "0669FF", "--erase", "--extra"],
        ),
        (
            "pyocd",
            [
                "pyocd",
                "flash",
                "-t",
                "stm32f746zgtx",
                "--uid",
                "0669FF",
                "--erase",
                "chip",
                "--extra",
                ELF,
            ],
        ),
    ],
)
def test_probe_erase_and_extra_args(runner: str, expected: list[str]) -> None:
    options = FlashOptions(probe="0669FF", erase=True, extra_args=("--extra",))
    assert flash_runners.get(runner)().command(load_board("nucleo_f746zg"), FIRMWARE, options) == (
        expected
    )


def test_openocd_selects_the_probe_after_the_configs() -> None:
    argv = flash_runners.get("openocd")().command(
        load_board("nucleo_f746zg"), FIRMWARE, FlashOptions(probe="0669FF")
    )
    assert argv == openocd("-f", "board/st_nucleo_f7.cfg", "-c", "adapter serial 0669FF")


def test_openocd_quotes_paths_with_spaces() -> None:
    firmware = Firmware(
        elf=Path("/my builds/zephyr.elf"), project_dir=Path("/p"), build_dir=Path("/p/build")
    )
    argv = flash_runners.get("openocd")().command(load_board("nucleo_f746zg"), firmware)
    assert argv[-1] == "program {/my builds/zephyr.elf} verify reset exit"


def test_openocd_cannot_erase() -> None:
    with pytest.raises(ConfigError, match=r"'openocd' cannot erase \(--erase\)"):
        flash_runners.get("openocd")().command(
            load_board("nucleo_f746zg"), FIRMWARE, FlashOptions(erase=True)
        )


def test_unknown_runner_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown flash runner 'jlink'; known: openocd, pyocd"):
        runner_for(load_board("nucleo_f746zg"), "jlink")


def test_emulated_board_has_no_flash_entry() -> None:
    with pytest.raises(ConfigError, match="'mps2_an386' has no 'flash' entry"):
        runner_for(load_board("mps2_an386"))


def test_every_board_names_registered_runners() -> None:
    for board in load_all_boards():
        if board.flash is None:
            continue
        for name in (board.flash.runner, *board.flash.runners):
            assert name in flash_runners.names(), (board.name, name)


def test_runners_declare_known_capabilities() -> None:
    for name, cls in flash_runners:
        assert cls.name == name
        assert "flash" in cls.capabilities
        assert cls.capabilities <= CAPABILITIES
        assert cls.install and cls.env_var.startswith("AOT_")


def test_unknown_capability_is_a_bug() -> None:
    with pytest.raises(TypeError, match="unknown capabilities"):

        class Bad(FlashRunner):  # defining it is the test
            capabilities = frozenset({"flash", "teleport"})

            def build(
                self, board_args: Sequence[str], firmware: Firmware, options: FlashOptions
            ) -> list[str]:
                return []


def test_out_of_tree_runner_plugs_in_by_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """A package's aot.flash_runners entry point adds a runner a board YAML can name."""
    from aot.registry import Registry

    class CopyRunner(FlashRunner):
        name = "copy"
        tool = "cp"
        install = "coreutils"
        env_var = "AOT_CP"
        capabilities = frozenset({"flash"})

        def build(
            self, board_args: Sequence[str], firmware: Firmware, options: FlashOptions
        ) -> list[str]:
            return [str(firmware.elf), *board_args]

    class EntryPoint:
        name = "copy"

        def load(self) -> type[FlashRunner]:
            return CopyRunner

    registry: Registry[type[FlashRunner]] = Registry("flash runner", "aot.flash_runners")
    for name, cls in flash_runners:
        registry.add(name, cls)
    monkeypatch.setattr("aot.registry.entry_points", lambda group: [EntryPoint()])
    monkeypatch.setattr("aot.flash.core.flash_runners", registry)
    data = load_board("nucleo_f746zg").path.read_text()  # type: ignore[union-attr]
    import yaml

    raw = yaml.safe_load(data)
    raw["flash"] = {"runner": "copy", "args": ["/media/NODE_F746ZG/"]}
    board = board_from_data(raw)
    assert runner_for(board).command(board, FIRMWARE) == ["cp", ELF, "/media/NODE_F746ZG/"]


def test_west_build_dir_matches_the_zephyr_template() -> None:
    # The template's firmware and the -d of the west command aot prints are where
    # 'aot flash' looks.
    template = load_template("zephyr")
    assert template.build == "west"
    assert template.firmware.startswith(WEST_BUILD_DIR + "/")
    command = build_command("west", load_board("nucleo_f746zg"), "project")
    assert command[-2:] == ("-d", f"project/{WEST_BUILD_DIR}")


@pytest.mark.parametrize(
    ("stderr", "line"),
    [
        ("Info : x\nError: open failed\nInfo : shutdown", "Error: open failed"),
        ("0001 I Loading\n0002 C No connected debug probes", "0002 C No connected debug probes"),
        ("just one line", "just one line"),
        ("", ""),
    ],
)
def test_last_error_line(stderr: str, line: str) -> None:
    assert last_error_line(stderr) == line


def test_entry_point_that_is_not_a_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    from aot.registry import Registry

    registry: Registry[type[FlashRunner]] = Registry("flash runner", "aot.flash_runners")
    registry.add("west", print)  # type: ignore[arg-type]
    monkeypatch.setattr("aot.flash.core.flash_runners", registry)
    monkeypatch.setattr("aot.registry.entry_points", lambda group: [])
    with pytest.raises(ConfigError, match=r"flash runner 'west' is .*not a FlashRunner subclass"):
        runner_for(load_board("nucleo_f746zg"))
