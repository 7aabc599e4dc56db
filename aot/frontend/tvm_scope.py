"""Keeping TVM's frontends quiet when they fail.

TVM's ``BlockBuilder.function`` scope, when its body raises, leaves the C++ builder's
binding block open; when the builder is freed its destructor logs "BlockBuilder destroyed
with remaining blocks!" on stderr, after aot's one ``error:`` line. TVM's ONNX frontend
also prints the failing operator's inputs on stdout. ``quiet_frontend`` swallows the print
and closes the blocks the failure left open in any builder on the traceback.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from types import TracebackType
from typing import Any


def close_open_blocks(builder: Any) -> None:
    """End every block still open in a relax.BlockBuilder (and its scope)."""
    for _ in range(64):  # nesting is a few levels deep; bounded so a TVM change cannot hang
        try:
            builder._end_block()
        except Exception:  # the C++ builder has no block left
            break
    with contextlib.suppress(Exception):
        builder.end_scope()


def _builders(tb: TracebackType | None) -> list[Any]:
    from tvm import relax

    found: dict[int, Any] = {}
    while tb is not None:
        for value in (*tb.tb_frame.f_locals.values(),):
            if isinstance(value, relax.BlockBuilder):
                found[id(value)] = value
            elif isinstance(getattr(value, "bb", None), relax.BlockBuilder):
                found[id(value.bb)] = value.bb
            elif isinstance(getattr(value, "block_builder", None), relax.BlockBuilder):
                found[id(value.block_builder)] = value.block_builder
        tb = tb.tb_next
    return list(found.values())


@contextlib.contextmanager
def quiet_frontend() -> Iterator[None]:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    except Exception as err:
        for builder in _builders(err.__traceback__):
            close_open_blocks(builder)
        raise
