"""The Ethos-U backend: Vela decides what runs on the NPU and compiles it.

Vela places operators on the NPU by its own rules, which depend on shapes, quantization
and the neighbouring operators (a RESHAPE between two convolutions runs on the NPU, one
feeding a CPU operator does not). So the backend does not guess: ``prepare`` runs Vela
once on the source model, and the pattern's predicate takes exactly the operators whose
results Vela computes on the NPU. A pattern can therefore never claim an operator Vela
cannot compile. Each partitioned region is matched to the ``ethos-u`` operator of Vela's
output that computes the same tensors; its command stream and weights become the step's
constants and its arena the step's scratch, which the planner puts in memory the NPU
reaches (board data: ``accelerators:`` in the board YAML).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from aot.backends.base import (
    Artifact,
    Backend,
    BackendConstant,
    EmitContext,
    EmittedCode,
    LowerContext,
    OperatorInfo,
    OperatorPattern,
    Region,
    RuntimeFiles,
    backends,
)
from aot.backends.ethos_u import driver, emit
from aot.backends.ethos_u.report import vela_report
from aot.backends.ethos_u.vela import NpuSubgraph, VelaResult, compile_model
from aot.errors import ConfigError, InternalError, UnsupportedError

# Every operator kind the int8 importer emits; Vela's verdict (the predicate) decides.
INT8_KINDS = (
    "abs_int8",
    "add_int8",
    "arg_max_int8",
    "arg_min_int8",
    "average_pool2d_int8",
    "concatenation_int8",
    "concatenation_requantize_int8",
    "conv2d_int8",
    "depth_to_space_int8",
    "depthwise_conv2d_int8",
    "dequantize_int8",
    "fully_connected_int8",
    "gather_int8",
    "hard_swish_int8",
    "leaky_relu_int8",
    "logistic_int8",
    "max_pool2d_int8",
    "maximum_int8",
    "mean_int8",
    "minimum_int8",
    "mul_int8",
    "neg_int8",
    "pack_int8",
    "pad_int8",
    "prelu_int8",
    "quantize_int8",
    "reduce_max_int8",
    "requantize_int8",
    "reshape_int8",
    "resize_bilinear_int8",
    "resize_nearest_int8",
    "softmax_int8",
    "space_to_depth_int8",
    "squared_difference_int8",
    "strided_slice_int8",
    "sub_int8",
    "sum_int8",
    "tanh_int8",
    "transpose_int8",
)
# Vela's arena and feature-map offsets are multiples of 16; so are its command streams.
ALIGNMENT = 16


@backends.register("ethos-u55-128")
class EthosUBackend(Backend):
    """Arm Ethos-U55 with 128 MACs per cycle, compiled by Vela. The other Ethos-U55 sizes
    are the same class with another ``name`` (Vela's --accelerator-config)."""

    name: ClassVar[str] = "ethos-u55-128"
    description: ClassVar[str] = "Arm Ethos-U55 (128 MACs/cycle), command streams from Vela"
    alignment: ClassVar[int] = ALIGNMENT
    # The compute unit in pool targets (--pool isram:1M:cpu,ethos_u): one NPU per board,
    # whatever its size, and a name the pool grammar accepts (no '-').
    target_name: ClassVar[str | None] = "ethos_u"
    emulator_note: ClassVar[str | None] = (
        "QEMU has no Ethos-U model; run it on a board with the NPU ('aot flash {folder}', "
        "then 'aot run {folder} --port PORT')"
    )

    # -- partition ---------------------------------------------------------------------
    def prepare(self, model: Any, board: Any = None) -> EthosUContext:
        """Run Vela on the imported model's source file (an ``ImportedModel``); the
        context holds its result, the source operators and the board (its NPU's register
        base and interrupt)."""
        if board is not None:
            # A firmware build: fail now if the driver or board data is missing.
            self.runtime(EthosUContext(None, board=board))
        if getattr(model, "source_format", "tflite") != "tflite":
            raise UnsupportedError(
                f"the {self.name} backend compiles TFLite int8 models through Vela; "
                f"'{model.source_path}' is {model.source_format}: convert it to TFLite"
            )
        path = Path(model.source_path)
        return self.prepare_tflite(
            path.read_bytes(), _c_name(path.stem), tuple(getattr(model, "sources", ())), board
        )

    def prepare_tflite(
        self, data: bytes, name: str = "model", operators: tuple[Any, ...] = (), board: Any = None
    ) -> EthosUContext:
        """Vela on a .tflite file's bytes: the context the other hooks take."""
        vela = compile_model(
            data,
            self.name,
            system_config=self.options.get("vela_system_config"),
            memory_mode=self.options.get("vela_memory_mode"),
            name=name,
        )
        return EthosUContext(vela, operators, board)

    def takes(self, ctx: EthosUContext, info: OperatorInfo) -> bool:
        """Whether Vela computes this operator's result on the NPU."""
        source = info.source
        if source is None or not getattr(source, "output", ""):
            return False  # no source tensor to match Vela's output against
        vela = _vela(ctx, self.name)
        cpu = {name for name, _ in vela.cpu_operators}
        return source.output not in cpu and bool(vela.subgraphs)

    def patterns(self, ctx: EthosUContext | None = None) -> Sequence[OperatorPattern]:
        return (OperatorPattern("vela", INT8_KINDS, lambda info: self.takes(ctx, info)),)

    def describe(self) -> list[str]:
        return ["vela: the int8 operators Vela places on the NPU (Vela's own verdict)"]

    # -- lower -------------------------------------------------------------------------
    def subgraph_for(self, vela: VelaResult, outputs: Sequence[str]) -> NpuSubgraph:
        """The NPU subgraph of Vela's output whose outputs are these tensors."""
        wanted = set(outputs)
        for subgraph in vela.subgraphs:
            if {fm.name for fm in subgraph.outputs} == wanted:
                return subgraph
        have = "; ".join(", ".join(fm.name for fm in sg.outputs) for sg in vela.subgraphs) or "none"
        raise UnsupportedError(
            f"the {self.name} region computing {', '.join(sorted(wanted))} is not one NPU "
            f"subgraph of Vela's (those compute: {have}); give {self.name} the first "
            "--accelerator place so that its regions are Vela's"
        )

    def lower(self, region: Region, ctx: LowerContext | None = None) -> Artifact:
        prepared = ctx.prepared if ctx is not None else None
        vela = _vela(prepared, self.name)
        # Vela's subgraphs the earlier regions of this build took.
        taken = {a.payload.subgraph.index for a in (ctx.earlier if ctx is not None else ())}
        activations = tuple(i for i, p in enumerate(region.params) if not p.is_constant)
        subgraph = self._match(vela, taken, region, activations)
        _check_shapes(self.name, region, subgraph, activations)
        # The model's own weights: Vela re-encoded them into its read-only data.
        unused = tuple(i for i, p in enumerate(region.params) if p.is_constant)
        # The step's C copies the feature maps into the arena and back on the CPU: the
        # NPU touches only the arena and Vela's constants.
        feature_maps = (
            *activations,
            *range(len(region.params), len(region.params) + len(region.outputs)),
        )
        return replace(
            artifact_for(region.symbol, subgraph, outputs=len(region.outputs)),
            unused_params=unused,
            cpu_operands=feature_maps,
            cpu_scratch=True,
        )

    def _match(
        self, vela: VelaResult, taken: set[int], region: Region, activations: tuple[int, ...]
    ) -> NpuSubgraph:
        """Vela's subgraph for this region: the first not yet lowered whose inputs and
        outputs have the region's shapes (regions are lowered in execution order, as
        Vela lists its subgraphs) and, when lowering names the source tensors the
        region's operators compute, whose outputs are among them."""
        ours = _signature([region.params[i] for i in activations], region.outputs)
        made = {op.source.output for op in region.operators if op.source is not None}
        for subgraph in vela.subgraphs:
            if subgraph.index in taken:
                continue
            if _signature(subgraph.inputs, subgraph.outputs) != ours:
                continue
            if made and not {fm.name for fm in subgraph.outputs} <= made:
                continue
            return subgraph
        if made:
            self.subgraph_for(vela, sorted(made))  # raises, naming what Vela's subgraphs compute
        raise UnsupportedError(
            f"the {self.name} region {region.symbol} (tensors {ours}) is not one of the NPU "
            f"subgraphs Vela made of this model; give {self.name} the first --accelerator "
            "place so that its regions are Vela's"
        )

    # -- emit --------------------------------------------------------------------------
    def emit(self, step: Any, artifact: Artifact, ctx: EmitContext) -> EmittedCode:
        payload: EthosUStep = artifact.payload
        subgraph = payload.subgraph
        # ctx.args: the region's params, its outputs, then the backend constants
        # (command stream, read-only data), as artifact_for declared them.
        expected = payload.params + payload.outputs + len(artifact.constants)
        if len(ctx.args) != expected or ctx.scratch is None:
            raise InternalError(
                f"{self.name} step {artifact.symbol}: expected {expected} arguments and a "
                f"scratch arena, got {list(ctx.args)} and scratch {ctx.scratch}"
            )
        inputs = [ctx.args[i] for i in payload.activations]
        outputs = list(ctx.args[payload.params : payload.params + payload.outputs])
        # Named after Vela's subgraph: short, and the same as in Vela's own output.
        symbol = f"ethosu{subgraph.index}"
        prototype, function = emit.subgraph_function(ctx.model, symbol, subgraph)
        call = emit.subgraph_call(
            ctx.model,
            symbol,
            inputs,
            outputs,
            f"(const uint8_t *){ctx.args[-2]}",
            f"(const uint8_t *){ctx.args[-1]}",
            f"(uint8_t *){ctx.scratch}",
        )
        return EmittedCode(
            call=call,
            functions=(function,),
            prototypes=(prototype,),
            includes=("<string.h>", f'"{emit.GLUE_HEADER}"'),
        )

    # -- report ------------------------------------------------------------------------
    def report(
        self, ctx: EthosUContext | None = None, operators: Sequence[Any] | None = None
    ) -> dict[str, Any]:
        """NPU and CPU operators and Vela's summary, for metadata.json (see report.py);
        by default over the source operators ``prepare`` saw."""
        if ctx is None:
            return {}  # not prepared: no Vela run to report
        return vela_report(_vela(ctx, self.name), ctx.operators if operators is None else operators)

    # -- project -----------------------------------------------------------------------
    def runtime(self, ctx: EthosUContext | None = None) -> RuntimeFiles:
        board = ctx.board if ctx is not None else None
        accelerator = _board_accelerator(board, self.name)
        paths = driver.find_driver(
            self.options.get("ethosu_driver_dir"), self.options.get("cmsis_core_dir")
        )
        return RuntimeFiles(
            sources=driver.glue_sources(),
            headers=driver.glue_headers(),
            include_dirs=driver.include_dirs(paths),
            defines=driver.driver_defines(
                self.name,
                accelerator.base,
                accelerator.irq,
                secure=board.has("secure_state") if board is not None else True,
            ),
        )


@dataclass(frozen=True)
class EthosUContext:
    """What ``prepare`` found, for the later hooks: Vela's compilation of the model (None
    before Vela ran), the source operators and the board (None: a library build)."""

    vela: VelaResult | None
    operators: tuple[Any, ...] = ()
    board: Any = None


def _vela(ctx: EthosUContext | None, name: str) -> VelaResult:
    if ctx is None or ctx.vela is None:
        raise InternalError(f"the {name} backend was used before prepare()")
    return ctx.vela


@dataclass(frozen=True)
class EthosUStep:
    """An Ethos-U step's payload: Vela's subgraph and how the region's arguments map to it."""

    subgraph: NpuSubgraph
    params: int  # the region's parameters (activations and model constants)
    activations: tuple[int, ...]  # which params are Vela's inputs, in Vela's order
    outputs: int


def artifact_for(
    symbol: str,
    subgraph: NpuSubgraph,
    *,
    params: int | None = None,
    activations: tuple[int, ...] | None = None,
    outputs: int | None = None,
) -> Artifact:
    """The step's artifact: Vela's command stream and read-only data as its constants, the
    arena as its scratch. By default the region's params are exactly Vela's inputs."""
    n_in = len(subgraph.inputs)
    return Artifact(
        symbol=symbol,
        payload=EthosUStep(
            subgraph=subgraph,
            params=n_in if params is None else params,
            activations=tuple(range(n_in)) if activations is None else activations,
            outputs=len(subgraph.outputs) if outputs is None else outputs,
        ),
        constants=(
            BackendConstant(
                f"{symbol}_command_stream",
                np.frombuffer(subgraph.command_stream, dtype=np.uint8).copy(),
                ALIGNMENT,
            ),
            BackendConstant(
                f"{symbol}_read_only",
                np.frombuffer(subgraph.read_only, dtype=np.uint8).copy(),
                ALIGNMENT,
            ),
        ),
        scratch_bytes=subgraph.scratch_bytes,
    )


def _signature(inputs: Sequence[Any], outputs: Sequence[Any]) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(t.shape), t.dtype) for t in (*inputs, *outputs)]


