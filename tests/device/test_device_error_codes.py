"""The host's error table must agree with aot/runtime_c/include/aot/error.h."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aot.device.error_codes import CATEGORIES, ERROR_CODES, describe_error, error_name

pytestmark = pytest.mark.unit

ERROR_H = Path(__file__).resolve().parents[2] / "aot" / "runtime_c" / "include" / "aot" / "error.h"
_ENTRY = re.compile(r"^\s*(AOT_(?:OK|ERR_\w+))\s*=\s*(0x[0-9A-Fa-f]+|\d+),\s*/\*\s*(.*?)\s*\*/")
_CATEGORY = re.compile(r"#define\s+AOT_ERR_CATEGORY_(\w+)\s+(0x[0-9A-Fa-f]+)u?")


def _parse_header() -> dict[int, tuple[str, str]]:
    entries: dict[int, tuple[str, str]] = {}
    for line in ERROR_H.read_text().splitlines():
        match = _ENTRY.match(line)
        if match:
            name, value, description = match.groups()
            code = int(value, 0)
            assert code not in entries, f"{name} reuses {code:#06x}"
            entries[code] = (name, description)
    return entries


def test_table_matches_error_h() -> None:
    header = _parse_header()
    assert len(header) > 10, "error.h parse found too few entries"
    assert {k: tuple(v) for k, v in ERROR_CODES.items()} == header


def test_codes_are_category_shifted() -> None:
    categories = {int(v, 0) for _, v in _CATEGORY.findall(ERROR_H.read_text())}
    for code, entry in ERROR_CODES.items():
        if code:
            assert code >> 8 in categories, entry.name
            assert code >> 8 in CATEGORIES, entry.name


def test_describe() -> None:
    assert error_name(0x0205) == "AOT_ERR_PROTOCOL_BAD_CRC"
    assert describe_error(0x0205) == "AOT_ERR_PROTOCOL_BAD_CRC (0x0205): CRC-32 mismatch"
    assert "protocol" in error_name(0x02FE)
    assert "not in this aot version" in describe_error(0x7777)
