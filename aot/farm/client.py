"""Borrowing a board from the farm: queue at the tracker, connect, run a job, give it back.

The tracker is TVM's (``python -m tvm.exec.rpc_tracker``); boards are ``aot serve``
processes registered with it under a key. A client asks the tracker for a free board of
its key, waits in the tracker's queue while all are busy (bounded by its timeout), opens
a TVM RPC session to the board server it was given and calls the server's
``aot.farm.call`` with the firmware bundle. The session ends when the job returns; the
server then offers the board to the tracker again.

Every wait is bounded: the queue by ``timeout``, the job by a bound computed from the job
and ``timeout`` (:func:`aot.farm.jobs.session_seconds`). A server that dies mid-job closes
the connection and the client reports it at once.
"""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aot.errors import ConfigError, DeviceError
from aot.farm import jobs, wire

# Seconds to reach the tracker, to connect to the board server it names, and for that
# server's hello.
CONNECT_S = 10.0
_ADDRESS_RE = re.compile(r"^(?P<host>\[[^\]]+\]|[^:\s]+):(?P<port>\d+)$")


@dataclass(frozen=True)
class TrackerAddress:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_tracker(text: str, what: str = "--tracker") -> TrackerAddress:
    """``HOST:PORT`` (``[::1]:9190`` for IPv6) as a TrackerAddress, else a ConfigError."""
    match = _ADDRESS_RE.match(text.strip())
    port = int(match["port"]) if match else 0
    if not match or not 0 < port < 65536:
        raise ConfigError(
            f"{what} {text!r}: expected HOST:PORT of an RPC tracker, e.g. 127.0.0.1:9190"
        )
    return TrackerAddress(match["host"].strip("[]"), port)


def check_key(key: str, what: str = "--key") -> str:
    # The tracker splits 'server:KEY:matchkey' on ':'; spaces end the RPC key header.
    if not key or any(c in key for c in ": \t\n"):
        raise ConfigError(f"{what} {key!r}: expected a board key without ':' or spaces, e.g. m4")
    return key


class TrackerConnection:
    """One connection to a TVM RPC tracker, speaking its JSON messages with timeouts."""

    def __init__(self, address: TrackerAddress, timeout: float) -> None:
        from tvm.rpc import base

        self.address = address
        self._base = base
        try:
            self.sock = socket.create_connection((address.host, address.port), timeout=timeout)
        except OSError as err:
            reason = err.strerror or str(err) or type(err).__name__
            raise DeviceError(
                f"cannot reach the RPC tracker at {address}: {reason}; start one with "
                f"'python -m tvm.exec.rpc_tracker --host 0.0.0.0 --port {address.port}' "
                "or check --tracker"
            ) from None
        try:
            self.sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
            magic = struct.unpack("<i", base.recvall(self.sock, 4))[0]
        except OSError:
            magic = None
        if magic != base.RPC_TRACKER_MAGIC:
            self.close()
            raise DeviceError(f"{address} is not an RPC tracker (it did not answer as one)")

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> TrackerConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ask(self, message: list[Any], timeout: float | None) -> Any:
        self.sock.settimeout(timeout)
        self._base.sendjson(self.sock, message)
        return self._base.recvjson(self.sock)

    def summary(self, timeout: float = 10.0) -> dict[str, Any]:
        try:
            value = self._ask([self._base.TrackerCode.SUMMARY], timeout)
        except OSError as err:
            raise DeviceError(f"the RPC tracker at {self.address} did not answer: {err}") from None
        return dict(value[1])

    def request(self, key: str, timeout: float, priority: int = 1) -> tuple[str, int, str]:
        """Waits in the tracker's queue for a free board; (host, port, match key).

        Raises TimeoutError past ``timeout``; closing the connection then withdraws the
        request (the tracker skips requests whose connection is gone)."""
        value = self._ask([self._base.TrackerCode.REQUEST, key, "", priority], timeout)
        if value[0] != self._base.TrackerCode.SUCCESS:
            raise DeviceError(f"the RPC tracker at {self.address} refused the request: {value}")
        host, port, matchkey = value[1]
        return str(host), int(port), str(matchkey)


