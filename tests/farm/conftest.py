"""Fixtures for the board-farm tests: a farm per test (its own tracker and servers on
free ports, checked to leave no process behind) and builds of the example model."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from farm_helpers import EXAMPLE_MODEL, Farm


@contextlib.contextmanager
def running_farm(workdir: Path) -> Iterator[Farm]:
    started = Farm(workdir)
    try:
        yield started
    finally:
        left = started.stop()
    assert left == [], f"processes outlived the farm: {left}"


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[Farm]:
    """A tracker of its own; servers the test starts are stopped with it."""
    with running_farm(tmp_path) as started:
        yield started


@pytest.fixture(scope="module")
def host_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    """A tracker with one host board of key 'h', shared by a module's tests (starting
    Python processes that import TVM costs seconds on a loaded machine)."""
    with running_farm(tmp_path_factory.mktemp("host_farm")) as started:
        started.serve("h", "host")
        yield started


def _build(tmp_path_factory: pytest.TempPathFactory, board: str, tools: tuple[str, ...]) -> Path:
    from aot.testing.harness import build

    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    return build(EXAMPLE_MODEL, tmp_path_factory.mktemp(f"kws_{board}") / "out", board)


@pytest.fixture(scope="session")
def host_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example model built for the host board (a native executable)."""
    return _build(tmp_path_factory, "host", ("cc", "make"))


@pytest.fixture(scope="session")
def m4_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example model built for mps2_an386 (Cortex-M4 under QEMU)."""
    return _build(tmp_path_factory, "mps2_an386", ("arm-none-eabi-gcc", "make", "qemu-system-arm"))
