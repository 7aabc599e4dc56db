"""Reachability on real models, end to end on the host: buffers only where their
targets reach, copy steps that move tensors and constants between pools, and generated C
that still computes exactly what TFLite's reference kernels compute.

kws_ref_model is partitioned for real: its stride-1 convolutions go to the out-of-tree
test backend ``tinynpu`` (its own target and runtime; its C runs on the host's CPU). For
the small-shared-pool case pretrainedResnet_quant's convolutions are assigned to that
target by the test (tinynpu lowers one operator per region and resnet's convolutions are
neighbours); the CPU kernels still run them, so the run checks the plan and the copies.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from aot.building.toolchain import find_tool
from aot.codegen.executor import generate_sources
from aot.compiler import CompileOptions, plan_lowered
from aot.errors import PlanningError
from aot.frontend import import_model
from aot.library import copy_runtime_headers, write_files
from aot.lowering import lower
from aot.partition import partition
from aot.planning.memory_map import MemoryMap
from aot.planning.model import PoolSpec
from aot.planning.schedule import schedule
from aot.testing.shared import mlperf_tiny
from aot.tir_to_c.printer import c_type

pytestmark = [pytest.mark.toolchain, pytest.mark.slow]

CPU, BOTH, NPU = ("cpu",), ("cpu", "tinynpu"), ("tinynpu",)


TINYACC = Path(__file__).resolve().parents[1] / "backends" / "tinyacc_pkg"


@pytest.fixture(scope="module")
def tinynpu():
    sys.path.insert(0, str(TINYACC))
    try:
        from aot_tinyacc import TinyNpu
    finally:
        sys.path.remove(str(TINYACC))
    return TinyNpu()


@pytest.fixture(scope="module")
def kws(tinynpu):
    path = mlperf_tiny("kws_ref_model")  # missing shared data fails here, loudly
    partitioned = partition(import_model(path, "auto"), [tinynpu])
    model = schedule(lower(partitioned, "net"))
    assert {s.target for s in model.steps} == {"cpu", "tinynpu"}
    return model


@pytest.fixture(scope="module")
def resnet():
    model = lower(import_model(mlperf_tiny("pretrainedResnet_quant"), "auto"), "net")
    steps = tuple(
        replace(s, target="tinynpu") if s.label.startswith("CONV_2D") else s for s in model.steps
    )
    return schedule(replace(model, steps=steps))


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


def _run(
    lowered, planned, options: CompileOptions, tmp_path: Path, model: str = "kws_ref_model"
) -> tuple[np.ndarray, int, int]:
    """Generate, compile with the host compiler and run once on the reference input."""
    library = tmp_path / "model"
    _assert_reached(planned, options)
    files = dict(generate_sources(lowered, planned.plan).files)
    _check_calls(lowered, files["src/aot_net.c"], options)
    for backend in lowered.backends.values():
        runtime = backend.runtime()  # tinynpu's runtime, as compile_model adds it
        files.update({f"src/{f.name}": f.read_text() for f in runtime.sources})
        files.update({f"include/{f.name}": f.read_text() for f in runtime.headers})
    write_files(library, files)
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
    x = np.load(mlperf_tiny(model, ".input.npy"))
    (tmp_path / "input.bin").write_bytes(np.ascontiguousarray(x).tobytes())
    done = subprocess.run([str(exe), str(tmp_path / "input.bin")], capture_output=True, check=True)
    got = np.frombuffer(done.stdout, dtype=outp.dtype).reshape(outp.shape)
    np.testing.assert_array_equal(got, np.load(mlperf_tiny(model, ".output.npy")))
    count, moved = (int(v) for v in done.stderr.split())
    return got, count, moved


def _check_calls(lowered, executor: str, options: CompileOptions) -> None:
    """Every pointer a step passes lies in a pool its target reaches, and it passes a
    constant only if its target reaches the constants: what a device checking its operand
    addresses would demand. (Bit-exactness alone would not notice a step reading the
    home buffer instead of its staging copy.)"""
    reach = {p.name: set(p.targets) for p in options.memory.pools}
    calls = executor.split("  /* step ")[1:]
    assert len(calls) == len(lowered.steps)
    for step, text in zip(lowered.steps, calls, strict=True):
        body = text.split("*/", 1)[1].split("  /* ", 1)[0]
        pools = re.findall(r"aot_net_pool_(\w+) \+", body)
        assert all(step.target in reach[pool] for pool in pools), (step.index, body)
        constants_targets = options.memory.constants_targets
        if constants_targets is not None and step.target not in constants_targets:
            assert "aot_net_const_" not in body, (step.index, body)


def _options(npu_pool: PoolSpec, allow_copies: bool) -> CompileOptions:
    pools = (PoolSpec("dtcm", None, CPU), npu_pool)
    return CompileOptions(name="net", memory=MemoryMap(pools=pools), allow_copies=allow_copies)


def _with(options: CompileOptions, **memory) -> CompileOptions:
    """``options`` with some of its memory map's fields replaced."""
    return replace(options, memory=replace(options.memory, **memory))


