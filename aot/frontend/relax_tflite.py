"""Import TFLite models with TVM's Relax TFLite frontend.

Quantized operators come in as dequantize -> float op -> quantize (see docs/int8.md for
the integer importer that keeps int8 models int8).
"""

from __future__ import annotations

from aot.errors import UnsupportedError
from aot.frontend.model import ImportedModel
from aot.frontend.tflite_file import TFLiteFile
from aot.frontend.tvm_scope import quiet_frontend


def _supported_operators() -> set[str]:
    from tvm.relax.frontend.tflite import tflite_frontend

    # The converter builds its operator table in __init__ without touching the model.
    converter = tflite_frontend.OperatorConverter.__new__(tflite_frontend.OperatorConverter)
    try:
        tflite_frontend.OperatorConverter.__init__(converter, None, None, None, None)
    except Exception:  # pragma: no cover - depends on the TVM version
        return set()
    return set(getattr(converter, "convert_map", {}))


def check_operators(tflite_file: TFLiteFile) -> None:
    supported = _supported_operators()
    if not supported:
        return
    for index, name in enumerate(tflite_file.operators):
        if name not in supported:
            raise UnsupportedError(
                f"{tflite_file.path}: operator #{index} {name} is not supported by the Relax "
                "TFLite frontend; see docs/operators.md for the supported operators"
            )


def import_tflite_relax(tflite_file: TFLiteFile) -> ImportedModel:
    import tvm
    from tvm.relax.frontend.tflite import from_tflite

    check_operators(tflite_file)
    try:
        with quiet_frontend():
            module = from_tflite(tflite_file.model)
    except tvm.error.OpNotImplemented as err:
        raise UnsupportedError(f"{tflite_file.path}: {err}") from err
    except Exception as err:
        detail = str(err).splitlines()[0] if str(err).strip() else "an internal check failed"
        raise UnsupportedError(
            f"{tflite_file.path}: the Relax TFLite frontend failed: {detail}"
        ) from err
    return ImportedModel(
        relax_module=module,
        inputs=tflite_file.inputs,
        outputs=tflite_file.outputs,
        source_path=tflite_file.path,
        source_format="tflite",
        frontend="relax-tflite",
        operators=tflite_file.operators,
    )
