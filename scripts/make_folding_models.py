"""Write the small Keras 3 exports with a dynamic batch that tests/converters/
test_static_shapes.py builds (tests/fixtures/converters/folding/).

Run with the converter venv (TensorFlow and LiteRT cannot share a process):

    venv-conv/bin/python scripts/make_folding_models.py

Each model keeps Keras' default dynamic batch (``keras.Input(shape)`` without
``batch_size``), so the converter leaves the shape arithmetic aot folds at import.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import tensorflow as tf

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "converters" / "folding"


def convert(model: keras.Model, name: str) -> None:
    shape = tuple(model.inputs[0].shape[1:])

    def calibration():
        rng = np.random.default_rng(0)
        for _ in range(16):
            yield [rng.standard_normal((1, *shape)).astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = calibration
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    (OUT / f"{name}.tflite").write_bytes(converter.convert())
    print("wrote", name)


def main() -> None:
    keras.utils.set_random_seed(1)
    OUT.mkdir(parents=True, exist_ok=True)
    # A Dense on a 3-D tensor: SHAPE -> GATHER -> REDUCE_PROD -> PACK -> RESHAPE [1, 1].
    x = keras.Input((4, 16))
    convert(keras.Model(x, keras.layers.Dense(8, activation="relu")(x)), "dense_3d")
    # Flatten after a convolution: SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE.
    x = keras.Input((8, 8, 3))
    y = keras.layers.Flatten()(keras.layers.Conv2D(4, 3, activation="relu")(x))
    convert(keras.Model(x, keras.layers.Dense(5)(y)), "flatten")
    # Reshape then a Dense on the 3-D result: both patterns, one after the other.
    x = keras.Input((8, 8, 3))
    y = keras.layers.Reshape((9, 16))(keras.layers.Conv2D(4, 3)(x))
    convert(keras.Model(x, keras.layers.Dense(5)(y)), "reshape_dense")
    # A transformer block: attention, LayerNormalization (a float NEG between DEQUANTIZE
    # and QUANTIZE), a feed-forward pair of Dense layers on 3-D tensors.
    x = keras.Input((8, 16))
    a = keras.layers.MultiHeadAttention(2, 8)(x, x)
    h = keras.layers.LayerNormalization()(x + a)
    f = keras.layers.Dense(16)(keras.layers.Dense(32, activation="relu")(h))
    y = keras.layers.LayerNormalization()(h + f)
    y = keras.layers.Dense(4)(keras.layers.GlobalAveragePooling1D()(y))
    convert(keras.Model(x, y), "attention_block")


if __name__ == "__main__":
    main()
