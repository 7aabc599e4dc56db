"""Build the example models shipped in ``examples/``: a tiny keyword-spotting-like CNN.

    python examples/make_example_model.py [--out-dir DIR]

The network (NHWC)::

    input 1x16x16x1
    CONV_2D 3x3, 8 channels, stride 2, SAME, RELU      -> 1x8x8x8
    DEPTHWISE_CONV_2D 3x3, stride 1, SAME              -> 1x8x8x8
    CONV_2D 1x1, 16 channels, RELU6                    -> 1x8x8x16
    AVERAGE_POOL_2D 8x8                                -> 1x1x1x16
    RESHAPE                                            -> 1x16
    FULLY_CONNECTED                                    -> 1x4
    SOFTMAX                                            -> 1x4

Float weights come from ``numpy.random.default_rng(2026)``; instead of training, the
classifier layer is rescaled and centred on seeded inputs so the predicted class depends
on the input. The int8 model is made the way a post-training quantizer would: weights
symmetric per output channel, biases int32 at ``input_scale * weight_scale``, activation
ranges calibrated by running the float network (with the int8 weights dequantized) on
seeded inputs in the reference interpreter. Everything is seeded, so running this again
writes identical files.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from aot.testing import TFLiteModelBuilder, run_tflite_reference

SEED = 2026
INPUT_SHAPE = (1, 16, 16, 1)
NUM_CLASSES = 4
INPUT_QUANT = (1 / 128, 0)  # real input in [-1, 1)
SOFTMAX_QUANT = (1 / 256, -128)  # what TFLite's int8 SOFTMAX requires
CALIBRATION_INPUTS = 32
LOGIT_SPREAD = 2.0  # standard deviation of each logit over the calibration inputs
# Values derived from float runs of the network (calibrated scales, the fitted classifier)
# keep 3 significant digits, so tiny float differences between machines cannot change
# the written bytes.
SIGNIFICANT_DIGITS = 3

# Activation tensors in graph order; pool and flatten share conv2's quantization because
# int8 AVERAGE_POOL_2D and RESHAPE do not rescale.
CALIBRATED = ("conv1", "dwconv", "conv2", "logits")
Quant = tuple[float, int]


@dataclass(frozen=True)
class Weights:
    """Float parameters; conv weights OHWI, depthwise 1HWC, fully connected (out, in)."""

    conv1_w: np.ndarray
    conv1_b: np.ndarray
    dw_w: np.ndarray
    dw_b: np.ndarray
    conv2_w: np.ndarray
    conv2_b: np.ndarray
    fc_w: np.ndarray
    fc_b: np.ndarray


def make_weights(rng: np.random.Generator) -> Weights:
    def he(shape: tuple[int, ...], fan_in: int, gain: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * gain * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(n: int) -> np.ndarray:
        return (rng.standard_normal(n) * 0.1).astype(np.float32)

    return Weights(
        conv1_w=he((8, 3, 3, 1), 9),
        conv1_b=bias(8),
        dw_w=he((1, 3, 3, 8), 9),
        dw_b=bias(8),
        conv2_w=he((16, 1, 1, 8), 8),
        conv2_b=bias(16),
        fc_w=he((NUM_CLASSES, 16), 16),
        fc_b=bias(NUM_CLASSES),
    )


def make_inputs(rng: np.random.Generator, count: int) -> np.ndarray:
    """int8 "spectrograms": smooth random blobs plus noise, at varying loudness."""
    coarse = rng.standard_normal((count, 4, 4))
    smooth = np.kron(coarse, np.ones((4, 4)))  # 4x4 -> 16x16 blocks
    noise = rng.standard_normal((count, 16, 16)) * 0.3
    loudness = rng.uniform(0.2, 0.6, size=(count, 1, 1))
    real = (smooth + noise) * loudness
    q = np.clip(np.round(real / INPUT_QUANT[0]) + INPUT_QUANT[1], -128, 127)
    return q.astype(np.int8).reshape(count, *INPUT_SHAPE)


def quantize_per_channel(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per channel along ``axis``: returns (int8 weights, float32 scales)."""
    other = tuple(i for i in range(w.ndim) if i != axis)
    scales = (np.abs(w).max(axis=other) / 127.0).astype(np.float32)
    scales[scales == 0] = 1.0
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scales.reshape(shape)), -127, 127).astype(np.int8)
    return q, scales


def dequantize_per_channel(q: np.ndarray, scales: np.ndarray, axis: int) -> np.ndarray:
    shape = [1] * q.ndim
    shape[axis] = -1
    return (q.astype(np.float32) * scales.reshape(shape)).astype(np.float32)


