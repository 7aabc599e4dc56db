"""The Zephyr template with an accelerator (no Zephyr tree here: the generated files are
parsed and compared with the cmsis template's, which QEMU runs).

With ``--accelerator example_npu`` on mps2_an386 the project must compile the device
model (a model library source), find its header, give it its region from board data
(``AOT_ACCEL_EXAMPLE_NPU_MEMORY0_BASE``/``_SIZE``, as the cmsis template's Makefile
does: without them the device stays unconfigured and every run fails), and put the NPU's
pool and the weights it reads into the PSRAM the NPU reaches.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aot.boards import load_board
from aot.errors import ConfigError
from aot.testing.harness import build
from aot.testing.shared import mlperf_tiny

pytestmark = pytest.mark.unit


def cmake_lists(text: str) -> dict[str, list[str]]:
    """``set(NAME item ...)`` blocks of aot_config.cmake."""
    return {m[1]: m[2].split() for m in re.finditer(r"set\((\w+)\s+([^)]*)\)", text)}


def make_lists(text: str) -> dict[str, list[str]]:
    """``NAME := item \\ ...`` assignments of the cmsis template's config.mk."""
    joined = text.replace("\\\n", " ")
    return {m[1]: m[2].split() for m in re.finditer(r"^(\w+) :=(.*)$", joined, re.M)}


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("zephyr")
    model = mlperf_tiny("kws_ref_model")
    common = ["--accelerator", "example_npu", "--name", "kws", "--no-build"]
    zephyr = build(model, out / "zephyr", "mps2_an386", *common, "--template", "zephyr")
    cmsis = build(model, out / "cmsis", "mps2_an386", *common)
    return zephyr / "project", cmsis / "project"


def test_sources_includes_and_defines_match_the_cmsis_project(projects) -> None:
    zephyr, cmsis = projects
    z = cmake_lists((zephyr / "aot_config.cmake").read_text())
    c = make_lists((cmsis / "config.mk").read_text())
    assert "model/src/backends/example_npu/example_npu.c" in z["AOT_SOURCES"]
    # The same model library and runtime sources and include folders; the ports differ.
    assert [s for s in z["AOT_SOURCES"] if s.startswith("model/")] == [
        s for s in c["SOURCES"] if s.startswith("model/")
    ]
    assert z["AOT_INCLUDES"] == c["INCLUDES"]
    for path in z["AOT_SOURCES"]:
        assert (zephyr / path).is_file(), path
    assert any((zephyr / d / "example_npu.h").is_file() for d in z["AOT_INCLUDES"])
    # The device model's region, exactly as the cmsis project has it (board data).
    psram = load_board("mps2_an386").region("psram")
    accel = [d for d in c["DEFINES"] if d.startswith("AOT_ACCEL_")]
    assert f"AOT_ACCEL_EXAMPLE_NPU_MEMORY0_BASE=0x{psram.base:08X}u" in accel
    assert [d for d in z["AOT_DEFINES"] if d.startswith("AOT_ACCEL_")] == accel
    app = [d for d in c["DEFINES"] if d.startswith("AOT_APP_")]
    assert [d for d in z["AOT_DEFINES"] if d.startswith("AOT_APP_")] == app
    # CMakeLists.txt hands all three to the app target.
    cmake = (zephyr / "CMakeLists.txt").read_text()
    for variable in ("AOT_SOURCES", "AOT_INCLUDES", "AOT_DEFINES"):
        assert f"${{{variable}}}" in cmake


def test_the_npu_pool_and_weights_go_to_the_psram_region(projects) -> None:
    zephyr, _ = projects
    overlay = (zephyr / "aot.overlay").read_text()
    psram = load_board("mps2_an386").region("psram")
    assert f"reg = <0x{psram.base:08x} 0x{psram.size:x}>;" in overlay
    assert 'zephyr,memory-region = "AOT_PSRAM";' in overlay
    sections = (zephyr / "aot_sections.ld").read_text()
    rules = dict(re.findall(r"\*\((\.[\w.]+)\)\)?\n.*?\n\} > (\w+)", sections, re.S))
    assert rules == {".bss.aot.kws.psram": "AOT_PSRAM", ".rodata.aot.kws.constants": "AOT_PSRAM"}
    # Weights are initialised bytes: loaded (PSRAM is loadable), never NOLOAD.
    assert "constants (NOLOAD)" not in sections and "KEEP(*(.rodata.aot.kws.constants))" in sections


def test_constants_in_a_memory_no_loader_fills_are_refused(tmp_path: Path) -> None:
    import yaml

    from aot.boards import BOARDS_DIR

    data = yaml.safe_load((BOARDS_DIR / "mps2_an386.yaml").read_text())
    (psram,) = [m for m in data["memories"] if m["name"] == "psram"]
    psram["loadable"] = False
    board = tmp_path / "board" / "mps2_an386.yaml"
    board.parent.mkdir()
    board.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as info:
        build(mlperf_tiny("kws_ref_model"), tmp_path / "out", str(board), "--no-build",
              "--accelerator", "example_npu", "--template", "zephyr")  # fmt: skip
    message = str(info.value)
    assert "\n" not in message and "'psram' of board 'mps2_an386' is neither" in message
    assert "--constants-memory" in message and "--allow-copies" in message
