#!/usr/bin/env python3
"""Make the Keras -> TFLite converter fixtures (tests/fixtures/converters/tflite/).

Each fixture is a small Keras 3 model with seeded random weights, converted the way users
convert: ``tf.lite.TFLiteConverter.from_keras_model`` with full-integer int8 or 16x8
post-training quantization and a seeded representative dataset. The point is the
converter's own output (dynamic-batch shape arithmetic, fused activations, the layouts
Keras layers lower to), so nothing is hand-tuned after conversion.

Run with the converter venv (TensorFlow 2.21, Keras 3; scripts/requirements-converters.txt):

    venv-conv/bin/python scripts/make_converter_models.py            # all fixtures
    venv-conv/bin/python scripts/make_converter_models.py --only ds_cnn_int8_fixed

Every conversion runs in its own subprocess: TensorFlow's converter can crash the process
(a segfault, as on Keras 3's LSTM and GRU), and one crash must not stop the rest. A crash
or error is recorded in models.json under "not_converted" with its exit status; it is never
skipped silently. Running the script twice gives the same files, byte for byte (weights,
BatchNorm statistics and the representative data are seeded from each fixture's name).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "tests" / "fixtures" / "converters" / "tflite"
MANIFEST = "models.json"
REPRESENTATIVE_SAMPLES = 64
CONVERSION_TIMEOUT_S = 900


@dataclass(frozen=True)
class Fixture:
    """One model to build and convert; ``builder`` names a function of this script."""

    name: str
    family: str
    builder: str
    input_shape: tuple[int, ...]  # without the batch dimension
    batch: str  # "dynamic" (keras.Input(shape), the default) or "fixed" (batch_size=1)
    quantization: str  # "int8" or "16x8"
    # What the representative data looks like: "normal" N(0, 1), "signed" U(-1, 1) (what
    # MobileNet V1/V2 preprocess to), "pixels" U(0, 255) (models that rescale inside).
    data: str = "normal"
    options: dict = field(default_factory=dict)


def variants(
    family: str,
    builder: str,
    shape: tuple[int, ...],
    forms: list[tuple[str, str]],
    data: str = "normal",
    prefix: str | None = None,
    **options,
) -> list[Fixture]:
    """One Fixture per (quantization, batch) in ``forms``, named <prefix>_<quant>_<batch>."""
    stem = prefix or family
    return [
        Fixture(
            name=f"{stem}_{quant}_{batch}",
            family=family,
            builder=builder,
            input_shape=shape,
            batch=batch,
            quantization=quant,
            data=data,
            options=dict(options),
        )
        for quant, batch in forms
    ]


BOTH_INT8 = [("int8", "dynamic"), ("int8", "fixed")]
FIXTURES: list[Fixture] = [
    *variants(
        "mobilenet_v1",
        "mobilenet_v1",
        (96, 96, 3),
        [*BOTH_INT8, ("16x8", "fixed")],
        data="signed",
        prefix="mobilenet_v1_025_96",
        alpha=0.25,
        classes=100,
    ),
    *variants(
        "mobilenet_v2",
        "mobilenet_v2",
        (96, 96, 3),
        BOTH_INT8,
        data="signed",
        prefix="mobilenet_v2_035_96",
        alpha=0.35,
        classes=1000,
    ),
    *variants(
        "mobilenet_v3_small",
        "mobilenet_v3_small",
        (96, 96, 3),
        [*BOTH_INT8, ("16x8", "fixed")],
        data="pixels",
        prefix="mobilenet_v3_small_050_96",
        alpha=0.5,
        minimalistic=False,
        classes=10,
    ),
    *variants(
        "mobilenet_v3_small_minimalistic",
        "mobilenet_v3_small",
        (96, 96, 3),
        [*BOTH_INT8, ("16x8", "fixed")],
        data="pixels",
        prefix="mobilenet_v3_small_min_050_96",
        alpha=0.5,
        minimalistic=True,
        classes=10,
    ),
    *variants(
        "efficientnet_b0",
        "efficientnet_b0",
        (64, 64, 3),
        BOTH_INT8,
        data="pixels",
        prefix="efficientnet_b0_64",
        classes=10,
    ),
    *variants(
        "ds_cnn",
        "ds_cnn",
        (49, 10, 1),
        [*BOTH_INT8, ("16x8", "dynamic"), ("16x8", "fixed")],
    ),
    *variants(
        "transformer",
        "transformer_block",
        (16, 32),
        [*BOTH_INT8, ("16x8", "fixed")],
        prefix="transformer_block",
    ),
    *variants(
        "conv1d",
        "conv1d",
        (128, 3),
        [*BOTH_INT8, ("16x8", "dynamic"), ("16x8", "fixed")],
    ),
    # Keras 3's UpSampling2D exports TILE; keras.layers.Resizing(interpolation="nearest")
    # exports RESIZE_NEAREST_NEIGHBOR: both ways of upsampling users write.
    *variants(
        "unet",
        "unet",
        (32, 32, 3),
        [*BOTH_INT8, ("16x8", "fixed")],
        upsample="upsampling2d",
    ),
    *variants(
        "unet",
        "unet",
        (32, 32, 3),
        [*BOTH_INT8, ("16x8", "fixed")],
        prefix="unet_resizing",
        upsample="resizing",
    ),
    # Keras 3's GRU and LSTM as they are: the converter crashes or refuses them (see
    # "not_converted" in models.json). Unrolled (unroll=True, the usual workaround) they
    # convert to plain FULLY_CONNECTED / LOGISTIC / TANH / MUL / ADD steps, about 17
    # operators per time step: 8 steps keep the graph near 150 operators.
    *variants("gru", "gru", (8, 8), BOTH_INT8),
    *variants("lstm", "lstm", (8, 8), [*BOTH_INT8, ("16x8", "fixed")]),
    *variants("gru", "gru", (8, 8), BOTH_INT8, prefix="gru_unrolled", unroll=True),
    *variants(
        "lstm",
        "lstm",
        (8, 8),
        [*BOTH_INT8, ("16x8", "fixed")],
        prefix="lstm_unrolled",
        unroll=True,
    ),
]


# --- the models (only the child process imports TensorFlow and Keras) -----------------


def keras_input(shape: tuple[int, ...], batch: str):
    import keras

    return keras.Input(shape, batch_size=1 if batch == "fixed" else None)


def mobilenet_v1(inp, alpha: float, classes: int):
    import keras

    return keras.applications.MobileNet(
        input_tensor=inp, alpha=alpha, weights=None, classes=classes, classifier_activation=None
    )


def mobilenet_v2(inp, alpha: float, classes: int):
    import keras

    return keras.applications.MobileNetV2(
        input_tensor=inp, alpha=alpha, weights=None, classes=classes, classifier_activation=None
    )


def mobilenet_v3_small(inp, alpha: float, minimalistic: bool, classes: int):
    import keras

    return keras.applications.MobileNetV3Small(
        input_tensor=inp,
        alpha=alpha,
        minimalistic=minimalistic,
        weights=None,
        classes=classes,
        classifier_activation=None,
    )


def efficientnet_b0(inp, classes: int):
    import keras

    return keras.applications.EfficientNetB0(
        input_tensor=inp, weights=None, classes=classes, classifier_activation=None
    )


def ds_cnn(inp):
    """The DS-CNN keyword-spotting shape (49 MFCC frames x 10): a strided Conv2D, four
    depthwise-separable blocks, average pooling over the whole map, 12 logits."""
    import keras
    from keras import layers

    x = layers.Conv2D(32, (10, 4), strides=(2, 2), padding="same", use_bias=False)(inp)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    for _ in range(4):
        x = layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
        x = layers.ReLU()(layers.BatchNormalization()(x))
        x = layers.Conv2D(32, 1, use_bias=False)(x)
        x = layers.ReLU()(layers.BatchNormalization()(x))
    x = layers.AveragePooling2D(pool_size=(25, 5))(x)
    x = layers.Flatten()(x)
    return keras.Model(inp, layers.Dense(12)(x))


def transformer_block(inp):
    """One encoder block on a (16, 32) sequence: two-head self-attention, residual and
    LayerNormalization, a Dense feed-forward on the 3-D tensor, pooling, 8 logits."""
    import keras
    from keras import layers

    attended = layers.MultiHeadAttention(num_heads=2, key_dim=16)(inp, inp)
    x = layers.LayerNormalization()(layers.Add()([inp, attended]))
    hidden = layers.Dense(64, activation="relu")(x)
    x = layers.LayerNormalization()(layers.Add()([x, layers.Dense(32)(hidden)]))
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, layers.Dense(8)(x))


def conv1d(inp):
    """A sensor-signal classifier: Conv1D + BatchNorm + ReLU + MaxPool1D twice, a dilated
    Conv1D, global average pooling, 6 logits."""
    import keras
    from keras import layers

    x = inp
    for filters, kernel in ((16, 5), (32, 3)):
        x = layers.Conv1D(filters, kernel, padding="same")(x)
        x = layers.ReLU()(layers.BatchNormalization()(x))
        x = layers.MaxPooling1D(2)(x)
    x = layers.Conv1D(32, 3, dilation_rate=2, activation="relu")(x)
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, layers.Dense(6)(x))


def unet(inp, upsample: str):
    """A two-level U-Net on 32x32x3: one skip through Conv2DTranspose, one through
    UpSampling2D (or Resizing to 32x32, nearest), both joined by Concatenate; 2 logit
    channels per pixel."""
    import keras
    from keras import layers

    def block(x, filters):
        x = layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
        return layers.ReLU()(layers.BatchNormalization()(x))

    skip1 = block(inp, 8)
    skip2 = block(layers.MaxPooling2D()(skip1), 16)
    bottom = block(layers.MaxPooling2D()(skip2), 32)
    up2 = layers.Conv2DTranspose(16, 2, strides=2, padding="same")(bottom)
    x = block(layers.Concatenate()([up2, skip2]), 16)
    if upsample == "resizing":
        up1 = layers.Resizing(32, 32, interpolation="nearest")(x)
    else:
        up1 = layers.UpSampling2D(2)(x)
    x = block(layers.Concatenate()([up1, skip1]), 8)
    return keras.Model(inp, layers.Conv2D(2, 1)(x))


def gru(inp, unroll: bool = False):
    import keras
    from keras import layers

    return keras.Model(inp, layers.Dense(4)(layers.GRU(16, unroll=unroll)(inp)))


def lstm(inp, unroll: bool = False):
    import keras
    from keras import layers

    return keras.Model(inp, layers.Dense(4)(layers.LSTM(16, unroll=unroll)(inp)))


def randomize_statistics(model, rng) -> None:
    """Seeded non-trivial biases and BatchNorm/LayerNorm parameters: Keras initialises them
    to 0 and 1, which would make every normalisation an identity and every bias zero."""
    import numpy as np

    for variable in model.weights:
        # keras.layers.Normalization's mean and variance (preprocessing) keep their values.
        leaf = variable.path.rsplit("/", 1)[-1]
        shape = tuple(variable.shape)
        if leaf in ("bias", "beta", "moving_mean"):
            value = rng.normal(0.0, 0.1, shape)
        elif leaf in ("gamma", "moving_variance"):
            value = rng.uniform(0.5, 1.5, shape)
        else:
            continue
        variable.assign(value.astype(np.float32))


def representative(fixture: Fixture, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    shape = (REPRESENTATIVE_SAMPLES, 1, *fixture.input_shape)
    if fixture.data == "signed":
        return rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    if fixture.data == "pixels":
        return rng.uniform(0.0, 255.0, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def estimate_macs(tflite_model: bytes) -> int:
    """Multiply-accumulates of the convolutions, fully connected layers and batch matmuls,
    read from the converted model's tensor shapes (batch 1)."""
    import numpy as np
    import tensorflow as tf

    interpreter = tf.lite.Interpreter(model_content=tflite_model)
    interpreter.allocate_tensors()
    # Dynamic-batch models compute some shapes at run time: run once on zeros first.
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], np.zeros(detail["shape"], detail["dtype"]))
    interpreter.invoke()
    details = interpreter.get_tensor_details()
    shapes = {t["index"]: tuple(int(d) for d in t["shape"]) for t in details}
    total = 0
    for op in interpreter._get_ops_details():
        name, ins, outs = op["op_name"], list(op["inputs"]), list(op["outputs"])
        if not outs or outs[0] < 0:
            continue
        out = shapes[outs[0]]
        if name == "CONV_2D":
            weights = shapes[ins[1]]  # (O, H, W, I)
            total += int(np.prod(out)) * int(np.prod(weights[1:]))
        elif name == "TRANSPOSE_CONV":
            weights, data = shapes[ins[1]], shapes[ins[2]]  # (O, H, W, I), (N, H, W, I)
            total += int(np.prod(data)) * int(np.prod(weights[:3]))
        elif name == "DEPTHWISE_CONV_2D":
            weights = shapes[ins[1]]  # (1, H, W, O)
            total += int(np.prod(out)) * weights[1] * weights[2]
        elif name == "FULLY_CONNECTED":
            weights = shapes[ins[1]]  # (O, I)
            total += int(np.prod(out)) * weights[-1]
        elif name == "BATCH_MATMUL":
            left = shapes[ins[0]]
            total += int(np.prod(out)) * left[-1]
    return total


