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
