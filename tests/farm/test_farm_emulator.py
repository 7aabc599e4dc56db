"""Issue 12's loopback acceptance: a tracker and two emulated boards (mps2_an386 under
QEMU) served by 'aot serve' on 127.0.0.1; 20 concurrent 'aot bench --tracker' clients all
get the local result; killing one board's server mid-run fails only its client, at once;
nothing is left running."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import psutil
import pytest
from farm_helpers import EXAMPLE_INPUT, Farm

# 20 Python clients that each import TVM, on a shared 2-core machine: minutes, not seconds.
pytestmark = [pytest.mark.emulator, pytest.mark.slow]

CLIENTS = 20


def _qemus(pids: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in pids if "qemu" in p.name()]


def test_twenty_concurrent_clients_on_two_emulated_boards(farm: Farm, m4_build: Path) -> None:
    servers = [farm.serve("m4", "mps2_an386") for _ in range(2)]
    run = ["bench", str(m4_build), "-i", str(EXAMPLE_INPUT), "--json", "-n", "5"]
    code, local, err = farm.cli(*run)
    assert code == 0, err
    expected = json.loads(local)
    clients = [
        farm.start_aot(*run, "--timeout", "240", "--tracker", farm.address, "--key", "m4")
        for _ in range(CLIENTS)
    ]
    for client in clients:
        stdout, stderr = client.communicate(timeout=300)
        assert client.returncode == 0, stderr
        # Under -icount every figure is deterministic: the whole report is the local one,
        # plus the board server that ran it.
        remote = json.loads(stdout)
        assert remote.pop("server").startswith("board 'm4' at 127.0.0.1:")
        assert remote == expected
    # The tracker spread the clients over both boards.
    for server in servers:
        assert server.text().count("'bench' done") >= 1, server.text()
    assert sum(s.text().count("'bench' done") for s in servers) == CLIENTS


def test_killing_a_board_server_mid_run_fails_only_its_client(farm: Farm, m4_build: Path) -> None:
    servers = [farm.serve("m4", "mps2_an386") for _ in range(2)]
    remote = ["--tracker", farm.address, "--key", "m4", "--timeout", "60"]
    # 10000 inferences take QEMU a few seconds: long enough to be killed in the middle.
    long_run = farm.start_aot(
        "run", str(m4_build), "-i", str(EXAMPLE_INPUT), "--repeat", "10000", *remote
    )
    deadline = time.monotonic() + 60
    while not (busy := [s for s in servers if "running 'run'" in s.text()]):
        assert long_run.poll() is None, long_run.communicate()
        assert time.monotonic() < deadline, "no server started the long run"
        time.sleep(0.05)
    victim, survivor = busy[0], next(s for s in servers if s is not busy[0])
    others = [
        farm.start_aot("run", str(m4_build), "-i", str(EXAMPLE_INPUT), "--json", *remote)
        for _ in range(5)
    ]
    deadline = time.monotonic() + 30
    while not _qemus(psutil.Process(victim.process.pid).children(recursive=True)):
        assert time.monotonic() < deadline, "QEMU did not start on the busy board"
        time.sleep(0.05)
    served = psutil.Process(victim.process.pid).children(recursive=True)
    start = time.monotonic()
    victim.process.send_signal(signal.SIGKILL)
    _, stderr = long_run.communicate(timeout=60)
    assert time.monotonic() - start < 10, "the client waited for its timeout"
    assert long_run.returncode == 8, stderr
    assert "closed the connection before answering" in stderr
    assert len(stderr.strip().splitlines()) == 1
    for client in others:
        stdout, stderr = client.communicate(timeout=120)
        assert client.returncode == 0, stderr
        assert json.loads(stdout)["outputs"][0]["values"] == [-77, -96, -79, -5]
    assert survivor.text().count("'run' done") == len(others)
    # QEMU, the session and TVM's worker died with the killed 'aot serve'.
    _, alive = psutil.wait_procs(served, timeout=10)
    assert [" ".join(p.cmdline()) for p in alive] == []