def convert_one(fixture: Fixture, folder: Path, seed: int) -> dict:
    """Build, convert and write ``<name>.tflite`` into ``folder``; return its manifest entry."""
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    inp = keras_input(fixture.input_shape, fixture.batch)
    model = globals()[fixture.builder](inp, **fixture.options)
    randomize_statistics(model, np.random.default_rng(seed + 1))
    samples = representative(fixture, seed + 2)

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: ([sample] for sample in samples)
    if fixture.quantization == "int8":
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        io_type, ops = tf.int8, "TFLITE_BUILTINS_INT8"
    else:
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
        ]
        io_type, ops = tf.int16, "EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8"
    converter.inference_input_type = io_type
    converter.inference_output_type = io_type
    flat = converter.convert()
    (folder / f"{fixture.name}.tflite").write_bytes(flat)
    entry = asdict(fixture)
    entry.pop("builder")
    entry["input_shape"] = [None if fixture.batch == "dynamic" else 1, *fixture.input_shape]
    entry["parameters"] = int(model.count_params())
    entry["macs"] = estimate_macs(flat)
    entry["bytes"] = len(flat)
    entry["seed"] = seed
    entry["converter"] = {
        "api": "tf.lite.TFLiteConverter.from_keras_model",
        "optimizations": ["DEFAULT"],
        "supported_ops": [ops],
        "inference_input_type": io_type.name,
        "inference_output_type": io_type.name,
        "representative_dataset": {
            "samples": REPRESENTATIVE_SAMPLES,
            "seed": seed + 2,
            "distribution": fixture.data,
        },
    }
    entry["tools"] = {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "numpy": np.__version__,
    }
    return entry


