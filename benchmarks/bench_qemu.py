"""Instructions per inference, memory and section sizes of aot and TensorFlow Lite Micro on
the emulated boards (QEMU, cmsis template, default options).

    python3 benchmarks/run.py qemu                       the MLPerf Tiny models, every board
    python3 benchmarks/run.py qemu --model a.tflite      any .tflite (repeatable)
    python3 benchmarks/run.py qemu --board mps2_an386    one board (repeatable)
    python3 benchmarks/run.py qemu --versus none         aot only

Each model is built with `aot build MODEL --board BOARD` (the default `--kernels auto`:
the fastest kernels the board has, docs/kernels.md) and again with `--kernels tvm`
(TVM's generated kernels, the reference), and run on its input as `aot run` does
(aot.runner.run_model). With `--versus tflm` (the default) TensorFlow Lite Micro runs the
same model on the same input on the same board, with its reference kernels and with
CMSIS-NN (benchmarks/tflm_peer.py: the library built here, the runner linked with aot's
startup, port and tick counter). Time is QEMU's -icount instruction count (one FPGAIO
tick = 40 or 50 instructions), not cycles: QEMU does not model pipelines, caches or wait
states. The numbers are deterministic: a re-run gives the same ones. A model that does not
fit a board's memories is left out and named in the last row.

The input is X.input.npy beside X.tflite, else seeded random values; the expected output
X.output.npy, else LiteRT's reference kernels on that input. `bit_exact` is aot against
that; `tflm_bit_exact` is aot against both TFLM builds.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from aot.artifacts.manifest import LibraryManifest
from aot.testing.shared import shared_dir

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = ["ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"]
REPEATS = 2  # both runs must count the same instructions; checked below
RANDOM_SEED = 1
VERSUS = ("tflm", "none")
# Columns of earlier versions, dropped from the rows a --board run keeps: "target" was 0.7x
# the TFLM + CMSIS-NN figures typed in for issue 11.
RETIRED_COLUMNS = ("target",)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def default_models() -> list[Path]:
    return [MODELS_DIR / f"{model}.tflite" for model in MODELS]


def model_inputs(model: Path, manifest: LibraryManifest) -> list[np.ndarray]:
    """X.input.npy beside the model, else one seeded random input per model input."""
    beside = model.with_suffix(".input.npy")
    if beside.is_file():
        return [np.load(beside)]
    from aot.testing.harness import random_manifest_inputs

    return random_manifest_inputs(manifest, 1, seed=RANDOM_SEED)[0]


def expected_outputs(model: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """X.output.npy beside the model, else LiteRT's reference kernels on ``inputs``."""
    beside = model.with_suffix(".output.npy")
    if beside.is_file():
        return [np.load(beside)]
    from aot.errors import ModelError
    from aot.testing.reference import run_tflite_reference, run_tflm_reference

    try:
        return list(run_tflite_reference(model, inputs))
    except ModelError:  # LiteRT refuses what TFLite Micro runs (person_detect's biases)
        return list(run_tflm_reference(model, inputs))


def aot_run(
    model: Path, board_name: str, folder: Path, kernels: str
) -> tuple[dict, LibraryManifest, list]:
    """(run report as JSON, the build's manifest, outputs) of one build with
    ``--kernels kernels``."""
    from aot.artifacts import read_manifest
    from aot.runner import run_model
    from aot.testing.harness import build

    build(model, folder, board_name, "--kernels", kernels)
    manifest = read_manifest(folder)
    inputs = model_inputs(model, manifest)
    report = run_model(folder, inputs, repeats=REPEATS, timeout=600.0)
    document = report.to_json(manifest)
    if document["time_min"] != document["time_max"]:
        raise RuntimeError(f"{model.stem} on {board_name}: runs differ: {document}")
    if document["time_unit"] != "instructions":
        raise RuntimeError(f"{board_name}: expected instructions, got {document['time_unit']}")
    outputs = list(report.outputs)
    expected = expected_outputs(model, inputs)
    exact = len(outputs) == len(expected) and all(
        np.array_equal(a, b) for a, b in zip(outputs, expected, strict=True)
    )
    return {**document, "bit_exact": exact, "inputs": inputs}, manifest, outputs


