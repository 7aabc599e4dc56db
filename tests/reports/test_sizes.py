"""One size grammar for --pool, --pool-file and board YAML; pools typed on the planning side."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from aot.boards import board_from_data
from aot.errors import ConfigError
from aot.planning.pools_file import parse_pool_arg, read_pool_file
from aot.sizes import parse_size

pytestmark = pytest.mark.unit

AOT = Path(__file__).resolve().parents[2] / "aot"
SIZES = {"16384": 16384, "16K": 16384, "16KiB": 16384, "16kb": 16384, "1M": 1 << 20, "1G": 1 << 30}


@pytest.mark.parametrize(("text", "expected"), sorted(SIZES.items()))
def test_every_size_spelling_means_the_same_everywhere(
    text: str, expected: int, tmp_path: Path
) -> None:
    assert parse_size(text) == expected
    assert parse_pool_arg(f"sram:{text}").size == expected
    pool_file = tmp_path / "pools.json"
    pool_file.write_text(json.dumps([{"name": "sram", "size": text}]))
    assert read_pool_file(pool_file)[0].size == expected
    import yaml

    data = yaml.safe_load((AOT / "boards" / "mps2_an386.yaml").read_text())
    data["memories"][2]["size"] = text  # psram: the highest memory
    board = board_from_data(data, "test board")
    assert board.region("psram").size == expected


def test_a_bad_board_size_names_the_memory() -> None:
    import yaml

    data = yaml.safe_load((AOT / "boards" / "mps2_an386.yaml").read_text())
    with pytest.raises(ConfigError, match="bad size of memory 'blockram' '16Q'"):
        parse_size("16Q", "size of memory 'blockram'")
    data["memories"][3]["size"] = "16Q"
    with pytest.raises(ConfigError):
        board_from_data(data, "test board")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names


def test_planning_does_not_import_the_compiler() -> None:
    """The pool type lives on the planning side: no planning module imports aot.compiler."""
    for path in sorted((AOT / "planning").glob("*.py")):
        assert "aot.compiler" not in _imports(path), path
    assert _imports(AOT / "sizes.py") <= {"__future__", "re", "aot.errors"}