@dataclass(frozen=True)
class KeyStatus:
    """What the tracker says about one key: boards registered, free, requests waiting."""

    boards: int
    free: int
    waiting: int
    keys: tuple[str, ...]  # every key with a registered board

    def describe(self) -> str:
        return f"{self.boards} board(s) of that key, {self.free} free, {self.waiting} waiting"


def key_status(summary: dict[str, Any], key: str) -> KeyStatus:
    servers = [str(info.get("key", "")) for info in summary.get("server_info", [])]
    # A board server registers as 'server:KEY'.
    keys = sorted({name.split(":", 1)[1] for name in servers if ":" in name})
    queue = summary.get("queue_info", {}).get(key, {})
    return KeyStatus(
        boards=sum(1 for name in servers if name == f"server:{key}"),
        free=int(queue.get("free", 0)),
        waiting=int(queue.get("pending", 0)),
        keys=tuple(keys),
    )


def tracker_status(address: TrackerAddress, key: str, timeout: float = 10.0) -> KeyStatus:
    with TrackerConnection(address, timeout) as tracker:
        return key_status(tracker.summary(timeout), key)


class FarmBoard:
    """A borrowed board: an RPC session with its ``aot serve`` process."""

    def __init__(self, session: Any, key: str, host: str, port: int) -> None:
        self.session = session
        self.key = key
        self.where = f"board '{key}' at {host}:{port}"
        self.hello = self._hello()

    def close(self) -> None:
        """Ends the RPC session (TVM closes it when the last reference goes): the server
        then offers the board again."""
        self.session = None

    def _function(self, name: str) -> Callable[..., Any]:
        if self.session is None:
            raise DeviceError(f"{self.where} was given back already")
        try:
            return self.session.get_function(name)
        except Exception:  # TVM raises its own error types for a missing function
            raise DeviceError(
                f"{self.where} is not an aot board server (it has no {name}); start boards "
                "with 'aot serve --tracker HOST:PORT --key KEY --board BOARD'"
            ) from None

    def _hello(self) -> dict[str, Any]:
        reply = bytes(_bounded(self._function("aot.farm.hello"), (), CONNECT_S, self.where))
        hello = wire.decode_reply(reply, self.where)
        if hello.get("protocol") != wire.FARM_PROTOCOL:
            raise DeviceError(
                f"{self.where} speaks farm protocol {hello.get('protocol')}, this aot "
                f"speaks {wire.FARM_PROTOCOL}: use the same aot version on both sides"
            )
        return hello

    @property
    def board(self) -> str:
        return str(self.hello["board"])

    def call(self, job: str, bundle: bytes, params: dict[str, Any], seconds: float) -> dict:
        """Runs ``job`` on the board; its result, or its AotError raised here."""
        function = self._function("aot.farm.call")
        request = wire.encode_request(job, params)
        reply = bytes(_bounded(function, (job, bundle, request), seconds, self.where))
        return wire.decode_reply(reply, self.where)


