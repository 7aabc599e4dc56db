"""Pools from --pool NAME:SIZE[:TARGETS] and from a JSON --pool-file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aot.cli import main
from aot.compiler import parse_pool, pools_from_args
from aot.errors import ConfigError
from aot.planning.model import PoolSpec
from aot.planning.pools_file import read_pool_file


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pools.json"
    path.write_text(text)
    return path


@pytest.mark.unit
def test_good_file_keeps_order_sizes_and_targets(tmp_path) -> None:
    path = write(
        tmp_path,
        json.dumps(
            [
                {"name": "dtcm", "size": "16K", "targets": ["cpu"]},
                {"name": "SRAM", "size": 1048576},
                {"name": "ext", "size": "2MiB", "targets": ["cpu", "npu"]},
                {"name": "host", "size": None},
            ]
        ),
    )
    assert read_pool_file(path) == (
        PoolSpec("dtcm", 16384, ("cpu",)),
        PoolSpec("sram", 1048576, ("cpu",)),
        PoolSpec("ext", 2 * 1024 * 1024, ("cpu", "npu")),
        PoolSpec("host", None, ("cpu",)),
    )
    assert read_pool_file(path)[2].to_json() == {
        "name": "ext",
        "size_limit": 2 * 1024 * 1024,
        "targets": ["cpu", "npu"],
    }


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "is not JSON"),
        ("", "is not JSON"),
        ('{"name": "sram", "size": 1024}', "holds an object; expected a list of pools"),
        ("[]", "holds an empty list"),
        ('[{"name": "sram"}]', "pool 'sram' has no size"),
        ('[{"size": 1024}]', "entry 1 has no name"),
        ('[{"name": "9x", "size": 1024}]', 'entry 1 has name "9x"'),
        ('[{"name": "a", "size": 1}, {"name": "A", "size": 2}]', "'a' is given more than once"),
        ('[{"name": "sram", "size": 1024, "sise": 1}]', "unknown key(s) sise"),
        ('[{"name": "sram", "size": "lots"}]', "pool 'sram' has size \"lots\""),
        ('[{"name": "sram", "size": -1}]', "has size -1; expected >= 0 bytes"),
        ('[{"name": "sram", "size": true}]', "has size true"),
        ('[{"name": "sram", "size": 1, "targets": "cpu"}]', 'has targets "cpu"'),
        ('[{"name": "sram", "size": 1, "targets": []}]', "has an empty targets list"),
        ('["sram:16K"]', "entry 1 is a string"),
    ],
)
def test_bad_file_is_one_clear_line(tmp_path, text: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        read_pool_file(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"pool file {path}")
    assert problem in message


@pytest.mark.unit
def test_missing_file(tmp_path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        read_pool_file(tmp_path / "nope.json")


@pytest.mark.unit
def test_pool_argument_with_targets() -> None:
    assert parse_pool("dtcm:16K") == PoolSpec("dtcm", 16384, ("cpu",))
    assert parse_pool("dtcm:16K:cpu") == PoolSpec("dtcm", 16384, ("cpu",))
    assert parse_pool("Ext:1M:cpu,NPU") == PoolSpec("ext", 1 << 20, ("cpu", "npu"))
    assert parse_pool("sram:64KiB") == PoolSpec("sram", 65536)
    assert pools_from_args(None) == (PoolSpec("workspace", None),)


@pytest.mark.unit
@pytest.mark.parametrize(
    "text", ["dtcm", "dtcm:", "dtcm:16Q", ":16K", "dtcm:16K:", "dtcm:16K:cpu,,npu", "a:1:b:c"]
)
def test_bad_pool_argument(text: str) -> None:
    with pytest.raises(ConfigError, match=r"is not NAME:SIZE\[:TARGETS\]") as info:
        parse_pool(text)
    assert "\n" not in str(info.value)


@pytest.mark.unit
def test_duplicate_pool_arguments() -> None:
    with pytest.raises(ConfigError, match="'sram' is given more than once"):
        pools_from_args(["sram:1K", "SRAM:2K"])


@pytest.mark.unit
def test_cli_reports_bad_file_and_both_options(tmp_path, capsys) -> None:
    path = write(tmp_path, "[")
    argv = ["build", "model.tflite", "--board", "host", "-o", str(tmp_path / "out")]
    assert main([*argv, "--pool-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: pool file {path} is not JSON") and err.count("\n") == 1
    assert main([*argv, "--pool-file", str(path), "--pool", "a:1K"]) == 2
    assert "either with --pool or with --pool-file" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.toolchain
def test_build_with_pool_file_records_targets(tmp_path) -> None:
    from inspect_helpers import KWS

    from aot.testing.harness import build
    from aot.testing.shared import mlperf_tiny

    mlperf_tiny("kws_ref_model")  # missing shared data fails here, loudly
    path = write(
        tmp_path,
        json.dumps(
            [
                {"name": "dtcm", "size": "16K", "targets": ["cpu", "npu"]},
                {"name": "sram", "size": "1M"},
            ]
        ),
    )
    folder = build(KWS, tmp_path / "out", "host", "--no-build", "--pool-file", str(path))
    pools = json.loads((folder / "metadata.json").read_text())["memory"]["pools"]
    assert [(p["name"], p["size_limit"], p["targets"]) for p in pools] == [
        ("dtcm", 16384, ["cpu", "npu"]),
        ("sram", 1 << 20, ["cpu"]),
    ]
    assert pools[0]["used_bytes"] > 0
