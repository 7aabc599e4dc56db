"""Acceptance: with ETHOSU_DRIVER_DIR and CMSIS_CORE_DIR set, `aot build --accelerator
ethos-u55-128 --board mps3_an547` builds and links firmware for the reference models; every
NPU subgraph went through Vela, no buffer the NPU touches is in TCM, and the report lists
NPU and CPU operators and aot's pools next to Vela's summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ethos_u_helpers import npu_cpu_npu_model
from npu_firmware import symbols

from aot.boards import load_board
from aot.testing.shared import mlperf_tiny, shared_path

pytestmark = pytest.mark.toolchain

CHECKOUT = Path(__file__).resolve().parents[2]
# kws is the quick one; the other three compile 150-470 KB of constants each.
MODELS = [
    "kws_ref_model",
    pytest.param("vww_96_int8", marks=pytest.mark.slow),
    pytest.param("ad01_int8", marks=pytest.mark.slow),
    pytest.param("pretrainedResnet_quant", marks=pytest.mark.slow),
]


def aot(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aot", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(CHECKOUT), **env},
        timeout=600,
        check=False,
    )


def driver_env() -> dict[str, str]:
    return {
        "ETHOSU_DRIVER_DIR": str(shared_path("ethos-u-core-driver")),
        "CMSIS_CORE_DIR": str(shared_path("cmsis-core")),
    }


@pytest.mark.parametrize("name", MODELS)
def test_aot_build_links_ethos_u_firmware(name: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = aot(
        "build", str(mlperf_tiny(name)), "--board", "mps3_an547",
        "--accelerator", "ethos-u55-128", "-o", str(out),
        env=driver_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    metadata = json.loads((out / "metadata.json").read_text())
    # Board data alone put the NPU's pool and the weights where it reaches: not the TCMs.
    assert metadata["constants"]["memory"] == "sram"
    pools = {p["name"]: p["targets"] for p in metadata["memory"]["pools"]}
    assert pools == {"dtcm": ["cpu"], "sram": ["cpu", "ethos_u"]}
    # The caller's input and output stay where the caller put them (CPU memory): only
    # the step's CPU glue touches them, so no copy and no --io-in-pool is needed.
    assert metadata["memory"]["io_targets"] == ["cpu"] and metadata["memory"]["copies"] == []
    (npu,) = [b for b in metadata["backends"] if b["name"] == "ethos-u55-128"]
    report = npu["report"]
    # Every source operator went through Vela onto the NPU: one subgraph, no CPU steps.
    labels = [f"{op['type']} #{op['index']}" for op in metadata["model"]["source_operators"]]
    assert report["npu_operators"] == labels and report["cpu_operators"] == []
    assert len(report["subgraphs"]) == 1 and npu["steps"] == 1
    # Vela's encoded weights replace the model's: the constants are Vela's bytes, no more.
    (sg,) = report["subgraphs"]
    assert metadata["constants"]["bytes"] == sg["command_stream_bytes"] + sg["read_only_bytes"]
    assert all(op["backend"] == "ethos-u55-128" for op in metadata["operators"])
    # The report: NPU/CPU operators, Vela's summary, aot's pools.
    assert "  CPU operators (0): none" in result.stdout
    assert "Vela sram memory used:" in result.stdout
    assert "aot pool sram: " in result.stdout and "reached by cpu, ethos_u" in result.stdout

    # The firmware links with the driver, and what the NPU touches is out of the TCMs.
    elf = out / metadata["build"]["executable"]
    table = symbols(elf)
    assert "ethosu_invoke_v3" in table and "aot_ethosu_invoke" in table
    board = load_board("mps3_an547")
    reach = [board.region(m) for m in board.accelerator("ethos-u55-128").memories]
    model = metadata["model"]["name"]
    sizes = {len_: n for n, len_ in ((0, sg["command_stream_bytes"]), (1, sg["read_only_bytes"]))}
    npu_symbols = [table[f"aot_{model}_pool_sram"]] + [
        s for s in table.values() if s.name.startswith(f"aot_{model}_const_") and s.size in sizes
    ]
    assert len(npu_symbols) == 3  # the arena's pool, the command stream, the weights
    for sym in npu_symbols:
        assert any(
            r.base <= sym.address and sym.address + sym.size <= r.base + r.size for r in reach
        )
        for tcm in ("itcm", "dtcm"):
            region = board.region(tcm)
            assert not region.base <= sym.address < region.base + region.size, sym


@pytest.mark.parametrize("variable", ["ETHOSU_DRIVER_DIR", "CMSIS_CORE_DIR"])
def test_aot_build_names_the_missing_variable(variable: str, tmp_path: Path) -> None:
    env = {k: v for k, v in {**os.environ, **driver_env()}.items() if k != variable}
    result = subprocess.run(
        [sys.executable, "-m", "aot", "build", str(mlperf_tiny("kws_ref_model")),
         "--board", "mps3_an547", "--accelerator", "ethos-u55-128", "-o", str(tmp_path / "o"),
         "--no-build", "-q"],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(CHECKOUT)},
        timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {variable} is not set: point it at")
    assert not (tmp_path / "o").exists()


def test_backend_option_overrides_the_variable(tmp_path: Path) -> None:
    env = {**driver_env(), "ETHOSU_DRIVER_DIR": str(tmp_path)}  # wrong; the option wins
    result = aot(
        "build", str(mlperf_tiny("kws_ref_model")), "--board", "mps3_an547",
        "--accelerator", "ethos-u55-128", "-o", str(tmp_path / "o"), "--no-build", "-q",
        "--backend-option", f"ethosu_driver_dir={shared_path('ethos-u-core-driver')}",
        "--pool", "isram:1M:cpu,ethos_u", "--constants-memory", "sram",
        env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_cpu_operator_between_two_npu_subgraphs(tmp_path: Path) -> None:
    model = tmp_path / "mixed.tflite"
    model.write_bytes(npu_cpu_npu_model())
    out = tmp_path / "out"
    result = aot(
        "build", str(model), "--board", "mps3_an547", "--accelerator", "ethos-u55-128",
        "-o", str(out), "--pool", "isram:64K:cpu,ethos_u", "--pool", "dtcm:64K",
        "--constants-memory", "sram",
        env=driver_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    metadata = json.loads((out / "metadata.json").read_text())
    assert [(op["label"], op["backend"]) for op in metadata["operators"]] == [
        ("CONV_2D #0", "ethos-u55-128"),
        ("AVERAGE_POOL_2D #1", "kernels"),  # the CPU's hand-written Helium kernel
        ("CONV_2D #2", "ethos-u55-128"),
    ]
    assert "  CPU operators (1): AVERAGE_POOL_2D #1" in result.stdout
    table = symbols(out / metadata["build"]["executable"])
    assert {"aot_mixed_ethosu0", "aot_mixed_ethosu1", "ethosu_invoke_v3"} <= set(table)


def test_weights_in_tcm_are_refused(tmp_path: Path) -> None:
    result = aot(
        "build", str(mlperf_tiny("kws_ref_model")), "--board", "mps3_an547",
        "--accelerator", "ethos-u55-128", "-o", str(tmp_path / "o"), "--no-build", "-q",
        "--constants-memory", "itcm",
        env=driver_env(),
    )  # fmt: skip
    assert result.returncode != 0
    (line,) = result.stderr.strip().splitlines()
    assert "on ethos_u, which cannot reach the constants memory" in line


def test_run_under_qemu_is_refused_from_metadata(tmp_path: Path) -> None:
    # Issue 19, point 7: QEMU has no Ethos-U model; refused before QEMU starts (no firmware
    # is needed to say so: --no-build).
    out = tmp_path / "o"
    built = aot(
        "build", str(mlperf_tiny("kws_ref_model")), "--board", "mps3_an547",
        "--accelerator", "ethos-u55-128", "-o", str(out), "--no-build", "-q",
        "--pool", "isram:1M:cpu,ethos_u", "--constants-memory", "sram",
        env=driver_env(),
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    ethos = json.loads((out / "metadata.json").read_text())["backends"][0]
    assert ethos["name"] == "ethos-u55-128"
    assert "QEMU has no Ethos-U model" in ethos["emulator_note"]
    ran = aot("run", str(out), "--fill", "zeros", env={})
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == [
        f"error: {out} runs operators on ethos-u55-128 and mps3_an547 is emulated: QEMU has "
        f"no Ethos-U model; run it on a board with the NPU ('aot flash {out}', then "
        f"'aot run {out} --port PORT')"
    ]
