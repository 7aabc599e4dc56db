"""``aot validate``: the built model on its board against the reference runtime.

The entry point for other tools (``aot serve`` and remote boards) is
:func:`validate_folder`; pass ``session=`` to run on a device opened elsewhere.
"""

from __future__ import annotations

from aot.validate.compare import Tolerance
from aot.validate.core import Session, check_signature, validate_folder
from aot.validate.reference import OnnxReference, Reference, TFLiteReference, open_reference
from aot.validate.report import OutputReport, SampleRef, ValidationReport, format_report

__all__ = [
    "OnnxReference",
    "OutputReport",
    "Reference",
    "SampleRef",
    "Session",
    "TFLiteReference",
    "Tolerance",
    "ValidationReport",
    "check_signature",
    "format_report",
    "open_reference",
    "validate_folder",
]