def compare(aot_outputs: list[np.ndarray], tflm_outputs: Sequence[bytes]) -> int | None:
    """Largest difference between aot's and TFLM's outputs (0: bit-exact), None if their
    shapes differ."""
    if len(aot_outputs) != len(tflm_outputs):
        return None
    largest = 0
    for ours, raw in zip(aot_outputs, tflm_outputs, strict=True):
        if len(raw) != ours.nbytes:
            return None
        theirs = np.frombuffer(raw, dtype=ours.dtype).reshape(ours.shape)
        if ours.dtype.kind in "iu":
            diff = int(np.max(np.abs(ours.astype(np.int64) - theirs.astype(np.int64)), initial=0))
        else:
            diff = 0 if np.array_equal(ours, theirs) else 1
        largest = max(largest, diff)
    return largest


def measure(model: Path, board_name: str, folder: Path, versus: str) -> dict:
    from aot.boards import load_board

    board = load_board(board_name)
    name = model.stem
    log(f"  {name} on {board_name}: aot --kernels tvm")
    tvm, _, _ = aot_run(model, board_name, folder.with_name(folder.name + "_tvm"), "tvm")
    log(f"  {name} on {board_name}: aot --kernels auto")
    document, manifest, outputs = aot_run(model, board_name, folder, "auto")
    peers = {}
    unavailable = None
    if versus == "tflm":
        import tflm_peer

        try:
            for kernels in tflm_peer.KERNELS:
                log(f"  {name} on {board_name}: TFLM with {kernels.replace('_', '-')} kernels")
                peers[kernels] = tflm_peer.measure(
                    model, board, kernels, document["inputs"], folder.with_name(f"tflm_{kernels}")
                )
        except tflm_peer.CannotRun as exc:
            log(f"  {name}: TFLM cannot run it ({exc})")
            peers, unavailable = {}, str(exc)
    sections = document["sections"]
    instructions = document["time_per_run"]
    row = {
        "model": name,
        "board": board_name,
        "core": f"{board.core} (fpu {board.features.fpu})",
        "kernels": ",".join(manifest.kernels.isas) or "tvm",
        "instructions": instructions,
        "instructions_tvm": tvm["time_per_run"],
        "vs_tvm": round(instructions / tvm["time_per_run"], 3),
    }
    if peers:
        reference, cmsis_nn = peers["reference"], peers["cmsis_nn"]
        diffs = [compare(outputs, peer.outputs) for peer in peers.values()]
        row |= {
            "tflm_reference": reference.instructions,
            "tflm_cmsis_nn": cmsis_nn.instructions,
            "vs_tflm_cmsis_nn": round(instructions / cmsis_nn.instructions, 3),
            "workspace_bytes": document["workspace_bytes"],
            "tflm_arena_bytes": cmsis_nn.arena_bytes,
            "tflm_arena_used_bytes": cmsis_nn.arena_used_bytes,
            "tflm_reference_arena_bytes": reference.arena_bytes,
            "text": sections["text"],
            "tflm_text": cmsis_nn.text_bytes,
            "constants_bytes": manifest.constants.bytes,
            "tflm_model_bytes": cmsis_nn.model_bytes,
            "bit_exact": document["bit_exact"] and tvm["bit_exact"],
            "tflm_bit_exact": all(d == 0 for d in diffs),
            "tflm_max_diff": max((d for d in diffs if d is not None), default="n/a")
            if None not in diffs
            else "shapes differ",
        }
    else:
        if unavailable is not None:
            row["tflm"] = f"cannot run: {unavailable}"
        row |= {
            "workspace_bytes": document["workspace_bytes"],
            "text": sections["text"],
            "constants_bytes": manifest.constants.bytes,
            "bit_exact": document["bit_exact"] and tvm["bit_exact"],
        }
    row |= {
        "peak_stack_bytes": document["peak_stack_bytes"],
        "model_stack_bytes": document["model_stack_bytes"],
        "text_tvm": tvm["sections"]["text"],
        "rodata": sections["rodata"],
        "data": sections["data"],
        "bss": sections["bss"],
        "workspace_bytes_tvm": tvm["workspace_bytes"],
    }
    return row