def _assert_reached(planned, options: CompileOptions) -> None:
    targets = {p.name: set(p.targets) for p in options.memory.pools}
    for b in planned.buffers:
        assert set(b.targets) <= targets[planned.plan.placement(b.name).pool], b.name


def test_no_shared_pool_fails_or_copies_and_stays_bit_exact(kws, tmp_path: Path) -> None:
    lowered = kws
    npu_only = PoolSpec("npu_sram", None, NPU)
    with pytest.raises(PlanningError) as info:
        plan_lowered(lowered, _options(npu_only, False))
    message = str(info.value)
    assert "\n" not in message and "no pool is reachable by cpu and tinynpu" in message
    assert "'step 2 (CONV_2D #2)' on tinynpu" in message and "--allow-copies" in message

    options = _options(npu_only, True)
    planned = plan_lowered(lowered, options)
    _assert_reached(planned, options)
    assert planned.plan.copies
    _, count, moved = _run(lowered, planned, options, tmp_path)
    assert count == len(planned.plan.copies)
    assert moved == sum(c.size for c in planned.plan.copies)


def test_small_shared_pool_fails_or_copies_and_stays_bit_exact(resnet, tmp_path: Path) -> None:
    lowered = resnet
    # Both reach npu_sram, but its 32 KiB cannot hold the 48 KiB the NPU's steps and the
    # residual tensor need at once; staging the residual through dtcm fits.
    # resnet's first convolution reads the model input: say the caller's memory is one
    # both reach (as on a board whose data memory the NPU reaches).
    small = PoolSpec("npu_sram", 32 * 1024, BOTH)
    with pytest.raises(PlanningError) as info:
        plan_lowered(lowered, _with(_options(small, False), io_targets=BOTH))
    message = str(info.value)
    assert "pool 'npu_sram' (32768 bytes)" in message and "--allow-copies" in message

    options = _with(_options(small, True), io_targets=BOTH)
    planned = plan_lowered(lowered, options)
    _assert_reached(planned, options)
    assert planned.plan.pool_sizes["npu_sram"] <= 32 * 1024 and planned.plan.copies
    _, count, _ = _run(lowered, planned, options, tmp_path, "pretrainedResnet_quant")
    assert count == len(planned.plan.copies)


def test_caller_input_out_of_reach_fails_or_is_staged(resnet, tmp_path: Path) -> None:
    """The caller's input is in CPU memory; resnet's first convolution, on tinynpu, reads
    it directly: a one-line error naming it, or a copy into a pool tinynpu reaches."""
    options = _options(PoolSpec("npu_sram", None, BOTH), False)
    with pytest.raises(PlanningError) as info:
        plan_lowered(resnet, options)
    message = str(info.value)
    assert "\n" not in message and message.startswith("model input 'tensor_0_input_1_int8'")
    assert "read directly by 'step 0 (CONV_2D #0)' on tinynpu" in message
    assert "--io-in-pool" in message and "--allow-copies" in message
    options = replace(options, allow_copies=True)
    planned = plan_lowered(resnet, options)
    (copy,) = planned.plan.copies
    assert (copy.src, copy.before) == ("tensor_0_input_1_int8", 0)
    assert planned.plan.placement(copy.dst).pool == "npu_sram"
    _, count, moved = _run(resnet, planned, options, tmp_path, "pretrainedResnet_quant")
    assert (count, moved) == (1, copy.size)


