"""The board farm with host boards (native executables): a tracker and 'aot serve' on
127.0.0.1, 'aot run --tracker' against them, and every way a borrowed board can fail."""

from __future__ import annotations

import json
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from farm_helpers import EXAMPLE_INPUT, Farm, free_port

from aot.errors import DeviceError, InternalError
from aot.farm.client import ReplaySession, borrow, parse_tracker, run_remote, run_sets_remote

pytestmark = pytest.mark.toolchain

# Wall-clock time and stack depths (the host's libc) differ from run to run.
VARYING = {
    "time_per_run",
    "time_min",
    "time_median",
    "time_max",
    "time_each",
    "ticks_per_run",
    "peak_stack_bytes",
    "model_stack_bytes",
}


def _steady(document: dict) -> dict:
    return {k: v for k, v in document.items() if k not in VARYING}


def _silent_copy(build: Path, tmp_path: Path) -> Path:
    """The build folder with an executable that never speaks the protocol."""
    folder = tmp_path / "silent"
    shutil.copytree(build, folder)
    metadata = json.loads((folder / "metadata.json").read_text())
    executable = folder / metadata["build"]["executable"]
    executable.write_text("#!/bin/sh\nexec sleep 600\n")
    executable.chmod(executable.stat().st_mode | stat.S_IXUSR)
    return folder


def _remote(farm: Farm, key: str = "h") -> list[str]:
    return ["--tracker", farm.address, "--key", key]


def test_run_over_the_farm_gives_the_local_report(host_farm: Farm, host_build: Path) -> None:
    args = ["run", str(host_build), "-i", str(EXAMPLE_INPUT), "--top", "2"]
    code, local, err = host_farm.cli(*args, "--json")
    assert code == 0, err
    code, remote, err = host_farm.cli(*args, "--json", *_remote(host_farm))
    assert code == 0, err
    remote_document = json.loads(remote)
    # Issue 19, point 13: a farm result names the board server that ran it.
    server = remote_document.pop("server")
    assert server.startswith("board 'h' at 127.0.0.1:")
    assert _steady(remote_document) == _steady(json.loads(local))
    code, text, err = host_farm.cli(*args, *_remote(host_farm))
    assert code == 0, err
    assert "  output 0       int8[1, 4] [-77, -96, -79, -5]" in text.splitlines()
    assert f"  ran by         {server}" in text.splitlines()


def test_serve_stops_quietly_on_sigterm(tmp_path: Path) -> None:
    # Issue 19, point 13: SIGTERM is how a lab stops a server; no 'error: terminated'.
    farm = Farm(tmp_path)
    try:
        server = farm.serve("quiet", "host")
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(30) == 0
        assert server.text().splitlines() == [
            line for line in server.text().splitlines() if line.startswith("serving host")
        ]
        assert "error" not in server.text()
    finally:
        assert farm.stop() == []


def test_many_input_sets_run_in_one_session_on_the_board(host_farm: Farm, host_build: Path) -> None:
    from aot.library import read_metadata
    from aot.testing.harness import random_inputs, run_many

    sets = random_inputs(read_metadata(host_build)["inputs"], 5, seed=3)
    server = host_farm.servers[0]
    sessions = server.text().count("running 'runs'")
    tracker = parse_tracker(host_farm.address)
    got = run_sets_remote(host_build, sets, tracker=tracker, key="h", timeout=30)
    assert server.text().count("running 'runs'") == sessions + 1  # one job, one session
    for remote, local in zip(got, run_many(host_build, sets), strict=True):
        assert [o.tobytes() for o in remote] == [o.tobytes() for o in local]
    # A caller that runs the sets one by one (aot validate) gets them back in order.
    session = ReplaySession(sets, got)
    assert session.run(sets[0]).outputs[0].tobytes() == got[0][0].tobytes()
    with pytest.raises(InternalError, match="input set 1 is not the one run"):
        session.run(sets[2])


def test_queue_wait_is_bounded_by_timeout_and_names_key_and_queue(
    host_farm: Farm, host_build: Path
) -> None:
    run = ["run", str(host_build), "-i", str(EXAMPLE_INPUT), *_remote(host_farm)]
    # Hold the only board, as another user's long job would.
    with borrow(parse_tracker(host_farm.address), "h", timeout=30, session_seconds=120):
        start = time.monotonic()
        code, _, err = host_farm.cli(*run, "--timeout", "2")
        elapsed = time.monotonic() - start
    assert code == 8, err
    message = err.strip()
    assert message.startswith("error: no board of key 'h' became free within 2 s at the RPC "), err
    assert "(1 board(s) of that key, 0 free, " in message
    assert len(message.splitlines()) == 1
    assert 2 <= elapsed < 8
    # The holder gave the board back: the next client gets it.
    code, _, err = host_farm.cli(*run)
    assert code == 0, err


def test_a_key_without_boards_fails_at_once_naming_the_known_keys(
    host_farm: Farm, host_build: Path
) -> None:
    code, _, err = host_farm.cli(
        "run", str(host_build), "-i", str(EXAMPLE_INPUT), *_remote(host_farm, "m4")
    )
    assert code == 8
    address = host_farm.address
    assert err.strip() == (
        f"error: the RPC tracker at {address} has no board of key 'm4' (keys with boards: h); "
        f"start one with 'aot serve --tracker {address} --key m4 --board BOARD'"
    )