def run(
    models: Sequence[Path] | None = None,
    boards: Sequence[str] | None = None,
    versus: str = "tflm",
) -> tuple[str, list[dict]]:
    from aot.boards import load_all_boards
    from aot.errors import PlanningError

    if versus not in VERSUS:
        raise SystemExit(f"--versus {versus!r} is not one of {', '.join(VERSUS)}")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    emulated = [board.name for board in load_all_boards() if board.emulated]
    unknown = sorted(set(boards or ()) - set(emulated))
    if unknown:
        raise SystemExit(f"not an emulated board: {', '.join(unknown)} ({', '.join(emulated)})")
    chosen = [name for name in emulated if not boards or name in boards]
    paths = [Path(m) for m in models] if models else default_models()
    rows: list[dict] = []
    left_out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="aot-bench-qemu-") as tmp:
        for model in paths:
            for board_name in chosen:
                log(f"qemu: {model.stem} on {board_name}")
                try:
                    folder = Path(tmp) / model.stem / board_name / "aot"
                    rows.append(measure(model, board_name, folder, versus))
                    log(f"  {json.dumps(rows[-1])}")  # kept in the log should a later model fail
                except PlanningError as err:
                    left_out.append(f"{model.stem} on {board_name}: {err}")
    if left_out:
        log("does not fit:\n  " + "\n  ".join(left_out))
        blank = dict.fromkeys(rows[0], "") if rows else {}
        rows.append({**blank, "model": "does not fit", "board": "; ".join(left_out)})
    peer = " against TensorFlow Lite Micro (reference kernels, CMSIS-NN)"
    peer = peer if versus == "tflm" else ""
    return (
        "QEMU: instructions per inference (default --kernels auto, and --kernels tvm)"
        f"{peer}, memory, stack and sections (cmsis template, -O2)",
        rows,
    )


def speed_sentence(rows: list[dict]) -> str | None:
    """The README's sentence on aot against TFLM + CMSIS-NN, from the measured rows of the
    four MLPerf Tiny models (None when the rows are not those)."""
    measured = [r for r in rows if r.get("tflm_cmsis_nn") not in (None, "")]
    if sorted({r["model"] for r in measured}) != sorted(MODELS):
        return None
    per_board = []
    for board in dict.fromkeys(r["board"] for r in measured):
        ratios = [r["vs_tflm_cmsis_nn"] for r in measured if r["board"] == board]
        core = next(r["core"] for r in measured if r["board"] == board).split()[0]
        core = core.replace("cortex-m", "Cortex-M")
        per_board.append(f"{min(ratios):.2f}-{max(ratios):.2f}x on `{board}` ({core})")
    exact = [r for r in measured if r["tflm_bit_exact"]]
    differ = sorted({r["model"] for r in measured if not r["tflm_bit_exact"]})
    ram = all(r["workspace_bytes"] < r["tflm_arena_bytes"] for r in measured)
    sentence = (
        "Against TensorFlow Lite Micro with CMSIS-NN, measured in the same run on the same"
        " emulated boards (`python3 benchmarks/run.py qemu`), the MLPerf Tiny models take "
        + ", ".join(per_board)
        + f" of its instructions; the outputs of both are identical on {len(exact)} of"
        f" {len(measured)} model/board pairs"
    )
    if differ:
        sentence += (
            f" ({', '.join(differ)}: TFLite Micro rounds FULLY_CONNECTED twice, LiteRT and"
            " aot once, docs/int8.md)"
        )
    if ram:
        sentence += ", and aot's workspace is below TFLite Micro's arena on all of them"
    return sentence + " (`docs/benchmarks.md`)."


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from tables import markdown_table

    print(markdown_table(run()[1]))
