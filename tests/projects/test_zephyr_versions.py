"""Zephyr versions: the board names of each version (hardware model v2 in 3.7, the
Corstone-300 rename in 4.0), the one-line refusal of a board a version lacks, the tree's
VERSION file, the build commands as data, the error line of a failed build and the
generated sample.yaml. The builds themselves are in tests/emulator/test_zephyr_builds.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from projects_helpers import aot, shared

from aot.artifacts import LibraryManifest
from aot.boards import load_all_boards, load_board
from aot.building.zephyr import build_steps, first_error
from aot.errors import ConfigError
from aot.project import ProjectContext
from aot.project.zephyr import render_sample_yaml
from aot.project.zephyr_tree import (
    MIN_VERSION,
    ZephyrTarget,
    ZephyrTree,
    ZephyrVersion,
    board_name,
    find_tree,
    read_version,
)

pytestmark = pytest.mark.unit

V = ZephyrVersion.parse


@pytest.mark.parametrize(
    ("board", "version", "name"),
    [
        ("mps2_an385", "3.4.99", "mps2_an385"),
        ("mps2_an385", "3.6.0", "mps2_an385"),
        ("mps2_an385", "3.7.0", "mps2/an385"),
        ("mps2_an385", "4.1.0", "mps2/an385"),
        ("mps2_an521", "3.4.99", "mps2_an521"),
        ("mps2_an521", "3.7.0", "mps2/an521/cpu0"),
        ("mps3_an547", "3.4.99", "mps3_an547"),
        ("mps3_an547", "3.7.0", "mps3/an547"),
        ("mps3_an547", "3.99.0", "mps3/an547"),
        ("mps3_an547", "4.0.0", "mps3/corstone300/an547"),
        ("mps2_an386", "3.7.0", "mps2/an386"),
        ("mps2_an500", "4.0.0", "mps2/an500"),
        ("nrf5340dk_nrf5340_cpuapp", "3.5.0", "nrf5340dk_nrf5340_cpuapp"),
        ("nrf5340dk_nrf5340_cpuapp", "3.7.0", "nrf5340dk/nrf5340/cpuapp"),
        ("nucleo_f746zg", "3.4.0", "nucleo_f746zg"),  # one name in every version
        ("nucleo_f746zg", "4.0.0", "nucleo_f746zg"),
    ],
)
def test_board_name_per_zephyr_version(board: str, version: str, name: str) -> None:
    assert board_name(load_board(board), V(version)) == name


def test_without_a_tree_the_newest_name_is_used() -> None:
    for board in load_all_boards():
        if board.zephyr_board:
            assert board_name(board, None) == board.zephyr_board
            if board.zephyr_names:  # the newest entry is the board's own name
                assert board.zephyr_names[-1][1] == board.zephyr_board


@pytest.mark.parametrize("board", ["mps2_an386", "mps2_an500"])
def test_a_board_the_version_lacks_is_refused_in_one_line(board: str) -> None:
    with pytest.raises(ConfigError) as err:
        board_name(load_board(board), V("3.4.99"))
    message = str(err.value)
    assert "\n" not in message
    assert f"'{board}' is not in Zephyr 3.4.99" in message
    assert "needs Zephyr 3.7 or newer" in message and "--zephyr-base" in message


def test_aot_build_refuses_before_compiling(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code, _ = aot(
        "build", str(shared("models", "mlperf_tiny", "kws_ref_model.tflite")),
        "--board", "mps2_an386", "--template", "zephyr",
        "--zephyr-base", str(shared("zephyr", "zephyr")), "-o", str(out),
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("error: board 'mps2_an386' is not in Zephyr 3.4.99"), err
    assert not any("importing" in line for line in err)  # refused before the compile
    assert not out.exists()


def test_version_of_the_shared_tree() -> None:
    tree = find_tree(str(shared("zephyr", "zephyr")))
    assert tree is not None and tree.version == ZephyrVersion(3, 4, 99)


def test_version_file_and_the_oldest_supported(tmp_path: Path) -> None:
    (tmp_path / "VERSION").write_text(
        "VERSION_MAJOR = 4\nVERSION_MINOR = 1\nPATCHLEVEL = 0\nVERSION_TWEAK = 0\nEXTRAVERSION =\n"
    )
    assert read_version(tmp_path) == ZephyrVersion(4, 1, 0)
    (tmp_path / "VERSION").write_text("VERSION_MAJOR = 3\nVERSION_MINOR = 3\nPATCHLEVEL = 0\n")
    with pytest.raises(ConfigError, match=r"older than aot's zephyr template supports \(3\.4 on\)"):
        find_tree(str(tmp_path))
    assert MIN_VERSION == (3, 4)
    with pytest.raises(ConfigError, match="is not a Zephyr tree"):
        read_version(tmp_path / "nothing")


def test_build_commands_as_data(tmp_path: Path) -> None:
    tree = find_tree(str(shared("zephyr", "zephyr")))
    assert tree is not None
    project = tmp_path / "project"
    # The tree's paths are resolved (a shared folder reached through a link is one tree).
    cmsis = shared("zephyr", "modules", "hal", "cmsis").resolve()
    assert tree.modules() == [cmsis]
    assert tree.workspace == shared("zephyr").resolve()
    configure, ninja = build_steps(
        ZephyrTarget.of(tree, load_board("mps2_an385")), project, use_west=False
    )
    assert configure.stage == "configure"
    assert Path(configure.command[0]).name == "cmake"
    assert configure.command[1:] == (
        "-GNinja", "-S", str(project), "-B", str(project / "build"), "-DBOARD=mps2_an385",
        f"-DZEPHYR_MODULES={cmsis}",
    )  # fmt: skip
    assert Path(ninja.command[0]).name == "ninja" and ninja.command[1:] == (
        "-C",
        str(project / "build"),
    )
    (west,) = build_steps(ZephyrTarget.of(tree, load_board("mps3_an547")), project, use_west=True)
    assert west.cwd == tree.workspace
    assert west.command == (
        "west", "build", "-b", "mps3_an547", str(project), "-d", str(project / "build"),
        "--", f"-DZEPHYR_MODULES={cmsis}",
    )  # fmt: skip
    newer = ZephyrTree(tree.base, ZephyrVersion(4, 0, 0))
    assert (
        "-DBOARD=mps3/corstone300/an547"
        in build_steps(ZephyrTarget.of(newer, load_board("mps3_an547")), project, use_west=False)[
            0
        ].command
    )


def test_error_line_of_a_failed_build() -> None:
    # As Zephyr 3.4's boards.cmake words it: the board first, then a CMake Error.
    configure_log = (
        "Loading Zephyr default modules (Zephyr base).\n"
        "-- Board: mps2/an385\n"
        "No board named 'mps2/an385' found.\n"
        "Please choose one of the following boards:\n"
        "CMake Error at /z/cmake/modules/boards.cmake:167 (message):\n"
        "  Invalid BOARD; see above.\n"
        "-- Configuring incomplete, errors occurred!\n"
    )
    assert first_error(configure_log) == "No board named 'mps2/an385' found."
    cmake_only = "CMake Error at CMakeLists.txt:3 (find_package):\n\n  Could not find Zephyr\n"
    assert first_error(cmake_only) == "Could not find Zephyr"
    compile_log = (
        "[12/140] Building C object CMakeFiles/app.dir/model/src/x.c.obj\n"
        "FAILED: CMakeFiles/app.dir/model/src/x.c.obj\n"
        "/p/model/src/x.c:3:1: error: unknown type name 'int9_t'\n"
        "ninja: build stopped: subcommand failed.\n"
    )
    assert first_error(compile_log) == "/p/model/src/x.c:3:1: error: unknown type name 'int9_t'"
    assert first_error("") == "no output"


@pytest.mark.parametrize(("version", "name"), [(None, "mps2/an385"), ("3.4.99", "mps2_an385")])
def test_sample_yaml_names_the_board_of_the_version(
    tmp_path: Path, version: str | None, name: str
) -> None:
    context = ProjectContext(
        tmp_path,
        load_board("mps2_an385"),
        LibraryManifest.from_json({"model": {"name": "kws"}, "memory": {}}),
        {},
        V(version) if version else None,
    )
    sample = yaml.safe_load(render_sample_yaml(context))
    assert sample["sample"]["name"] == "aot model kws"
    (scenario,) = sample["tests"].values()
    assert scenario["platform_allow"] == name
    assert scenario["integration_platforms"] == [name]
    assert scenario["build_only"] is True
