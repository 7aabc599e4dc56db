"""A patch stage's C: the kernels of a chain of convolutions called tile by tile.

A patch stage (docs/memory_planning.md, "Below the fixed-order bound") is one step of the
lowered model: it reads the stage input and the chain's constants and writes the stage
output; its scratch holds the tile buffers. Each kernel call over a tile is the
operator's own prepared call with another geometry: the sizes of the tile's buffers and
the padding of the tile (aot/planning/patches.py computes them). The kernels already
treat a tap outside their input as padding, so a tile is to them a small image whose
border is padded only where the tile touches the image's border. The first operator
reads the whole stage input in place with its padding moved to the tile's origin
(negative inside the image); the last writes a tile buffer whose rows are copied into
the stage output.

The scratch: operator k's output tile at its low end when k is even, at its high end when
odd, so an operator's input and output never meet; its kernel's own scratch in the gap
between them. Its size is the most one operator needs at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from aot.backends.base import Artifact, EmitContext, EmittedCode
from aot.errors import InternalError

# Bytes every tile buffer is aligned to: word loads of the DSP kernels need 4; the
# planner's scratch is 16-aligned, so offsets stay so too.
TILE_ALIGNMENT = 16
# The prepared params a tile changes; every other field is the operator's own.
GEOMETRY = ("in_h", "in_w", "out_h", "out_w", "pad_top", "pad_left")
# PatchStage.arguments: the operator's activation input and its output.
ACTIVATION, RESULT = -1, -2


def align(size: int) -> int:
    return -(-size // TILE_ALIGNMENT) * TILE_ALIGNMENT


@dataclass(frozen=True)
class TileKernelCall:
    """One operator's kernel over one tile: ``geometry`` replaces those params fields.
    The first operator reads the stage input in place, every other one the tile buffer
    of the operator before it."""

    operator: int
    geometry: Mapping[str, int]
    # Bytes into the stage input where the first operator's call starts reading (a 1x1
    # kernel given only its rows); 0: the whole input, padding moved to the tile.
    input_offset: int = 0


@dataclass(frozen=True)
class TileCopy:
    """The last tile buffer's rows into the stage output: ``rows`` rows of ``row_bytes``
    to ``first_byte`` of the output, one output row (``stride_bytes``) apart."""

    rows: int
    row_bytes: int
    first_byte: int
    stride_bytes: int


@dataclass(frozen=True)
class PatchStage:
    """The payload of a patch stage's artifact.

    ``operators``: the chain's kernel artifacts (each a ``KernelCall`` payload), in order;
    ``arguments``: per operator, what each argument of its own step was: ``ACTIVATION``
    (the tensor the chain passes on), ``RESULT`` (its output), else the position of the
    tensor among the stage step's arguments (0 is the stage input, 1 the stage output,
    then the chain's constants); ``buffers``: bytes of each operator's tile buffer
    (aligned); ``tiles``: per tile, its calls and its copy."""

    operators: tuple[Artifact, ...]
    arguments: tuple[tuple[int, ...], ...]
    buffers: tuple[int, ...]
    tiles: tuple[tuple[tuple[TileKernelCall, ...], TileCopy], ...]
    grid: tuple[int, int]
    # The last operator writes its rows straight into the stage output (at each tile's
    # ``first_byte``) instead of a tile buffer: for tiles of whole rows, as the bands of
    # an in-place depthwise (aot/planning/in_place_rows.py), whose buffers are 0.
    direct_output: bool = False

    @property
    def scratch_bytes(self) -> int:
        """Operator k's input and output tiles at the two ends, its kernel's scratch in
        the gap between them: the most any operator needs at once."""
        return max(self._in_use(k) + align(a.scratch_bytes) for k, a in enumerate(self.operators))

    def _in_use(self, operator: int) -> int:
        before = self.buffers[operator - 1] if operator else 0
        return before + self.buffers[operator]

    def buffer_offset(self, operator: int) -> int:
        """Even operators' tiles at the low end of the scratch, odd ones' at the high end."""
        if operator % 2 == 0:
            return 0
        return self.scratch_bytes - self.buffers[operator]

    def kernel_scratch_offset(self, operator: int) -> int:
        """Operator ``operator``'s kernel scratch: just above the low-end tile in use."""
        even = operator if operator % 2 == 0 else operator - 1
        return self.buffers[even]


