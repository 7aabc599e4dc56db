"""The group-A operators through the whole C pipeline on the host, bit-exact with LiteRT."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.testing.harness import build, run_many
from aot.testing.reference import run_tflite_reference
from tests.int8.elementwise_movement_models import multi_operator_model, npu_model, random_inputs

pytestmark = pytest.mark.toolchain


def test_multi_operator_model_is_bit_exact_on_the_host(tmp_path: Path) -> None:
    model = tmp_path / "ops_a.tflite"
    model.write_bytes(multi_operator_model())
    # --frontend auto must pick the int8 importer: int32 indices in, int32 indices out.
    folder = build(model, tmp_path / "out", "host")
    reference = multi_operator_model(reference=True)
    batches = random_inputs(np.random.default_rng(11), 20)
    for inputs, outputs in zip(batches, run_many(folder, batches), strict=True):
        expected = run_tflite_reference(reference, inputs)
        for got, want in zip(outputs, expected, strict=True):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_new_kinds_go_to_the_ethos_u_where_vela_puts_them(tmp_path: Path, monkeypatch) -> None:
    """Vela runs SUB, LEAKY_RELU, RESIZE_BILINEAR and MAXIMUM on the NPU; unless the Ethos-U
    backend claims their kinds, aot's region stops at the CONV_2D and matches no subgraph
    of Vela's."""
    import json

    from aot.testing.shared import shared_path

    monkeypatch.setenv("ETHOSU_DRIVER_DIR", str(shared_path("ethos-u-core-driver")))
    monkeypatch.setenv("CMSIS_CORE_DIR", str(shared_path("cmsis-core")))
    model = tmp_path / "npu.tflite"
    model.write_bytes(npu_model())
    folder = build(
        model, tmp_path / "out", "mps3_an547", "--accelerator", "ethos-u55-128", "--no-build"
    )
    steps = json.loads((folder / "metadata.json").read_text())["operators"]
    assert [step["backend"] for step in steps] == ["ethos-u55-128"]
