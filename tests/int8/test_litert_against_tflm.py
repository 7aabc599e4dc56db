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
from aot.testing.tflite_builder import TFLiteModelBuilder
from aot.validate.reference import TFLiteReference
from tests.int8.harness import compile_vm, random_input, run_vm
from tests.int8.int16_models import (
    f32,
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


POOL_OPTIONS = {"stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2}


def int8_operators_model(seed: int = 17) -> bytes:
    """The int8 operators of test_ops.py and test_ops_a.py that TFLite Micro registers,
    each once on the inputs x, y (its own quantization) and x2 (x's), with random output
    quantizations: one compile for all of them. Output k is ``plan[k]``'s, so a
    difference names its operator (output 7: RELU6 requantizing to a new scale)."""
    rng = np.random.default_rng(seed)
    shape = (1, 4, 4, 16)

    def quant() -> dict:
        return {"scale": f32(rng.uniform(0.01, 0.2)), "zero_point": int(rng.integers(-30, 30))}

    b = TFLiteModelBuilder()
    qx = quant()
    x = b.add_input("x", shape, "int8", **qx)
    y = b.add_input("y", shape, "int8", **quant())
    x2 = b.add_input("x2", shape, "int8", **qx)
    axes = b.add_constant("axes", np.array([1, 2], np.int32))
    alpha = rng.integers(-100, 100, (16,)).astype(np.int8)
    slopes = b.add_constant("slopes", alpha, scale=f32(0.01), zero_point=0)
    pooled = (1, 2, 2, 16)
    probabilities = {"scale": 1 / 256, "zero_point": -128}
    plan = [
        ("MUL", [x, y], quant(), None, shape),
        ("ADD", [x, y], quant(), None, shape),
        ("SUB", [x, y], quant(), None, shape),
        ("SQUARED_DIFFERENCE", [x, y], quant(), None, shape),
        ("MINIMUM", [x, x2], qx, None, shape),
        ("MAXIMUM", [x, x2], qx, None, shape),
        ("RELU", [x], quant(), None, shape),
        ("RELU6", [x], quant(), None, shape),
        ("RELU6", [x], qx, None, shape),
        ("LOGISTIC", [x], probabilities, None, shape),
        ("TANH", [x], {"scale": 1 / 128, "zero_point": 0}, None, shape),
        ("HARD_SWISH", [x], quant(), None, shape),
        ("LEAKY_RELU", [x], quant(), {"alpha": 0.2}, shape),
        ("QUANTIZE", [x], quant(), None, shape),
        ("MAX_POOL_2D", [x], qx, {"padding": "SAME", **POOL_OPTIONS}, pooled),
        ("AVERAGE_POOL_2D", [x], qx, {"padding": "VALID", **POOL_OPTIONS}, pooled),
        ("MEAN", [x, axes], quant(), {"keep_dims": True}, (1, 1, 1, 16)),
        ("PRELU", [x, slopes], quant(), None, shape),
        ("SOFTMAX", [x], probabilities, {"beta": 1.0}, shape),
        ("ABS", [x], quant(), None, shape),
    ]
    for index, (op, inputs, out_quant, options, out_shape) in enumerate(plan):
        out = b.add_tensor(f"out{index}", out_shape, "int8", **out_quant)
        b.add_operator(op, inputs, [out], options)
        b.mark_output(out)
    return b.build()


@dataclass(frozen=True)
class CrossCheck:
    build: Callable[[], bytes]
    # "litert" when aot's default rounding is TFLite Micro's for every operator of the
    # model; "double" when a FULLY_CONNECTED makes LiteRT round singly.
    tflm_rounding: str = "litert"
    # Outputs TFLite Micro's kernels compute differently (not by rounding): docs/int8.md.
    differs: tuple[int, ...] = ()


CASES = {
    # RELU6 to a new scale: TFLite Micro clamps the stored input without requantizing.
    "int8_operators": CrossCheck(int8_operators_model, differs=(7,)),
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
