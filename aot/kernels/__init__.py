"""Hand-written C kernels for the CPU, one set per ISA (docs/kernels.md).

``aot/kernels/<isa>.py`` lists its variants as ``VARIANTS``; :func:`variants` collects
them, :func:`isas_for` turns ``--kernels`` and the board's ``features`` into the ISAs to
try, fastest first, and :func:`select` finds the variant that takes an operator. What no
variant takes stays on TVM's generated kernels (the reference).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from aot.backends.base import OperatorInfo
from aot.errors import ConfigError
from aot.kernels.spec import ISAS, KernelVariant, PreparedKernel

KERNELS_C = Path(__file__).resolve().parents[1] / "runtime_c" / "kernels"
HEADER = KERNELS_C / "include" / "aot_kernels.h"

# --kernels choices: auto (the fastest the board has), tvm (TVM's generated kernels only)
# or one ISA's kernels (the operators it has no variant for stay on TVM's).
CHOICES = ("auto", "tvm", *ISAS)
DEFAULT_CHOICE = "auto"
# What auto tries, fastest first, among the ISAs the board has; the plain C kernels beat
# TVM's on the M3 too (mps2_an385, docs/kernels.md). The host keeps TVM's, the portable
# reference, unless asked.
AUTO_ORDER = ("mve", "dsp", "scalar")


def variants(isa: str) -> tuple[KernelVariant, ...]:
    """The variants of one ISA (an ISA with no module yet has none)."""
    try:
        module = importlib.import_module(f"aot.kernels.{isa}")
    except ModuleNotFoundError as exc:
        if exc.name == f"aot.kernels.{isa}":
            return ()
        raise
    return tuple(getattr(module, "VARIANTS", ()))


def board_isas(board: Any) -> tuple[str, ...]:
    """The ISAs a board's core runs, from its ``features`` (never its name)."""
    features = getattr(board, "features", None)
    found = ["scalar"]
    if features is not None and features.dsp:
        found.append("dsp")
    if features is not None and features.mve != "none":
        found.append("mve")
    return tuple(found)


def isas_for(choice: str, board: Any) -> tuple[str, ...]:
    """The ISAs whose kernels a build uses, fastest first; () means TVM's kernels only."""
    if choice not in CHOICES:
        raise ConfigError(f"--kernels {choice!r} is not one of {', '.join(CHOICES)}")
    if choice == "tvm":
        return ()
    has = board_isas(board)
    if choice == "auto":
        if board is None or getattr(board, "is_host", False):
            return ()
        return tuple(isa for isa in AUTO_ORDER if isa in has)
    if choice not in has:
        name = getattr(board, "name", "this board")
        raise ConfigError(
            f"board '{name}' has no {choice} extension (its features in 'aot boards'); "
            f"use --kernels auto, tvm or one of: {', '.join(has)}"
        )
    return (choice,)


def select(
    info: OperatorInfo, isas: tuple[str, ...], every_computed: bool = False
) -> KernelVariant | None:
    """The first variant, in ISA order, whose kind matches and whose ``takes`` holds (with
    ``every_computed``: that computes it at all, ``KernelVariant.computes``)."""
    for isa in isas:
        for variant in variants(isa):
            if variant.kind != info.kind:
                continue
            if variant.takes(info) or (
                every_computed and variant.computes is not None and variant.computes(info)
            ):
                return variant
    return None


__all__ = [
    "AUTO_ORDER",
    "CHOICES",
    "DEFAULT_CHOICE",
    "HEADER",
    "ISAS",
    "KERNELS_C",
    "KernelBackend",
    "KernelVariant",
    "PreparedKernel",
    "board_isas",
    "isas_for",
    "select",
    "variants",
]


# Last, since the backend module uses this package's functions: aot.kernels registers its
# backend itself, so the backend API (aot.backends) never imports an implementation above it.
from aot.backends.base import backends as _backends  # noqa: E402
from aot.kernels.backend import KernelBackend  # noqa: E402

_backends.add(KernelBackend.name, KernelBackend)
