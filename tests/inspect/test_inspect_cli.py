"""``aot inspect``: the text report, the SVG picture and the JSON report of a build folder."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from inspect_helpers import BUFFERS, OPERATORS, POOLS

from aot.artifacts import read_manifest
from aot.cli import main
from aot.cli.inspect import load_plan, short_tensor_name
from aot.planning import validate_plan

SVG = "{http://www.w3.org/2000/svg}"


def inspect(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["inspect", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def buffer_rects(svg_text: str) -> list[str]:
    """Titles of the boxes that stand for buffers (the panel frames have no title)."""
    root = ET.fromstring(svg_text)  # parses as XML, names escaped
    titles = []
    for rect in root.iter(f"{SVG}rect"):
        title = rect.find(f"{SVG}title")
        if title is not None:
            titles.append(title.text or "")
    return titles


def metadata_of(folder: Path) -> dict:
    return json.loads((folder / "metadata.json").read_text())


@pytest.mark.unit
def test_text_names_every_pool_buffer_and_the_peak(synthetic_folder, capsys) -> None:
    code, out, _ = inspect(capsys, str(synthetic_folder))
    assert code == 0
    for pool in POOLS:
        assert f"pool {pool.name} (limit {pool.size} B" in out
    for b in BUFFERS:
        assert b.name in out
    # Both pools hold something, so the plan really spans two pools.
    used = {p["name"]: p["used_bytes"] for p in metadata_of(synthetic_folder)["memory"]["pools"]}
    assert all(used.values())
    assert "targets cpu,npu" in out
    assert "peak at step" in out and "lower bound" in out
    assert f"picture: {synthetic_folder / 'memory.svg'}" in out


@pytest.mark.unit
def test_svg_has_one_rect_per_buffer(synthetic_folder, capsys) -> None:
    inspect(capsys, str(synthetic_folder))
    titles = buffer_rects((synthetic_folder / "memory.svg").read_text())
    assert len(titles) == len(BUFFERS)
    for b in BUFFERS:
        assert sum(t.startswith(f"{b.name}: {b.size} bytes") for t in titles) == 1
    assert "softmax" in (synthetic_folder / "memory.svg").read_text()


@pytest.mark.unit
def test_svg_path_option_and_no_svg(synthetic_folder, tmp_path, capsys) -> None:
    target = tmp_path / "elsewhere.svg"
    assert inspect(capsys, str(synthetic_folder), "--svg", str(target))[0] == 0
    assert target.is_file() and not (synthetic_folder / "memory.svg").exists()
    code, out, _ = inspect(capsys, str(synthetic_folder), "--no-svg")
    assert code == 0 and "picture:" not in out
    assert not (synthetic_folder / "memory.svg").exists()


@pytest.mark.unit
def test_json_round_trips_and_matches_metadata(synthetic_folder, capsys) -> None:
    code, out, _ = inspect(capsys, str(synthetic_folder), "--json")
    assert code == 0
    report = json.loads(out)
    assert json.loads(json.dumps(report)) == report
    memory = metadata_of(synthetic_folder)["memory"]
    assert report["workspace_bytes"] == memory["workspace_bytes"]
    assert report["lower_bound_bytes"] == memory["lower_bound_bytes"]
    assert [p["name"] for p in report["pools"]] == [p.name for p in POOLS]
    got = {
        b["name"]: (p["name"], b["offset"], b["size"], b["start"], b["end"])
        for p in report["pools"]
        for b in p["buffers"]
    }
    want = {
        b["buffer"]: (b["pool"], b["offset"], b["size"], b["start"], b["end"])
        for b in memory["buffers"]
    }
    assert got == want
    for pool in report["pools"]:
        for b in pool["buffers"]:
            assert b["operators"] == OPERATORS[b["start"] : b["end"] + 1]
        assert pool["used_bytes"] <= pool["size_limit"]
        assert pool["lower_bound_bytes"] <= pool["used_bytes"]
    peak = report["peak"]
    assert peak["live_bytes"] == report["lower_bound_bytes"]
    assert peak["operator"] == OPERATORS[peak["step"]]
    assert report["svg"] == str(synthetic_folder / "memory.svg")


@pytest.mark.unit
def test_rebuilt_plan_is_valid(synthetic_folder) -> None:
    loaded = load_plan(read_manifest(synthetic_folder))
    validate_plan(loaded.plan, loaded.buffers, loaded.pools)
    assert loaded.step_names == tuple(OPERATORS)


@pytest.mark.unit
def test_folder_without_metadata_is_one_config_error(tmp_path, capsys) -> None:
    code, out, err = inspect(capsys, str(tmp_path))
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "not an aot build folder" in err


@pytest.mark.unit
def test_metadata_without_memory_is_one_model_error(synthetic_folder, capsys) -> None:
    document = metadata_of(synthetic_folder)
    del document["memory"]
    (synthetic_folder / "metadata.json").write_text(json.dumps(document))
    code, _, err = inspect(capsys, str(synthetic_folder))
    assert code == 3 and err.count("\n") == 1
    assert "has no 'memory'" in err and "aot build" in err


@pytest.mark.unit
def test_help_teaches(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["inspect", "--help"])
    out = capsys.readouterr().out
    for words in ("examples:", "lower bound", "utilisation", "peak", "--json", "--svg"):
        assert words in out


@pytest.mark.toolchain
def test_real_build_names_every_pool_and_buffer(kws_folder, capsys) -> None:
    memory = metadata_of(kws_folder)["memory"]
    code, out, _ = inspect(capsys, str(kws_folder))
    assert code == 0
    for pool in memory["pools"]:
        assert f"pool {pool['name']} " in out
    for b in memory["buffers"]:
        # The source model's tensor names, not aot's internal tensor_<n>_t<n>.
        assert short_tensor_name(b["tensor"]) in out and b["buffer"] not in out
    assert len(buffer_rects((kws_folder / "memory.svg").read_text())) == len(memory["buffers"])
    code, out, _ = inspect(capsys, str(kws_folder), "--json", "--no-svg")
    report = json.loads(out)
    assert report["workspace_bytes"] == memory["workspace_bytes"]
    assert sum(len(p["buffers"]) for p in report["pools"]) == len(memory["buffers"])
    assert report["pools"][0]["targets"] == ["cpu", "npu"]
