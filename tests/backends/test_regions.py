"""The Backend API's region helpers (aot/backends/regions.py), used by a backend of the
test's own: which operators' results a region returns, where the tensors inside it live,
and the C frame of a step function."""

from __future__ import annotations

import pytest

from aot.backends import Artifact, Backend, EmitContext, OperatorPattern, Region
from aot.backends.regions import (
    OUTPUT,
    PARAM,
    SCRATCH,
    OperandRef,
    layout,
    operand_pointer,
    region_outputs,
    step_function,
)
from aot.frontend import import_model
from aot.lowering import lower
from aot.partition import partition
from aot.testing.shared import mlperf_tiny

pytestmark = pytest.mark.unit

KINDS = ("conv2d_int8", "depthwise_conv2d_int8")


class Chain(Backend):
    """Takes kws's convolutions (one region of nine) and keeps what layout() said."""

    name = "chain"

    def __init__(self) -> None:
        super().__init__()
        self.layouts: list = []

    def patterns(self):
        return [OperatorPattern("convs", KINDS)]

    def lower(self, region: Region, ctx=None) -> Artifact:
        placed = layout(region, alignment=32)
        self.layouts.append((region, placed))
        return Artifact(region.symbol, payload=placed, scratch_bytes=placed.scratch_bytes)


@pytest.fixture(scope="module")
def kws_chain():
    backend = Chain()
    lower(partition(import_model(mlperf_tiny("kws_ref_model"), "auto"), [backend]), "m")
    ((region, placed),) = backend.layouts
    return region, placed


def test_region_outputs_name_the_operators_whose_results_leave(kws_chain) -> None:
    region, _ = kws_chain
    assert len(region.operators) == 9
    assert region_outputs(region.function) == {8: 0}  # the last convolution's result


def test_layout_wires_params_outputs_and_scratch_first_fit(kws_chain) -> None:
    region, placed = kws_chain
    first, second, last = placed.operands[0], placed.operands[1], placed.operands[-1]
    assert first["data"] == OperandRef(PARAM, 0) and first["weight"] == OperandRef(PARAM, 1)
    assert last["output"] == OperandRef(OUTPUT, 0)
    # A chain: each tensor inside lives from its producer to the next operator, so two
    # slices alternate, the second after the first (aligned to 32).
    size = region.operators[0].output.size_bytes
    aligned = -(-size // 32) * 32
    assert first["output"] == OperandRef(SCRATCH, 0) == second["data"]
    assert second["output"] == OperandRef(SCRATCH, aligned)
    assert placed.operands[2]["output"] == OperandRef(SCRATCH, 0)
    # Never two live tensors on the same bytes, and the scratch is exactly the top.
    spans = [
        (i, ops["output"].index, region.operators[i].output.size_bytes)
        for i, ops in enumerate(placed.operands)
        if ops["output"].kind == SCRATCH
    ]
    for i, offset, size in spans:
        for j, offset2, size2 in spans:
            if j == i + 1:  # live together: i is read by j while j writes
                assert offset + size <= offset2 or offset2 + size2 <= offset
    assert placed.scratch_bytes == max(o + -(-s // 32) * 32 for _, o, s in spans)


def test_step_function_frames_the_backends_statements() -> None:
    ctx = EmitContext(
        model="m",
        args=("in0", "w1", "out0"),
        arg_types=("int8_t", "int8_t", "int8_t"),
        scratch="aot_m_pool_sram + 64",
        error_prefix="AOT_ERR_MODEL",
    )
    code = step_function("aot_m_go", ctx, 2, 1, ["return dev_run(p0, p1, o0, scratch);"],
                         ["static int dev;"], includes=('"dev.h"',))  # fmt: skip
    signature = "int32_t aot_m_go(const int8_t* p0, const int8_t* p1, int8_t* o0, uint8_t* scratch)"
    assert code.prototypes == (f"{signature};",)
    assert code.functions == (
        f"static int dev;\n{signature} {{\n  return dev_run(p0, p1, o0, scratch);\n}}",
    )
    assert code.call == (
        "{",
        "  int32_t err = aot_m_go(in0, w1, out0, (uint8_t*)(void*)(aot_m_pool_sram + 64));",
        "  if (err != 0) return err;",
        "}",
    )
    assert code.includes == ('"dev.h"',)
    assert operand_pointer(OperandRef(SCRATCH, 48), "int32_t") == "(int32_t*)(void*)(scratch + 48)"
    assert operand_pointer(OperandRef(PARAM, 1)) == "p1"
