"""Acceptance 5: bad backends and bad accelerator choices are one-line build errors that
say what to do, with no Python exception text and no output folder left behind."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .backends_helpers import REPO, run_aot

pytestmark = pytest.mark.unit

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"


def fails(env: dict[str, str], tmp_path: Path, code: int, *args: str) -> str:
    out = tmp_path / "out"
    result: subprocess.CompletedProcess = run_aot(
        env, "build", str(EXAMPLE), "-o", str(out), "--no-build", "-q", *args
    )
    assert result.returncode == code, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()
    return lines[0]


def test_pattern_claiming_what_its_codegen_cannot_emit(plugin_env, tmp_path) -> None:
    line = fails(plugin_env, tmp_path, 4, "--board", "host", "--accelerator", "greedy")
    assert "backend greedy claims a softmax_int8 operator its lowering cannot handle" in line
    assert "fix that backend's patterns()" in line and "without --accelerator greedy" in line


def test_lowering_that_fails_inside_the_backend(plugin_env, tmp_path) -> None:
    line = fails(plugin_env, tmp_path, 4, "--board", "host", "--accelerator", "broken")
    assert "backend broken failed to lower conv2d_int8 (ValueError)" in line
    assert "internal failure" not in line  # the plug-in's exception text stays out


def test_accelerator_the_board_does_not_have(plugin_env, tmp_path) -> None:
    line = fails(plugin_env, tmp_path, 2, "--board", "mps2_an386", "--accelerator", "tinynpu")
    assert "board mps2_an386 has no accelerator 'tinynpu'" in line
    assert "declare it under 'accelerators:'" in line


def test_unknown_accelerator_names_the_installed_ones(plugin_env, tmp_path) -> None:
    line = fails(plugin_env, tmp_path, 2, "--board", "host", "--accelerator", "tinyac")
    assert "unknown accelerator backend 'tinyac'" in line and "tinyacc" in line
    assert "'aot backends'" in line


def test_cpu_and_repeats_are_refused(plugin_env, tmp_path) -> None:
    line = fails(plugin_env, tmp_path, 2, "--board", "host", "--accelerator", "cpu")
    assert "'cpu' is not an --accelerator" in line
    twice = ("--accelerator", "tinyacc", "--accelerator", "tinyacc")
    line = fails(plugin_env, tmp_path, 2, "--board", "host", *twice)
    assert "--accelerator repeats a name" in line


def test_a_broken_entry_point_names_itself(plugin_env, tmp_path) -> None:
    site = tmp_path / "site"
    info = site / "aot_bad-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: aot-bad\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[aot.backends]\nbad = aot_no_such_module:Bad\n")
    env = dict(plugin_env, PYTHONPATH=f"{plugin_env['PYTHONPATH']}:{site}")
    failure = (
        "the aot.backends entry point 'bad' (aot_no_such_module:Bad) failed to load "
        "(ModuleNotFoundError); reinstall or fix the package that declares it"
    )
    # Issue 19, point 2: 'aot backends' lists it with its error and the others as before.
    result = run_aot(env, "backends")
    assert result.returncode == 0, result.stderr
    assert f"bad  (broken): {failure}" in result.stdout.splitlines()
    assert "tinyacc  (target cpu, installed)" in result.stdout
    listed = run_aot(env, "backends", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["bad"] == {"name": "bad", "builtin": False, "error": failure}
    assert rows["tinyacc"]["patterns"] and "error" not in rows["tinyacc"]
    # Only a build that names it fails; built-in and other plug-in accelerators build.
    assert fails(env, tmp_path, 2, "--board", "host", "--accelerator", "bad") == f"error: {failure}"
    out = tmp_path / "good"
    built = run_aot(
        env, "build", str(EXAMPLE), "-o", str(out), "--no-build", "-q",
        "--board", "host", "--accelerator", "tinyacc",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert (out / "metadata.json").is_file()


# Issue 19, point 1: every hook's failure is the backend's one-line error, not aot's
# "internal error" (exit 70); -v adds the traceback.
@pytest.mark.parametrize(
    ("backend", "hook"),
    [
        ("fails-prepare", "prepare()"),
        ("fails-patterns", "patterns()"),
        ("fails-predicate", "the predicate of pattern 'conv2d_stride1'"),
        ("fails-runtime", "runtime()"),
        ("fails-report", "report()"),
    ],
)
def test_a_failing_hook_names_the_backend_and_the_hook(
    plugin_env, tmp_path, backend: str, hook: str
) -> None:
    line = fails(plugin_env, tmp_path, 4, "--board", "host", "--accelerator", backend)
    assert line == (
        f"error: backend {backend} failed in {hook} (KeyError); fix the backend, or build "
        f"without --accelerator {backend} ('aot -v ...' shows the traceback)"
    )


def test_a_failing_hook_shows_its_traceback_with_verbose(plugin_env, tmp_path) -> None:
    out = tmp_path / "out"
    result = run_aot(
        plugin_env, "-v", "build", str(EXAMPLE), "-o", str(out), "--no-build",
        "--board", "host", "--accelerator", "fails-predicate",
    )  # fmt: skip
    assert result.returncode == 4
    assert "Traceback" in result.stderr and "predicate of the failing test backend" in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: backend fails-predicate failed in the predicate of pattern")


def test_a_predicates_own_aot_error_keeps_its_message(plugin_env, tmp_path) -> None:
    line = fails(plugin_env, tmp_path, 4, "--board", "host", "--accelerator", "refuses-predicate")
    assert line == "error: refuses-predicate: this test backend refuses every operator"


def test_two_backends_shipping_different_headers_of_one_name(plugin_env, tmp_path) -> None:
    # Issue 19, point 4: sources go to model/src/backends/<name>/, headers share include/.
    both = ("--accelerator", "tinyacc", "--accelerator", "tinyclash")
    line = fails(plugin_env, tmp_path, 2, "--board", "host", *both)
    assert line == (
        "error: backends tinyacc and tinyclash both ship a different tinyacc.h header "
        "(model/include/ is shared); rename one of them, or build without "
        "--accelerator tinyclash"
    )
