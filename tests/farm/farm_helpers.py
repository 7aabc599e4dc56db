"""A board farm on 127.0.0.1 for tests: a TVM tracker and 'aot serve' processes, each on
free ports, started as a lab starts them and stopped with nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_MODEL = REPO / "examples" / "tiny_kws_int8.tflite"
EXAMPLE_INPUT = REPO / "examples" / "tiny_kws_int8.input.npy"
# Every process a farm starts inherits this variable: how leftovers are found, even the
# ones whose parent died and that were re-parented.
MARKER_VAR = "AOT_FARM_TEST_MARKER"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def marked_processes(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARKER_VAR) == marker:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


class Server:
    def __init__(self, process: subprocess.Popen[bytes], log: Path, key: str) -> None:
        self.process = process
        self.log = log
        self.key = key

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.text():
            assert self.process.poll() is None, f"aot serve exited:\n{self.text()}"
            assert time.monotonic() < deadline, f"no {text!r} in the log:\n{self.text()}"
            time.sleep(0.05)


class Farm:
    """``python -m tvm.exec.rpc_tracker`` plus ``aot serve`` processes."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.marker = uuid.uuid4().hex
        self.env = {**os.environ, "PYTHONPATH": str(REPO), MARKER_VAR: self.marker}
        self.servers: list[Server] = []
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.tracker_log = workdir / "tracker.log"
        with self.tracker_log.open("wb") as log:
            self.tracker = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tvm.exec.rpc_tracker",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--port-end",
                    str(self.port + 1),
                    "--silent",
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: stop() signals the worker too
            )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert self.tracker.poll() is None, self.tracker_log.read_text()
                assert time.monotonic() < deadline, "the tracker did not start"
                time.sleep(0.05)

    def serve(self, key: str, board: str, *extra: str, env: dict[str, str] | None = None) -> Server:
        """Starts 'aot serve' and returns once it is registered with the tracker."""
        log = self.workdir / f"serve-{len(self.servers)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "aot",
                    "serve",
                    "--tracker",
                    self.address,
                    "--key",
                    key,
                    "--board",
                    board,
                    "--host",
                    "127.0.0.1",
                    "--rpc-port",
                    str(free_port()),
                    *extra,
                ],
                cwd=REPO,
                env={**self.env, **(env or {})},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server = Server(process, log, key)
        self.servers.append(server)
        server.wait_for("serving ")
        return server

    def aot(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "aot", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def cli(self, *args: str) -> tuple[int, str, str]:
        """``aot ARGS`` in this process (TVM is imported once): exit code, stdout, stderr."""
        import contextlib
        import io

        from aot.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return code, out.getvalue(), err.getvalue()

    def start_aot(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "aot", *args],
            cwd=REPO,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def summary(self) -> dict:
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "import json, sys; from tvm import rpc; "
                "print(json.dumps(rpc.connect_tracker(sys.argv[1], int(sys.argv[2])).summary()))",
                "127.0.0.1",
                str(self.port),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return json.loads(result.stdout)

    def stop(self) -> list[str]:
        """Stops every server (SIGTERM, as a lab would) and the tracker; returns the
        command lines of processes still running afterwards (should be none)."""
        for server in self.servers:
            if server.process.poll() is None:
                server.process.send_signal(signal.SIGTERM)
        for server in self.servers:
            try:
                server.process.wait(30)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait()
        if self.tracker.poll() is None:
            os.killpg(self.tracker.pid, signal.SIGTERM)
            self.tracker.wait(30)
        deadline = time.monotonic() + 10
        while marked_processes(self.marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = []
        for process in marked_processes(self.marker):
            try:
                left.append(" ".join(process.cmdline()))
                process.kill()  # do not leave them for the next test either
            except psutil.NoSuchProcess:
                continue
        return left
