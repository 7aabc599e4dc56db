"""Make tests/fixtures/validate/saturating_classifier{,_float}.tflite (TensorFlow 2.21).

A small keyword-style classifier (conv, depthwise conv, pooling, dense, softmax) with seeded
weights scaled up so that its softmax saturates on full-range random inputs, as trained
classifiers' do: the model behind 'aot validate's default inputs must catch a weight moved
by 60 steps (tests/validate/test_weight_faults.py). Versions: scripts/requirements-converters.txt.

    /path/to/venv-with-tensorflow/bin/python scripts/make_saturating_classifier.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "validate"
SEED = 2026
SHAPE = (24, 16, 1)
CLASSES = 6


def model() -> tf.keras.Model:
    tf.keras.utils.set_random_seed(SEED)
    inputs = tf.keras.Input(SHAPE, batch_size=1)
    x = tf.keras.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(inputs)
    x = tf.keras.layers.DepthwiseConv2D(3, padding="same", activation="relu")(x)
    x = tf.keras.layers.Conv2D(16, 1, activation="relu")(x)
    x = tf.keras.layers.GlobalAveragePooling2D()(x)
    x = tf.keras.layers.Dense(CLASSES)(x)
    outputs = tf.keras.layers.Softmax()(x)
    net = tf.keras.Model(inputs, outputs)
    # Large logits: the softmax of a confident classifier, saturated for most inputs.
    dense = net.layers[-2]
    kernel, bias = dense.get_weights()
    dense.set_weights([kernel * 1000.0, bias])
    return net


def representative() -> object:
    rng = np.random.default_rng(SEED)
    for _ in range(64):
        yield [rng.uniform(-1.0, 1.0, size=(1, *SHAPE)).astype(np.float32)]


def main() -> None:
    net = model()
    OUT.mkdir(parents=True, exist_ok=True)
    # The float model it came from: aot validate --float-model compares against it.
    float_model = tf.lite.TFLiteConverter.from_keras_model(net).convert()
    (OUT / "saturating_classifier_float.tflite").write_bytes(float_model)
    converter = tf.lite.TFLiteConverter.from_keras_model(net)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    (OUT / "saturating_classifier.tflite").write_bytes(converter.convert())


if __name__ == "__main__":
    main()
