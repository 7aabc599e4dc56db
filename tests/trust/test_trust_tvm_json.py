"""apache-tvm-ffi 0.1.15.post2 segfaults in tvm.ir.save_json; the pinned version must not.

In a subprocess, so a crash is a failed test with its exit code instead of a dead pytest.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

ROUND_TRIP = """
import tvm
from tvm import relax

bb = relax.BlockBuilder()
x = relax.Var("x", relax.TensorType((1, 8), "float32"))
with bb.function("main", [x]):
    with bb.dataflow():
        y = bb.emit_output(relax.op.nn.relu(relax.op.add(x, x)))
    bb.emit_func_output(y)
mod = relax.transform.LegalizeOps()(bb.get())  # a Relax function calling TIR kernels
assert any(isinstance(f, tvm.tirx.PrimFunc) for f in mod.functions.values())
text = tvm.ir.save_json(mod)
tvm.ir.assert_structural_equal(tvm.ir.load_json(text), mod)
print("round trip", len(text))
"""


def test_save_json_round_trips_a_relax_and_tir_module() -> None:
    result = subprocess.run(
        [sys.executable, "-c", ROUND_TRIP], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stderr[-2000:]}"
    assert result.stdout.startswith("round trip")
