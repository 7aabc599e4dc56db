"""Converter-made models on mps2_an386, aot against TensorFlow Lite Micro built here: the
fixtures of tests/fixtures/converters/tflite (Keras 3 -> TFLite,
scripts/make_converter_models.py) with at least 1M multiply-accumulates, int8 with
fixed-shape inputs, and TFLite Micro's own person_detect, measured exactly as the qemu
section measures the reference models (benchmarks/bench_qemu.py). Issue 20 asks aot to
take at most 0.65x TFLM + CMSIS-NN's instructions on each of these. (The ONNX fixtures
have no TFLM peer; TFLite Micro's 224x224 MobileNetV2 does not fit the board's RAM.)

    python3 benchmarks/run.py converters
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "converters" / "tflite"
BOARD = "mps2_an386"
MIN_MACS = 1_000_000


def fixtures() -> list[Path]:
    """The int8 fixed-shape fixtures of at least MIN_MACS multiply-accumulates, then
    person_detect."""
    from aot.testing.shared import tflm_model

    models = json.loads((FIXTURES / "models.json").read_text())["models"]
    return [
        FIXTURES / f"{m['name']}.tflite"
        for m in models
        if m["macs"] >= MIN_MACS
        and m["name"].endswith("_int8_fixed")
        and (FIXTURES / f"{m['name']}.tflite").is_file()
    ] + [tflm_model("person_detect")]


def run() -> tuple[str, list[dict]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_qemu import run as measure

    _, rows = measure(models=fixtures(), boards=[BOARD])
    title = (
        f"Converter-made models of at least 1M MACs on {BOARD} against TensorFlow Lite Micro "
        "(instructions per inference, memory)"
    )
    return title, rows
