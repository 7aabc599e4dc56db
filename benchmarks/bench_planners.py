"""Memory planners on the MLPerf Tiny models: workspace, ratio to the lower bound, time.

Each model is imported and lowered once (as compile_model does); then every registered
planner plans the same buffers into one unbounded pool. Bytes are deterministic; the
planning time is the best of a few runs on this machine. ``optimal`` refuses graphs with
too many buffers live at once (a ConfigError); that shows as "n/a".
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from aot.errors import ConfigError
from aot.planning import Buffer, Pool, plan_memory, planners
from aot.testing.shared import shared_dir

MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = ["ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"]
# Repeat fast planners so the time is not just timer noise; stop after this much.
TIME_BUDGET_S = 0.5
MAX_REPEATS = 5


def model_buffers(path: Path) -> tuple[list[Buffer], list[str]]:
    """The workspace buffers and step names compile_model would plan for ``path``."""
    from aot.compiler import CompileOptions
    from aot.frontend import import_model
    from aot.lowering import lower
    from aot.planning.liveness import workspace_buffers

    options = CompileOptions()
    lowered = lower(import_model(path, options.frontend), options.name)
    buffers = workspace_buffers(lowered, options.workspace_alignment)
    return buffers, [f"step {s.index} ({s.operator})" for s in lowered.steps]


def max_live_buffers(buffers: list[Buffer]) -> int:
    steps = max((b.end for b in buffers), default=-1) + 1
    return max((sum(b.start <= t <= b.end for b in buffers) for t in range(steps)), default=0)


def time_plan(buffers: list[Buffer], algorithm: str, step_names: list[str]) -> tuple[Any, float]:
    """The plan and the best planning time in milliseconds."""
    best, spent, plan = float("inf"), 0.0, None
    for _ in range(MAX_REPEATS):
        start = time.perf_counter()
        plan = plan_memory(buffers, [Pool("workspace", None)], algorithm, step_names)
        elapsed = time.perf_counter() - start
        best, spent = min(best, elapsed), spent + elapsed
        if spent > TIME_BUDGET_S:
            break
    return plan, best * 1000


def run() -> tuple[str, list[dict]]:
    rows = []
    for model in MODELS:
        buffers, step_names = model_buffers(MODELS_DIR / f"{model}.tflite")
        live = max_live_buffers(buffers)
        for algorithm in planners.names():
            row: dict[str, Any] = {
                "model": model,
                "buffers": len(buffers),
                "max_live": live,
                "planner": algorithm,
            }
            try:
                plan, ms = time_plan(buffers, algorithm, step_names)
            except ConfigError as err:  # optimal's size limits: too many buffers together
                row.update(workspace_bytes="n/a", lower_bound_bytes="n/a", ratio="n/a")
                row.update(plan_ms="n/a", note=f"refused: {str(err).split(';')[0]}")
            else:
                row.update(
                    workspace_bytes=plan.total_size,
                    lower_bound_bytes=plan.lower_bound,
                    ratio=round(plan.total_size / plan.lower_bound, 3) if plan.lower_bound else 1,
                    plan_ms=round(ms, 2),
                    note="",
                )
            rows.append(row)
    return "Memory planners (one unbounded pool, host)", rows


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from tables import markdown_table

    print(markdown_table(run()[1]))
