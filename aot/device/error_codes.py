"""Names and descriptions of the C runtime's error codes (``aot/runtime_c/include/aot/error.h``).

A code is ``category << 8 | code``. This table is a copy of error.h kept by hand;
``tests/device/test_error_codes.py`` parses the header and fails if they disagree.
"""

from __future__ import annotations

from typing import NamedTuple


class ErrorCode(NamedTuple):
    name: str
    description: str


CATEGORIES: dict[int, str] = {
    0x00: "ok",
    0x01: "model",
    0x02: "protocol",
    0x03: "platform",
    0x04: "application",
    0x05: "accelerator",
}

ERROR_CODES: dict[int, ErrorCode] = {
    0x0000: ErrorCode("AOT_OK", "success"),
    0x0101: ErrorCode("AOT_ERR_MODEL_BAD_ARGUMENT", "NULL or misaligned input/output pointer"),
    0x0102: ErrorCode("AOT_ERR_MODEL_KERNEL_FAILED", "a kernel reported a failure"),
    0x0201: ErrorCode(
        "AOT_ERR_PROTOCOL_FRAME_TOO_LONG", "no delimiter within the maximum frame size"
    ),
    0x0202: ErrorCode("AOT_ERR_PROTOCOL_BAD_ENCODING", "COBS decoding failed"),
    0x0203: ErrorCode("AOT_ERR_PROTOCOL_FRAME_TOO_SHORT", "fewer bytes than header and CRC"),
    0x0204: ErrorCode("AOT_ERR_PROTOCOL_BAD_LENGTH", "length field disagrees with the frame size"),
    0x0205: ErrorCode("AOT_ERR_PROTOCOL_BAD_CRC", "CRC-32 mismatch"),
    0x0206: ErrorCode("AOT_ERR_PROTOCOL_UNKNOWN_COMMAND", "command byte not known to this device"),
    0x0207: ErrorCode(
        "AOT_ERR_PROTOCOL_BAD_PAYLOAD", "payload size or field invalid for the command"
    ),
    0x0208: ErrorCode("AOT_ERR_PROTOCOL_BAD_INDEX", "tensor index out of range"),
    0x0209: ErrorCode("AOT_ERR_PROTOCOL_OUT_OF_RANGE", "offset/length outside the tensor"),
    0x020A: ErrorCode("AOT_ERR_PROTOCOL_VERSION_MISMATCH", "host and device protocol major differ"),
    0x0301: ErrorCode("AOT_ERR_PLATFORM_INIT_FAILED", "aot_platform_init failed"),
    0x0302: ErrorCode("AOT_ERR_PLATFORM_SERIAL_READ", "serial read failed"),
    0x0303: ErrorCode("AOT_ERR_PLATFORM_SERIAL_WRITE", "serial write failed"),
    0x0304: ErrorCode(
        "AOT_ERR_PLATFORM_SERIAL_CLOSED", "the serial stream ended (host: stdin closed)"
    ),
    0x0401: ErrorCode(
        "AOT_ERR_APP_NO_MODEL", "aot_app_model() returned NULL or a broken descriptor"
    ),
    0x0402: ErrorCode(
        "AOT_ERR_APP_IO_ARENA_TOO_SMALL", "AOT_APP_IO_BYTES smaller than the model needs"
    ),
    0x0403: ErrorCode("AOT_ERR_APP_TOO_MANY_TENSORS", "more tensors than AOT_APP_MAX_TENSORS"),
    0x0501: ErrorCode("AOT_ERR_NPU_NOT_CONFIGURED", "the NPU has no memory region set"),
    0x0502: ErrorCode(
        "AOT_ERR_NPU_BAD_STREAM", "command stream magic, version or descriptor kind/size wrong"
    ),
    0x0503: ErrorCode(
        "AOT_ERR_NPU_BAD_DESCRIPTOR", "a descriptor's shapes or parameters are invalid"
    ),
    0x0504: ErrorCode(
        "AOT_ERR_NPU_ADDRESS_OUT_OF_REGION", "an operand lies outside the NPU's memory"
    ),
}

AOT_OK = 0x0000


def error_name(code: int) -> str:
    """``AOT_ERR_PROTOCOL_BAD_CRC`` for 0x0205; a made-up but readable name if unknown."""
    known = ERROR_CODES.get(code)
    if known is not None:
        return known.name
    category = CATEGORIES.get((code >> 8) & 0xFF, "unknown category")
    return f"AOT_ERR_UNKNOWN_{code & 0xFFFFFFFF:#06x} ({category})"


def describe_error(code: int) -> str:
    """One line for messages: ``AOT_ERR_PROTOCOL_BAD_CRC (0x0205): CRC-32 mismatch``."""
    known = ERROR_CODES.get(code)
    if known is None:
        return f"{error_name(code)}: not in this aot version's error table"
    return f"{known.name} ({code:#06x}): {known.description}"