def test_a_device_timeout_on_the_server_comes_back_as_the_same_error(
    host_farm: Farm, host_build: Path, tmp_path: Path
) -> None:
    silent = _silent_copy(host_build, tmp_path)
    start = time.monotonic()
    code, _, err = host_farm.cli(
        "run", str(silent), "-i", str(EXAMPLE_INPUT), "--timeout", "2", *_remote(host_farm)
    )
    assert time.monotonic() - start < 8
    assert code == 8, err
    line = err.strip()
    assert line.startswith("error: board 'h' at 127.0.0.1:"), line
    assert "no answer from process" in line and "within 2 s" in line
    assert len(line.splitlines()) == 1
    # The server stopped the silent program and offers the board again.
    code, _, err = host_farm.cli(
        "run", str(host_build), "-i", str(EXAMPLE_INPUT), *_remote(host_farm)
    )
    assert code == 0, err


def test_a_board_of_another_kind_is_refused_before_the_firmware_is_sent(
    host_farm: Farm, host_build: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "m4"
    shutil.copytree(host_build, folder)
    metadata = json.loads((folder / "metadata.json").read_text())
    metadata["board"] = "mps2_an386"
    (folder / "metadata.json").write_text(json.dumps(metadata))
    code, _, err = host_farm.cli("run", str(folder), "-i", str(EXAMPLE_INPUT), *_remote(host_farm))
    assert code == 2
    assert "is a host, but" in err and "was built for mps2_an386" in err


def test_a_physical_board_is_flashed_by_its_server_and_a_flash_failure_comes_back(
    host_farm: Farm, host_build: Path, tmp_path: Path
) -> None:
    # No probe here: the server's pyOCD is a program that fails, as a missing board would.
    host_farm.serve(
        "f746", "nucleo_f746zg", "--port", "/dev/ttyACM0", "--runner", "pyocd",
        env={"AOT_PYOCD": shutil.which("false") or "/bin/false"},
    )  # fmt: skip
    folder = tmp_path / "f746"
    shutil.copytree(host_build, folder)
    metadata = json.loads((folder / "metadata.json").read_text())
    metadata["board"] = "nucleo_f746zg"
    (folder / "metadata.json").write_text(json.dumps(metadata))
    code, _, err = host_farm.cli(
        "run", str(folder), "-i", str(EXAMPLE_INPUT), *_remote(host_farm, "f746")
    )
    assert code == 7, err  # FlashError's exit code, as for a local flash
    assert err.startswith("error: board 'f746' at 127.0.0.1:"), err
    assert "pyocd could not flash nucleo_f746zg (exit code 1)" in err
    assert len(err.strip().splitlines()) == 1


def test_query_rpc_tracker_lists_the_served_boards(host_farm: Farm) -> None:
    # The command docs/farm.md gives a lab to see its boards and queue.
    result = subprocess.run(
        [sys.executable, "-m", "tvm.exec.query_rpc_tracker", "--host", "127.0.0.1",
         "--port", str(host_farm.port)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert result.stdout.count("server:h ") + result.stdout.count("server:h\n") == 1
    queue = [line.split() for line in result.stdout.splitlines() if line.startswith("h ")]
    assert queue == [["h", "1", "1", "0"]]  # key, total, free, pending


def test_killing_the_server_mid_run_fails_its_client_at_once_and_leaves_nothing(
    host_farm: Farm, host_build: Path, tmp_path: Path
) -> None:
    import psutil

    server = host_farm.serve("victim", "host")
    serve_pid = server.process.pid
    silent = _silent_copy(host_build, tmp_path)
    inputs = [np.load(EXAMPLE_INPUT)]
    outcome: dict[str, BaseException] = {}

    def client() -> None:
        try:
            run_remote(
                silent, inputs, tracker=parse_tracker(host_farm.address), key="victim", timeout=60
            )
        except BaseException as err:
            outcome["error"] = err

    thread = threading.Thread(target=client)
    thread.start()
    server.wait_for("running 'run'")
    time.sleep(0.5)  # the job has started its device program, which waits for HELLO
    served = psutil.Process(serve_pid).children(recursive=True)
    assert any("sleep" in p.name() for p in served), "the device program did not start"
    start = time.monotonic()
    server.process.send_signal(signal.SIGKILL)  # no cleanup code runs in 'aot serve'
    thread.join(60)
    assert time.monotonic() - start < 10, "the client waited for its timeout"
    error = outcome.get("error")
    port = server.text().split("(RPC port ", 1)[1].split(")", 1)[0]
    assert isinstance(error, DeviceError), error
    assert str(error) == (
        f"board 'victim' at 127.0.0.1:{port} closed the connection before answering: its "
        "server stopped, crashed or lost its machine, so nothing came back; run again to "
        "borrow another board"
    )
    # TVM's worker, the session and the device program died with 'aot serve'.
    _, alive = psutil.wait_procs(served, timeout=10)
    assert [" ".join(p.cmdline()) for p in alive] == []
    servers = [info["key"] for info in host_farm.summary()["server_info"]]
    assert "server:victim" not in servers and "server:h" in servers  # dropped the dead one


def test_an_unreachable_tracker_is_one_line(host_build: Path) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    for argv in (
        ["run", str(host_build), "-i", str(EXAMPLE_INPUT)],
        ["serve", "--board", "host"],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "aot", *argv, "--tracker", address, "--key", "h"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 8, result.stderr
        assert result.stderr.startswith(
            f"error: cannot reach the RPC tracker at {address}: Connection refused"
        ), result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