def emit_patch_stage(backend: Any, step: Any, artifact: Artifact, ctx: EmitContext) -> EmittedCode:
    """The stage's calls, tile after tile, through ``backend.emit`` (the kernel backend)
    for each operator's call with the tile's geometry; a params struct per distinct
    geometry of an operator (the tiles inside the image share one)."""
    stage: PatchStage = artifact.payload
    if ctx.scratch is None and stage.scratch_bytes:
        raise InternalError(f"patch stage {artifact.symbol} has no scratch")
    # None only for a stage with no tile buffers whose kernel needs no scratch either.
    scratch = f"((int8_t*)(void*)({ctx.scratch or 0}))"
    stage_input, stage_output = ctx.args[0], f"((int8_t*)(void*)({ctx.args[1]}))"
    copy = f"{artifact.symbol}_copy_rows"
    calls: list[str] = []
    functions: dict[str, None] = {}
    prototypes: dict[str, None] = {}
    includes: dict[str, None] = {}
    structs: dict[tuple[int, tuple[tuple[str, int], ...]], Artifact] = {}
    for calls_of_tile, tile_copy in stage.tiles:
        for call in calls_of_tile:
            original = stage.operators[call.operator]
            key = (call.operator, tuple(sorted(call.geometry.items())))
            tiled = structs.get(key)
            if tiled is None:
                tiled = _with_geometry(original, call.geometry, f"_g{len(structs)}")
                structs[key] = tiled
            if call.operator:
                source = f"({scratch} + {stage.buffer_offset(call.operator - 1)})"
            elif call.input_offset:
                source = f"((const int8_t*)(const void*)({stage_input}) + {call.input_offset})"
            else:
                source = stage_input
            output = f"({scratch} + {stage.buffer_offset(call.operator)})"
            if stage.direct_output and call.operator == len(stage.operators) - 1:
                output = f"({stage_output} + {tile_copy.first_byte})"
            args = tuple(
                source if a == ACTIVATION else output if a == RESULT else ctx.args[a]
                for a in stage.arguments[call.operator]
            )
            kernel_scratch = None
            if original.scratch_bytes:
                kernel_scratch = f"{scratch} + {stage.kernel_scratch_offset(call.operator)}"
            code = backend.emit(step, tiled, replace(ctx, args=args, scratch=kernel_scratch))
            calls.extend(code.call)
            functions.update(dict.fromkeys(code.functions))
            prototypes.update(dict.fromkeys(code.prototypes))
            includes.update(dict.fromkeys(code.includes))
        if stage.direct_output:
            continue
        last = f"({scratch} + {stage.buffer_offset(len(stage.operators) - 1)})"
        calls.append(
            f"{copy}({stage_output} + {tile_copy.first_byte}, {last}, {tile_copy.rows}, "
            f"{tile_copy.row_bytes}, {tile_copy.stride_bytes});"
        )
    if stage.direct_output:
        return EmittedCode(
            call=tuple(calls),
            functions=tuple(functions),
            prototypes=tuple(prototypes),
            includes=tuple(includes),
        )
    signature = (
        f"void {copy}(int8_t* out, const int8_t* tile, int32_t rows, int32_t row_bytes, "
        "int32_t stride_bytes)"
    )
    functions[
        f"{signature} {{\n"
        "  for (int32_t r = 0; r < rows; ++r, out += stride_bytes, tile += row_bytes) {\n"
        "    for (int32_t i = 0; i < row_bytes; ++i) out[i] = tile[i];\n"
        "  }\n"
        "}"
    ] = None
    prototypes[f"{signature};"] = None
    return EmittedCode(
        call=tuple(calls),
        functions=tuple(functions),
        prototypes=tuple(prototypes),
        includes=tuple(includes),
    )


def _with_geometry(original: Artifact, geometry: Mapping[str, int], suffix: str) -> Artifact:
    """The operator's artifact with a tile's sizes and padding; its constants unchanged."""
    call = original.payload
    unknown = set(geometry) - set(GEOMETRY)
    if unknown or not set(GEOMETRY) <= set(call.prepared.params):
        raise InternalError(f"{original.symbol}: no tile geometry for its kernel params")
    prepared = replace(call.prepared, params={**call.prepared.params, **geometry})
    return replace(
        original, symbol=f"{original.symbol}{suffix}", payload=replace(call, prepared=prepared)
    )
