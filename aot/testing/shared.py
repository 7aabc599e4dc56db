"""Where tests and benchmarks find the reference data that is not part of the repository.

The shared folder (reference models, robustness corpora, CMSIS packs; each with a README)
sits next to the checkout as ``../shared``, which is where CI puts it. ``AOT_SHARED_DIR``
points somewhere else. Data that is missing is an error, never a skip: a CI machine without
the models must fail loudly instead of passing with the model tests silently skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

from aot.errors import ConfigError

ENV_VAR = "AOT_SHARED_DIR"
# aot/testing/shared.py -> the checkout (or site-packages when installed: set ENV_VAR).
CHECKOUT = Path(__file__).resolve().parents[2]
MLPERF_TINY = ("ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8")


class SharedDataMissing(ConfigError):
    """A file of the shared reference data is not where the shared folder should hold it."""


def shared_dir() -> Path:
    """The shared folder: ``$AOT_SHARED_DIR``, else ``../shared`` beside the checkout."""
    configured = os.environ.get(ENV_VAR)
    return Path(configured).expanduser() if configured else CHECKOUT.parent / "shared"


def shared_path(*parts: str) -> Path:
    """``shared_dir() / parts``, checked to exist (``SharedDataMissing`` otherwise)."""
    root = shared_dir()
    path = root.joinpath(*parts)
    if not path.exists():
        origin = f"${ENV_VAR}" if os.environ.get(ENV_VAR) else "beside the checkout"
        raise SharedDataMissing(
            f"shared reference data {path} is missing (shared folder {root}, {origin}); "
            f"put the shared folder at {CHECKOUT.parent / 'shared'} or set {ENV_VAR} to it"
        )
    return path


def mlperf_tiny(name: str, suffix: str = ".tflite") -> Path:
    """A file of the MLPerf Tiny reference set: ``name`` + ``suffix`` (.tflite, .input.npy,
    .output.npy, .json)."""
    return shared_path("models", "mlperf_tiny", f"{name}{suffix}")


# TensorFlow Lite Micro's own example models, by name (paths inside tflm/tflite-micro).
TFLM_MODELS = {
    "hello_world_int8": "tensorflow/lite/micro/examples/hello_world/models/hello_world_int8",
    "hello_world_float": "tensorflow/lite/micro/examples/hello_world/models/hello_world_float",
    "micro_speech": "tensorflow/lite/micro/examples/micro_speech/models/micro_speech_quantized",
    "audio_preprocessor_int8": (
        "tensorflow/lite/micro/examples/micro_speech/models/audio_preprocessor_int8"
    ),
    "person_detect": "tensorflow/lite/micro/models/person_detect",
    "keyword_scrambled": "tensorflow/lite/micro/models/keyword_scrambled",
    "keyword_scrambled_8bit": "tensorflow/lite/micro/models/keyword_scrambled_8bit",
    "mnist_lstm": "tensorflow/lite/micro/examples/mnist_lstm/trained_lstm_int8",
    "memory_footprint": "tensorflow/lite/micro/examples/memory_footprint/models/simple_add_model",
    "dtln": "tensorflow/lite/micro/examples/dtln/dtln_noise_suppression",
    "micro_speech_lstm": "third_party/xtensa/examples/micro_speech_lstm/micro_speech_lstm",
    "mobilenet_v2_pytorch": (
        "third_party/xtensa/examples/pytorch_to_tflite/mobilenet_v2_quantized_1x3x224x224"
    ),
}


def tflm_model(name: str) -> Path:
    """One of TensorFlow Lite Micro's example models (a key of ``TFLM_MODELS``)."""
    return shared_path("tflm", "tflite-micro", *f"{TFLM_MODELS[name]}.tflite".split("/"))
