"""Missing cross compiler or emulator: `aot build` and `aot run` end with one line naming
the program and how to install it (aot.building.toolchain.INSTALL_HINTS), and exit code 6.

PATH is replaced by a folder mirroring every program on it except arm-none-eabi-* and
qemu-system-*, so make, sh and the rest still work as on a machine without the Arm
toolchain. Nothing here needs the toolchain or QEMU installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from emulator_helpers import EXAMPLE_INPUT, EXAMPLE_MODEL, path_without

from aot.building.toolchain import INSTALL_HINTS
from aot.cli import main as aot_main
from aot.errors import ToolchainError

pytestmark = pytest.mark.unit

BOARD = "mps2_an386"


@pytest.fixture
def no_arm_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for override in ("AOT_ARM_GCC", "AOT_ARM_SIZE", "AOT_QEMU", "AOT_MAKE"):
        monkeypatch.delenv(override, raising=False)
    bin_dir = path_without(tmp_path / "bin", ["arm-none-eabi-", "qemu-system-"])
    monkeypatch.setenv("PATH", bin_dir)


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("[")]  # progress
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    return lines[0]


def test_build_without_arm_gcc_names_it_and_the_install_command(
    no_arm_tools, tmp_path, capsys
) -> None:
    out = tmp_path / "out"
    code = aot_main(["build", str(EXAMPLE_MODEL), "--board", BOARD, "-o", str(out)])
    line = error_line(capsys)
    assert code == ToolchainError.exit_code, line
    assert "'arm-none-eabi-gcc' not found on PATH" in line, line
    assert INSTALL_HINTS["arm-none-eabi-gcc"] in line, line
    assert not out.exists(), "a failed build must not leave its output folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"], "staging folder left behind"


@pytest.fixture
def generated_folder(tmp_path: Path) -> Path:
    """An emulated-board folder without compiling C: the project is generated
    (--no-build), then recorded as built with a stand-in firmware file, so `aot run`
    gets as far as starting QEMU."""
    out = tmp_path / "generated"
    assert aot_main(["build", str(EXAMPLE_MODEL), "--board", BOARD, "-o", str(out),
                     "--no-build", "--json"]) == 0  # fmt: skip
    metadata = json.loads((out / "metadata.json").read_text())
    executable = metadata["project"]["executable"]
    (out / executable).parent.mkdir(parents=True, exist_ok=True)
    (out / executable).write_bytes(b"\x7fELF stand-in")
    metadata["build"] = {"executable": executable, "command": [], "seconds": 0, "sections": {}}
    (out / "metadata.json").write_text(json.dumps(metadata))
    return out


def test_run_without_qemu_names_it_and_the_install_command(
    generated_folder, no_arm_tools, capsys
) -> None:
    capsys.readouterr()
    code = aot_main(["run", str(generated_folder), "-i", str(EXAMPLE_INPUT)])
    line = error_line(capsys)
    assert code == ToolchainError.exit_code, line
    assert "'qemu-system-arm' not found on PATH" in line, line
    assert INSTALL_HINTS["qemu-system-arm"] in line, line


def test_run_with_a_wrong_qemu_override_names_the_variable(
    generated_folder, no_arm_tools, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("AOT_QEMU", "/nonexistent/qemu-system-arm")
    capsys.readouterr()
    code = aot_main(["run", str(generated_folder), "-i", str(EXAMPLE_INPUT)])
    line = error_line(capsys)
    assert code == ToolchainError.exit_code, line
    assert "AOT_QEMU=/nonexistent/qemu-system-arm is not an executable program" in line, line
