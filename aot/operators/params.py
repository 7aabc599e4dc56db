"""The typed parameters of the int8 operators: one frozen dataclass per operator family.

The importer bakes these values into each operator's TE compute and records them on its
PrimFunc (``aot.params``, aot/naming.py); partitioning reads them back and builds the
kind's dataclass here (:func:`aot.operators.params_of`, the one place that reads them by
key), and backends get that object as ``OperatorInfo.params``. Field names are the TE
compute's keyword names, so the importer's attribute dict and the dataclass agree by
construction; a compute that gains a plain-valued argument needs the field here too
(:meth:`OperatorParams.from_mapping` refuses a key it does not know).

This module imports nothing of aot but the error tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from aot.errors import InternalError

# The rounding of MultiplyByQuantizedMultiplier baked into a compute (docs/int8.md,
# "Rounding"): TFLite's two, and onnxruntime's float32 requantization.
ROUNDINGS = ("double", "single", "onnxruntime")


def _frozen(value: Any) -> Any:
    """Lists (from a caller, not from TVM) as tuples, so a dataclass stays hashable."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True, kw_only=True)
class OperatorParams:
    """What every imported operator carries.

    ``operands`` names the call's tensor arguments in order (``data``, ``weight``,
    ``bias``, ``multiplier``, ``shift`` for a convolution; a backend finds an operand's
    index by name with :meth:`operand`); ``rounding`` is how the compute rounds its
    requantization (one of ``ROUNDINGS``)."""

    operands: tuple[str, ...] = ()
    rounding: str = "double"

    # Keys of the mapping that become ``values`` of a family without its own fields.
    collects_rest: ClassVar[bool] = False

    @classmethod
    def from_mapping(cls, kind: str, values: Mapping[str, Any]) -> OperatorParams:
        """The dataclass of ``values`` (the importer's attribute dict, or partition's
        plain-Python copy of it); a missing or unknown key is a bug between the compute's
        signature and this class, so it raises :class:`InternalError` naming both."""
        names = {f.name for f in fields(cls) if f.init}
        given = {k: _frozen(v) for k, v in values.items()}
        if cls.collects_rest:
            rest = {k: v for k, v in given.items() if k not in names}
            given = {k: v for k, v in given.items() if k in names}
            given["values"] = rest
        unknown = sorted(set(given) - names)
        if unknown:
            raise InternalError(
                f"operator {kind}: parameters {', '.join(unknown)} are not fields of "
                f"{cls.__name__} (aot/operators/params.py)"
            )
        try:
            return cls(**given)
        except TypeError as exc:
            raise InternalError(f"operator {kind}: {cls.__name__}: {exc}") from None

    def operand(self, name: str) -> int | None:
        """The index of the operand named ``name``, or None when the operator has none."""
        return self.operands.index(name) if name in self.operands else None


@dataclass(frozen=True, kw_only=True)
class GenericParams(OperatorParams):
    """A family whose parameters no backend reads yet: they stay a mapping in ``values``
    (what the compute was called with). A backend that needs one gives the family its own
    dataclass instead of reading ``values`` by key."""

    values: Mapping[str, Any] = field(default_factory=dict)
    collects_rest: ClassVar[bool] = True


@dataclass(frozen=True, kw_only=True)
class RequantizedParams(OperatorParams):
    """The accumulate-and-requantize operators (convolutions, fully connected).

    ``multiplier`` and ``shift`` are ints when every output channel shares them, else
    None here and constant operands of those names; ``packed_shift_base`` is set when
    they are one packed int32 per channel (``aot.ops.int8.pack_requant``).
    ``zero_point_in_bias``: the importer folded ``-input_zp * sum(weights)`` into the
    bias, so the compute multiplies raw inputs."""

    out_shape: tuple[int, ...]
    input_zp: int
    output_zp: int
    act_min: int
    act_max: int
    multiplier: int | None = None
    shift: int | None = None
    packed_shift_base: int | None = None
    zero_point_in_bias: bool = False


@dataclass(frozen=True, kw_only=True)
class ConvParams(RequantizedParams):
    """CONV_2D and DEPTHWISE_CONV_2D (``depth_multiplier`` > 1 only for depthwise):
    ``padding`` is (top, left); strides and dilation are (h, w)."""

    strides: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int]
    depth_multiplier: int = 1


@dataclass(frozen=True, kw_only=True)
class TransposeConvParams(RequantizedParams):
    """TRANSPOSE_CONV: ``padding`` is (top, left) of the convolution it transposes
    (output pixel oy gathers input iy where oy = iy * stride - pad + ky); no dilation."""

    strides: tuple[int, int]
    padding: tuple[int, int]


@dataclass(frozen=True, kw_only=True)
class FullyConnectedParams(RequantizedParams):
    """FULLY_CONNECTED: weights [out, depth] with one zero point ``weight_zp``."""

    weight_zp: int


@dataclass(frozen=True, kw_only=True)
class AddParams(OperatorParams):
    """ADD (TFLite's ``AddElementwise``): each input offset and shifted left by
    ``left_shift``, rescaled by its multiplier and shift, summed, then rescaled to the
    output."""

    out_shape: tuple[int, ...]
    lhs_offset: int
    rhs_offset: int
    left_shift: int
    lhs_multiplier: int
    lhs_shift: int
    rhs_multiplier: int
    rhs_shift: int
    output_multiplier: int
    output_shift: int
    output_zp: int
    act_min: int
    act_max: int

    def side(self, which: str) -> tuple[int, int, int]:
        """(offset, multiplier, shift) of input ``lhs`` or ``rhs``."""
        if which == "lhs":
            return self.lhs_offset, self.lhs_multiplier, self.lhs_shift
        if which == "rhs":
            return self.rhs_offset, self.rhs_multiplier, self.rhs_shift
        raise ValueError(f"an ADD has inputs lhs and rhs, not {which!r}")


@dataclass(frozen=True, kw_only=True)
class PoolParams(OperatorParams):
    """AVERAGE_POOL_2D: ``filter_size`` and ``strides`` are (h, w), ``padding`` is (top,
    left); no rescale (input and output share scale and zero point), then the clamp."""

    out_shape: tuple[int, ...]
    filter_size: tuple[int, int]
    strides: tuple[int, int]
    padding: tuple[int, int]
    act_min: int
    act_max: int