def quant_from_range(lo: float, hi: float) -> Quant:
    """Asymmetric int8 parameters for [lo, hi] widened to contain 0 (TFLite requires it)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = float(_significant(np.array((hi - lo) / 255.0 or 1.0)))
    zero_point = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return scale, zero_point


# Axis of the output channel in each weight tensor (depthwise is 1HWC).
_WEIGHT_AXIS = {"conv1_w": 0, "dw_w": 3, "conv2_w": 0}


def build_network(
    weights: Weights,
    quant: dict[str, Quant] | None = None,
    expose: tuple[str, ...] = (),
) -> bytes:
    """The network as TFLite bytes: float32 when ``quant`` is None, else int8.

    ``expose`` marks those intermediate tensors as extra outputs (for calibration).
    """
    b = TFLiteModelBuilder(description="aot example: tiny keyword-spotting CNN")
    dtype = "float32" if quant is None else "int8"

    def q(name: str) -> dict[str, float | int]:
        return {} if quant is None else {"scale": quant[name][0], "zero_point": quant[name][1]}

    def params(name: str, input_name: str) -> tuple[int, int]:
        w = getattr(weights, f"{name}_w")
        bias = getattr(weights, f"{name}_b")
        if quant is None:
            return b.add_constant(f"{name}/weights", w), b.add_constant(f"{name}/bias", bias)
        if name == "fc":
            # The TFLite converter quantizes FULLY_CONNECTED weights per tensor.
            w_scales = np.array([np.abs(w).max() / 127.0], dtype=np.float32)
            wq = np.clip(np.round(w / w_scales[0]), -127, 127).astype(np.int8)
            w_index = b.add_constant(f"{name}/weights", wq, scale=float(w_scales[0]), zero_point=0)
        else:
            axis = _WEIGHT_AXIS[f"{name}_w"]
            wq, w_scales = quantize_per_channel(w, axis)
            w_index = b.add_constant(
                f"{name}/weights",
                wq,
                scale=w_scales.tolist(),
                zero_point=[0] * len(w_scales),
                quantized_dimension=axis,
            )
        bias_scales = np.float64(quant[input_name][0]) * w_scales.astype(np.float64)
        bq = np.round(bias / bias_scales).astype(np.int32)
        if len(bias_scales) == 1:
            b_index = b.add_constant(f"{name}/bias", bq, scale=float(bias_scales[0]), zero_point=0)
        else:
            b_index = b.add_constant(
                f"{name}/bias", bq, scale=bias_scales.tolist(), zero_point=[0] * len(bq)
            )
        return w_index, b_index

    x = b.add_input("input", INPUT_SHAPE, dtype, **q("input"))

    conv1 = b.add_tensor("conv1", (1, 8, 8, 8), dtype, **q("conv1"))
    b.add_operator(
        "CONV_2D",
        [x, *params("conv1", "input")],
        [conv1],
        {"padding": "SAME", "stride_w": 2, "stride_h": 2, "fused_activation_function": "RELU"},
    )
    dwconv = b.add_tensor("dwconv", (1, 8, 8, 8), dtype, **q("dwconv"))
    b.add_operator(
        "DEPTHWISE_CONV_2D",
        [conv1, *params("dw", "conv1")],
        [dwconv],
        {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1},
    )
    conv2 = b.add_tensor("conv2", (1, 8, 8, 16), dtype, **q("conv2"))
    b.add_operator(
        "CONV_2D",
        [dwconv, *params("conv2", "dwconv")],
        [conv2],
        {"padding": "SAME", "fused_activation_function": "RELU6"},
    )
    pool = b.add_tensor("pool", (1, 1, 1, 16), dtype, **q("conv2"))
    b.add_operator(
        "AVERAGE_POOL_2D",
        [conv2],
        [pool],
        {"padding": "VALID", "filter_width": 8, "filter_height": 8, "stride_w": 8, "stride_h": 8},
    )
    flatten = b.add_tensor("flatten", (1, 16), dtype, **q("conv2"))
    new_shape = b.add_constant("flatten/shape", np.array([1, 16], dtype=np.int32))
    b.add_operator("RESHAPE", [pool, new_shape], [flatten], {"new_shape": [1, 16]})
    logits = b.add_tensor("logits", (1, NUM_CLASSES), dtype, **q("logits"))
    b.add_operator("FULLY_CONNECTED", [flatten, *params("fc", "conv2")], [logits])
    probs = b.add_tensor("probs", (1, NUM_CLASSES), dtype, **q("probs"))
    b.add_operator("SOFTMAX", [logits], [probs], {"beta": 1.0})

    b.mark_output(probs)
    names = {"conv1": conv1, "dwconv": dwconv, "conv2": conv2, "flatten": flatten, "logits": logits}
    for name in expose:
        b.mark_output(names[name])
    return b.build()


def dequantized_weights(weights: Weights) -> Weights:
    """The weights the int8 model really uses, back in float (for calibration)."""
    changes: dict[str, np.ndarray] = {}
    for field_name, axis in _WEIGHT_AXIS.items():
        wq, scales = quantize_per_channel(getattr(weights, field_name), axis)
        changes[field_name] = dequantize_per_channel(wq, scales, axis)
    fc_scale = np.abs(weights.fc_w).max() / 127.0
    changes["fc_w"] = (np.clip(np.round(weights.fc_w / fc_scale), -127, 127) * fc_scale).astype(
        np.float32
    )
    return replace(weights, **changes)


def fit_classifier(weights: Weights, inputs_q: np.ndarray) -> Weights:
    """Stand-in for training: rescale and centre the logits over ``inputs_q``.

    Random weights on all-positive pooled features give every input the same winning
    class; centring each logit and giving it a spread of a few units makes the class
    probabilities depend on the input, as a trained classifier's do.
    """
    model = build_network(weights, None, expose=("flatten",))
    features = np.concatenate(
        [run_tflite_reference(model, [_dequantize_input(x)])[1] for x in inputs_q]
    ).astype(np.float64)
    centred = features - features.mean(axis=0)
    logits = centred @ weights.fc_w.T.astype(np.float64)
    gain = _significant(LOGIT_SPREAD / logits.std(axis=0)).astype(np.float32)
    fc_w = weights.fc_w * gain[:, None]
    fc_b = _significant(-(features.mean(axis=0) @ fc_w.T.astype(np.float64)))
    return replace(weights, fc_w=fc_w, fc_b=fc_b.astype(np.float32))


def calibrate(weights: Weights, inputs_q: np.ndarray) -> dict[str, Quant]:
    """Activation quantization from the float network's ranges over ``inputs_q``."""
    model = build_network(dequantized_weights(weights), None, expose=CALIBRATED)
    lo = dict.fromkeys(CALIBRATED, np.inf)
    hi = dict.fromkeys(CALIBRATED, -np.inf)
    for xq in inputs_q:
        outputs = run_tflite_reference(model, [_dequantize_input(xq)])[1:]
        for name, value in zip(CALIBRATED, outputs, strict=True):
            lo[name] = min(lo[name], float(value.min()))
            hi[name] = max(hi[name], float(value.max()))
    quant = {name: quant_from_range(lo[name], hi[name]) for name in CALIBRATED}
    quant["input"] = INPUT_QUANT
    quant["probs"] = SOFTMAX_QUANT
    return quant


