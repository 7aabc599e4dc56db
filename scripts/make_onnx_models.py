"""Make the int8 ONNX converter fixtures: PyTorch models exported to ONNX and quantized by
onnxruntime's own ``quantize_static``, as a user of onnxruntime's quantizer gets them.

Run in the converter venv (torch, onnx, onnxruntime; scripts/requirements-converters.txt),
never in aot's own environment, then commit the results:

    venv-conv/bin/python scripts/make_onnx_models.py

Writes tests/fixtures/converters/onnx/<name>.onnx and models.json (what each file is and
the versions and settings that made it). Weights and calibration data are seeded, so a
rerun with the pinned versions rewrites the same files.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import torch
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from torch import nn

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "converters" / "onnx"
OPSET = 13
CALIBRATION_BATCHES = 16
CALIBRATION_SEED = 1


class SmallCNN(nn.Module):
    """Conv/BatchNorm/ReLU twice with a MaxPool, global average pool, Linear logits."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        )  # fmt: skip
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class MLP(nn.Module):
    """Linear+ReLU layers on a flat input, Linear logits."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 32), nn.ReLU(), nn.Linear(32, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class TokenMLP(MLP):
    """The MLP on a [1, tokens, features] input: each Linear exports as MatMul + Add (a
    2-D input gives Gemm), which onnxruntime's quantizer writes with an int32 bias."""

    def __init__(self) -> None:
        nn.Module.__init__(self)
        self.layers = nn.Sequential(
            nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 24), nn.ReLU(), nn.Linear(24, 10)
        )


class ResidualDepthwise(nn.Module):
    """A stem conv, a depthwise-separable block with a residual Add, pool, Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU())
        self.block = nn.Sequential(
            nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8),
        )  # fmt: skip
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(8, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        stem = self.stem(x)
        y = self.relu(self.block(stem) + stem)
        return self.classifier(torch.flatten(self.pool(y), 1))


# name stem -> (family, module class, input shape, weight seed)
FAMILIES = {
    "cnn": ("cnn", SmallCNN, (1, 3, 16, 16), 11),
    "mlp": ("mlp", MLP, (1, 64), 12),
    "mlp_tokens": ("mlp", TokenMLP, (1, 4, 16), 14),
    "dwres": ("cnn", ResidualDepthwise, (1, 3, 16, 16), 13),
}
# (format, activation type, per-channel weights): CNN and MLP take every combination
# with int8 activations, plus onnxruntime's default uint8 activations in two variants.
VARIANTS = {
    "cnn": [(f, "int8", pc) for f in ("qdq", "qop") for pc in (False, True)]
    + [("qdq", "uint8", True), ("qop", "uint8", False)],
    "mlp": [(f, "int8", pc) for f in ("qdq", "qop") for pc in (False, True)]
    + [("qop", "uint8", True)],
    "mlp_tokens": [(f, "int8", pc) for f in ("qdq", "qop") for pc in (False, True)]
    + [("qdq", "uint8", False)],
    "dwres": [("qdq", "int8", True), ("qop", "int8", False)],
}


def float_model(stem: str, folder: Path) -> Path:
    """The seeded float model, exported with the TorchScript exporter at opset 13."""
    _, cls, shape, seed = FAMILIES[stem]
    torch.manual_seed(seed)
    model = cls().eval()
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
                module.weight.uniform_(0.6, 1.4)
                module.bias.uniform_(-0.2, 0.2)
    path = folder / f"{stem}_float.onnx"
    torch.onnx.export(
        model, (torch.zeros(shape),), str(path), input_names=["x"], output_names=["logits"],
        opset_version=OPSET, dynamo=False,
    )  # fmt: skip
    return path


class Reader(CalibrationDataReader):
    """Seeded normal calibration batches for the input ``x``."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        rng = np.random.default_rng(CALIBRATION_SEED)
        batches = [rng.normal(0, 1, shape).astype(np.float32) for _ in range(CALIBRATION_BATCHES)]
        self.data = iter({"x": b} for b in batches)

    def get_next(self):
        return next(self.data, None)


def settings(fmt: str, activation: str, per_channel: bool) -> dict:
    return {
        "quant_format": "QDQ" if fmt == "qdq" else "QOperator",
        "activation_type": "QInt8" if activation == "int8" else "QUInt8",
        "weight_type": "QInt8",
        "per_channel": per_channel,
        "reduce_range": False,
        "calibrate_method": "MinMax",
        "calibration_batches": CALIBRATION_BATCHES,
        "calibration_seed": CALIBRATION_SEED,
    }


def quantize(source: Path, out: Path, shape: tuple[int, ...], config: dict) -> None:
    quantize_static(
        str(source), str(out), Reader(shape),
        quant_format=getattr(QuantFormat, config["quant_format"]),
        activation_type=getattr(QuantType, config["activation_type"]),
        weight_type=getattr(QuantType, config["weight_type"]),
        per_channel=config["per_channel"], reduce_range=config["reduce_range"],
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    logging.getLogger().setLevel(logging.ERROR)  # the quantizer's pre-processing advice
    args.out.mkdir(parents=True, exist_ok=True)
    versions = {
        "torch": torch.__version__.split("+")[0],
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
    }
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        for stem, (family, _, shape, _) in FAMILIES.items():
            source = float_model(stem, Path(tmp))
            for fmt, activation, per_channel in VARIANTS[stem]:
                scheme = "per_channel" if per_channel else "per_tensor"
                name = f"{stem}_{fmt}_{activation}_{scheme}"
                config = settings(fmt, activation, per_channel)
                quantize(source, args.out / f"{name}.onnx", shape, config)
                entries.append({
                    "name": name, "family": family, "model": stem, "format": fmt,
                    "activation": activation, "per_channel": per_channel,
                    "input_shape": list(shape), "exporter": "torch.onnx.export(dynamo=False)",
                    "opset": OPSET, "versions": versions, "quantize_static": config,
                })  # fmt: skip
                print(f"wrote {name}.onnx")
    (args.out / "models.json").write_text(json.dumps({"models": entries}, indent=2) + "\n")


if __name__ == "__main__":
    main()
