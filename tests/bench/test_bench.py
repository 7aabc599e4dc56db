"""aot bench: the BenchReport seam, MACs from shapes, the zero-cost profile switch, the
CLI, and (slow tiers) the acceptance runs on every MLPerf Tiny model."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pytest
from bench_helpers import EXAMPLE, Builder
from fake_device import FakeDevice, FakeTransport, add_one_model

from aot.bench import PROFILE_TOLERANCE, BenchReport, OperatorProfile, bench_folder
from aot.cli import main as aot_main
from aot.device import DeviceClient
from aot.errors import ConfigError
from aot.testing.shared import MLPERF_TINY, mlperf_tiny

EXAMPLE_INPUT = EXAMPLE.with_suffix(".input.npy")
EXAMPLE_OUTPUT = EXAMPLE.with_suffix(".output.npy")


def _report(**changes: Any) -> BenchReport:
    ops = [
        OperatorProfile(0, "k0", "CONV_2D #0", [{"index": 0, "type": "CONV_2D"}], 600, 0.6, 100),
        OperatorProfile(1, "k1", "SOFTMAX #1", [{"index": 1, "type": "SOFTMAX"}], 400, 0.4, 0),
    ]
    fields: dict[str, Any] = dict(
        model="m",
        board="mps2_an386",
        time_unit="instructions",
        units_per_tick=40,
        ticks_per_second=25_000_000,
        repeats=3,
        times=[1010, 1000, 1020],
        profile=True,
        operators=ops,
        profiles_identical=True,
        pools={"sram": 64},
        workspace_bytes=64,
    )
    fields.update(changes)
    return BenchReport(**fields)


# ---- the seam -----------------------------------------------------------------------------


@pytest.mark.unit
def test_bench_report_round_trips_through_json() -> None:
    report = _report()
    data = json.loads(json.dumps(report.to_json()))
    assert (data["time_min"], data["time_median"], data["time_max"]) == (1000, 1010.0, 1020)
    assert data["operators_total"] == 1000 and data["operators"][0]["time_per_mac"] == 6.0
    assert data["operators"][1]["time_per_mac"] is None
    assert abs(data["profile_error"] - 20 / 1020) < 1e-12
    assert BenchReport.from_json(data) == report


@pytest.mark.unit
def test_bench_report_of_another_format_is_a_one_line_error() -> None:
    data = _report().to_json() | {"format": 99}
    with pytest.raises(ConfigError, match="format 99 is not 1; rerun 'aot bench'"):
        BenchReport.from_json(data)


@pytest.mark.toolchain
def test_bench_folder_uses_the_connect_it_is_given(profiled_build: Builder) -> None:
    """The board farm's seam: bench_folder talks to whatever device `connect` opens."""
    folder = profiled_build(EXAMPLE, "host", "--profile", "--no-build")
    steps = len(json.loads((folder / "metadata.json").read_text())["operators"])
    opened: list[str] = []

    @contextlib.contextmanager
    def connect(out: Path, meta: dict, board: Any, timeout: float) -> Iterator[DeviceClient]:
        opened.append(board.name)
        device = FakeDevice(add_one_model(), ticks_per_run=10 * steps, step_ticks=[10] * steps)
        yield DeviceClient(FakeTransport(device), timeout=1.0)

    x = np.array([[1, 2, 3, 4]], np.int8)
    report = bench_folder(folder, repeats=4, timeout=5.0, connect=connect, inputs=[x])
    assert opened == ["host"]
    assert report.times == [10 * steps] * 4 and report.profile_error == 0
    assert [op.time for op in report.operators] == [10] * steps
    assert report.outputs[0].tolist() == [[2, 3, 4, 5]] and report.outputs_identical


# ---- compile time: MACs and the switch ----------------------------------------------------


@pytest.mark.unit
def test_macs_come_from_the_shapes(tmp_path: Path) -> None:
    from aot.compiler import CompileOptions, compile_model
    from aot.frontend import import_model
    from aot.lowering import lower

    lowered = lower(import_model(EXAMPLE, "auto"), "m")
    for step in lowered.steps:
        out = lowered.tensors[step.outputs[0]]
        weights = [lowered.tensors[t] for t in step.args if lowered.tensors[t].kind == "constant"]
        kind = step.source[0].type if step.source else ""
        if kind in ("CONV_2D", "FULLY_CONNECTED"):  # OHWI / OI weights
            expected = int(np.prod(out.shape)) * int(np.prod(weights[0].shape[1:]))
        elif kind == "DEPTHWISE_CONV_2D":  # 1HWC weights
            expected = int(np.prod(out.shape)) * weights[0].shape[1] * weights[0].shape[2]
        else:  # pooling, softmax, reshape: no products of two values
            expected = 0
        assert step.macs == expected, step.label
    assert any(step.macs for step in lowered.steps)
    meta = compile_model(EXAMPLE, tmp_path, CompileOptions(name="m")).metadata
    assert [op["macs"] for op in meta["operators"]] == [s.macs for s in lowered.steps]


