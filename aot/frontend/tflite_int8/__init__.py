"""aot's int8 TFLite importer: one ``call_tir`` per operator, bit-exact with TFLite's
reference kernels (docs/int8.md).

``importer`` is the core (the model walk, tensors, quantization, the handler table and
the handlers of the first operators); each other module is one family of operators that
registers its handlers into the core's table when it is imported, which this package does
before anything reads the table.
"""

from aot.frontend.tflite_int8 import (  # noqa: F401  (imported to register their handlers)
    arithmetic,
    division_cast_fill,
    elementwise,
    indexing,
    int16,
    int16_activations,
    int16_elementwise,
    int16_requantize,
    logic,
    lstm,
    movement,
    resource_variables,
    state,
    transpose_and_norms,
)
from aot.frontend.tflite_int8.importer import (
    _HANDLERS,
    import_tflite_int8,
    relax_constant_bytes,
)

SUPPORTED_OPERATORS = tuple(sorted(_HANDLERS))

__all__ = ["SUPPORTED_OPERATORS", "import_tflite_int8", "relax_constant_bytes"]
