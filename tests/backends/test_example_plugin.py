"""Issue 19, point 5: examples/backend_plugin is a complete out-of-tree backend. It is
installed from its own pyproject's entry point (a .dist-info as pip would leave it),
built into a host firmware and run bit-exact against LiteRT's reference kernels."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import numpy as np
import pytest

from aot.testing import run_tflite_reference

from .backends_helpers import REPO, run_aot

PLUGIN = REPO / "examples" / "backend_plugin"
MODEL = REPO / "examples" / "tiny_kws_int8.tflite"


@pytest.fixture(scope="module")
def example_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]
    declared = project["entry-points"]["aot.backends"]
    site = tmp_path_factory.mktemp("site")
    info = site / "aot_avgpool_example-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = "".join(f"{name} = {value}\n" for name, value in declared.items())
    (info / "entry_points.txt").write_text(f"[aot.backends]\n{lines}")
    paths = [str(REPO), str(site), str(PLUGIN), os.environ.get("PYTHONPATH", "")]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths).rstrip(os.pathsep))


@pytest.mark.unit
def test_the_example_is_small_and_declares_its_entry_point(example_env) -> None:
    source = (PLUGIN / "aot_avgpool" / "__init__.py").read_text()
    assert len(source.splitlines()) <= 45
    listed = run_aot(example_env, "backends")
    assert listed.returncode == 0, listed.stderr
    assert "avgpool  (target cpu, installed)" in listed.stdout
    assert "valid: average_pool2d_int8" in listed.stdout


@pytest.mark.toolchain
def test_the_example_builds_and_runs_bit_exact(example_env, tmp_path: Path) -> None:
    out = tmp_path / "out"
    built = run_aot(
        example_env, "build", str(MODEL), "--board", "host", "-o", str(out),
        "--accelerator", "avgpool", "-q",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    metadata = json.loads((out / "metadata.json").read_text())
    pooled = [op for op in metadata["operators"] if op["backend"] == "avgpool"]
    assert [op["source_operators"][0]["type"] for op in pooled] == ["AVERAGE_POOL_2D"]
    assert "model/src/backends/avgpool/avgpool.c" in metadata["library"]["sources"]
    name = metadata["model"]["name"]
    executor = (out / "model" / "src" / f"aot_{name}.c").read_text()  # run() calls it
    assert "avgpool_s8(" in executor and '#include "avgpool.h"' in executor
    # Inputs the fixture does not hold, so the reference decides every value.
    spec = metadata["inputs"][0]
    rng = np.random.default_rng(19)
    data = rng.integers(-128, 128, size=spec["shape"], dtype=np.int8)
    np.save(tmp_path / "in.npy", data)
    ran = run_aot(example_env, "run", str(out), "-i", str(tmp_path / "in.npy"),
                  "--save", str(tmp_path / "res"), "-q")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    (expected,) = run_tflite_reference(MODEL, [data])
    got = np.load(tmp_path / "res" / "output_0.npy")
    np.testing.assert_array_equal(got, expected.reshape(got.shape))
