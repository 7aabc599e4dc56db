"""The Backend API through lower, plan and emit, in-process: what each hook receives and
what the stages make of what it returns (no C compiler needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.backends import (
    Artifact,
    Backend,
    BackendConstant,
    EmittedCode,
    OperatorPattern,
)
from aot.codegen.executor import generate_sources
from aot.errors import UnsupportedError
from aot.frontend import import_model
from aot.lowering import CONSTANT, lower
from aot.partition import partition
from aot.planning import Pool, plan_memory
from aot.planning.liveness import workspace_buffers
from aot.planning.schedule import schedule

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class Recorder(Backend):
    """Takes DEPTHWISE_CONV_2D + CONV_2D #2 (one merged region), remembers the region."""

    name = "rec"
    target_name = "recnpu"

    def __init__(self, fail_emit: bool = False) -> None:
        super().__init__()
        self.regions: list = []
        self.fail_emit = fail_emit

    def patterns(self):
        return [
            OperatorPattern("dw", ("depthwise_conv2d_int8",)),
            OperatorPattern("pw", ("conv2d_int8",), lambda op: op.params.strides == (1, 1)),
        ]

    def lower(self, region, ctx=None):
        self.regions.append(region)
        stream = np.arange(6, dtype=np.uint32)
        constants = (BackendConstant("stream", stream),)
        return Artifact("", payload=len(region.operators), constants=constants, scratch_bytes=32)

    def emit(self, step, artifact, ctx):
        if self.fail_emit:
            raise KeyError("emit bug")
        return EmittedCode(
            call=(f"if (rec_run({', '.join(ctx.args)}, {ctx.scratch}) != 0) return -1;",),
            prototypes=("int32_t rec_run();",),
            includes=("<rec_driver.h>",),
        )


@pytest.fixture(scope="module")
def tiny():
    return import_model(EXAMPLES / "tiny_kws_int8.tflite", "auto")


def built(tiny, backend):
    lowered = schedule(lower(partition(tiny, [backend]), "tiny"))
    buffers = workspace_buffers(lowered)
    return lowered, plan_memory(buffers, [Pool("workspace", None)])


def test_steps_name_backend_and_target_and_artifacts_hold_no_c(tiny) -> None:
    backend = Recorder()
    lowered, _ = built(tiny, backend)
    placed = [(s.label, s.backend, s.target) for s in lowered.steps]
    assert placed[1] == ("DEPTHWISE_CONV_2D #1 + CONV_2D #2", "rec", "recnpu")
    assert all(b == "cpu" and t == "cpu" for i, (_, b, t) in enumerate(placed) if i != 1)
    (region,) = backend.regions
    assert [op.kind for op in region.operators] == ["depthwise_conv2d_int8", "conv2d_int8"]
    assert region.params[0].shape == (1, 8, 8, 8) and region.outputs[0].shape == (1, 8, 8, 16)
    # Weights arrive as data; the backend's own constant becomes a planned constant tensor.
    assert region.params[1].is_constant and region.params[1].data.dtype == np.int8
    npu = lowered.steps[1]
    stream = lowered.tensors[npu.reads[-1]]
    assert stream.kind == CONSTANT and stream.dtype == "uint32" and stream.size_bytes == 24
    assert npu.scratch_bytes == 32
    for artifact in lowered.artifacts:
        assert not any(isinstance(v, str) and "{" in v for v in vars(artifact).values())
    cpu_artifact = lowered.artifact(lowered.steps[0].kernel)
    assert cpu_artifact.tir is not None and lowered.artifact(npu.kernel).payload == 2


def test_emit_uses_each_steps_backend(tiny) -> None:
    lowered, plan = built(tiny, Recorder())
    files = generate_sources(lowered, plan).files
    executor = files["src/aot_tiny.c"]
    assert "#include <rec_driver.h>" in executor
    call = next(line for line in executor.splitlines() if "rec_run(" in line)
    assert "aot_tiny_const_" in call and "aot_tiny_pool_workspace +" in call
    assert "int32_t rec_run();" in files["src/aot_tiny_internal.h"]
    constants = files["src/aot_tiny_constants.c"]
    assert "const uint32_t aot_tiny_const_" in constants


def test_a_failing_emit_is_one_line(tiny) -> None:
    lowered, plan = built(tiny, Recorder(fail_emit=True))
    with pytest.raises(UnsupportedError) as err:
        generate_sources(lowered, plan)
    assert str(err.value) == (
        "backend rec failed to emit step 1 (DEPTHWISE_CONV_2D #1 + CONV_2D #2, KeyError); fix "
        "the backend, or build without --accelerator rec"
    )


def test_cpu_only_lowering_is_in_frontend_order_until_planning(tiny) -> None:
    lowered = lower(tiny, "tiny")
    assert lowered.activation_lower_bound == 0 and lowered.shared == {}
    scheduled = schedule(lowered)
    assert scheduled.activation_lower_bound > 0
    assert [s.index for s in scheduled.steps] == list(range(len(scheduled.steps)))


class Wide(Recorder):
    alignment = 64


def test_backend_alignment_reaches_its_buffers_constants_and_pools(tiny) -> None:
    lowered = schedule(lower(partition(tiny, [Wide()]), "tiny"))
    buffers = {b.name: b for b in workspace_buffers(lowered, alignment=8)}
    npu = lowered.steps[1]
    touched = {f"tensor_{t}_" for t in npu.args}
    for name, buffer in buffers.items():
        mine = any(name.startswith(p) for p in touched) or name == f"scratch_{npu.index}"
        assert buffer.alignment == (64 if mine else 8), name
    plan = plan_memory(list(buffers.values()), [Pool("workspace", None)])
    files = generate_sources(lowered, plan).files
    stream = lowered.tensors[npu.reads[-1]]
    assert f"aot_tiny_const_{stream.id}[6] AOT_SECTION" in files["src/aot_tiny_constants.c"]
    line = next(x for x in files["src/aot_tiny_constants.c"].splitlines() if f"_{stream.id}[" in x)
    assert "AOT_ALIGNED(64)" in line
    assert "AOT_ALIGNED(64);" in files["src/aot_tiny.c"]  # the pool array


def test_passes_before_and_after_partitioning_run(tiny) -> None:
    import tvm

    seen = []

    def recorder(tag):
        @tvm.transform.module_pass(opt_level=0, name=f"record_{tag}")
        def record(mod, ctx):
            seen.append((tag, sorted(gv.name_hint for gv in mod.functions)))
            return mod

        return record

    class WithPasses(Recorder):
        def passes_before(self):
            return [recorder("before")]

        def passes_after(self):
            return [recorder("after")]

    partition(tiny, [WithPasses()])
    assert [tag for tag, _ in seen] == ["before", "after"]
    assert not any("rec" in name for name in seen[0][1])
    assert any(name.endswith("_rec") for name in seen[1][1])


def test_a_region_counts_the_macs_of_its_operators(tiny) -> None:
    cpu = {s.label: s.macs for s in lower(tiny, "tiny").steps}
    npu = lower(partition(tiny, [Recorder()]), "tiny").steps[1]
    assert npu.macs == cpu["DEPTHWISE_CONV_2D #1"] + cpu["CONV_2D #2"] > 0
