"""Issue 19, points 8 and 13: a build for a board given as a file is found by every later
command; run, bench and validate reports share one schema_version and name the model and
board; --repeat N gives min / median / max and every run's figure; --seed with -i is
refused; bench's SVG labels fit the picture."""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path

import pytest

from aot.bench import BenchReport, OperatorProfile, render_svg
from aot.cli import main
from aot.planning.render import text_width
from aot.reports import REPORT_SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
EXAMPLE_INPUT = EXAMPLE.with_suffix(".input.npy")


@pytest.fixture(scope="module")
def board_file_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """tiny_kws built for 'labhost', a board that exists only as a file of the user's."""
    folder = tmp_path_factory.mktemp("board_file")
    board = folder / "lab" / "labhost.yaml"
    board.parent.mkdir()
    host = (REPO / "aot" / "boards" / "host.yaml").read_text()
    board.write_text(host.replace("name: host\n", "name: labhost\n"))
    out = folder / "out"
    assert main(["build", str(EXAMPLE), "--board", str(board), "-o", str(out), "-q"]) == 0
    return out, board


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.mark.toolchain
def test_a_board_file_is_recorded_and_every_later_command_finds_it(
    board_file_build: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, board = board_file_build
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["board"] == "labhost" and metadata["board_file"] == str(board.resolve())
    ran = _json(capsys, "run", str(out), "-i", str(EXAMPLE_INPUT))
    assert ran["board"] == "labhost"
    assert _json(capsys, "bench", str(out), "-n", "2")["board"] == "labhost"


@pytest.mark.toolchain
def test_a_board_file_that_is_gone_is_one_line(
    board_file_build: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "moved"
    shutil.copytree(board_file_build[0], out)
    metadata = json.loads((out / "metadata.json").read_text())
    gone = tmp_path / "gone" / "labhost.yaml"
    metadata["board_file"] = str(gone)
    (out / "metadata.json").write_text(json.dumps(metadata))
    assert main(["run", str(out), "--fill", "zeros"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: the board file {gone} this folder was built with (--board) is gone; put it "
        "back, or build again with --board naming it"
    ]


@pytest.mark.toolchain
def test_repeat_reports_min_median_max_and_every_run(
    board_file_build: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = board_file_build[0]
    ran = _json(capsys, "run", str(out), "-i", str(EXAMPLE_INPUT), "--repeat", "5")
    each = ran["time_each"]
    assert ran["runs"] == 5 and len(each) == 5 and all(t > 0 for t in each)
    assert (ran["time_min"], ran["time_max"]) == (min(each), max(each))
    assert ran["time_median"] == statistics.median(each)
    assert ran["time_per_run"] == sum(each) // 5
    assert main(["run", str(out), "-i", str(EXAMPLE_INPUT), "--repeat", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(re.fullmatch(r"  min/med/max    \d+ / \d+ / \d+ ns", line) for line in lines)


@pytest.mark.toolchain
def test_run_bench_and_validate_share_schema_version_model_and_board(
    board_file_build: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = board_file_build[0]
    name = json.loads((out / "metadata.json").read_text())["model"]["name"]
    reports = [
        _json(capsys, "run", str(out), "--fill", "zeros"),
        _json(capsys, "bench", str(out), "-n", "2"),
        _json(capsys, "validate", str(out), str(EXAMPLE), "-n", "2"),
    ]
    for report in reports:
        assert report["schema_version"] == REPORT_SCHEMA_VERSION == 1
        assert (report["model_name"], report["board"]) == (name, "labhost")
        assert "server" not in report  # only a farm result names a board server


@pytest.mark.unit
@pytest.mark.parametrize("command", ["run", "bench"])
def test_seed_with_input_files_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [command, str(tmp_path), "-i", str(EXAMPLE_INPUT), "--seed", "3"]
    assert main(args) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: --seed seeds --fill random or --fill spread; the inputs come from the -i "
        "files, so drop --seed"
    ]
    assert main(["run", str(tmp_path), "--fill", "zeros", "--seed", "3"]) == 2
    assert "--fill zeros has no seed, so drop --seed" in capsys.readouterr().err


@pytest.mark.unit
def test_bench_svg_labels_are_measured_and_fit() -> None:
    # Two- and three-digit step indices with long labels: each label ends at x (anchored
    # at its end) and must start inside the picture; each value must end inside it.
    operators = [
        OperatorProfile(step, f"k{step}", f"CONV_2D #{step} + ADD #{step + 1}", [], step, 0.01, 0)
        for step in (1, 10, 99, 100)
    ]
    report = BenchReport(
        "a_model_with_a_long_name", "labhost", "ns", 1, 10**9, 1, [1000], True, operators
    )
    svg = render_svg(report)
    width = float(re.search(r'<svg [^>]*width="(\d+)"', svg).group(1))
    labels = re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end">([^<]+)</text>', svg)
    assert [text for _, text in labels] == [f"{op.step}: {op.label}" for op in operators]
    for x, text in labels:
        assert float(x) - text_width(text, 12) >= 0, text
    values = re.findall(r'<text x="([\d.]+)" y="[\d.]+">([^<]+%\))</text>', svg)
    assert len(values) == len(operators)
    for x, text in values:
        assert float(x) + text_width(text, 12) <= width, text
    assert 'font-family="DejaVu Sans Mono, monospace"' in svg
