"""Vela, Arm's compiler for the Ethos-U NPUs, called as a library, and what its output holds.

Vela reads a TFLite int8 model and writes an optimised one in which every run of
operators it can place on the NPU is replaced by one ``ethos-u`` custom operator; the
operators it cannot place stay as they are (TFLite Micro would run them on the CPU). The
custom operator's inputs are, in this order: the command stream, the read-only data
(encoded weights and biases), the scratch arena, the fast-scratch arena, then the
subgraph's input feature maps; its outputs are the output feature maps. The feature maps
sit inside the scratch arena at the offsets Vela wrote into the model's
``OfflineMemoryAllocation`` metadata (the same offsets TFLite Micro honours).

``ethos-u-vela`` is an optional dependency (``pip install 'aot[ethos-u]'``), imported
only when a compile is asked for.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aot.errors import ToolchainError, UnsupportedError

INSTALL_HINT = "pip install 'aot[ethos-u]'"
CUSTOM_CODE = b"ethos-u"
# The NPU configurations Vela compiles for (its --accelerator-config values). aot's
# accelerator names are the same strings.
ACCELERATORS = (
    "ethos-u55-32",
    "ethos-u55-64",
    "ethos-u55-128",
    "ethos-u55-256",
    "ethos-u65-256",
    "ethos-u65-512",
)
_OFFLINE_ALLOCATION = b"OfflineMemoryAllocation"
_COMMAND_STREAM, _READ_ONLY, _SCRATCH, _SCRATCH_FAST = range(4)
_CUSTOM_OPERATOR = 32  # tflite BuiltinOperator.CUSTOM


@dataclass(frozen=True)
class FeatureMap:
    """An input or output of an NPU subgraph: its tensor and where it sits in the arena."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    offset: int  # bytes from the start of the scratch arena

    @property
    def size_bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class NpuSubgraph:
    """One ``ethos-u`` operator of Vela's output: everything the firmware needs to run it."""

    index: int  # position among the NPU subgraphs, in execution order
    command_stream: bytes  # the driver's custom data ('COP1' payload), as ethosu_invoke takes
    read_only: bytes  # encoded weights and biases (base address 0)
    scratch_bytes: int  # the arena (base address 1): intermediates and feature maps
    fast_scratch_bytes: int  # base address 2; the same arena unless Vela spills (U65)
    inputs: tuple[FeatureMap, ...]
    outputs: tuple[FeatureMap, ...]


@dataclass(frozen=True)
class VelaResult:
    """Vela's output for one model."""

    accelerator: str
    subgraphs: tuple[NpuSubgraph, ...]
    # Output tensor names of the operators Vela left to the CPU, in order, with their type.
    cpu_operators: tuple[tuple[str, str], ...]
    summary: Mapping[str, str]  # Vela's summary CSV, one row: column -> value
    summary_text: str  # the "Network summary" Vela prints

    @property
    def npu_outputs(self) -> frozenset[str]:
        """Names of the tensors Vela placed on the NPU (subgraph outputs only)."""
        return frozenset(fm.name for sg in self.subgraphs for fm in sg.outputs)


def vela_version() -> str:
    return _import_vela().__version__


def _import_vela() -> Any:  # the module ethosu.vela._version
    try:
        from ethosu.vela import _version
    except ImportError:
        raise ToolchainError(
            f"the Ethos-U backend needs Arm's Vela compiler (ethos-u-vela): {INSTALL_HINT}"
        ) from None
    return _version


def compile_model(
    tflite: bytes,
    accelerator: str,
    *,
    system_config: str | None = None,
    memory_mode: str | None = None,
    name: str = "model",
) -> VelaResult:
    """Run Vela on a TFLite model and read what it wrote."""
    if accelerator not in ACCELERATORS:
        raise UnsupportedError(
            f"Vela has no NPU configuration '{accelerator}'; use one of {', '.join(ACCELERATORS)}"
        )
    _import_vela()
    from ethosu.vela.vela import main as vela_main

    with tempfile.TemporaryDirectory(prefix="aot-vela-") as tmp:
        source = Path(tmp) / f"{name}.tflite"
        source.write_bytes(tflite)
        out = Path(tmp) / "out"
        argv = [str(source), "--accelerator-config", accelerator, "--output-dir", str(out)]
        if system_config:
            argv += ["--system-config", system_config]
        if memory_mode:
            argv += ["--memory-mode", memory_mode]
        # Vela prints its progress and summary; keep them for the report, not the terminal.
        printed = io.StringIO()
        native = Path(tmp) / "native.txt"
        try:
            with (
                _native_output_to(native),
                contextlib.redirect_stdout(printed),
                contextlib.redirect_stderr(printed),
            ):
                rc = vela_main(argv)
        except SystemExit as exc:  # argparse rejects an option value
            rc = exc.code if isinstance(exc.code, int) else 2
        except Exception as exc:  # any failure inside Vela is a tool failure
            said = getattr(exc, "error_msg", None)  # Vela's own errors carry a message
            if isinstance(said, str) and said.strip():
                raise ToolchainError(
                    f"Vela {vela_version()} refused '{name}': {said.strip().splitlines()[0]}"
                ) from exc
            raise ToolchainError(
                f"Vela {vela_version()} failed on '{name}' ({type(exc).__name__}): run "
                f"`vela {source.name} --accelerator-config {accelerator}` to see why"
            ) from exc
        text = printed.getvalue() + native.read_text(errors="replace")
        if rc != 0:
            last = next((ln for ln in reversed(text.splitlines()) if ln.strip()), "no message")
            raise ToolchainError(f"Vela failed on '{name}': {last.strip()}")
        optimised = out / f"{name}_vela.tflite"
        summaries = sorted(out.glob(f"{name}_summary_*.csv"))
        if not optimised.is_file() or not summaries:
            raise ToolchainError(f"Vela wrote no optimised model for '{name}' into {out}")
        with summaries[0].open(newline="") as f:
            rows = list(csv.DictReader(f))
        subgraphs, cpu = read_optimised(optimised.read_bytes())
    start = text.find("Network summary")
    return VelaResult(
        accelerator=accelerator,
        subgraphs=subgraphs,
        cpu_operators=cpu,
        summary=dict(rows[0]) if rows else {},
        summary_text=text[start:].strip() if start >= 0 else "",
    )


