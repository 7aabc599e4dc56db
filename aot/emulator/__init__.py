"""Emulators that run firmware for boards without hardware (QEMU)."""

from aot.emulator.qemu import QemuInstance, qemu_command

__all__ = ["QemuInstance", "qemu_command"]
