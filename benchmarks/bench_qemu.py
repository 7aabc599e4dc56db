"""Instructions per inference, stack and section sizes of the MLPerf Tiny models on the
emulated boards (QEMU, cmsis template, default options).

    python benchmarks/run.py qemu

Each model is built with `aot build MODEL --board BOARD` and run on its reference input
as `aot run` does (aot.runner.run_model). Time is QEMU's -icount instruction count
(time_per_run with unit "instructions", resolution one FPGAIO tick = 40 or 50
instructions), not cycles: QEMU does not model pipelines, caches or wait states. The numbers
are deterministic: a re-run gives the same ones. A model that does not fit a board's
memories is left out and named in the last row.
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


def measure(model: str, board_name: str, folder: Path) -> dict:
    from aot.boards import load_board
    from aot.library import read_metadata
    from aot.runner import run_model
    from aot.testing.harness import build

    board = load_board(board_name)
    build(MODELS_DIR / f"{model}.tflite", folder, board_name)
    metadata = read_metadata(folder)
    x = np.load(MODELS_DIR / f"{model}.input.npy")
    report = run_model(folder, [x], repeats=REPEATS, timeout=600.0)
    document = report.to_json(metadata)
    if document["time_unit"] != "instructions":
        raise RuntimeError(f"{board_name}: expected instructions, got {document['time_unit']}")
    if document["time_min"] != document["time_max"]:
        raise RuntimeError(f"{model} on {board_name}: runs differ: {document}")
    exact = np.array_equal(report.outputs[0], np.load(MODELS_DIR / f"{model}.output.npy"))
    sections = document["sections"]
    return {
        "model": model,
        "board": board_name,
        "core": f"{board.core} (fpu {board.features.fpu})",
        "instructions": document["time_per_run"],
        "peak_stack_bytes": document["peak_stack_bytes"],
        "model_stack_bytes": document["model_stack_bytes"],
        "text": sections["text"],
        "rodata": sections["rodata"],
        "data": sections["data"],
        "bss": sections["bss"],
        "workspace_bytes": document["workspace_bytes"],
        "bit_exact": exact,
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
    return "QEMU: instructions per inference, stack and sections (cmsis template, -O2)", rows


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from run import markdown_table

    print(markdown_table(run()[1]))
