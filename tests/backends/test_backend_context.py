"""Stateless backends: what prepare() returns reaches patterns, lower (with the artifacts
of the earlier regions), runtime and report, so a backend keeps nothing between hooks; a
hook written before contexts existed is still called, without one."""

from __future__ import annotations

from pathlib import Path

import pytest

from aot.backends import (
    Artifact,
    Backend,
    EmittedCode,
    LowerContext,
    OperatorPattern,
    RuntimeFiles,
)
from aot.backends.base import call_hook
from aot.frontend import import_model
from aot.lowering import lower
from aot.partition import partition

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class Counting(Backend):
    """Takes every convolution, as its context (a dict prepare() builds) says."""

    name = "counting"
    target_name = "cpu"
    merge_regions = False

    def prepare(self, model, board=None):
        return {"claim": True, "operators": len(model.sources)}

    def patterns(self, ctx=None):
        # Without a context (aot backends, can_lower) the kinds are all that is asked; the
        # predicate claims nothing then, so a claimed region shows the context arrived.
        return [
            OperatorPattern(
                "conv",
                ("conv2d_int8", "depthwise_conv2d_int8"),
                lambda op: ctx is not None and ctx["claim"],
            )
        ]

    def lower(self, region, ctx=None):
        assert isinstance(ctx, LowerContext) and ctx.prepared["operators"] > 0
        return Artifact(f"conv_{len(ctx.earlier)}", payload=len(ctx.earlier))

    def emit(self, step, artifact, ctx):
        return EmittedCode(call=(f"/* {artifact.symbol} */",))

    def runtime(self, ctx=None):
        return RuntimeFiles(defines={"OPERATORS": str(ctx["operators"])})

    def report(self, ctx=None):
        return {"operators": ctx["operators"]}


@pytest.fixture(scope="module")
def tiny():
    return import_model(EXAMPLES / "tiny_kws_int8.tflite", "auto")


def test_the_context_reaches_every_hook_and_numbers_the_regions(tiny) -> None:
    backend = Counting()
    ctx = backend.prepare(tiny)
    lowered = lower(partition(tiny, [backend], contexts={backend.name: ctx}), "tiny")
    ours = [lowered.artifact(s.kernel) for s in lowered.steps if s.backend == backend.name]
    assert len(ours) >= 2
    # Each lower() call saw the artifacts before it: numbered without a counter of its own.
    assert [a.payload for a in ours] == list(range(len(ours)))
    assert call_hook(backend.runtime, ctx).defines == {"OPERATORS": str(len(tiny.sources))}
    assert call_hook(backend.report, ctx) == {"operators": len(tiny.sources)}


def test_hooks_without_a_context_parameter_are_called_without_one() -> None:
    class Old(Backend):
        name = "old"

        def patterns(self):
            return [OperatorPattern("any", ("conv2d_int8",))]

        def runtime(self):
            return RuntimeFiles(defines={"OLD": "1"})

        def report(self):
            return {"old": True}

    old = Old()
    assert [p.name for p in call_hook(old.patterns, {"ignored": 1})] == ["any"]
    assert call_hook(old.runtime, object()).defines == {"OLD": "1"}
    assert call_hook(old.report, None) == {"old": True}
    assert old.can_lower(type("I", (), {"kind": "conv2d_int8"})())  # via call_hook too


def test_the_kernel_backend_is_the_same_function_of_its_inputs_every_time(tiny) -> None:
    """aot's own kernel backend keeps nothing between calls: its step's files ride on the
    artifact, and lowering one region twice gives equal artifacts."""
    from aot.kernels import KernelBackend

    backend = KernelBackend({"isas": ("scalar",)})
    partitioned = partition(tiny, [backend])
    lowered = lower(partitioned, "tiny")
    ours = [lowered.artifact(s.kernel) for s in lowered.steps if s.backend == backend.name]
    assert ours and all(a.runtime is not None and a.runtime.sources for a in ours)
    assert call_hook(backend.runtime, None) == RuntimeFiles()
    again = lower(partitioned, "tiny")
    assert [a.symbol for a in ours] == [
        again.artifact(s.kernel).symbol for s in again.steps if s.backend == backend.name
    ]
