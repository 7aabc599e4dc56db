"""The board schema's accelerators: a name and the memories it reaches, checked."""

from __future__ import annotations

import pytest
import yaml

from aot.boards import BOARDS_DIR, board_from_data, load_board
from aot.errors import ConfigError

pytestmark = pytest.mark.unit


def board(**extra: object) -> dict:
    """mps2_an386's data with ``extra`` fields (the shipped file is not touched)."""
    data = yaml.safe_load((BOARDS_DIR / "mps2_an386.yaml").read_text())
    data.update(extra)
    return data


def test_accelerators_and_their_memories() -> None:
    b = board_from_data(board(accelerators=[{"name": "npu", "memories": ["blockram", "ssram1"]}]))
    assert b.accelerator("npu").memories == ("blockram", "ssram1")
    with pytest.raises(ConfigError, match="has no accelerator 'gpu' \\(it has: npu\\)"):
        b.accelerator("gpu")


def test_unknown_memory_is_refused() -> None:
    data = board(accelerators=[{"name": "npu", "memories": ["tcm"]}])
    with pytest.raises(ConfigError, match="accelerator 'npu' reaches unknown memories tcm"):
        board_from_data(data)


def test_schema_refuses_a_bad_entry() -> None:
    with pytest.raises(ConfigError, match="accelerators/0"):
        board_from_data(board(accelerators=[{"name": "npu", "memories": []}]))
    with pytest.raises(ConfigError, match="accelerators"):
        board_from_data(board(accelerators=[{"name": "npu"}]))


def test_shipped_boards_without_accelerators_say_so() -> None:
    with pytest.raises(ConfigError, match="it has: none"):
        load_board("host").accelerator("npu")


def test_aot_boards_shows_accelerators() -> None:
    from aot.cli.boards import board_to_json, format_detail

    b = board_from_data(board(accelerators=[{"name": "npu", "memories": ["blockram"]}]))
    assert board_to_json(b)["accelerators"] == [{"name": "npu", "memories": ["blockram"]}]
    assert "accelerator npu, reaches blockram" in format_detail(b)