def _check_shapes(
    name: str, region: Region, subgraph: NpuSubgraph, activations: tuple[int, ...]
) -> None:
    """The region's activations and outputs are Vela's inputs and outputs, in order."""
    ours = [region.params[i] for i in activations] + list(region.outputs)
    vela = list(subgraph.inputs) + list(subgraph.outputs)
    got = [(tuple(t.shape), t.dtype) for t in ours]
    want = [(tuple(fm.shape), fm.dtype) for fm in vela]
    if got != want:
        raise InternalError(
            f"{name} region {region.symbol}: its tensors {got} are not those of Vela's "
            f"subgraph {subgraph.index} {want}"
        )


def _board_accelerator(board: Any, name: str) -> Any:
    if board is None:
        raise ConfigError(f"the {name} backend needs a board that declares it (--board)")
    accelerator = board.accelerator(name)
    if accelerator.base is None or accelerator.irq is None:
        raise ConfigError(
            f"board {board.name}'s accelerator '{name}' gives no 'base' and 'irq': add the "
            "NPU's register base address and interrupt number to its YAML"
        )
    return accelerator


def _c_name(stem: str) -> str:
    out = "".join(c if c.isalnum() else "_" for c in stem)
    return out if out and not out[0].isdigit() else f"m_{out}"


@backends.register("ethos-u55-256")
class EthosU55x256Backend(EthosUBackend):
    name: ClassVar[str] = "ethos-u55-256"
    description: ClassVar[str] = "Arm Ethos-U55 (256 MACs/cycle), command streams from Vela"


@backends.register("ethos-u55-64")
class EthosU55x64Backend(EthosUBackend):
    name: ClassVar[str] = "ethos-u55-64"
    description: ClassVar[str] = "Arm Ethos-U55 (64 MACs/cycle), command streams from Vela"
