"""Names shared by several stages: buffers, C symbols, kernel names.

Lowering names kernels and tensors, planning names buffers, emit names C symbols, and
reports show the same buffer names; all of them take the names from here so that no stage
imports a later one to agree on a name. This module imports nothing of aot.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol


class _Named(Protocol):
    id: int
    name: str


# The C runtime's own symbol prefixes (aot_app_model, aot_platform_copy, aot_server_init,
# aot_stack_paint, aot_tensor_info, ...): a model named so would define symbols that clash
# with them, since every generated symbol is aot_<name>_<what>.
RUNTIME_PREFIXES = frozenset(
    {"app", "check", "cobs", "command", "dtype", "error", "platform", "run", "server", "stack",
     "tensor"}
)  # fmt: skip


# A model name is a C prefix of at most this many characters (aot.compiler checks it).
MODEL_NAME_MAX = 32


def model_name_from_path(path: str | Path) -> str:
    """The default model name: the file name as a C prefix (``vww_96_int8.tflite`` ->
    ``vww_96_int8``, ``My-Net v2.onnx`` -> ``my_net_v2``), so symbols say which model."""
    name = re.sub(r"[^a-z0-9_]+", "_", Path(path).stem.lower()).strip("_") or "model"
    if name[0].isdigit():
        name = f"m_{name}"
    name = name[:MODEL_NAME_MAX].rstrip("_")
    return f"{name}_model" if name in RUNTIME_PREFIXES else name


def library_header_guard(model: str) -> str:
    """The include guard of a model library's public header; its own namespace, so that a
    model named like a runtime header (``model`` -> aot/model.h) cannot hide that one."""
    return f"AOT_LIB_{model.upper()}_H_"


def c_identifier(text: str) -> str:
    """``text`` as a C identifier: runs of other characters become ``_``."""
    name = re.sub(r"\W+", "_", text).strip("_") or "t"
    return name if not name[0].isdigit() else "t_" + name


def kernel_symbol(model: str, function: str) -> str:
    """The C symbol of a lowered function (a kernel or a backend region)."""
    return f"aot_{model}_{c_identifier(function)}"


def tensor_buffer_name(tensor: _Named) -> str:
    """The planner's name for the buffer that holds a tensor."""
    return f"tensor_{tensor.id}_{tensor.name}"


def scratch_buffer_name(step_index: int) -> str:
    """The planner's name for a step's scratch buffer."""
    return f"scratch_{step_index}"


# The linker sections of a model library: its constants and each workspace pool, one
# section per model and pool, so a linker script places them by name (aot/project/linker.py
# takes every model's with the patterns below).
CONSTANTS_SECTION_PREFIX = ".rodata.aot."
POOL_SECTION_PREFIX = ".bss.aot."


def constants_section(model: str) -> str:
    """The section of a model's constant arrays (``.rodata.aot.<model>.constants``)."""
    return f"{CONSTANTS_SECTION_PREFIX}{model}.constants"


def pool_section(model: str, pool: str) -> str:
    """The section of a model's workspace pool (``.bss.aot.<model>.<pool>``)."""
    return f"{POOL_SECTION_PREFIX}{model}.{pool}"


def pool_symbol(model: str, pool: str) -> str:
    return f"aot_{model}_pool_{pool}"


def constant_symbol(model: str, tensor: _Named) -> str:
    return f"aot_{model}_const_{tensor.id}"


# The importer marks each operator's call with a span whose source name is this and whose
# line is the operator's index in the source model; Relax keeps spans through
# partitioning (variable names it renames), so lowering can still say which source
# operator each step computes.
SOURCE_OPERATOR_SPAN = "aot.source_operator"

# The attributes the int8 importer sets on each operator's PrimFunc: the operator kind
# (``conv2d_int8``) and its typed parameters (strides, zero points, requantization...);
# partitioning reads them into OperatorInfo for the backends.
OPERATOR_KIND_ATTR = "aot.operator"
OPERATOR_PARAMS_ATTR = "aot.params"
