"""Arm Ethos-U through Vela: the backend, Vela's invocation and output, the driver glue.

``backend.py`` is the :class:`~aot.backends.Backend`; ``vela.py`` runs Vela and reads its
optimised model; ``emit.py`` writes the C of an NPU step; ``driver.py`` finds the user's
Ethos-U core driver and CMSIS-Core headers. The C glue is ``aot/runtime_c/npu/``. Vela
(``pip install 'aot[ethos-u]'``) is imported only when a model is compiled.
"""

from aot.backends.ethos_u.backend import EthosUBackend

__all__ = ["EthosUBackend"]