def _bounded(function: Callable[..., Any], args: tuple, seconds: float, where: str) -> Any:
    """``function(*args)`` (a remote call, blocking in C++) within ``seconds``.

    The call runs in a daemon thread so a board server that stops answering without
    closing the connection (a frozen machine) cannot hang the client."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = function(*args)
        except Exception as err:  # reported in the caller's thread below
            box["error"] = err

    thread = threading.Thread(target=target, name="aot-farm-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise DeviceError(
            f"{where} did not answer within {seconds:.0f} s; the board or its server may "
            "hang: check the 'aot serve' log there, or raise --timeout"
        )
    if "error" in box:
        text = str(box["error"])
        if "RPCSessionTimeoutError" in text:
            raise DeviceError(
                f"{where} ended the session after its limit of {seconds:.0f} s; raise --timeout"
            )
        raise DeviceError(
            f"{where} closed the connection before answering: its server stopped, crashed or "
            "lost its machine, so nothing came back; run again to borrow another board"
        )
    return box["value"]


@contextlib.contextmanager
def borrow(
    address: TrackerAddress, key: str, timeout: float, session_seconds: float
) -> Iterator[FarmBoard]:
    """A free board of ``key``, waiting in the tracker's queue at most ``timeout`` s; the
    server ends the session by itself after ``session_seconds``."""
    from tvm import rpc

    check_key(key)
    deadline = time.monotonic() + timeout
    with TrackerConnection(address, min(timeout, CONNECT_S)) as tracker:
        status = key_status(tracker.summary(), key)
        if not status.boards:
            known = ", ".join(status.keys) or "none"
            raise DeviceError(
                f"the RPC tracker at {address} has no board of key '{key}' (keys with boards: "
                f"{known}); start one with 'aot serve --tracker {address} --key {key} "
                "--board BOARD'"
            )
    while True:
        remaining = deadline - time.monotonic()
        # A new connection per try: one that timed out may still get the tracker's late
        # answer, which must not be read as the next request's.
        with TrackerConnection(address, min(max(remaining, 0.1), CONNECT_S)) as tracker:
            try:
                host, port, matchkey = tracker.request(key, max(remaining, 0.01))
            except (TimeoutError, OSError) as err:
                if not isinstance(err, TimeoutError):
                    raise DeviceError(
                        f"the RPC tracker at {address} closed the connection while queueing "
                        f"for a board of key '{key}'"
                    ) from None
                raise DeviceError(_queue_timeout(address, key, timeout)) from None
        where = f"board '{key}' at {host}:{port}"
        try:
            session = _bounded(
                rpc.connect, (host, port, matchkey, session_seconds), CONNECT_S, where
            )
        except DeviceError:
            # The server went away or renewed its match key after the tracker answered:
            # ask again; the tracker has dropped a dead server's entries by then.
            if time.monotonic() >= deadline:
                raise DeviceError(
                    f"the boards of key '{key}' at the RPC tracker {address} did not accept a "
                    f"connection within {timeout:g} s"
                ) from None
            time.sleep(0.2)
            continue
        board = FarmBoard(session, key, host, port)
        del session  # the board holds the only reference, so close() ends the session
        try:
            yield board
        finally:
            board.close()
        return


def _queue_timeout(address: TrackerAddress, key: str, timeout: float) -> str:
    try:
        status = tracker_status(address, key).describe()
    except DeviceError:
        status = "the tracker no longer answers"
    return (
        f"no board of key '{key}' became free within {timeout:g} s at the RPC tracker "
        f"{address} ({status}); raise --timeout or serve more boards under that key "
        "(see 'python -m tvm.exec.query_rpc_tracker')"
    )


def call_job(
    folder: str | Path,
    job: str,
    inputs: list[np.ndarray],
    params: dict[str, Any],
    *,
    tracker: TrackerAddress,
    key: str,
    timeout: float,
) -> dict[str, Any]:
    """Runs ``job`` (see :mod:`aot.farm.jobs`) on a farm board for the build ``folder``:
    the generic seam every remote command goes through. Returns the job's JSON result."""
    from aot.artifacts import read_manifest
    from aot.boards import load_build_board

    folder = Path(folder)
    manifest = read_manifest(folder)
    definition = jobs.get(job)
    bundle = wire.pack_bundle(folder, manifest, inputs)
    board = load_build_board(manifest)
    seconds = jobs.session_seconds(definition, params, timeout, board)
    with borrow(tracker, key, timeout, seconds) as remote:
        if remote.board != board.name:
            raise ConfigError(
                f"{remote.where} is a {remote.board}, but {folder} was built for {board.name}: "
                f"borrow a board of that kind (another --key) or rebuild with --board "
                f"{remote.board}"
            )
        document = remote.call(job, bundle, params, seconds)
    if isinstance(document, dict):
        document["server"] = remote.where  # a farm result names the server that ran it
    return document


