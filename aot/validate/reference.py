"""Reference runtimes: what the generated C is checked against, loaded once for many inputs.

TFLite models run in LiteRT with the *reference* kernels (``BUILTIN_REF``), not the
optimised ones: the reference kernels define the integer arithmetic the generated C is
bit-exact against. ONNX models run in onnxruntime on the CPU with graph optimisations off,
so each node computes exactly what the ONNX specification says (no fusions).

A TFLite model LiteRT cannot load (an operator or dtype it has no kernel for) runs in
TensorFlow Lite Micro's own interpreter instead, when ``tflite-micro`` is installed.

The runtimes are optional (``pip install aot[validate]``) and imported only when a model
is opened.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata as package_metadata
from pathlib import Path

import numpy as np

from aot.errors import ConfigError, ModelError, ToolchainError

ModelSource = bytes | bytearray | str | os.PathLike[str]

TFLM_MIN_ARENA_BYTES = 8 << 20

# onnxruntime names element types as strings; the ones a model library can carry.
ONNX_TYPES = {
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float16)": "float16",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(int16)": "int16",
    "tensor(uint16)": "uint16",
    "tensor(int32)": "int32",
    "tensor(uint32)": "uint32",
    "tensor(int64)": "int64",
    "tensor(bool)": "bool",
}


@dataclass(frozen=True)
class TensorSignature:
    """One input or output as the reference runtime declares it; ``None`` in ``shape`` is
    a dimension the model leaves open (any size fits), shown as -1 as TFLite does."""

    name: str
    dtype: str
    shape: tuple[int | None, ...]

    def describe(self) -> str:
        dims = ", ".join("-1" if d is None else str(d) for d in self.shape)
        return f"{self.dtype}[{dims}]"

    def fits(self, dtype: str, shape: Sequence[int]) -> bool:
        return (
            np.dtype(dtype).name == self.dtype
            and len(shape) == len(self.shape)
            and all(d is None or d == s for d, s in zip(self.shape, shape, strict=True))
        )


class Reference:
    """A model loaded in its reference runtime; :meth:`run` may be called many times."""

    runtime = ""  # e.g. "LiteRT 2.3.0 reference kernels (BUILTIN_REF)"
    keeps_tensors = False  # intermediates() gives every tensor (aot validate --layers)
    inputs: tuple[TensorSignature, ...] = ()
    outputs: tuple[TensorSignature, ...] = ()

    def __init__(self, source: str) -> None:
        self.source = source

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    def intermediates(self, inputs: Sequence[np.ndarray]) -> dict[str, np.ndarray | None]:
        """Every tensor the model computes for ``inputs``, by the model's tensor name (None
        for a name two tensors share), for 'aot validate --layers'; runtimes that cannot
        keep them refuse."""
        raise ConfigError(
            f"--layers compares each operator's output with LiteRT's, which keeps every "
            f"tensor of a .tflite model; {self.runtime or 'this reference'} cannot: validate "
            "without --layers"
        )

    def _check_count(self, inputs: Sequence[np.ndarray]) -> None:
        if len(inputs) != len(self.inputs):
            raise ConfigError(
                f"{self.source}: the model takes {len(self.inputs)} inputs, got {len(inputs)}"
            )


class TFLiteReference(Reference):
    """LiteRT's interpreter with the reference op resolver, one thread."""

    keeps_tensors = True

    def __init__(self, model: ModelSource) -> None:
        super().__init__(_describe(model))
        try:
            from ai_edge_litert.interpreter import Interpreter, OpResolverType
        except ImportError as exc:
            raise ToolchainError(
                "the TFLite reference runtime ai-edge-litert is not installed; install it "
                "with `pip install ai-edge-litert==2.3.0` (or `pip install aot[validate]`)"
            ) from exc
        self.runtime = f"LiteRT {_version('ai-edge-litert')} reference kernels (BUILTIN_REF)"
        where = (
            {"model_content": bytes(model)}
            if isinstance(model, bytes | bytearray)
            else {"model_path": os.fspath(model)}
        )
        content = bytes(model) if isinstance(model, bytes | bytearray) else _read(model)
        readable = _tile_as_version_2(content) if content is not None else None
        if readable is not None:
            where = {"model_content": readable}
            self.runtime += " (TILE version 3 read as version 2)"
        self._where = where
        try:
            self.interpreter = Interpreter(
                **where,
                experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                num_threads=1,
            )
            self.interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"{self.source}: LiteRT cannot load the model: {exc}") from exc
        self._input_details = self.interpreter.get_input_details()
        self._output_details = self.interpreter.get_output_details()
        self.inputs = tuple(_tflite_signature(d) for d in self._input_details)
        self.outputs = tuple(_tflite_signature(d) for d in self._output_details)
        self._shapes = [tuple(int(x) for x in d["shape"]) for d in self._input_details]

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Outputs in model order for ``inputs`` in model order; a dimension the model
        declares dynamic (-1 in its shape signature) takes any size."""
        self._check_count(inputs)
        arrays = [np.asarray(value) for value in inputs]
        resized = False
        for index, (detail, spec, array) in enumerate(
            zip(self._input_details, self.inputs, arrays, strict=True)
        ):
            if not spec.fits(array.dtype.name, array.shape):
                raise ConfigError(
                    f"{self.source}: input {detail['name']!r} expects {spec.describe()}, got "
                    f"{array.dtype.name}{list(array.shape)}"
                )
            if array.shape != self._shapes[index]:
                self.interpreter.resize_tensor_input(detail["index"], list(array.shape))
                self._shapes[index] = array.shape
                resized = True
        if resized:
            self.interpreter.allocate_tensors()
        for detail, array in zip(self._input_details, arrays, strict=True):
            self.interpreter.set_tensor(detail["index"], array)
        try:
            self.interpreter.invoke()
        except RuntimeError as exc:
            raise ModelError(f"{self.source}: LiteRT failed to run the model: {exc}") from exc
        # Copies: the interpreter reuses its tensor memory on the next invoke.
        return [np.array(self.interpreter.get_tensor(d["index"])) for d in self._output_details]

    def intermediates(self, inputs: Sequence[np.ndarray]) -> dict[str, np.ndarray | None]:
        """Every tensor of one fresh run on ``inputs`` (operator state at its initial
        value), by name: a second interpreter that keeps them all, since the first one
        reuses the memory of tensors that are no longer needed."""
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        self._check_count(inputs)
        interpreter = Interpreter(
            **self._where,
            experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
            num_threads=1,
            experimental_preserve_all_tensors=True,
        )
        interpreter.allocate_tensors()
        for detail, array in zip(interpreter.get_input_details(), inputs, strict=True):
            interpreter.set_tensor(detail["index"], np.asarray(array))
        try:
            interpreter.invoke()
        except RuntimeError as exc:
            raise ModelError(f"{self.source}: LiteRT failed to run the model: {exc}") from exc
        tensors: dict[str, np.ndarray | None] = {}
        for detail in interpreter.get_tensor_details():
            name = detail["name"]
            try:
                value = np.array(interpreter.get_tensor(detail["index"]))
            except ValueError:
                continue  # a tensor without data (an unused optional operand)
            # Two tensors of one name cannot be told apart: None, never the wrong one.
            tensors[name] = None if name in tensors else value
        return tensors


class TFLMReference(Reference):
    """TensorFlow Lite Micro's own interpreter (``pip install tflite-micro``): its reference
    kernels, double rounding as the default TFLite Micro build. The reference for models
    LiteRT cannot run (a 16x8 LSTM, int8 ADD_N); state carries from one :meth:`run` to the
    next, as in LiteRT's interpreter, unless ``reset`` is true."""

    def __init__(self, model: ModelSource) -> None:
        super().__init__(_describe(model))
        try:
            from tflite_micro.python.tflite_micro import runtime
        except ImportError as exc:
            raise ToolchainError(
                "TensorFlow Lite Micro's interpreter is not installed; install it with "
                "`pip install tflite-micro` (or `pip install aot[dev]`)"
            ) from exc
        self.runtime = f"TensorFlow Lite Micro {_version('tflite-micro')} (its Python interpreter)"
        data = bytes(model) if isinstance(model, bytes | bytearray) else Path(model).read_bytes()
        # The package's default arena (10x the model) is too small for a tiny model with
        # large activations; an arena is host memory here, so a generous floor costs nothing.
        arena = max(10 * len(data), TFLM_MIN_ARENA_BYTES)
        try:
            self.interpreter = runtime.Interpreter.from_bytes(data, arena_size=arena)
        except RuntimeError as exc:
            raise ModelError(f"{self.source}: TFLite Micro cannot load the model: {exc}") from exc
        import tflite

        graph = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0)
        # The wrapper exposes no tensor names or counts (and logs when asked past the end).
        self.inputs = tuple(
            _tflm_signature(graph, int(t), self.interpreter.get_input_details(i))
            for i, t in enumerate(graph.InputsAsNumpy())
        )
        self.outputs = tuple(
            _tflm_signature(graph, int(t), self.interpreter.get_output_details(i))
            for i, t in enumerate(graph.OutputsAsNumpy())
        )
        self.output_count = len(self.outputs)

    def run(self, inputs: Sequence[np.ndarray], *, reset: bool = False) -> list[np.ndarray]:
        self._check_count(inputs)
        if reset:
            self.interpreter.reset()
        for index, (spec, value) in enumerate(zip(self.inputs, inputs, strict=True)):
            array = np.asarray(value)
            if not spec.fits(array.dtype.name, array.shape):
                raise ConfigError(
                    f"{self.source}: input {spec.name!r} expects {spec.describe()}, got "
                    f"{array.dtype.name}{list(array.shape)}"
                )
            self.interpreter.set_input(array, index)
        try:
            self.interpreter.invoke()
        except RuntimeError as exc:
            raise ModelError(f"{self.source}: TFLite Micro failed to run the model: {exc}") from exc
        # Copies: the interpreter reuses its arena on the next invoke.
        return [np.array(self.interpreter.get_output(i)) for i in range(self.output_count)]


