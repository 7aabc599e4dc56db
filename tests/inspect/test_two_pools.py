"""Two workspace pools on a real model: the fast pool fills first, limits hold, and the
generated C still computes exactly what TFLite's reference kernels compute."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from inspect_helpers import KWS, MODELS_DIR

from aot.artifacts import read_manifest
from aot.cli.inspect import load_plan
from aot.planning import Buffer, plan_memory, validate_plan
from aot.planning.model import align_up
from aot.testing.harness import build, run_many
from aot.testing.shared import mlperf_tiny

pytestmark = pytest.mark.toolchain

FAST, BIG = 16 * 1024, 1024 * 1024


def fits_in(buffer: Buffer, others: list[tuple[Buffer, int]], limit: int) -> bool:
    """Could ``buffer`` go somewhere in a pool holding ``others`` (buffer, offset)?"""
    busy = sorted((off, off + b.size) for b, off in others if b.overlaps(buffer))
    offset = 0
    for lo, hi in busy:
        if offset + buffer.size <= lo:
            break
        offset = max(offset, align_up(hi, buffer.alignment))
    return offset + buffer.size <= limit


@pytest.fixture(scope="module", params=[FAST, 8 * 1024], ids=["fast16K", "fast8K"])
def two_pool_build(request, tmp_path_factory) -> tuple[int, Path]:
    mlperf_tiny("kws_ref_model")  # missing shared data fails here, loudly
    fast = request.param
    out = tmp_path_factory.mktemp("two_pools") / "out"
    return fast, build(KWS, out, "host", "--pool", f"fast:{fast}", "--pool", f"big:{BIG}")


def test_fast_pool_first_and_limits_hold(two_pool_build) -> None:
    fast, folder = two_pool_build
    loaded = load_plan(read_manifest(folder))
    validate_plan(loaded.plan, loaded.buffers, loaded.pools)  # no overlap, within limits
    used = loaded.plan.pool_sizes
    assert [p.name for p in loaded.pools] == ["fast", "big"]
    assert 0 < used["fast"] <= fast and used["big"] <= BIG
    by_name = {b.name: b for b in loaded.buffers}
    in_fast = [(by_name[p.buffer], p.offset) for p in loaded.plan.placements if p.pool == "fast"]
    in_big = [by_name[p.buffer] for p in loaded.plan.placements if p.pool == "big"]
    # As full as first fit makes it: nothing in the big pool would fit in the fast one.
    for b in in_big:
        assert not fits_in(b, in_fast, fast), f"{b.name} would fit in the fast pool"
    if fast == FAST:
        assert used["big"] == 0  # kws's 16000 live bytes all fit in 16 KiB
    else:
        assert used["big"] > 0  # 8 KiB forces a spill: both static arrays are used
    # The planner is deterministic: planning the same buffers again gives the same plan.
    again = plan_memory(loaded.buffers, loaded.pools, loaded.plan.algorithm, loaded.step_names)
    assert dict(again.pool_sizes) == dict(used)
    assert again.placements == loaded.plan.placements


def test_outputs_stay_bit_exact(two_pool_build) -> None:
    _, folder = two_pool_build
    x = np.load(MODELS_DIR / "kws_ref_model.input.npy")
    (got,) = run_many(folder, [[x]])[0]
    np.testing.assert_array_equal(got, np.load(MODELS_DIR / "kws_ref_model.output.npy"))
