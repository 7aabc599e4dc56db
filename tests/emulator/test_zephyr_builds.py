"""`aot build --template zephyr` with a real Zephyr tree (../shared/zephyr, Zephyr 3.4.99):
kws builds for the three boards Zephyr 3.4 has, and `aot run` finds zephyr.elf and gives
the reference output bit-exact under QEMU. One Zephyr build per board (~25-60 s each);
a failing build's one-line error is checked with a configure that stops at once.
Skipped, with the reason, only where the tree or the build tools are absent."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from emulator_helpers import require_tools

from aot.artifacts import read_manifest
from aot.boards import load_board
from aot.building.zephyr import build
from aot.errors import ToolchainError
from aot.project.zephyr_tree import ZephyrTarget, ZephyrTree, ZephyrVersion, find_tree
from aot.testing.shared import SharedDataMissing, mlperf_tiny, shared_path

pytestmark = [pytest.mark.emulator, pytest.mark.zephyr]

BOARDS = ["mps2_an385", "mps2_an521", "mps3_an547"]


@pytest.fixture(scope="module")
def zephyr_base() -> Path:
    try:
        base = shared_path("zephyr", "zephyr")
    except SharedDataMissing as err:
        pytest.skip(f"no Zephyr tree: {err}")
    require_tools("cmake", "ninja", "dtc", "arm-none-eabi-gcc", "qemu-system-arm")
    for module in ("elftools", "yaml", "pykwalify", "packaging"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"Python module {module} missing (pip install -e '.[zephyr]')")
    return base


@pytest.fixture(scope="module", params=BOARDS)
def zephyr_build(request, zephyr_base: Path, tmp_path_factory) -> tuple[str, Path]:
    from aot.testing.harness import build as aot_build

    board = request.param
    out = tmp_path_factory.mktemp(f"zephyr_{board}") / "out"
    model = mlperf_tiny("kws_ref_model")
    aot_build(model, out, board, "--template", "zephyr", "--zephyr-base", str(zephyr_base))
    return board, out


def test_kws_builds_and_runs_bit_exact(zephyr_build: tuple[str, Path]) -> None:
    from aot.runner import run_model

    board, out = zephyr_build
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["build"]["zephyr"]["version"] == "3.4.99"
    assert metadata["build"]["executable"] == "project/build/zephyr/zephyr.elf"
    assert (out / metadata["build"]["executable"]).is_file()
    assert metadata["build"]["sections"]["text"] > 0
    # Zephyr 3.4's board name (before hardware model v2), also in sample.yaml.
    assert f"-b {board} " in " ".join(metadata["build"]["command"][0]) or any(
        f"-DBOARD={board}" in c for c in metadata["build"]["command"][0]
    )
    assert f"platform_allow: {board}" in (out / "project" / "sample.yaml").read_text()
    report = run_model(out, [np.load(mlperf_tiny("kws_ref_model", ".input.npy"))], timeout=120)
    expected = np.load(mlperf_tiny("kws_ref_model", ".output.npy"))
    np.testing.assert_array_equal(report.outputs[0].reshape(expected.shape), expected)
    assert report.to_json(read_manifest(out))["time_unit"] == "instructions"


def test_the_model_library_gets_the_cmsis_flags(zephyr_build: tuple[str, Path]) -> None:
    """The per-source options come after Zephyr's own on each model source's command line
    (the last -O wins), and the application's Kconfig keeps its -Os."""
    _, out = zephyr_build
    commands = json.loads((out / "project" / "build" / "compile_commands.json").read_text())
    model = [c for c in commands if "/project/model/src/" in c["file"]]
    kernel = [c for c in commands if "/kernel/" in c["file"]]
    assert model and kernel
    for entry in model:
        args = entry["command"].split()
        assert [a for a in args if a.startswith("-O")][-1] == "-O2", entry["file"]
        assert args.index("-fbuiltin") > args.index("-ffreestanding")
    assert [a for a in kernel[0]["command"].split() if a.startswith("-O")][-1] == "-Os"


def test_a_failing_build_is_one_line_with_the_log(
    zephyr_build: tuple[str, Path], zephyr_base: Path, tmp_path: Path
) -> None:
    """A tree that claims 3.7 gets the hardware-model-v2 name, which 3.4's CMake does not
    know: the configure fails, and the error says so in one line naming the log."""
    board, out = zephyr_build
    if board != BOARDS[0]:
        pytest.skip("one failing configure is enough")
    project = tmp_path / "project"
    shutil.copytree(out / "project", project, ignore=shutil.ignore_patterns("build"))
    tree = find_tree(str(zephyr_base))
    assert tree is not None
    claims_37 = ZephyrTree(tree.base, ZephyrVersion(3, 7, 0))
    with pytest.raises(ToolchainError) as err:
        build(ZephyrTarget.of(claims_37, load_board(board)), project)
    message = str(err.value)
    assert "\n" not in message
    assert "failed at configure" in message and "No board named 'mps2/an385' found" in message
    log = project / "build" / "aot_build.log"
    assert message.endswith(f"log: {log}") and "No board named" in log.read_text()