@contextlib.contextmanager
def _native_output_to(path: Path) -> Iterator[None]:
    """Point file descriptors 1 and 2 at ``path``: Vela's C++ core (regor) prints its
    warnings there, past Python's sys.stdout."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with path.open("wb") as sink:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def read_optimised(data: bytes) -> tuple[tuple[NpuSubgraph, ...], tuple[tuple[str, str], ...]]:
    """The NPU subgraphs and the CPU operators of a Vela-optimised TFLite model."""
    import tflite

    from aot.frontend.tflite_file import TFLITE_DTYPES, builtin_operator_names

    model = tflite.Model.GetRootAsModel(data, 0)
    if model.SubgraphsLength() != 1:
        raise UnsupportedError("Vela's output has more than one subgraph; aot reads one")
    graph = model.Subgraphs(0)
    offsets = _offline_offsets(model)
    names = builtin_operator_names()

    def buffer_bytes(tensor_index: int) -> bytes:
        buf = model.Buffers(graph.Tensors(tensor_index).Buffer())
        return buf.DataAsNumpy().tobytes() if buf.DataLength() else b""

    def feature_map(tensor_index: int) -> FeatureMap:
        t = graph.Tensors(tensor_index)
        if tensor_index >= len(offsets) or offsets[tensor_index] < 0:
            raise UnsupportedError(
                f"Vela gave tensor '{t.Name().decode()}' no offset in the arena; aot needs "
                "every NPU feature map in the scratch arena (do not pass --separate-io-regions)"
            )
        return FeatureMap(
            name=t.Name().decode("utf-8", "replace"),
            shape=tuple(int(d) for d in t.ShapeAsNumpy()),
            dtype=TFLITE_DTYPES[t.Type()],
            offset=int(offsets[tensor_index]),
        )

    def size(tensor_index: int) -> int:
        return int(np.prod(graph.Tensors(tensor_index).ShapeAsNumpy(), dtype=np.int64))

    subgraphs: list[NpuSubgraph] = []
    cpu: list[tuple[str, str]] = []
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        ins = [int(t) for t in op.InputsAsNumpy()]
        outs = [int(t) for t in op.OutputsAsNumpy()]
        if builtin == _CUSTOM_OPERATOR and code.CustomCode() == CUSTOM_CODE:
            subgraphs.append(
                NpuSubgraph(
                    index=len(subgraphs),
                    command_stream=buffer_bytes(ins[_COMMAND_STREAM]),
                    read_only=buffer_bytes(ins[_READ_ONLY]),
                    scratch_bytes=size(ins[_SCRATCH]),
                    fast_scratch_bytes=size(ins[_SCRATCH_FAST]),
                    inputs=tuple(feature_map(t) for t in ins[_SCRATCH_FAST + 1 :]),
                    outputs=tuple(feature_map(t) for t in outs),
                )
            )
            if ins[_SCRATCH] != ins[_SCRATCH_FAST]:
                raise UnsupportedError(
                    "Vela split the arena into scratch and fast scratch (spilling); aot plans "
                    "one arena per NPU subgraph: use a memory mode without spilling"
                )
        else:
            for t in outs:
                cpu.append((graph.Tensors(t).Name().decode("utf-8", "replace"), names[builtin]))
    return tuple(subgraphs), tuple(cpu)


def _offline_offsets(model: object) -> tuple[int, ...]:
    # Layout (TFLite Micro's offline planner): version, subgraph index, tensor count, then
    # one offset per tensor (-1: not in the arena).
    for i in range(model.MetadataLength()):
        meta = model.Metadata(i)
        if meta.Name() == _OFFLINE_ALLOCATION:
            raw = model.Buffers(meta.Buffer()).DataAsNumpy().tobytes()
            values = np.frombuffer(raw, dtype="<i4")
            count = int(values[2])
            return tuple(int(v) for v in values[3 : 3 + count])
    return ()
