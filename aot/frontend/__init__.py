"""The import stage: a model file -> ImportedModel."""

from __future__ import annotations

from pathlib import Path

from aot.errors import ConfigError, ModelError, ResourceError
from aot.frontend.model import ImportedModel, Quantization, TensorSpec

__all__ = ["FRONTENDS", "ImportedModel", "Quantization", "TensorSpec", "import_model"]

# --frontend choices; "auto" picks by file content.
FRONTENDS = ("auto", "tflite-int8", "relax-tflite", "relax-onnx", "onnx-int8")


def _is_integer_model(tflite_file: object) -> bool:
    """Integer-quantized TFLite models go to aot's own int8 importer (exact requantization):
    every boundary tensor is quantized int8/int16, or a plain int32/int64 index (GATHER's
    indices, ARG_MAX's result), and at least one is quantized."""
    specs = (*tflite_file.inputs, *tflite_file.outputs)  # type: ignore[attr-defined]
    quantized = [s.quantization is not None and s.dtype in ("int8", "int16") for s in specs]
    indices = [s.quantization is None and s.dtype in ("int32", "int64") for s in specs]
    if any(quantized) and all(q or i for q, i in zip(quantized, indices)):
        return True
    if all(s.dtype in _INTEGER_DTYPES for s in specs) and _has_quantized_tensor(tflite_file):
        # Integer boundaries of any kind (keyword_scrambled's output is a quantized int32)
        # around quantized tensors: TVM's float frontend would only ask for QDQ lowering.
        return True
    return _quantized_between_float_boundaries(tflite_file)


_INTEGER_DTYPES = frozenset({"int8", "uint8", "int16", "int32", "int64"})


def _has_quantized_tensor(tflite_file: object) -> bool:
    subgraph = tflite_file.model.Subgraphs(0)  # type: ignore[attr-defined]
    for index in range(subgraph.TensorsLength()):
        q = subgraph.Tensors(index).Quantization()
        if q is not None and q.ScaleLength() > 0:
            return True
    return False


def _quantized_between_float_boundaries(tflite_file: object) -> bool:
    """The converter's default for an integer model keeps float32 inputs and outputs: each
    float32 input feeds only QUANTIZE operators and each float32 output is a DEQUANTIZE's
    result, so everything between them is integer (the int8 importer takes both)."""
    subgraph = tflite_file.model.Subgraphs(0)  # type: ignore[attr-defined]
    names = tflite_file.operators  # type: ignore[attr-defined]
    boundary = {int(i) for i in subgraph.InputsAsNumpy()} | {
        int(i) for i in subgraph.OutputsAsNumpy()
    }
    specs = dict(
        zip(
            [*map(int, subgraph.InputsAsNumpy()), *map(int, subgraph.OutputsAsNumpy())],
            [*tflite_file.inputs, *tflite_file.outputs],  # type: ignore[attr-defined]
        )
    )
    floats = {i for i in boundary if specs[i].dtype == "float32"}
    integer = {"int8", "int16", "int32", "int64"}
    if not floats or any(specs[i].dtype not in integer for i in boundary - floats):
        return False
    inputs = {int(i) for i in subgraph.InputsAsNumpy()}
    for index, name in enumerate(names):
        op = subgraph.Operators(index)
        reads = {int(i) for i in op.InputsAsNumpy()} if op.InputsLength() else set()
        writes = {int(i) for i in op.OutputsAsNumpy()} if op.OutputsLength() else set()
        if reads & inputs & floats and name != "QUANTIZE":
            return False
        if writes & floats and name != "DEQUANTIZE":
            return False
    return "QUANTIZE" in names


def _is_integer_onnx(path: str) -> bool:
    """ONNX models with QuantizeLinear/DequantizeLinear, QLinear* or *Integer operators go
    to aot's int8 ONNX importer (onnxruntime-exact requantization); a file that does not
    parse is left to the float importer, which reports it."""
    import onnx

    from aot.frontend.onnx_int8 import is_integer_onnx

    try:
        model = onnx.load_model(path, load_external_data=False)
    except Exception:  # protobuf raises several types; the float importer words it
        return False
    return is_integer_onnx(model)


MODEL_SUFFIXES = (".tflite", ".onnx")


def _check_model_path(path: Path) -> None:
    if path.is_dir():
        found = sorted(p.name for p in path.iterdir() if p.suffix.lower() in MODEL_SUFFIXES)
        more = ", ..." if len(found) > 3 else ""
        hint = f"; it holds {', '.join(found[:3])}{more}" if found else ""
        raise ConfigError(
            f"model path {path} is a directory, not a model file: give the .tflite or .onnx "
            f"file itself{hint}"
        )
    if not path.exists():
        raise ConfigError(f"model file {path} does not exist")
    if not path.is_file():
        raise ConfigError(f"model path {path} is not a regular file: give a .tflite or .onnx file")


def import_model(path: str | Path, frontend: str = "auto") -> ImportedModel:
    try:
        return _import_model(str(path), frontend)
    except MemoryError:
        size = Path(path).stat().st_size
        raise ResourceError(
            f"out of memory reading the model {path} ({size} bytes): it is far larger than a "
            "model for a microcontroller, or this process's memory limit (ulimit -v) is too low"
        ) from None


def _import_model(path: str, frontend: str) -> ImportedModel:
    _check_model_path(Path(path))
    if frontend not in FRONTENDS:
        raise ConfigError(f"unknown frontend '{frontend}'; choose one of {', '.join(FRONTENDS)}")
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as err:
        raise ConfigError(f"cannot read the model file {path}: {err.strerror}") from err
    if len(head) < 8:
        raise ModelError(f"{path} is not a model: the file is {len(head)} bytes long")
    from aot.frontend.file_checks import check_model_head
    from aot.frontend.tflite_file import is_tflite

    by_suffix = path.lower().endswith(".tflite")
    is_tflite_file = frontend in ("relax-tflite", "tflite-int8") or (
        frontend == "auto" and (is_tflite(head) or by_suffix)
    )
    check_model_head(Path(path), "tflite" if is_tflite_file else "onnx")
    if is_tflite_file:
        from aot.frontend.relax_tflite import import_tflite_relax
        from aot.frontend.tflite_file import read_tflite

        tflite_file = read_tflite(path)
        if frontend == "tflite-int8" or (frontend == "auto" and _is_integer_model(tflite_file)):
            from aot.frontend.tflite_int8 import import_tflite_int8

            return import_tflite_int8(path)
        return import_tflite_relax(tflite_file)
    from aot.frontend.relax_onnx import import_onnx_relax

    if frontend == "onnx-int8" or (frontend == "auto" and _is_integer_onnx(path)):
        from aot.frontend.onnx_int8 import import_onnx_int8

        return import_onnx_int8(path)
    if frontend == "auto" and not path.endswith(".onnx"):
        try:
            return import_onnx_relax(path)
        except ModelError:
            raise ModelError(
                f"{path} is neither a TFLite (.tflite) nor an ONNX (.onnx) model"
            ) from None
    return import_onnx_relax(path)