def write_examples(out_dir: Path) -> list[Path]:
    """Write both example models with their sample input and reference output."""
    rng = np.random.default_rng(SEED)
    weights = make_weights(rng)
    calibration = make_inputs(rng, CALIBRATION_INPUTS)
    sample_q = make_inputs(rng, 1)[0]
    sample_f = _dequantize_input(sample_q)

    weights = fit_classifier(weights, calibration)
    quant = calibrate(weights, calibration)
    int8_model = build_network(weights, quant)
    float_model = build_network(weights)
    _check_outputs_vary(int8_model, calibration)

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for stem, model, sample in (
        ("tiny_kws_int8", int8_model, sample_q),
        ("tiny_kws_float", float_model, sample_f),
    ):
        (output,) = run_tflite_reference(model, [sample])
        written.append(out_dir / f"{stem}.tflite")
        written[-1].write_bytes(model)
        written.append(out_dir / f"{stem}.input.npy")
        np.save(written[-1], sample)
        written.append(out_dir / f"{stem}.output.npy")
        np.save(written[-1], output)
    return written


def _significant(values: np.ndarray) -> np.ndarray:
    """``values`` rounded to SIGNIFICANT_DIGITS significant digits (float64)."""
    return np.vectorize(lambda v: float(f"{v:.{SIGNIFICANT_DIGITS}g}"))(values).astype(np.float64)


def _dequantize_input(xq: np.ndarray) -> np.ndarray:
    return ((xq.astype(np.float32) - INPUT_QUANT[1]) * INPUT_QUANT[0]).astype(np.float32)


def _check_outputs_vary(model: bytes, inputs_q: np.ndarray) -> None:
    """Fail if bad scales make the int8 model answer the same whatever the input."""
    probs = np.stack([run_tflite_reference(model, [x])[0][0] for x in inputs_q]).astype(np.int32)
    winners = np.unique(probs.argmax(axis=1))
    class_ranges = np.ptp(probs, axis=0)  # in LSB of 1/256
    if len(winners) < 2 or class_ranges.min() < 10:
        raise RuntimeError(
            f"example int8 outputs barely vary (winning classes {winners.tolist()}, per-class "
            f"ranges {class_ranges.tolist()}); adjust the weights or calibration"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out-dir", type=Path, default=Path(__file__).resolve().parent, help="where to write"
    )
    args = parser.parse_args(argv)
    for path in write_examples(args.out_dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
