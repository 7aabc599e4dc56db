"""Reachability on a real model, end to end on the host: steps assigned to a second target
get their buffers only where it reaches, copy steps move tensors between pools, and the
generated C still computes exactly what TFLite's reference kernels compute.

Until a partition stage assigns steps to accelerators, the test assigns the convolutions
of pretrainedResnet_quant to a target "npu" itself (what partitioning will do); the CPU
kernels still run them, so the host run checks the plan and the copies, not an NPU.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from aot.codegen.c_kernel import c_type
from aot.codegen.executor import generate_sources
from aot.compiler import CompileOptions, plan_lowered
from aot.errors import PlanningError
from aot.frontend import import_model
from aot.library import copy_runtime_headers, write_files
from aot.lowering import lower
from aot.planning.model import PoolSpec
from aot.planning.order import schedule
from aot.testing.shared import mlperf_tiny
from aot.toolchain import find_tool

pytestmark = [pytest.mark.toolchain, pytest.mark.slow]

MODEL = "pretrainedResnet_quant"
CPU, BOTH, NPU = ("cpu",), ("cpu", "npu"), ("npu",)


@pytest.fixture(scope="module")
def lowered():
    path = mlperf_tiny(MODEL)  # missing shared data fails here, loudly
    model = schedule(lower(import_model(path, "auto"), "net"))
    steps = tuple(
        replace(s, target="npu") if s.label.startswith("CONV_2D") else s for s in model.steps
    )
    # An in-place ADD would join a tensor the NPU writes with one the CPU writes into one
    # buffer that no copy may split; partitioning keeps in place within one target.
    shared = {
        out: src
        for out, src in model.shared.items()
        if {s.target for s in steps if out in s.args or src in s.args} == {"cpu"}
    }
    return replace(model, steps=steps, shared=shared)


MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "aot_net.h"

static unsigned copies, copied;

/* The port's copy hook, counting what it moves. */
void aot_platform_copy(void* dst, const void* src, size_t n) {
  memcpy(dst, src, n);
  copies += 1u;
  copied += (unsigned)n;
}

static INPUT_T input[AOT_NET_INPUT_INPUT_SIZE / sizeof(INPUT_T)];
static OUTPUT_T output[AOT_NET_OUTPUT_OUTPUT_SIZE / sizeof(OUTPUT_T)];

int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "rb");
  if (f == NULL || fread(input, 1, sizeof input, f) != sizeof input) return 3;
  fclose(f);
  struct aot_net_inputs in = {input};
  struct aot_net_outputs out = {output};
  if (aot_net_run(&in, &out) != AOT_OK) return 2;
  fwrite(output, 1, sizeof output, stdout);
  fprintf(stderr, "%u %u\n", copies, copied);
  return argc > 2;
}
"""


def _run(lowered, plan, tmp_path: Path) -> tuple[np.ndarray, int, int]:
    """Generate, compile with the host compiler and run once on the reference input."""
    library = tmp_path / "model"
    write_files(library, generate_sources(lowered, plan).files)
    copy_runtime_headers(library / "include")
    (inp,), (outp,) = lowered.inputs, lowered.outputs
    main = MAIN.replace("INPUT_INPUT", f"INPUT_{inp.name.upper()}")
    main = main.replace("OUTPUT_OUTPUT", f"OUTPUT_{outp.name.upper()}")
    main = main.replace("INPUT_T", c_type(inp.dtype)).replace("OUTPUT_T", c_type(outp.dtype))
    (tmp_path / "main.c").write_text(main)
    exe = tmp_path / "net"
    sources = [tmp_path / "main.c", *sorted((library / "src").glob("*.c"))]
    subprocess.run(
        [str(find_tool("cc")), "-std=c99", "-O1", "-Wall", "-Werror"]
        + [f"-I{library / 'include'}", f"-I{library / 'src'}"]
        + [str(s) for s in sources]
        + ["-lm", "-o", str(exe)],
        check=True,
    )
    shared = mlperf_tiny(MODEL).parent
    x = np.load(shared / f"{MODEL}.input.npy")
    (tmp_path / "input.bin").write_bytes(np.ascontiguousarray(x).tobytes())
    done = subprocess.run([str(exe), str(tmp_path / "input.bin")], capture_output=True, check=True)
    got = np.frombuffer(done.stdout, dtype=outp.dtype).reshape(outp.shape)
    np.testing.assert_array_equal(got, np.load(shared / f"{MODEL}.output.npy"))
    count, moved = (int(v) for v in done.stderr.split())
    return got, count, moved


