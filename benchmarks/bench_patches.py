"""Below the fixed-order bound on mps2_an386 (aot build --ram-budget, --in-place): RAM
against instructions.

vww_96_int8 at the budgets of issue 21 (64K, 48K, 40K and 0.72x its fixed-order bound)
and TFLite Micro's person_detect at 0.55x its bound, each next to whole operators; then
convolutions in place (--in-place, whole operators otherwise) on kws, vww, ds_cnn and a
converter-made MobileNetV2. All with --io-in-pool, so RAM is the whole workspace, the
input and output included. The instructions are QEMU's (-icount) for one inference;
"same outputs" compares the outputs of three seeded random inputs with the
whole-operator build's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from aot.artifacts import read_manifest
from aot.testing.harness import build, random_manifest_inputs, run_many
from aot.testing.shared import mlperf_tiny, tflm_model

BOARD = "mps2_an386"
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "converters" / "tflite"
IN_PLACE = "in place"  # a case's --in-place build
CASES = [
    ("vww_96_int8", mlperf_tiny("vww_96_int8"), [None, "64K", "48K", "40K", 0.72, IN_PLACE]),
    ("person_detect", tflm_model("person_detect"), [None, 0.55]),
    ("kws_ref_model", mlperf_tiny("kws_ref_model"), [None, IN_PLACE]),
    ("ds_cnn_int8_fixed", FIXTURES / "ds_cnn_int8_fixed.tflite", [None, IN_PLACE]),
    ("mobilenet_v2_035_96", FIXTURES / "mobilenet_v2_035_96_int8_fixed.tflite", [None, IN_PLACE]),
]


def _instructions(folder: Path) -> int:
    result = subprocess.run(
        [sys.executable, "-m", "aot", "bench", str(folder), "-n", "1", "--json", "-q"],
        capture_output=True, text=True, check=True, timeout=900,
    )  # fmt: skip
    return int(json.loads(result.stdout)["time_min"])


def run() -> tuple[str, list[dict]]:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, model, budgets in CASES:
            whole_folder, whole_outputs, whole = None, None, None
            for budget in budgets:
                extra = ["--io-in-pool"]
                if budget == IN_PLACE:
                    extra += ["--in-place"]
                elif isinstance(budget, float):
                    assert whole is not None
                    extra += ["--ram-budget", str(int(budget * whole["ram"]))]
                elif budget is not None:
                    extra += ["--ram-budget", budget]
                folder = build(model, Path(scratch) / f"{name}_{budget}", BOARD, *extra)
                manifest = read_manifest(folder)
                inputs = random_manifest_inputs(manifest, 3, seed=21)
                outputs = run_many(folder, inputs)
                ram = manifest.memory.workspace_bytes
                instructions = _instructions(folder)
                if whole_folder is None:
                    whole_folder, whole_outputs = folder, outputs
                    whole = {"ram": ram, "instructions": instructions}
                schedule = manifest.schedule
                same = all(
                    all((a == b).all() for a, b in zip(x, y, strict=True))
                    for x, y in zip(outputs, whole_outputs, strict=True)
                )
                rows.append(
                    {
                        "model": name,
                        "ram_budget": "-" if budget in (None, IN_PLACE) else extra[-1],
                        "schedule": schedule.label if schedule else "whole operators",
                        "ram_bytes": ram,
                        "ram_vs_whole": round(ram / whole["ram"], 3),
                        "instructions": instructions,
                        "instructions_vs_whole": round(instructions / whole["instructions"], 3),
                        "estimated_extra": schedule.extra_instructions if schedule else 0,
                        "same_outputs": same,
                    }
                )
    title = (
        f"Patch stages and convolutions in place on {BOARD} (RAM with --io-in-pool, "
        "instructions per inference)"
    )
    return title, rows
