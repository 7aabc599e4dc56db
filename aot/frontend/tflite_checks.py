"""The one validation pass over a .tflite file: ``validate(data, source)``.

It composes the checks of aot.frontend.validate with the static-shape step between them
(aot.frontend.tflite_static): structure, index, tensor and graph checks; a dynamic batch
fixed to 1 and shape arithmetic folded; then the shape checks on the static graph and
whether aot handles every operator. See docs/robustness.md.
"""

from __future__ import annotations

from aot.frontend.tflite_static import make_static
from aot.frontend.validate import (
    PADDING,
    Validated,
    check_shapes,
    check_structure,
    reporting_damage,
)


def validate(data: bytes, source: str) -> Validated:
    """Check a TFLite file; raise ModelError (damaged) or UnsupportedError (valid, unhandled)."""
    model = check_structure(data, source)
    padded = data + b"\0" * PADDING
    with reporting_damage(source):
        # A static graph comes back unchanged.
        model, static = make_static(model, padded, source)
    check_shapes(model, padded, source)
    return Validated(padded, model, static)
