"""aot bench and aot validate on a farm board give what they give locally (host boards)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from farm_helpers import EXAMPLE_MODEL, Farm

pytestmark = pytest.mark.toolchain

# Wall-clock figures of the host differ from run to run; everything else must not.
VARYING = {"times", "time_min", "time_median", "time_max", "operators_total", "profile_error",
           "peak_stack_bytes", "model_stack_bytes", "ticks_per_second"}  # fmt: skip


@pytest.fixture(scope="module")
def profiled_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from aot.testing.harness import build

    return build(EXAMPLE_MODEL, tmp_path_factory.mktemp("kws_prof") / "out", "host", "--profile")


def test_bench_over_the_farm_gives_the_local_report(host_farm: Farm, profiled_build: Path) -> None:
    args = ["bench", str(profiled_build), "-n", "3", "--json"]
    code, local, err = host_farm.cli(*args)
    assert code == 0, err
    code, remote, err = host_farm.cli(*args, "--tracker", host_farm.address, "--key", "h")
    assert code == 0, err
    local_json, remote_json = json.loads(local), json.loads(remote)
    for report in (local_json, remote_json):
        for op in report["operators"]:
            for field in ("time", "share", "time_per_mac", "resolved"):  # all from timing
                op.pop(field, None)
    # Issue 19, point 13: a farm result names the board server that ran it.
    assert remote_json.pop("server").startswith("board 'h' at 127.0.0.1:")
    assert "server" not in local_json
    steady = lambda doc: {k: v for k, v in doc.items() if k not in VARYING}  # noqa: E731
    assert steady(remote_json) == steady(local_json)
    assert remote_json["profile"] and len(remote_json["operators"]) >= 1
    assert len(remote_json["times"]) == 3


def test_validate_over_the_farm_gives_the_local_report(host_farm: Farm, host_build: Path) -> None:
    args = ["validate", str(host_build), str(EXAMPLE_MODEL), "-n", "12", "--seed", "5", "--json"]
    code, local, err = host_farm.cli(*args)
    assert code == 0, err
    code, remote, err = host_farm.cli(*args, "--tracker", host_farm.address, "--key", "h")
    assert code == 0, err
    remote_json = json.loads(remote)
    # Issue 19, point 13: a farm result names the board server that ran it.
    assert remote_json.pop("server").startswith("board 'h' at 127.0.0.1:")
    assert remote_json == json.loads(local)
    assert remote_json["samples_passed"] == 12
    server = host_farm.servers[0].text()
    assert "running 'runs'" in server  # all 12 sets in one job


def test_validate_with_a_wrong_reference_fails_before_borrowing(
    host_farm: Farm, host_build: Path
) -> None:
    from aot.testing.shared import mlperf_tiny

    other = mlperf_tiny("ad01_int8")  # other inputs and outputs than the example's
    # No board of this key exists: the reference is checked before the farm is asked.
    code, _, err = host_farm.cli(
        "validate", str(host_build), str(other), "--tracker", host_farm.address, "--key", "none"
    )
    assert code == 2, err
    assert "no board of key" not in err and len(err.strip().splitlines()) == 1
