"""Writes the C view of the protocol table: ``python3 -m aot.device.protocol_header >
aot/runtime_c/include/aot/protocol.h`` (a test checks the checked-in file equals it)."""

from __future__ import annotations

import sys

from aot.device.spec import (
    COMMANDS,
    FEATURES,
    FRAME_ERROR,
    PROFILE_REPLY_HEAD_BYTES,
    REPLY_BIT,
    TRACE_NOT_STOPPED,
    TRACE_REPLY_HEAD_BYTES,
    VERSION,
)


def c_header() -> str:
    """The text of aot/runtime_c/include/aot/protocol.h."""
    out = [
        "/*",
        " * Generated from aot/device/spec.py by `python3 -m aot.device.protocol_header`;",
        " * do not edit.",
        " * The serial protocol's version, command codes, request sizes and feature bits;",
        " * the layouts are in docs/protocol.md.",
        " */",
        "#ifndef AOT_PROTOCOL_H_",
        "#define AOT_PROTOCOL_H_",
        "",
        "/* major << 8 | minor; majors must match */",
        f"#define AOT_PROTOCOL_VERSION 0x{VERSION:04X}u",
        "",
        "/* Commands (host -> device). A reply has type command | AOT_MSG_REPLY_BIT.",
        " * AOT_CMD_<NAME>_REQUEST_BYTES is the exact request payload size, or the minimum",
        " * for commands whose AOT_CMD_<NAME>_VARIABLE is 1. */",
    ]
    out.append("typedef enum {")
    for c in COMMANDS:
        out.append(f"  AOT_CMD_{c.name} = 0x{c.code:02X}, /* {c.doc} */")
    out += ["} aot_command_t;", ""]
    for c in COMMANDS:
        out.append(f"#define AOT_CMD_{c.name}_REQUEST_BYTES {c.request_bytes}u")
        out.append(f"#define AOT_CMD_{c.name}_VARIABLE {int(c.variable)}")
    out += [
        f"#define AOT_MSG_REPLY_BIT 0x{REPLY_BIT:02X}u",
        "/* Reply to a frame that could not be decoded, so its command is unknown. */",
        f"#define AOT_MSG_FRAME_ERROR 0x{FRAME_ERROR:02X}u",
        "",
        "/* Feature bits of the HELLO reply (since 1.2). */",
    ]
    for f in FEATURES:
        out.append(f"#define AOT_FEATURE_{f.name} (1u << {f.bit}) /* {f.doc} */")
    out += [
        "",
        f"#define AOT_PROFILE_REPLY_HEAD_BYTES {PROFILE_REPLY_HEAD_BYTES}u",
        f"#define AOT_TRACE_REPLY_HEAD_BYTES {TRACE_REPLY_HEAD_BYTES}u",
        f"#define AOT_TRACE_NOT_STOPPED 0x{TRACE_NOT_STOPPED:04X}u",
        "",
        "#endif /* AOT_PROTOCOL_H_ */",
        "",
    ]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(c_header())
