"""The one exception tree of aot.

Every failure a user can cause or meet is an ``AotError`` subclass. The CLI catches
``AotError`` once, prints ``error: <message>`` and exits with the class's ``exit_code``.
Messages name the thing, what was expected and what was found, and say what to do.
"""

from __future__ import annotations


class AotError(Exception):
    """Root of all errors aot reports to a user."""

    exit_code = 1
    category = "error"


class ConfigError(AotError):
    """Bad command-line arguments, options or configuration files."""

    exit_code = 2
    category = "configuration"


class ModelError(AotError):
    """A model file that cannot be read: not a model, truncated, malformed."""

    exit_code = 3
    category = "model"


class UnsupportedError(AotError):
    """A valid model that aot cannot compile (operator, dtype, dynamic shape)."""

    exit_code = 4
    category = "unsupported"


class PlanningError(AotError):
    """Memory planning failed, typically because the model does not fit a pool."""

    exit_code = 5
    category = "memory"


class ToolchainError(AotError):
    """A compiler, emulator or build tool is missing or failed."""

    exit_code = 6
    category = "toolchain"


class FlashError(AotError):
    """Putting firmware on a board failed."""

    exit_code = 7
    category = "flash"


class DeviceError(AotError):
    """The board or emulator did not answer, closed the port or reported a failure."""

    exit_code = 8
    category = "device"


class ProtocolError(DeviceError):
    """A corrupt or unexpected frame on the serial protocol."""

    exit_code = 9
    category = "protocol"


class FileSystemError(AotError):
    """A file or folder aot must read or write is refused by the system: no permission,
    a read-only or full file system, a path through a file, a pseudo file system."""

    exit_code = 10
    category = "file system"


class ResourceError(AotError):
    """The process ran out of memory (a model or input far larger than the limit)."""

    exit_code = 11
    category = "resources"


class InternalError(AotError):
    """A bug in aot: an invariant that should hold did not."""

    exit_code = 70
    category = "internal"
