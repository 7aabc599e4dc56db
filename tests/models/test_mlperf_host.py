"""The MLPerf Tiny int8 models, compiled for the host, are bit-exact against TFLite.

The target is ai-edge-litert's reference kernels (OpResolverType.BUILTIN_REF): the shipped
X.output.npy for X.input.npy, and the interpreter itself on seeded random inputs. TensorFlow
Lite Micro's interpreter cross-checks the same builds (docs/int8.md, "LiteRT against TFLite
Micro").
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aot.testing import run_tflite_reference
from aot.testing.harness import build, random_inputs, run_many
from aot.testing.reference import TFLMReference
from aot.testing.shared import MLPERF_TINY, mlperf_tiny, shared_dir
from tests.int8.harness import compile_vm, run_vm

pytestmark = [pytest.mark.toolchain, pytest.mark.slow]

MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = list(MLPERF_TINY)
RANDOM_INPUTS = 200
TFLM_INPUTS = 20
# Models whose FULLY_CONNECTED layers LiteRT rounds singly and TFLite Micro doubly
# (aot.frontend.tflite_int8.importer.LITERT_ROUNDING): the host build follows LiteRT.
ROUNDED_OTHERWISE_BY_TFLM = {"ad01_int8"}


@pytest.fixture(scope="module", params=MODELS)
def built(request, tmp_path_factory) -> tuple[str, Path]:
    model = mlperf_tiny(request.param)
    folder = build(model, tmp_path_factory.mktemp(request.param) / "out")
    return request.param, folder


def test_reference_output_is_exact(built) -> None:
    name, folder = built
    x = np.load(MODELS_DIR / f"{name}.input.npy")
    (got,) = run_many(folder, [[x]])[0]
    np.testing.assert_array_equal(got, np.load(MODELS_DIR / f"{name}.output.npy"))


def test_random_inputs_match_tflite_reference_kernels(built) -> None:
    name, folder = built
    specs = json.loads((folder / "metadata.json").read_text())["inputs"]
    batches = random_inputs(specs, RANDOM_INPUTS, seed=2026)
    results = run_many(folder, batches)
    model = MODELS_DIR / f"{name}.tflite"
    mismatches = []
    for index, (inputs, outputs) in enumerate(zip(batches, results, strict=True)):
        expected = run_tflite_reference(model, inputs)
        if not all(np.array_equal(a, b) for a, b in zip(outputs, expected, strict=True)):
            mismatches.append(index)
    assert mismatches == [], f"{name}: {len(mismatches)} of {RANDOM_INPUTS} inputs differ"


def test_tflite_micro_gives_the_host_build_outputs(built) -> None:
    """The shipped input and seeded random ones through TFLite Micro's interpreter: equal
    to the host build, except where TFLite Micro rounds FULLY_CONNECTED otherwise (ad01:
    a few steps on many values); there aot's rounding="double" equals TFLite Micro."""
    name, folder = built
    model = MODELS_DIR / f"{name}.tflite"
    specs = json.loads((folder / "metadata.json").read_text())["inputs"]
    batches = [[np.load(MODELS_DIR / f"{name}.input.npy")]]
    batches += random_inputs(specs, TFLM_INPUTS, seed=2027)
    tflm = TFLMReference(model)
    expected = [tflm.run(inputs) for inputs in batches]
    results = run_many(folder, batches)
    same = [
        all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
        for got, want in zip(results, expected, strict=True)
    ]
    if name not in ROUNDED_OTHERWISE_BY_TFLM:
        assert all(same), f"{name}: {same.count(False)} of {len(batches)} inputs differ"
        return
    assert not all(same)  # the difference is real; docs/int8.md records it
    _, vm = compile_vm(str(model), rounding="double")
    for inputs, want in zip(batches, expected, strict=True):
        for got, reference in zip(run_vm(vm, inputs), want, strict=True):
            np.testing.assert_array_equal(got, reference)


def weight_and_bias_bytes(model: Path) -> int:
    """Bytes of the constant tensors stored in the .tflite file."""
    import tflite

    flat = tflite.Model.GetRootAsModel(model.read_bytes(), 0)
    graph = flat.Subgraphs(0)
    total = 0
    for index in range(graph.TensorsLength()):
        buffer = flat.Buffers(graph.Tensors(index).Buffer())
        total += buffer.DataLength() if buffer is not None else 0
    return total


def test_int8_end_to_end_memory(built) -> None:
    """Weights stay int8 (constants <= 1.1x the .tflite weights and biases), activations
    are int8, and the planned workspace is within 5% of the activation lower bound and
    below the TFLite Micro arena."""
    name, folder = built
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["model"]["frontend"] == "aot-tflite-int8"
    weights = weight_and_bias_bytes(MODELS_DIR / f"{name}.tflite")
    assert meta["constants"]["bytes"] <= 1.1 * weights
    memory = meta["memory"]
    assert memory["workspace_bytes"] <= 1.05 * memory["activation_lower_bound_bytes"]
    arena = json.loads((MODELS_DIR / f"{name}.json").read_text())["tflm"]["min_arena_bytes"]
    assert memory["workspace_bytes"] < arena
    for tensor in (*meta["inputs"], *meta["outputs"], *meta["activations"]):
        assert tensor["dtype"] == "int8", tensor


@pytest.mark.parametrize("name", MODELS)
def test_io_in_pool_fits_below_the_tflite_micro_arena(name: str, tmp_path: Path) -> None:
    """With --io-in-pool every byte of RAM but the stack is planned, inputs and outputs
    included, and the total still undercuts TFLite Micro's whole arena."""
    model = mlperf_tiny(name)
    folder = build(model, tmp_path / "out", "host", "--io-in-pool")
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["memory"]["io_in_pool"] is True
    largest_io = max(t["size_bytes"] for t in (*meta["inputs"], *meta["outputs"]))
    assert meta["memory"]["workspace_bytes"] >= largest_io
    arena = json.loads((MODELS_DIR / f"{name}.json").read_text())["tflm"]["min_arena_bytes"]
    assert meta["memory"]["workspace_bytes"] < arena
    x = np.load(MODELS_DIR / f"{name}.input.npy")
    # Two runs in one session: run() overwrites the inputs in the pool, the host resends.
    results = run_many(folder, [[x], [x]])
    for (got,) in results:
        np.testing.assert_array_equal(got, np.load(MODELS_DIR / f"{name}.output.npy"))
