"""--pool on a board is checked against the board's memories before anything compiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aot.cli import main

pytestmark = pytest.mark.unit

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_kws_int8.tflite"


def _build(tmp_path: Path, board: str, *extra: str) -> list[str]:
    return [
        "build",
        str(EXAMPLE),
        "--board",
        board,
        "-o",
        str(tmp_path / "out"),
        "--no-build",
        *extra,
    ]


@pytest.mark.parametrize(
    ("pool", "code", "words"),
    [
        (
            "dtmc:16K",
            2,
            ["pool 'dtmc' is not a memory of board 'nucleo_f746zg'", "did you mean 'dtcm'?"],
        ),
        ("sram3:16K", 2, ["did you mean 'sram2'?", "dtcm, sram1, sram2, itcm"]),
        ("flash:16K", 2, ["memory 'flash'", "may not hold workspace"]),
        (
            "sram2:32K",
            5,
            ["pool 'sram2' (32768 bytes) is larger than memory 'sram2'", "16384 bytes over"],
        ),
    ],
)
def test_pool_checked_against_the_board(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pool: str, code: int, words: list[str]
) -> None:
    assert main(_build(tmp_path, "nucleo_f746zg", "--pool", pool)) == code
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    for word in words:
        assert word in err
    assert "importing" not in err  # refused before the model is even read
    assert not (tmp_path / "out").exists()


def test_pool_file_checked_too_and_unbounded_gets_the_memory_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pools = tmp_path / "pools.json"
    pools.write_text(
        json.dumps(
            [
                {"name": "dtcm", "size": None, "targets": ["cpu", "npu"]},
                {"name": "sram2", "size": "16K"},
            ]
        )
    )
    assert main(_build(tmp_path, "nucleo_f746zg", "--pool-file", str(pools), "-q")) == 0
    capsys.readouterr()
    metadata = json.loads((tmp_path / "out" / "metadata.json").read_text())
    limits = {p["name"]: p["size_limit"] for p in metadata["memory"]["pools"]}
    assert limits == {"dtcm": 64 * 1024, "sram2": 16 * 1024}
    assert metadata["memory"]["pools"][0]["targets"] == ["cpu", "npu"]
    pools.write_text(json.dumps([{"name": "dtmc", "size": "16K"}]))
    assert main(_build(tmp_path, "nucleo_f746zg", "--pool-file", str(pools), "--force")) == 2
    assert "did you mean 'dtcm'?" in capsys.readouterr().err


def test_host_pools_may_have_any_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_build(tmp_path, "host", "--pool", "fast:16K", "-q")) == 0
    assert capsys.readouterr().out.startswith("built ")
