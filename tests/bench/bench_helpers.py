"""Names the bench tests share (a module of its own: importing from ``conftest`` picks
whichever conftest Python loaded first when several test folders are collected)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"

# build(model_path, board, *extra) -> folder made by `aot build ... --profile`
Builder = Callable[..., Path]