def _options(npu_pool: PoolSpec, allow_copies: bool) -> CompileOptions:
    return CompileOptions(
        name="net", pools=(PoolSpec("dtcm", None, CPU), npu_pool), allow_copies=allow_copies
    )


def _assert_reached(planned, options: CompileOptions) -> None:
    targets = {p.name: set(p.targets) for p in options.pools}
    for b in planned.buffers:
        assert set(b.targets) <= targets[planned.plan.placement(b.name).pool], b.name


def test_no_shared_pool_fails_or_copies_and_stays_bit_exact(lowered, tmp_path: Path) -> None:
    npu_only = PoolSpec("npu_sram", None, NPU)
    with pytest.raises(PlanningError) as info:
        plan_lowered(lowered, _options(npu_only, False))
    message = str(info.value)
    assert "\n" not in message and "no pool is reachable by cpu and npu" in message
    assert "(CONV_2D #0)' on npu" in message and "--allow-copies" in message

    options = _options(npu_only, True)
    planned = plan_lowered(lowered, options)
    _assert_reached(planned, options)
    assert planned.plan.copies
    _, count, moved = _run(lowered, planned.plan, tmp_path)
    assert count == len(planned.plan.copies)
    assert moved == sum(c.size for c in planned.plan.copies)


def test_small_shared_pool_fails_or_copies_and_stays_bit_exact(lowered, tmp_path: Path) -> None:
    # Both reach npu_sram, but its 32 KiB cannot hold the 48 KiB the NPU's steps and the
    # residual tensor need at once; staging the residual through dtcm fits.
    small = PoolSpec("npu_sram", 32 * 1024, BOTH)
    with pytest.raises(PlanningError) as info:
        plan_lowered(lowered, _options(small, False))
    message = str(info.value)
    assert "pool 'npu_sram' (32768 bytes)" in message and "--allow-copies" in message

    options = _options(small, True)
    planned = plan_lowered(lowered, options)
    _assert_reached(planned, options)
    assert planned.plan.pool_sizes["npu_sram"] <= 32 * 1024 and planned.plan.copies
    _, count, _ = _run(lowered, planned.plan, tmp_path)
    assert count == len(planned.plan.copies)


def test_a_plan_without_copies_calls_no_copy(lowered, tmp_path: Path) -> None:
    options = _options(PoolSpec("npu_sram", None, BOTH), True)
    planned = plan_lowered(lowered, options)
    assert planned.plan.copies == ()
    _assert_reached(planned, options)
    assert _run(lowered, planned.plan, tmp_path)[1] == 0


def test_inspect_shows_targets_users_and_copies(lowered) -> None:
    from aot.cli.inspect import describe, format_text, load_plan, picture
    from aot.compiler import memory_metadata, operators_metadata
    from aot.planning import validate_plan

    options = _options(PoolSpec("npu_sram", None, NPU), True)
    planned = plan_lowered(lowered, options)
    metadata = {
        "model": {"name": "net"},
        "operators": operators_metadata(lowered),
        "memory": memory_metadata(lowered, planned, options),
    }
    assert {op["target"] for op in metadata["operators"]} == {"cpu", "npu"}
    loaded = load_plan(metadata)
    validate_plan(loaded.plan, loaded.buffers, loaded.pools)  # reachability included
    report = describe(loaded, metadata)
    convs = sum(op["label"].startswith("CONV_2D") for op in metadata["operators"])
    copies = len(planned.plan.copies)
    assert report["operators_by_target"] == {
        "npu": convs,
        "copy": copies,
        "cpu": len(lowered.steps) - convs,
    }
    assert len(report["copies"]) == copies
    text = format_text(report)
    assert f"{copies} on copy" in text and f"{convs} on npu" in text
    assert "touched by" in text
    staged = [b for p in report["pools"] for b in p["buffers"] if b["name"].endswith("__copy0")]
    assert staged and all(b["touched_by"] for b in staged)
    for pool in report["pools"]:
        for b in pool["buffers"]:
            assert set(b["targets"]) <= set(pool["targets"])
    svg = picture(loaded)
    assert "on npu" in svg and "reached by npu" in svg and "copy copy_" in svg