class OnnxReference(Reference):
    """onnxruntime on the CPU, one thread. Float models run with graph optimisations off
    (the unfused operators are the reference); integer models (QDQ or QOperator) with them
    on, since only then does onnxruntime fuse QDQ groups into the integer kernels a
    deployment runs and aot's onnx-int8 frontend follows."""

    def __init__(self, model: ModelSource) -> None:
        super().__init__(_describe(model))
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ToolchainError(
                "the ONNX reference runtime onnxruntime is not installed; install it with "
                "`pip install onnxruntime` (or `pip install aot[validate]`)"
            ) from exc
        integer = _is_integer_onnx(model)
        how = "integer kernels, full graph optimisation" if integer else "no graph optimisation"
        self.runtime = f"onnxruntime {ort.__version__} (CPU, {how})"
        options = ort.SessionOptions()
        options.graph_optimization_level = (
            ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            if integer
            else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        )
        options.log_severity_level = 3  # fusion notes on stderr are not the user's business
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        payload = bytes(model) if isinstance(model, bytes | bytearray) else os.fspath(model)
        try:
            self.session = ort.InferenceSession(
                payload, sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own unexported exception types
            raise ModelError(f"{self.source}: onnxruntime cannot load the model: {exc}") from exc
        self._names = [d.name for d in self.session.get_inputs()]
        self.inputs = tuple(_onnx_signature(d) for d in self.session.get_inputs())
        self.outputs = tuple(_onnx_signature(d) for d in self.session.get_outputs())

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        self._check_count(inputs)
        feed = {name: np.asarray(v) for name, v in zip(self._names, inputs, strict=True)}
        try:
            outputs = self.session.run(None, feed)
        except Exception as exc:
            raise ConfigError(
                f"{self.source}: onnxruntime rejected the inputs or failed: {exc}"
            ) from exc
        return [np.asarray(o) for o in outputs]


def _is_integer_onnx(model: ModelSource) -> bool:
    """Whether an ONNX model holds quantization operators (QDQ or QOperator form); a file
    onnx cannot parse is left to onnxruntime, which names the problem."""
    import onnx

    from aot.frontend.onnx_int8 import is_integer_onnx

    try:
        if isinstance(model, bytes | bytearray):
            proto = onnx.load_from_string(bytes(model))
        else:
            proto = onnx.load(os.fspath(model), load_external_data=False)
    except Exception:  # onnx raises DecodeError and friends from protobuf
        return False
    return is_integer_onnx(proto)


def open_reference(model: str | Path) -> Reference:
    """The reference runtime for a model file, chosen by its content (TFLite's flatbuffer
    identifier ``TFL3``), else by its suffix (.onnx)."""
    path = Path(model)
    if path.is_dir():
        raise ConfigError(f"reference model {path} is a directory; give a .tflite or .onnx file")
    try:
        with path.open("rb") as f:
            head = f.read(8)
    except FileNotFoundError:
        raise ConfigError(f"reference model {path} does not exist") from None
    except OSError as err:
        raise ConfigError(f"cannot open reference model {path}: {err.strerror}") from None
    if head[4:8] == b"TFL3":
        return _tflite_reference(path)
    if path.suffix.lower() == ".onnx":
        return OnnxReference(path)
    raise ModelError(
        f"reference model {path} is neither a TFLite flatbuffer nor an .onnx file; give the "
        "model the folder was built from"
    )


def _tflite_reference(path: Path) -> Reference:
    """LiteRT's reference kernels; for a model LiteRT cannot load (an operator or dtype it
    has no kernel for, such as a 16x8 LSTM), TensorFlow Lite Micro's interpreter when it is
    installed, else LiteRT's error."""
    try:
        return TFLiteReference(path)
    except ModelError as litert_error:
        try:
            reference = TFLMReference(path)
        except (ModelError, ToolchainError):
            raise litert_error from None
        reference.runtime += " (LiteRT cannot load this model)"
        return reference


def _tflm_signature(graph: object, tensor: int, detail: dict) -> TensorSignature:
    name = (graph.Tensors(tensor).Name() or b"").decode("utf-8", "replace")  # type: ignore[attr-defined]
    dims = tuple(int(d) for d in detail["shape"])
    return TensorSignature(name or f"tensor_{tensor}", np.dtype(detail["dtype"]).name, dims)


def _tflite_signature(detail: dict) -> TensorSignature:
    shape = detail.get("shape_signature", detail["shape"])
    dims = tuple(None if int(d) < 0 else int(d) for d in shape)
    return TensorSignature(str(detail["name"]), np.dtype(detail["dtype"]).name, dims)


def _onnx_signature(arg) -> TensorSignature:  # type: ignore[no-untyped-def]
    dims = tuple(d if isinstance(d, int) and d >= 0 else None for d in arg.shape)
    return TensorSignature(arg.name, ONNX_TYPES.get(arg.type, arg.type), dims)


# LiteRT 2.3's reference resolver registers TILE up to version 2, while its TILE kernel
# copies int8 like any other type: version 3 only declares int8 (Keras 3's UpSampling2D
# exports it). A copy of the model whose TILE says version 2 runs on the same kernel.
TILE_VERSION_FIELD = 8  # OperatorCode's vtable slot of `version` (fields 0-3: 4, 6, 8, 10)


def _tile_as_version_2(content: bytes) -> bytes | None:
    """``content`` with every TILE operator code at version 3 set to 2, or None."""
    import struct

    import tflite

    try:
        model = tflite.Model.GetRootAs(content, 0)
        codes = [model.OperatorCodes(i) for i in range(model.OperatorCodesLength())]
    except Exception:  # not a flatbuffer this reader follows: let LiteRT say what is wrong
        return None
    patched = bytearray(content)
    changed = False
    for code in codes:
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin != tflite.BuiltinOperator.TILE or code.Version() != 3:
            continue
        slot = code._tab.Offset(TILE_VERSION_FIELD)
        if slot:
            struct.pack_into("<i", patched, code._tab.Pos + slot, 2)
            changed = True
    return bytes(patched) if changed else None


def _read(model: ModelSource) -> bytes | None:
    try:
        return Path(os.fspath(model)).read_bytes()
    except OSError:
        return None  # LiteRT reports the missing file itself


def _describe(model: ModelSource) -> str:
    if isinstance(model, bytes | bytearray):
        return f"<model of {len(model)} bytes>"
    return os.fspath(model)


def _version(package: str) -> str:
    try:
        return package_metadata.version(package)
    except package_metadata.PackageNotFoundError:
        return "(unknown version)"
