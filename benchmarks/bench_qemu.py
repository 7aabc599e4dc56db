"""Instructions per inference, stack and section sizes of the MLPerf Tiny models on the
emulated boards (QEMU, cmsis template, default options).

    python benchmarks/run.py qemu

Each model is built with `aot build MODEL --board BOARD` (the default `--kernels auto`:
the fastest kernels the board has, docs/kernels.md) and again with `--kernels tvm`
(TVM's generated kernels, the reference) for comparison, and run on its reference input
as `aot run` does (aot.runner.run_model). On mps2_an386 the TFLite Micro figures of
issue 11 (same QEMU, TFLM's release flags, arm-none-eabi-gcc 12.2) stand beside them.
Time is QEMU's -icount instruction count (time_per_run with unit "instructions",
resolution one FPGAIO tick = 40 or 50 instructions), not cycles: QEMU does not model
pipelines, caches or wait states. The numbers are deterministic: a re-run gives the same
ones. A model that does not fit a board's memories is left out and named in the last row.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from aot.testing.shared import shared_dir

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = ["ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"]
REPEATS = 2  # both runs must count the same instructions; checked below


# Instructions per inference on mps2_an386 measured for issue 11: TFLM with its reference
# kernels, TFLM with CMSIS-NN, and the target (0.7x TFLM + CMSIS-NN).
TFLM_AN386 = {
    "kws_ref_model": (43_040_000, 7_700_000, 5_390_000),
    "vww_96_int8": (100_250_000, 24_100_000, 16_870_000),
    "pretrainedResnet_quant": (107_400_000, 29_870_000, 20_910_000),
    "ad01_int8": (1_950_000, 580_000, 410_000),
}


def instructions(model: str, board_name: str, folder: Path, kernels: str) -> tuple[dict, dict]:
    """(run report as JSON, metadata) of one build with ``--kernels kernels``."""
    from aot.library import read_metadata
    from aot.runner import run_model
    from aot.testing.harness import build

    build(MODELS_DIR / f"{model}.tflite", folder, board_name, "--kernels", kernels)
    metadata = read_metadata(folder)
    x = np.load(MODELS_DIR / f"{model}.input.npy")
    report = run_model(folder, [x], repeats=REPEATS, timeout=600.0)
    document = report.to_json(metadata)
    if document["time_min"] != document["time_max"]:
        raise RuntimeError(f"{model} on {board_name}: runs differ: {document}")
    exact = np.array_equal(report.outputs[0], np.load(MODELS_DIR / f"{model}.output.npy"))
    return {**document, "bit_exact": exact}, metadata


def measure(model: str, board_name: str, folder: Path) -> dict:
    from aot.boards import load_board

    board = load_board(board_name)
    tvm, _ = instructions(model, board_name, folder.with_name(folder.name + "_tvm"), "tvm")
    document, metadata = instructions(model, board_name, folder, "auto")
    if document["time_unit"] != "instructions":
        raise RuntimeError(f"{board_name}: expected instructions, got {document['time_unit']}")
    tflm = TFLM_AN386.get(model) if board_name == "mps2_an386" else None
    sections = document["sections"]
    return {
        "model": model,
        "board": board_name,
        "core": f"{board.core} (fpu {board.features.fpu})",
        "kernels": ",".join(metadata["kernels"]["isas"]) or "tvm",
        "instructions": document["time_per_run"],
        "instructions_tvm": tvm["time_per_run"],
        "vs_tvm": round(document["time_per_run"] / tvm["time_per_run"], 3),
        "tflm_reference": tflm[0] if tflm else "",
        "tflm_cmsis_nn": tflm[1] if tflm else "",
        "target": tflm[2] if tflm else "",
        "peak_stack_bytes": document["peak_stack_bytes"],
        "model_stack_bytes": document["model_stack_bytes"],
        "text": sections["text"],
        "text_tvm": tvm["sections"]["text"],
        "rodata": sections["rodata"],
        "data": sections["data"],
        "bss": sections["bss"],
        "workspace_bytes": document["workspace_bytes"],
        "workspace_bytes_tvm": tvm["workspace_bytes"],
        "bit_exact": document["bit_exact"] and tvm["bit_exact"],
    }


def run() -> tuple[str, list[dict]]:
    from aot.boards import load_all_boards
    from aot.errors import PlanningError

    boards = [board.name for board in load_all_boards() if board.emulated]
    rows: list[dict] = []
    left_out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="aot-bench-qemu-") as tmp:
        for model in MODELS:
            for board_name in boards:
                print(f"  {model} on {board_name}", file=sys.stderr, flush=True)
                try:
                    rows.append(measure(model, board_name, Path(tmp) / model / board_name))
                except PlanningError as err:
                    left_out.append(f"{model} on {board_name}: {err}")
    if left_out:
        print("does not fit:\n  " + "\n  ".join(left_out), file=sys.stderr)
        blank = dict.fromkeys(rows[0], "") if rows else {}
        rows.append({**blank, "model": "does not fit", "board": "; ".join(left_out)})
    return (
        "QEMU: instructions per inference (default --kernels auto, and --kernels tvm), "
        "stack and sections (cmsis template, -O2)",
        rows,
    )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from run import markdown_table

    print(markdown_table(run()[1]))