def child(name: str, folder: Path, seed: int) -> None:
    fixture = next(f for f in FIXTURES if f.name == name)
    entry = convert_one(fixture, folder, seed)
    (folder / f"{name}.entry.json").write_text(json.dumps(entry))


def seed_of(name: str) -> int:
    """A fixture's seed, from its name only: adding or reordering fixtures changes no other
    fixture, and --only remakes the same file."""
    return 2026 + 10 * (zlib.crc32(name.encode()) % 100_000)


def run_child(fixture: Fixture, seed: int, scratch: Path) -> tuple[dict | None, str]:
    """Convert ``fixture`` in a subprocess; (entry, "") or (None, why it failed)."""
    command = [sys.executable, __file__, "--child", fixture.name, "--seed", str(seed)]
    command += ["--folder", str(scratch)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CONVERSION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {CONVERSION_TIMEOUT_S} s"
    entry_file = scratch / f"{fixture.name}.entry.json"
    if done.returncode == 0 and entry_file.exists():
        return json.loads(entry_file.read_text()), ""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if done.returncode < 0:
        return None, f"converter process killed by signal {-done.returncode}"
    tail = next((line for line in reversed(lines) if "Error" in line), lines[-1] if lines else "")
    return None, f"exit status {done.returncode}: {tail.strip()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="fixture names to (re)make; default all")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.folder, args.seed)
        return 0

    names = [f.name for f in FIXTURES]
    unknown = sorted(set(args.only or []) - set(names))
    if unknown:
        parser.error(f"unknown fixture(s) {', '.join(unknown)}; known: {', '.join(names)}")
    args.output.mkdir(parents=True, exist_ok=True)
    manifest_path = args.output / MANIFEST
    manifest = {"models": [], "not_converted": []}
    if args.only and manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
    models = {m["name"]: m for m in manifest["models"]}
    failed = {m["name"]: m for m in manifest["not_converted"]}
    for fixture in FIXTURES:
        if args.only and fixture.name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as scratch:
            entry, why = run_child(fixture, seed_of(fixture.name), Path(scratch))
            models.pop(fixture.name, None)
            failed.pop(fixture.name, None)
            if entry is not None:
                source = Path(scratch) / f"{fixture.name}.tflite"
                (args.output / source.name).write_bytes(source.read_bytes())
                models[fixture.name] = entry
                print(f"{fixture.name}: {entry['bytes']} bytes, {entry['macs']} MACs", flush=True)
            else:
                (args.output / f"{fixture.name}.tflite").unlink(missing_ok=True)
                failed[fixture.name] = {"name": fixture.name, "family": fixture.family, "why": why}
                print(f"{fixture.name}: NOT CONVERTED ({why})", flush=True)
    # Fixtures no longer in FIXTURES leave the folder and the manifest.
    for stale in set(models) | set(failed):
        if stale not in names:
            models.pop(stale, None)
            failed.pop(stale, None)
    for path in args.output.glob("*.tflite"):
        if path.stem not in models:
            path.unlink()
    order = {name: i for i, name in enumerate(names)}
    manifest = {
        "generator": "scripts/make_converter_models.py",
        "models": sorted(models.values(), key=lambda m: order.get(m["name"], len(order))),
        "not_converted": sorted(failed.values(), key=lambda m: order.get(m["name"], len(order))),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
