"""Import ONNX models with TVM's Relax ONNX frontend."""

from __future__ import annotations

import re
from pathlib import Path

from aot.errors import ModelError, UnsupportedError
from aot.frontend.model import ImportedModel, SourceOperator, TensorSpec
from aot.frontend.tvm_scope import quiet_frontend
from aot.frontend.validate import DAMAGED

# ONNX TensorProto element types aot reads. float64 compiles to C double: hardware on the
# double-precision FPUs (Cortex-M7 dp, M55), software doubles on the other cores.
ONNX_DTYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    11: "float64",
}


def _value_spec(value: object, path: str) -> TensorSpec:
    tensor_type = value.type.tensor_type
    shape: list[int] = []
    for dim in tensor_type.shape.dim:
        if dim.HasField("dim_value") and dim.dim_value > 0:
            shape.append(int(dim.dim_value))
        else:
            raise UnsupportedError(
                f"{path}: '{value.name}' has a dynamic shape (dimension "
                f"'{dim.dim_param or '?'}'); aot compiles static shapes only: export the "
                "model with fixed dimensions"
            )
    dtype = ONNX_DTYPES.get(tensor_type.elem_type)
    if dtype is None:
        import onnx

        try:
            type_name = onnx.TensorProto.DataType.Name(tensor_type.elem_type).lower()
        except ValueError:
            type_name = "unknown"
        raise UnsupportedError(
            f"{path}: '{value.name}' has ONNX element type {tensor_type.elem_type} ({type_name}); "
            f"aot compiles {', '.join(sorted(set(ONNX_DTYPES.values())))}: convert the model "
            "(e.g. float16 to float32)"
        )
    return TensorSpec(name=value.name, shape=tuple(shape), dtype=dtype)


def supported_operators() -> dict[str, tuple[int, ...]]:
    """ONNX operator -> the opset versions its TVM converter implements (``_impl_v<N>``)."""
    from tvm.relax.frontend.onnx import onnx_frontend

    table = {}
    for name, converter in onnx_frontend._get_convert_map().items():
        versions = (re.fullmatch(r"_impl_v(\d+)", attr) for attr in dir(converter))
        table[name] = tuple(sorted(int(m.group(1)) for m in versions if m))
    return table


def import_onnx_relax(path: str) -> ImportedModel:
    import onnx

    data = Path(path).read_bytes()
    try:
        model = onnx.load_model_from_string(data)
        onnx.checker.check_model(model)
    except Exception as err:  # protobuf and the checker raise several types
        detail = str(err).splitlines()[0] if str(err).strip() else "it cannot be parsed"
        raise ModelError(f"{path}: {DAMAGED}: it is not a valid ONNX model: {detail}") from err
    try:
        # Strict inference compares every declared shape and type with what its node
        # computes, so a damaged graph is named here rather than failing inside TVM.
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as err:  # InferenceError, or ValueError on odd attributes
        detail = " ".join(str(err).split()) or "shape inference failed"
        raise ModelError(f"{path}: {DAMAGED}: ONNX shape inference rejects it: {detail}") from None
    graph = model.graph
    if not graph.node:
        raise ModelError(f"{path} is not a model: its ONNX graph has no nodes")
    initializers = {init.name for init in graph.initializer}
    inputs = tuple(_value_spec(v, path) for v in graph.input if v.name not in initializers)
    outputs = tuple(_value_spec(v, path) for v in graph.output)

    from tvm.relax.frontend.onnx import onnx_frontend

    supported = set(supported_operators())
    for index, node in enumerate(graph.node):
        if node.op_type not in supported:
            raise UnsupportedError(
                f"{path}: operator #{index} {node.op_type} (node '{node.name}') is not supported "
                "by the Relax ONNX frontend; see docs/operators.md"
            )
    try:
        with quiet_frontend():
            module = onnx_frontend.from_onnx(
                model,
                shape_dict={spec.name: list(spec.shape) for spec in inputs},
                dtype_dict={spec.name: spec.dtype for spec in inputs},
            )
    except Exception as err:
        detail = str(err).splitlines()[0] if str(err).strip() else "an internal check failed"
        raise UnsupportedError(f"{path}: the Relax ONNX frontend failed: {detail}") from err
    return ImportedModel(
        relax_module=module,
        inputs=inputs,
        outputs=outputs,
        source_path=path,
        source_format="onnx",
        frontend="relax-onnx",
        operators=tuple(node.op_type for node in graph.node),
        source_operators=tuple(
            SourceOperator(i, node.op_type, node.output[0] if node.output else "")
            for i, node in enumerate(graph.node)
        ),
    )
