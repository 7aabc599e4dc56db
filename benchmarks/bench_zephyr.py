"""Zephyr against the cmsis template: instructions per inference of the MLPerf Tiny models
built with both templates on the emulated boards that Zephyr 3.4 has, run under QEMU.

    python benchmarks/run.py zephyr zephyr_profile

Each model is built with `aot build MODEL --board BOARD` (cmsis, make) and with
`--template zephyr --zephyr-base ../shared/zephyr/zephyr` (Zephyr 3.4.99, its default
Kconfig: -Os for the kernel, the model library at the cmsis template's flags through
AOT_COMPILE_OPTIONS), and run on its reference input as `aot run` does. Both ports read
the board's FPGAIO counter, so the figures are QEMU -icount instructions (resolution
one tick, 40 or 50 instructions). `zephyr_profile`: vww on mps2_an385 built with
--profile with both templates, each operator's share of the per-operator sum.
About 13 Zephyr builds (~1 minute each on 2 cores).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from aot.testing.shared import shared_dir

MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
ZEPHYR_BASE = shared_dir() / "zephyr" / "zephyr"
MODELS = ["ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"]
BOARDS = ["mps2_an385", "mps2_an521", "mps3_an547"]
PARITY = 0.03  # the Zephyr build within 3% of the cmsis build


def build_and_run(model: str, board: str, folder: Path, template: str) -> dict:
    """The run report (JSON) of one build, with bit-exactness against the reference."""
    from aot.artifacts import read_manifest
    from aot.runner import run_model
    from aot.testing.harness import build

    extra = ["--template", "zephyr", "--zephyr-base", str(ZEPHYR_BASE)]
    build(MODELS_DIR / f"{model}.tflite", folder, board, *(extra if template == "zephyr" else []))
    x = np.load(MODELS_DIR / f"{model}.input.npy")
    report = run_model(folder, [x], repeats=1, timeout=600.0)
    document = report.to_json(read_manifest(folder))
    expected = np.load(MODELS_DIR / f"{model}.output.npy")
    exact = np.array_equal(report.outputs[0].reshape(expected.shape), expected)
    return {**document, "bit_exact": exact}


def run() -> tuple[str, list[dict]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for board in BOARDS:
            for model in MODELS:
                cmsis = build_and_run(model, board, Path(tmp) / f"{board}_{model}_cmsis", "cmsis")
                zephyr = build_and_run(model, board, Path(tmp) / f"{board}_{model}_z", "zephyr")
                ratio = zephyr["time_per_run"] / cmsis["time_per_run"]
                rows.append(
                    {
                        "board": board,
                        "model": model,
                        "cmsis_instructions": cmsis["time_per_run"],
                        "zephyr_instructions": zephyr["time_per_run"],
                        "zephyr_vs_cmsis": round(ratio, 4),
                        "within_3pct": abs(ratio - 1) <= PARITY,
                        "cmsis_text": cmsis["sections"].get("text", ""),
                        "zephyr_text": zephyr["sections"].get("text", ""),
                        "bit_exact": cmsis["bit_exact"] and zephyr["bit_exact"],
                    }
                )
                print(rows[-1], flush=True)
    return "Zephyr 3.4.99 against the cmsis template (QEMU instructions per inference)", rows


def operator_shares(folder: Path) -> dict[str, float]:
    from aot.bench import bench_folder

    report = bench_folder(folder, repeats=1, timeout=600.0)
    return {f"{op.step}: {op.label}": op.share for op in report.operators}


def run_profile() -> tuple[str, list[dict]]:
    """vww on mps2_an385 with --profile, both templates: per-operator shares."""
    from aot.testing.harness import build

    model, board = "vww_96_int8", "mps2_an385"
    path = MODELS_DIR / f"{model}.tflite"
    zephyr = ["--template", "zephyr", "--zephyr-base", str(ZEPHYR_BASE)]
    with tempfile.TemporaryDirectory() as tmp:
        build(path, Path(tmp) / "cmsis", board, "--profile")
        build(path, Path(tmp) / "zephyr", board, "--profile", *zephyr)
        cmsis_shares = operator_shares(Path(tmp) / "cmsis")
        zephyr_shares = operator_shares(Path(tmp) / "zephyr")
    rows = []
    for step, share in cmsis_shares.items():
        other = zephyr_shares[step]
        rows.append(
            {
                "operator": step,
                "cmsis_share_pct": round(100 * share, 2),
                "zephyr_share_pct": round(100 * other, 2),
                "difference_pp": round(100 * (other - share), 2),
            }
        )
    worst = max(abs(r["difference_pp"]) for r in rows)
    rows.append(
        {
            "operator": "largest difference",
            "cmsis_share_pct": "",
            "zephyr_share_pct": "",
            "difference_pp": worst,
        }
    )
    return f"Per-operator shares of {model} on {board}, cmsis against Zephyr 3.4.99", rows