def run_remote(
    folder: str | Path,
    inputs: list[np.ndarray],
    *,
    tracker: TrackerAddress,
    key: str,
    repeats: int = 1,
    timeout: float = 60.0,
) -> Any:
    """``aot.runner.run_model`` on a farm board: the same RunReport."""
    params = {"repeats": repeats, "timeout": timeout}
    result = call_job(folder, "run", inputs, params, tracker=tracker, key=key, timeout=timeout)
    return wire.run_report_from_wire(result)


def bench_remote(
    folder: str | Path,
    repeats: int,
    timeout: float,
    inputs: list[np.ndarray] | None = None,
    *,
    tracker: TrackerAddress,
    key: str,
) -> Any:
    """``aot.bench.bench_folder`` on a farm board: the same BenchReport."""
    from aot.bench import BenchReport

    params = {"repeats": repeats, "timeout": timeout}
    result = call_job(
        folder, "bench", list(inputs or []), params, tracker=tracker, key=key, timeout=timeout
    )
    return BenchReport.from_json(result)


def run_sets_remote(
    folder: str | Path,
    sets: list[list[np.ndarray]],
    *,
    tracker: TrackerAddress,
    key: str,
    timeout: float = 60.0,
) -> list[list[np.ndarray]]:
    """Each input set through the model on one farm board, all in one device session (as
    ``aot.testing.harness.run_many`` locally); the outputs of each set, in order."""
    outputs, _ = run_sets_on_a_board(folder, sets, tracker=tracker, key=key, timeout=timeout)
    return outputs


def run_sets_on_a_board(
    folder: str | Path,
    sets: list[list[np.ndarray]],
    *,
    tracker: TrackerAddress,
    key: str,
    timeout: float = 60.0,
) -> tuple[list[list[np.ndarray]], str | None]:
    """``run_sets_remote``, and the board server that ran the sets."""
    per_set = len(sets[0]) if sets else 0
    if any(len(s) != per_set for s in sets):
        raise ConfigError("every input set must have the same number of arrays")
    if not sets:
        return [], None
    flat = [array for inputs in sets for array in inputs]
    params = {"timeout": timeout, "per_set": per_set, "sets": len(sets)}
    result = call_job(folder, "runs", flat, params, tracker=tracker, key=key, timeout=timeout)
    outputs = [[wire.decode_array(o) for o in outputs] for outputs in result["outputs"]]
    return outputs, result.get("server")


@dataclass(frozen=True)
class RemoteOutputs:
    outputs: list[np.ndarray]


class ReplaySession:
    """A device session whose runs were done on a farm board beforehand: ``run(inputs)``
    returns the outputs of the next set, checking it is the set that was sent. For
    callers that take a session object and run the sets one by one (aot validate)."""

    def __init__(
        self,
        sets: list[list[np.ndarray]],
        outputs: list[list[np.ndarray]],
        server: str | None = None,
    ) -> None:
        self._sets = sets
        self._outputs = outputs
        self._next = 0
        self.server = server  # the board server that ran the sets

    def run(self, inputs: list[np.ndarray], timeout: float | None = None) -> RemoteOutputs:
        from aot.errors import InternalError

        index = self._next
        if (
            index >= len(self._sets)
            or len(inputs) != len(self._sets[index])
            or not all(
                np.array_equal(a, b) and a.dtype == b.dtype
                for a, b in zip(inputs, self._sets[index], strict=True)
            )
        ):
            raise InternalError(f"input set {index} is not the one run on the farm board")
        self._next += 1
        return RemoteOutputs(self._outputs[index])
