"""Data shared by the inspect tests: a hand-made plan shaped like compile_model's metadata."""

from __future__ import annotations

from typing import Any

from aot.library import METADATA_SCHEMA_VERSION
from aot.planning import Buffer, Pool, plan_memory
from aot.testing.shared import shared_dir

MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
KWS = MODELS_DIR / "kws_ref_model.tflite"

# Names that need escaping in SVG, and a buffer that spills to the second pool.
OPERATORS = ["conv<a>", "relu&b", "pool", "fc", "softmax"]
BUFFERS = [
    Buffer("conv_out", 6000, 0, 1),
    Buffer("relu&out", 6000, 1, 2),
    Buffer("skip", 2048, 0, 3),
    Buffer("pool_out", 1024, 2, 3),
    Buffer("scratch_3", 256, 3, 3),
    Buffer("fc_out", 48, 3, 4),
]
POOLS = [Pool("fast", 8192), Pool("slow", 65536)]


def synthetic_metadata() -> dict[str, Any]:
    """A metadata document shaped like compile_model's, planned by the real planner."""
    plan = plan_memory(BUFFERS, POOLS, "greedy_by_size", step_names=OPERATORS)
    by_name = {b.name: b for b in BUFFERS}
    return {
        "schema_version": METADATA_SCHEMA_VERSION,
        "model": {"name": "synthetic", "source": "synthetic.tflite"},
        "operators": [{"index": i, "name": n} for i, n in enumerate(OPERATORS)],
        "memory": {
            "planner": plan.algorithm,
            "pools": [
                {
                    "name": p.name,
                    "size_limit": p.size,
                    "targets": ["cpu", "npu"] if p.name == "fast" else ["cpu"],
                    "used_bytes": plan.pool_sizes[p.name],
                }
                for p in POOLS
            ],
            "workspace_bytes": plan.total_size,
            "lower_bound_bytes": plan.lower_bound,
            "buffers": [
                {
                    **pl.to_json(),
                    "size": by_name[pl.buffer].size,
                    "start": by_name[pl.buffer].start,
                    "end": by_name[pl.buffer].end,
                }
                for pl in plan.placements
            ],
        },
    }
