"""Reading and validating TFLite flatbuffers (shared by every TFLite importer)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aot.errors import ModelError, UnsupportedError
from aot.frontend.model import Quantization, TensorSpec
from aot.frontend.tflite_checks import validate
from aot.frontend.validate import TENSOR_TYPES

TFLITE_IDENTIFIER = b"TFL3"

# The TensorType codes aot computes with: TFLite's table (in validate.py) without the wide
# unsigned types, which no TFLite kernel computes in.
TFLITE_DTYPES = {
    code: name for code, name in TENSOR_TYPES.items() if name not in ("uint16", "uint32", "uint64")
}


def is_tflite(data: bytes) -> bool:
    return len(data) >= 8 and data[4:8] == TFLITE_IDENTIFIER


@dataclass(frozen=True)
class TFLiteFile:
    path: str
    data: bytes
    model: object  # tflite.Model
    operators: tuple[str, ...]  # builtin operator names of subgraph 0, in order
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


def builtin_operator_names() -> dict[int, str]:
    import tflite

    return {
        value: name
        for name, value in vars(tflite.BuiltinOperator).items()
        if not name.startswith("_")
    }


def _tensor_spec(model: object, subgraph: object, index: int, path: str) -> TensorSpec:
    tensor = subgraph.Tensors(index)
    # Names are optional: TFLite's strip_strings tool (used for TFLite Micro's examples)
    # removes them.
    name = (tensor.Name() or b"").decode("utf-8", "replace") or f"tensor_{index}"
    shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
    dtype = TFLITE_DTYPES.get(tensor.Type())
    if dtype is None:
        raise UnsupportedError(
            f"{path}: tensor '{name}' has TFLite type {tensor.Type()}, which aot does not "
            "support yet; see docs/operators.md"
        )
    quantization = None
    q = tensor.Quantization()
    if q is not None and q.ScaleLength() > 0:
        scales = tuple(float(s) for s in q.ScaleAsNumpy())
        zero_points = tuple(int(z) for z in q.ZeroPointAsNumpy()) if q.ZeroPointLength() else (0,)
        axis = int(q.QuantizedDimension()) if len(scales) > 1 else None
        quantization = Quantization(scales, zero_points, axis)
    return TensorSpec(name=name, shape=shape, dtype=dtype, quantization=quantization)


def read_tflite(path: str | Path) -> TFLiteFile:
    """Read a .tflite file after the validation pass (aot.frontend.validate) checked it."""
    path = str(path)
    data = Path(path).read_bytes()
    if not is_tflite(data):
        raise ModelError(f"{path} is not a TFLite model (no 'TFL3' file identifier)")
    import tflite

    # The accessors below only follow what validate() checked, on its padded copy.
    checked = validate(data, path)
    builtin_names = builtin_operator_names()
    model = tflite.Model.GetRootAsModel(checked.padded, 0)
    subgraph = model.Subgraphs(0)
    operators: list[str] = []
    for op_index in range(subgraph.OperatorsLength()):
        op = subgraph.Operators(op_index)
        code = model.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        name = builtin_names.get(builtin, f"BUILTIN_{builtin}")
        if name == "CUSTOM":
            name = "CUSTOM:" + (code.CustomCode() or b"?").decode("utf-8", "replace")
        operators.append(name)
    inputs = tuple(_tensor_spec(model, subgraph, int(i), path) for i in subgraph.InputsAsNumpy())
    outputs = tuple(_tensor_spec(model, subgraph, int(i), path) for i in subgraph.OutputsAsNumpy())
    return TFLiteFile(path, checked.padded, model, tuple(operators), inputs, outputs)
