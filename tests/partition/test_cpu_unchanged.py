"""Acceptance 6: the CPU-only path is unchanged by the partition stage and the backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aot.backends import Backend, OperatorPattern
from aot.codegen.executor import generate_sources
from aot.frontend import import_model
from aot.lowering import lower
from aot.partition import partition
from aot.planning import Pool, plan_memory
from aot.planning.liveness import workspace_buffers
from aot.planning.schedule import schedule
from aot.testing.shared import MLPERF_TINY, mlperf_tiny

ROOT = Path(__file__).resolve().parents[2]


class Refuses(Backend):
    name = "refuses"

    def patterns(self):
        return [OperatorPattern("all", ("conv2d_int8", "softmax_int8"), lambda op: False)]


def sources(imported, backends) -> dict[str, str]:
    lowered = schedule(lower(partition(imported, backends), "tiny"))
    plan = plan_memory(workspace_buffers(lowered), [Pool("workspace", None)], "hill_climb")
    return generate_sources(lowered, plan).files


@pytest.mark.unit
def test_an_accelerator_that_takes_nothing_changes_no_byte() -> None:
    imported = import_model(ROOT / "examples" / "tiny_kws_int8.tflite", "auto")
    assert sources(imported, [Refuses()]) == sources(imported, [])


def documented_workspace() -> dict[str, int]:
    """workspace_bytes per model from docs/benchmarks.md's compile table."""
    lines = (ROOT / "docs" / "benchmarks.md").read_text().splitlines()
    start = lines.index(next(x for x in lines if x.startswith("| model | frontend | compile_s")))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    found = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
        found[cells["model"]] = int(cells["workspace_bytes"])
    return found


@pytest.mark.slow
@pytest.mark.parametrize("model", MLPERF_TINY)
def test_reference_models_keep_their_documented_workspace(model: str, tmp_path: Path) -> None:
    from aot.testing.harness import build

    out = build(mlperf_tiny(model), tmp_path / "out", "host", "--no-build")
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["memory"]["workspace_bytes"] == documented_workspace()[model]
    assert {(op["backend"], op["target"]) for op in metadata["operators"]} == {("cpu", "cpu")}
    assert [b["name"] for b in metadata["backends"]] == ["cpu"]
