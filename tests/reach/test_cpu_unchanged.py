"""CPU-only models plan exactly as before reachability: every buffer and pool is the CPU's,
so the four reference models keep docs/benchmarks.md's workspace bytes and placements."""

from __future__ import annotations

from dataclasses import replace

import pytest

from aot.compiler import CompileOptions, plan_lowered
from aot.frontend import import_model
from aot.lowering import lower
from aot.planning import Pool, plan_memory
from aot.planning.liveness import workspace_buffers
from aot.planning.model import DEFAULT_TARGETS
from aot.planning.schedule import schedule
from aot.testing.shared import mlperf_tiny

pytestmark = [pytest.mark.unit, pytest.mark.slow]

# docs/benchmarks.md, "Compile (host, default options)": workspace_bytes.
WORKSPACE = {
    "ad01_int8": 256,
    "kws_ref_model": 16000,
    "pretrainedResnet_quant": 49152,
    "vww_96_int8": 55296,
}


@pytest.mark.parametrize("model", sorted(WORKSPACE))
def test_cpu_only_plans_are_unchanged(model: str) -> None:
    lowered = schedule(lower(import_model(mlperf_tiny(model), "auto"), "net"))
    options = CompileOptions(name="net", allow_copies=True)  # copies allowed, none needed
    planned = plan_lowered(lowered, options)
    assert planned.plan.total_size == WORKSPACE[model]
    assert planned.plan.copies == () and planned.schedule == tuple(range(len(lowered.steps)))
    assert {t for b in planned.buffers for t in b.targets} == set(DEFAULT_TARGETS)
    # The same buffers without targets or users, into a pool any target reaches: the plan
    # before reachability existed. Identical placements.
    bare = [replace(b, users=()) for b in workspace_buffers(lowered)]
    before = plan_memory(bare, [Pool("workspace", None)], options.planner)
    assert planned.plan.placements == before.placements
