"""Acceptance 3: a backend in a separate package works through its entry point only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from .backends_helpers import REPO, run_aot

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"


@pytest.mark.unit
def test_aot_backends_lists_the_installed_backend(plugin_env: dict[str, str]) -> None:
    result = run_aot(plugin_env, "backends", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["cpu"]["builtin"] and rows["cpu"]["target"] == "cpu"
    tinyacc = rows["tinyacc"]
    assert not tinyacc["builtin"]
    assert tinyacc["patterns"] == [{"name": "conv2d_stride1", "kinds": ["conv2d_int8"]}]
    text = run_aot(plugin_env, "backends")
    assert "tinyacc  (target cpu, installed)" in text.stdout
    assert "conv2d_stride1: conv2d_int8" in text.stdout


@pytest.mark.unit
def test_without_the_entry_point_aot_does_not_know_it() -> None:
    import os

    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = run_aot(env, "backends", "--json")
    assert "tinyacc" not in {row["name"] for row in json.loads(result.stdout)}


@pytest.mark.toolchain
def test_partitions_builds_and_runs_bit_exact(plugin_env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    built = run_aot(
        plugin_env, "build", str(EXAMPLE), "--board", "host", "-o", str(out),
        "--accelerator", "tinyacc", "-q",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    metadata = json.loads((out / "metadata.json").read_text())
    placed = {op["label"]: (op["backend"], op["target"]) for op in metadata["operators"]}
    # The predicate took the stride-1 convolution only; the CPU kept everything else.
    assert placed["CONV_2D #2"] == ("tinyacc", "cpu")
    assert placed["CONV_2D #0"] == ("cpu", "cpu")
    assert {b for b, _ in placed.values()} == {"tinyacc", "cpu"}
    names = [b["name"] for b in metadata["backends"]]
    assert names == ["tinyacc", "cpu"] and metadata["backends"][0]["steps"] == 1
    # Its runtime came along, and its descriptor is a planned constant.
    # In a folder of its own (issue 19, point 4): two backends' sources never collide.
    assert "model/src/backends/tinyacc/tinyacc.c" in metadata["library"]["sources"]
    assert (out / "model" / "src" / "backends" / "tinyacc" / "tinyacc.c").is_file()
    assert (out / "model" / "include" / "tinyacc.h").is_file()
    executor = next((out / "model" / "src").glob("aot_*_kernels.c")).read_text()
    assert '#include "tinyacc.h"' in executor
    ran = run_aot(plugin_env, "run", str(out), "-i", str(EXAMPLE.with_suffix(".input.npy")),
                  "--save", str(tmp_path / "res"), "-q")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    expected = np.load(EXAMPLE.with_suffix(".output.npy"))
    got = np.load(tmp_path / "res" / "output_0.npy")
    np.testing.assert_array_equal(got, expected.reshape(got.shape))


@pytest.mark.emulator
def test_runs_bit_exact_in_firmware_under_qemu(plugin_env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    built = run_aot(
        plugin_env, "build", str(EXAMPLE), "--board", "mps2_an386", "-o", str(out),
        "--accelerator", "tinyacc", "-q",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    ran = run_aot(plugin_env, "run", str(out), "-i", str(EXAMPLE.with_suffix(".input.npy")),
                  "--save", str(tmp_path / "res"), "-q")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    expected = np.load(EXAMPLE.with_suffix(".output.npy"))
    got = np.load(tmp_path / "res" / "output_0.npy")
    np.testing.assert_array_equal(got, expected.reshape(got.shape))


@pytest.mark.unit
@pytest.mark.parametrize(
    ("order", "winner"),
    [(("tinysingle", "tinyacc"), "tinysingle"), (("tinyacc", "tinysingle"), "tinyacc")],
)
def test_priority_order_holds_for_a_backend_that_does_not_merge(
    plugin_env: dict[str, str], tmp_path: Path, order: tuple[str, str], winner: str
) -> None:
    # Issue 19, point 3: a merge_regions=False backend partitions in a pass of its own
    # after the merging ones, yet the --accelerator order decides who takes an operator.
    out = tmp_path / "out"
    accelerators = [arg for name in order for arg in ("--accelerator", name)]
    built = run_aot(
        plugin_env, "build", str(EXAMPLE), "--board", "host", "-o", str(out), "--no-build",
        "-q", *accelerators,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    metadata = json.loads((out / "metadata.json").read_text())
    steps = {b["name"]: b["steps"] for b in metadata["backends"]}
    loser = order[1] if winner == order[0] else order[0]
    assert steps[winner] == 1 and steps[loser] == 0, steps
