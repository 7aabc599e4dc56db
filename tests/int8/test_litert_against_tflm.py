"""LiteRT's reference kernels against TensorFlow Lite Micro's, through aot: for the
multi-operator models of the int8 operator tests whose operators TFLite Micro registers,
aot equals LiteRT (as everywhere in tests/int8) and, where TFLite Micro rounds otherwise,
aot with ``rounding="double"`` equals TFLite Micro. An output where TFLite Micro's kernel
computes something else entirely is listed, and the test checks it still differs, so the
table in docs/int8.md ("LiteRT against TFLite Micro") stays true.

Not here, because TFLite Micro cannot run them: group A's model (TFLite Micro has no int8
NEG), group D's (SELECT_V2 takes no int32), the BATCH_MATMUL/EXP/RSQRT model (EXP is
float32 only), the indexing model (BROADCAST_TO needs a constant shape) and the int32
ADD_N of the division model (TFLite Micro's ADD_N is float32 and int8 only). The stateful
SVDF model runs as a session of inferences in both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from aot.testing.harness import random_inputs
from aot.testing.reference import TFLMReference
from aot.validate.reference import TFLiteReference
from tests.int8.harness import compile_vm, random_input, run_vm
from tests.int8.int16_models import (
    fc_16x8_model,
    int16_activations_model,
    int16_copies_model,
    int16_pooling_model,
)
from tests.int8.svdf_models import litert_session, svdf_keyword_model
from tests.int8.test_ops_state import run_vm_steps
from tests.int8.transpose_norm_models import conv_16x8_chain_model, ops_e_model

pytestmark = pytest.mark.unit

INPUT_SETS = 5


@dataclass(frozen=True)
class CrossCheck:
    build: Callable[[], bytes]
    # "litert" when aot's default rounding is TFLite Micro's for every operator of the
    # model; "double" when a FULLY_CONNECTED makes LiteRT round singly.
    tflm_rounding: str = "litert"
    # Outputs TFLite Micro's kernels compute differently (not by rounding): docs/int8.md.
    differs: tuple[int, ...] = ()


CASES = {
    "transpose_conv_log_softmax_l2_norm": CrossCheck(ops_e_model),
    "conv_and_depthwise_16x8": CrossCheck(conv_16x8_chain_model),
    # TFLite Micro rescales the 16x8 FULLY_CONNECTED's int64 accumulator with the int64
    # MultiplyByQuantizedMultiplier (a multiplier reduced to 16 bits), which aot's
    # rounding="double" does not select for this operator: 1 step on some values.
    "fully_connected_16x8": CrossCheck(fc_16x8_model, tflm_rounding="double", differs=(0,)),
    "int16_pooling": CrossCheck(int16_pooling_model),
    "int16_copies": CrossCheck(int16_copies_model),
    # Output 0 passes through a RELU6 whose output scale is not its input's: TFLite
    # Micro clamps the stored values without requantizing.
    "int16_activations": CrossCheck(int16_activations_model, differs=(0,)),
}


@pytest.mark.parametrize("name", CASES)
def test_litert_and_tflite_micro_agree_through_aot(name: str) -> None:
    case = CASES[name]
    model = case.build()
    litert, tflm = TFLiteReference(model), TFLMReference(model)
    specs = [{"dtype": s.dtype, "shape": s.shape} for s in litert.inputs]
    batches = random_inputs(specs, INPUT_SETS, seed=1300)
    _, vm = compile_vm(model)
    vm_tflm = vm if case.tflm_rounding == "litert" else compile_vm(model, case.tflm_rounding)[1]
    differing = set()
    for inputs in batches:
        for got, want in zip(run_vm(vm, inputs), litert.run(inputs), strict=True):
            np.testing.assert_array_equal(got, want)
        outputs = zip(run_vm(vm_tflm, inputs), tflm.run(inputs), strict=True)
        for index, (got, want) in enumerate(outputs):
            if index not in case.differs:
                np.testing.assert_array_equal(got, want, err_msg=f"output {index}")
            elif not np.array_equal(got, want):
                differing.add(index)
    assert differing == set(case.differs)


def test_svdf_keyword_model_carries_state_as_either_interpreter() -> None:
    """Two SVDF layers and a FULLY_CONNECTED over 8 inferences, the state carried: aot
    equals LiteRT's session, and with rounding="double" TFLite Micro's (the FULLY_CONNECTED
    rounds otherwise: the two interpreters differ by a step on some inferences)."""
    model = svdf_keyword_model()
    rng = np.random.default_rng(1310)
    steps = [random_input(rng, (1, 20)) for _ in range(8)]
    tflm = TFLMReference(model)
    tflm.interpreter.reset()
    tflm_outputs = [tflm.run([x], reset=False)[0] for x in steps]
    litert_outputs = litert_session(model, [[x] for x in steps])
    for got, want in zip(run_vm_steps(model, steps), litert_outputs, strict=True):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(run_vm_steps(model, steps, "double"), tflm_outputs, strict=True):
        np.testing.assert_array_equal(got, want)
    assert any(not np.array_equal(a, b) for a, b in zip(litert_outputs, tflm_outputs))
