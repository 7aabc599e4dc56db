"""A wheel built from the repository works on its own: boards, runtime and templates inside.

The wheel goes into a fresh virtual environment that sees the system's site-packages (so
TVM and the other dependencies need no download) but imports aot from the wheel, never
from a checkout; every command runs from ``/`` with no PYTHONPATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aot.testing.shared import mlperf_tiny

pytestmark = [pytest.mark.toolchain, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
# Top-level folders of a checkout that are not sources (build output, caches).
NOT_SOURCES = {".git", "build", "dist", ".venv", ".pytest_cache", ".ruff_cache"}


def copy_sources(destination: Path) -> Path:
    """The repository without build output, so building the wheel writes nothing into it."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n == "__pycache__" or n.endswith(".egg-info")}
        if Path(folder) == REPO:
            skipped |= NOT_SOURCES & set(names)
        return skipped

    return Path(shutil.copytree(REPO, destination, ignore=ignore))


def run(*cmd: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, cwd="/", env=env, timeout=600
    )
    assert result.returncode == 0, f"{cmd}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    sources = copy_sources(tmp / "src")
    run(sys.executable, "-m", "pip", "wheel", sources, "--no-deps", "-w", tmp / "dist")
    (wheel,) = (tmp / "dist").glob("aot-*.whl")
    env = tmp / "venv"
    run(sys.executable, "-m", "venv", "--system-site-packages", env)
    # --ignore-installed: install into the venv even though the system has aot (editable).
    run(env / "bin" / "python", "-m", "pip", "install", "--no-deps", "--ignore-installed", wheel)
    return env


def test_aot_imports_from_the_wheel(venv: Path) -> None:
    where = run(venv / "bin" / "python", "-c", "import aot; print(aot.__file__)").stdout.strip()
    assert Path(where).is_relative_to(venv), where
    assert not Path(where).is_relative_to(REPO), where


def test_boards_lists_the_packaged_boards(venv: Path) -> None:
    listing = run(venv / "bin" / "aot", "boards").stdout
    assert "host" in listing and "mps2_an386" in listing


def test_host_build_from_the_wheel_is_bit_exact(venv: Path, tmp_path: Path) -> None:
    model = mlperf_tiny("kws_ref_model")
    out = tmp_path / "out"
    run(venv / "bin" / "aot", "build", model, "--board", "host", "-o", out)
    run(
        venv / "bin" / "aot", "run", out, "-i", mlperf_tiny("kws_ref_model", ".input.npy"),
        "--save", tmp_path / "results",
    )  # fmt: skip
    expected = np.load(mlperf_tiny("kws_ref_model", ".output.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "results" / "output_0.npy"), expected)
    # Nothing generated points back into the checkout.
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in {".c", ".h", ".json", ".mk", ".txt", ""}:
            text = path.read_bytes().decode(errors="replace")
            assert str(REPO) not in text, path