def test_a_plan_without_copies_calls_no_copy(kws, tmp_path: Path) -> None:
    lowered = kws
    options = _options(PoolSpec("npu_sram", None, BOTH), True)
    planned = plan_lowered(lowered, options)
    assert planned.plan.copies == ()
    _assert_reached(planned, options)
    assert _run(lowered, planned, options, tmp_path)[1] == 0


def test_inspect_shows_targets_users_and_copies(kws) -> None:
    lowered = kws
    from aot.artifacts import LibraryManifest
    from aot.artifacts.assemble import memory_info, operator_entries
    from aot.artifacts.manifest import ModelInfo
    from aot.cli.inspect import describe, format_text, load_plan, picture
    from aot.planning import validate_plan

    options = _options(PoolSpec("npu_sram", None, NPU), True)
    planned = plan_lowered(lowered, options)
    manifest = LibraryManifest(
        model=ModelInfo(name="net"),
        operators=operator_entries(lowered),
        memory=memory_info(lowered, planned, options),
    )
    assert {op.target for op in manifest.operators} == {"cpu", "tinynpu"}
    loaded = load_plan(manifest)
    validate_plan(loaded.plan, loaded.buffers, loaded.pools)  # reachability included
    report = describe(loaded, manifest)
    convs = sum(op.target == "tinynpu" for op in manifest.operators)
    copies = len(planned.plan.copies)
    assert report["operators_by_target"] == {
        "tinynpu": convs,
        "copy": copies,
        "cpu": len(lowered.steps) - convs,
    }
    assert len(report["copies"]) == copies
    text = format_text(report)
    assert f"{copies} on copy" in text and f"{convs} on tinynpu" in text
    assert "touched by" in text
    staged = [b for p in report["pools"] for b in p["buffers"] if b["name"].endswith("__copy0")]
    assert staged and all(b["touched_by"] for b in staged)
    for pool in report["pools"]:
        for b in pool["buffers"]:
            assert set(b["targets"]) <= set(pool["targets"])
    svg = picture(loaded)
    assert "on tinynpu" in svg and "reached by tinynpu" in svg and "copy copy_" in svg


def test_constants_out_of_reach_fail_or_are_staged(kws, tmp_path: Path) -> None:
    # tinynpu reads its weights and descriptor from the constants memory; say only the
    # CPU reaches it. tinyacc_begin checks the descriptor it is given, so a wrong staging
    # copy would fail the run.
    options = _with(_options(PoolSpec("npu_sram", None, BOTH), False), constants_targets=CPU)
    with pytest.raises(PlanningError) as info:
        plan_lowered(kws, options)
    message = str(info.value)
    assert "\n" not in message and message.startswith("constant 'tensor_")
    assert "on tinynpu, which cannot reach the constants memory 'constants' (cpu)" in message
    assert "--allow-copies" in message
    options = replace(options, allow_copies=True)
    planned = plan_lowered(kws, options)
    _assert_reached(planned, options)
    readers = {
        (step.index, t) for step in kws.steps if step.target == "tinynpu" for t in step.reads
    }
    constants = {t.id for t in kws.tensors if t.kind == "constant"}
    assert len(planned.plan.copies) == len({t for _, t in readers if t in constants})
    _, count, moved = _run(kws, planned, options, tmp_path)
    assert count == len(planned.plan.copies) and moved == sum(c.size for c in planned.plan.copies)
