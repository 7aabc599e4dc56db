"""Talking to a device (board, QEMU or host build) that runs the aot serial server.

The protocol is specified in ``docs/protocol.md``.
"""

from aot.device.client import (
    DeviceClient,
    DevicePrintedError,
    DeviceStats,
    ModelInfo,
    RunResult,
    TensorInfo,
)
from aot.device.error_codes import describe_error, error_name
from aot.device.transport import PipeTransport, SerialTransport, Transport, open_transport

__all__ = [
    "DeviceClient",
    "DevicePrintedError",
    "DeviceStats",
    "ModelInfo",
    "PipeTransport",
    "RunResult",
    "SerialTransport",
    "TensorInfo",
    "Transport",
    "describe_error",
    "error_name",
    "open_transport",
]
