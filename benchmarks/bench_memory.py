"""Memory of the MLPerf Tiny models: aot next to the .tflite file and TFLite Micro.

Per model:
- tflite_weight_bytes: the constant tensor data in the flatbuffer (weights, biases, shape
  operands), each buffer counted once, file metadata buffers left out;
- constants_bytes: what aot puts in flash (src/constants.c, with alignment padding);
- workspace_bytes: aot's planned RAM for activations and kernel scratch (all pools);
- lower_bound_bytes: the activation lower bound of the plan's buffers (the order aot
  runs); source_order_bound_bytes: the same bound in the model's own operator order;
- io_bytes: the model's inputs and outputs. aot leaves them to the caller (pointers in
  the run() call), so they are not in its workspace; TFLite Micro keeps them in its arena
  head. aot's RAM at most workspace + io; compare that with the TFLM head;
- tflm_head_bytes / tflm_arena_bytes: TFLite Micro's activation area (arena head) and the
  smallest whole arena that ran (head + persistent tail), from X.json next to the model.
Deterministic: no times.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from aot.testing.shared import shared_dir

MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = ["ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"]


def tflite_weight_bytes(path: Path) -> int:
    """Bytes of constant tensor data: the buffers that the tensors of any subgraph use."""
    import tflite

    model = tflite.Model.GetRootAs(path.read_bytes(), 0)
    used: set[int] = set()
    for s in range(model.SubgraphsLength()):
        subgraph = model.Subgraphs(s)
        for t in range(subgraph.TensorsLength()):
            used.add(subgraph.Tensors(t).Buffer())
    total = 0
    for index in sorted(used):
        buffer = model.Buffers(index)
        # Files over 2 GB keep data outside the flatbuffer (offset/size); count both forms.
        total += buffer.DataLength() or (buffer.Size() if buffer.Offset() > 1 else 0)
    return total


def tflm_arena(model: str) -> dict[str, Any]:
    """TFLite Micro's arena for the model, as recorded in X.json (see the models' README)."""
    info = json.loads((MODELS_DIR / f"{model}.json").read_text()).get("tflm", {})
    if not info.get("ok"):
        return {"head": "n/a", "arena": "n/a"}
    return {"head": info["recorded"]["head"], "arena": info["min_arena_bytes"]}


def run() -> tuple[str, list[dict]]:
    from aot.compiler import CompileOptions, compile_model

    rows = []
    for model in MODELS:
        path = MODELS_DIR / f"{model}.tflite"
        with tempfile.TemporaryDirectory() as tmp:
            meta = compile_model(path, Path(tmp), CompileOptions()).metadata
        weights = tflite_weight_bytes(path)
        constants = meta["constants"]["bytes"]
        memory = meta["memory"]
        io = sum(t["size_bytes"] for t in meta["inputs"] + meta["outputs"])
        tflm = tflm_arena(model)
        rows.append(
            {
                "model": model,
                "tflite_weight_bytes": weights,
                "constants_bytes": constants,
                "constants_ratio": round(constants / weights, 3),
                "workspace_bytes": memory["workspace_bytes"],
                "lower_bound_bytes": memory["lower_bound_bytes"],
                "source_order_bound_bytes": memory.get(
                    "activation_lower_bound_bytes", memory["lower_bound_bytes"]
                ),
                "io_bytes": io,
                "workspace_plus_io_bytes": memory["workspace_bytes"] + io,
                "tflm_head_bytes": tflm["head"],
                "tflm_arena_bytes": tflm["arena"],
            }
        )
    return "Memory: aot vs the .tflite file and the TFLite Micro arena", rows


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from tables import markdown_table

    print(markdown_table(run()[1]))
