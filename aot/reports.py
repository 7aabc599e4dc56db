"""What every JSON report of a run starts with (``aot run``, ``aot bench``, ``aot validate``):
one ``schema_version`` for all three, the model's name and the board, and for a result
from the board farm the server that ran it."""

from __future__ import annotations

from typing import Any

# The layout version of the run, bench and validate reports; bump on an incompatible change.
REPORT_SCHEMA_VERSION = 1


def report_identity(model_name: str, board: str, server: str | None = None) -> dict[str, Any]:
    """The fields every report has: schema_version, model_name, board and, for a farm
    result, server (the board server that ran it, e.g. ``board 'm4' at 10.0.0.5:9091``)."""
    identity: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "model_name": model_name,
        "board": board,
    }
    if server is not None:
        identity["server"] = server
    return identity
