"""C for one NPU subgraph: a function that moves the feature maps into Vela's arena, runs
the command stream through aot's driver glue and moves the results out.

Vela fixes where each input and output of a subgraph sits inside its scratch arena; aot's
planner places the model's tensors independently (any pool the CPU and the NPU reach), so
the function copies them at the boundary. The copies are a few hundred bytes for the
reference models (their inputs and outputs), against an arena of tens of kilobytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from aot.backends.ethos_u.vela import NpuSubgraph
from aot.errors import InternalError

GLUE_HEADER = "aot_ethos_u.h"
_C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t"}


def c_type(dtype: str) -> str:
    try:
        return _C_TYPES[dtype]
    except KeyError:
        raise InternalError(f"an Ethos-U feature map of dtype {dtype}") from None


def function_name(model: str, symbol: str) -> str:
    return f"aot_{model}_{symbol}"


def subgraph_function(model: str, symbol: str, subgraph: NpuSubgraph) -> tuple[str, str]:
    """(prototype, definition) of ``aot_<model>_<symbol>(inputs..., outputs...,
    command_stream, read_only, arena)``; it returns an aot error code."""
    params = [f"const {c_type(fm.dtype)} *in{i}" for i, fm in enumerate(subgraph.inputs)]
    params += [f"{c_type(fm.dtype)} *out{i}" for i, fm in enumerate(subgraph.outputs)]
    params += ["const uint8_t *command_stream", "const uint8_t *read_only", "uint8_t *arena"]
    head = f"int32_t {function_name(model, symbol)}({', '.join(params)})"
    body = [
        f"/* NPU subgraph {subgraph.index} (Vela): {len(subgraph.command_stream)} bytes of "
        f"commands, {len(subgraph.read_only)} of weights, a {subgraph.scratch_bytes}-byte "
        "arena. */",
        head + " {",
    ]
    for i, fm in enumerate(subgraph.inputs):
        body.append(f"  memcpy(arena + {fm.offset}u, in{i}, {fm.size_bytes}u);")
    body += [
        "  int32_t err = aot_ethosu_invoke(command_stream, "
        f"{len(subgraph.command_stream)}u, read_only, {len(subgraph.read_only)}u, arena, "
        f"{subgraph.scratch_bytes}u);",
        "  if (err != 0) {",
        "    return err;",
        "  }",
    ]
    for i, fm in enumerate(subgraph.outputs):
        body.append(f"  memcpy(out{i}, arena + {fm.offset}u, {fm.size_bytes}u);")
    body += ["  return 0;", "}"]
    return head + ";", "\n".join(body) + "\n"


def subgraph_call(
    model: str,
    symbol: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    command_stream: str,
    read_only: str,
    arena: str,
    error_prefix: str = "AOT_ERR_MODEL",
) -> tuple[str, ...]:
    """The statements inside ``run()`` that call the subgraph's function."""
    del error_prefix  # the glue already returns aot error codes
    args = ", ".join([*inputs, *outputs, command_stream, read_only, arena])
    return (
        "{",
        f"  int32_t err = {function_name(model, symbol)}({args});",
        "  if (err != 0) {",
        "    return err;",
        "  }",
        "}",
    )


def byte_array(name: str, data: bytes, *, section: str, alignment: int = 16) -> str:
    """A ``const uint8_t`` array definition in ``section``."""
    rows = []
    for start in range(0, len(data), 16):
        rows.append("  " + ", ".join(f"0x{b:02x}" for b in data[start : start + 16]) + ",")
    return (
        f"const uint8_t {name}[{max(len(data), 1)}] __attribute__((aligned({alignment}), "
        f'section("{section}"))) = {{\n' + ("\n".join(rows) or "  0,") + "\n};\n"
    )
