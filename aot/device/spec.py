"""The one table of the aot serial protocol: version, commands, request sizes, features.

Everything that must agree between the C server, the Python client and the Python fake
device is defined here once. The C side gets it as a generated header,
``aot/runtime_c/include/aot/protocol.h`` (``python3 -m aot.device.protocol_header``
prints it; a
test checks that the checked-in file equals this output), the client and the fake
device import the table. ``docs/protocol.md`` describes each command's fields.
"""

from __future__ import annotations

from dataclasses import dataclass

VERSION = 0x0102  # major << 8 | minor; a major mismatch is refused

REPLY_BIT = 0x80
FRAME_ERROR = 0xFF  # reply type for a frame the device could not decode


@dataclass(frozen=True)
class Feature:
    name: str
    bit: int
    since: int  # the minor version that defined it
    doc: str

    @property
    def mask(self) -> int:
        return 1 << self.bit


# Announced in HELLO (a u32 after max_repeats, since 1.2, for 1.2+ hosts). An optional
# command's device without the feature answers it with UNKNOWN_COMMAND, like a device
# older than the command: a host checks the bit, never the version.
FEATURES = (
    Feature("PROFILE", 0, 2, "the model records ticks per executor step (aot build --profile)"),
    Feature("STACK", 1, 2, "the stack is painted, so STATS reports its peak"),
    Feature("STATE", 2, 2, "the model keeps operator state between runs; RESET restores it"),
    Feature("FAULT", 3, 2, "a failing RUN's reply ends with where the model stopped"),
    Feature(
        "TRACE",
        4,
        2,
        "the model can stop after any executor step and return what it wrote (aot build --trace)",
    ),
)


@dataclass(frozen=True)
class CommandSpec:
    name: str
    code: int
    request_bytes: int  # exact request payload size, or the minimum if `variable`
    variable: bool = False  # the request carries data after request_bytes
    since: int = 0  # the minor version that added it
    feature: str | None = None  # optional: only devices announcing this feature answer
    doc: str = ""


COMMANDS = (
    CommandSpec("HELLO", 0x01, 2, doc="host version -> device version, limits, model"),
    CommandSpec("INFO", 0x02, 2, doc="kind, index -> one tensor's dtype, shape and name"),
    CommandSpec("SET_INPUT", 0x03, 5, variable=True, doc="index, offset, data -> status"),
    CommandSpec("RUN", 0x04, 4, doc="repeats -> model status and ticks"),
    CommandSpec("GET_OUTPUT", 0x05, 7, doc="index, offset, length -> data"),
    CommandSpec("STATS", 0x06, 0, doc="-> stack and frame counters"),
    CommandSpec("QUIT", 0x07, 0, doc="-> status, then the server stops"),
    CommandSpec(
        "PROFILE",
        0x08,
        2,
        since=2,
        feature="PROFILE",
        doc="first step -> ticks of each executor step in the last run",
    ),
    CommandSpec(
        "RESET",
        0x09,
        0,
        since=2,
        feature="STATE",
        doc="-> status, after the model's state is set to its initial value",
    ),
    CommandSpec(
        "TRACE",
        0x0A,
        2,
        since=2,
        feature="TRACE",
        doc="step -> model status and the sizes of what the step wrote, after one run "
        "that stopped there",
    ),
    CommandSpec(
        "GET_TRACE",
        0x0B,
        7,
        since=2,
        feature="TRACE",
        doc="output, offset, length -> data the traced step wrote",
    ),
)

BY_CODE = {c.code: c for c in COMMANDS}
BY_NAME = {c.name: c for c in COMMANDS}
FEATURE_MASKS = {f.name: f.mask for f in FEATURES}

# FAULT: a failing RUN's reply appends step u32, descriptor u32, operand u32, address u64,
# region_base u64, region_size u32 (32 bytes: the reply stays within the 64-byte minimum
# payload).
RUN_FAULT_BYTES = 32

# TRACE reply: model_status i32, stopped u16 (0xFFFF: the run did not stop there), count
# u8, then count u32 byte sizes.
TRACE_REPLY_HEAD_BYTES = 7
TRACE_NOT_STOPPED = 0xFFFF

# PROFILE reply: steps u16, first u16, count u16, then count u32 ticks.
PROFILE_REPLY_HEAD_BYTES = 6


def request_size_ok(command: CommandSpec, size: int) -> bool:
    return size >= command.request_bytes if command.variable else size == command.request_bytes


def features_mask(names: set[str] | frozenset[str]) -> int:
    return sum(FEATURE_MASKS[name] for name in names)


def feature_names(mask: int) -> frozenset[str]:
    return frozenset(f.name for f in FEATURES if mask & f.mask)