@pytest.mark.unit
@pytest.mark.parametrize("profile", [False, True])
def test_profile_off_reads_no_timer(tmp_path: Path, profile: bool) -> None:
    from aot.compiler import CompileOptions, compile_model

    meta = compile_model(EXAMPLE, tmp_path, CompileOptions(name="m", profile=profile)).metadata
    executor = (tmp_path / "model" / "src" / "aot_m.c").read_text()
    steps = len(meta["operators"])
    assert meta["library"]["profile"] is profile
    if profile:
        # One read before the first step and one after each step.
        assert executor.count("aot_platform_ticks()") == steps + 1
        # (then the descriptor's state fields: a stateless model has 0 bytes of state;
        # no fault record: every step runs on the CPU; no trace: not a --trace build)
        assert (
            f"  {steps}u,\n  aot_m_step_ticks,\n  0u,\n  aot_m_reset,\n  NULL,\n  NULL,\n}};"
            in executor
        )
    else:
        assert "aot_platform_ticks" not in executor and "step_ticks" not in executor
        assert "  0u,\n  NULL,\n  0u,\n  aot_m_reset,\n  NULL,\n  NULL,\n};" in executor


# ---- the command --------------------------------------------------------------------------


@pytest.mark.toolchain
def test_aot_bench_on_the_host(profiled_build: Builder, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    folder = profiled_build(EXAMPLE, "host", "--profile")
    chart = tmp_path / "ops.svg"
    argv = ["bench", str(folder), "-n", "3", "-i", str(EXAMPLE_INPUT), "--plot", str(chart)]
    assert aot_main(argv) == 0
    text = capsys.readouterr().out
    assert "per inference  min " in text and "ns" in text.splitlines()[0]
    assert "CONV_2D #0" in text and "MACs" in text and "peak stack" in text
    assert "operators add up to" in text and "code size" in text
    svg = ElementTree.parse(chart).getroot()
    assert svg.tag.endswith("svg") and len(svg.findall("{*}rect")) > 2

    assert aot_main(["bench", str(folder), "-n", "2", "-i", str(EXAMPLE_INPUT), "--json"]) == 0
    report = BenchReport.from_json(json.loads(capsys.readouterr().out))
    expected = np.load(EXAMPLE_OUTPUT)
    assert report.outputs_sha256 == hashlib.sha256(expected.tobytes()).hexdigest()
    assert report.profile and report.time_unit == "ns" and len(report.times) == 2
    assert report.profile_error is not None and report.profile_error <= PROFILE_TOLERANCE


@pytest.mark.toolchain
def test_plot_needs_a_profile_build_and_an_svg_name(profiled_build: Builder, capsys) -> None:  # type: ignore[no-untyped-def]
    plain = profiled_build(EXAMPLE, "host", "--no-build")
    assert aot_main(["bench", str(plain), "--plot", "x.svg"]) == 2
    assert "built without --profile" in capsys.readouterr().err
    assert aot_main(["bench", str(plain), "--plot", "x.png"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "name the file *.svg" in err


# ---- acceptance: every MLPerf Tiny model --------------------------------------------------


def _check_model(folder: Path, model: str, repeats: int, deterministic: bool) -> BenchReport:
    x = np.load(mlperf_tiny(model, ".input.npy"))
    expected = np.load(mlperf_tiny(model, ".output.npy"))
    report = bench_folder(folder, repeats=repeats, timeout=300.0, inputs=[x])
    np.testing.assert_array_equal(report.outputs[0], expected)  # bit-exact
    assert report.outputs_identical
    assert report.profile and len(report.operators) == len(
        json.loads((folder / "metadata.json").read_text())["operators"]
    )
    assert report.profile_error is not None and report.profile_error <= PROFILE_TOLERANCE, (
        f"{model}: operators sum to {report.operators_total}, the whole is {report.times[-1]}"
    )
    if deterministic:
        assert len(set(report.times)) == 1, report.times
        assert report.profiles_identical
    return report


@pytest.mark.slow
@pytest.mark.emulator
@pytest.mark.parametrize("model", MLPERF_TINY)
def test_mlperf_tiny_on_mps2_an386(profiled_build: Builder, model: str) -> None:
    if shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("qemu-system-arm or arm-none-eabi-gcc not found (scripts/setup.sh)")
    folder = profiled_build(mlperf_tiny(model), "mps2_an386", "--profile")
    report = _check_model(folder, model, repeats=3, deterministic=True)
    assert report.time_unit == "instructions" and report.total_macs > 0


@pytest.mark.slow
@pytest.mark.toolchain
@pytest.mark.parametrize("model", MLPERF_TINY)
def test_mlperf_tiny_on_the_host(profiled_build: Builder, model: str) -> None:
    folder = profiled_build(mlperf_tiny(model), "host", "--profile")
    report = _check_model(folder, model, repeats=3, deterministic=False)
    assert report.time_unit == "ns"
