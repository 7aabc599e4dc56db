"""``aot serve``: one board, offered to a TVM RPC tracker as a server of a key.

Process layout (TVM's ``tvm.rpc.server.Server``):

* ``aot serve`` checks the board and the tracker, starts the server and waits;
* TVM's server worker (``python -m tvm.exec.popen_worker``) runs our init callback, which
  registers ``aot.farm.hello`` and ``aot.farm.call``, then listens and keeps the board
  registered with the tracker;
* each client session is a fork of the worker that runs the job: it unpacks the bundle
  into a temporary folder and runs the firmware through ``aot.runner`` (host process,
  QEMU, or flash + serial port), which starts device processes through
  ``aot.device.process``.

Nothing outlives ``aot serve``: the worker and each session ask the kernel to kill them
when their parent dies (``PR_SET_PDEATHSIG``), as device processes already do, so even
SIGKILL of ``aot serve`` takes the worker, the session, QEMU and the tracker entry with it,
and the client of a running job sees its connection close.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aot.artifacts import LibraryManifest
from aot.errors import ConfigError, DeviceError, ToolchainError
from aot.farm import jobs, wire
from aot.farm.client import TrackerAddress, TrackerConnection, check_key

REGISTER_TIMEOUT_S = 20.0
_PR_SET_PDEATHSIG = 1
INSTALL_HINT = "pip install 'aot[farm]'"


@dataclass(frozen=True)
class ServeConfig:
    tracker: TrackerAddress
    key: str
    board: str
    serial_port: str | None = None
    baud: int | None = None
    flash_runner: str | None = None  # physical boards: instead of the board's own runner
    host: str = "0.0.0.0"  # where the RPC server listens
    rpc_port: int = 9091  # first port tried; the next free one up to rpc_port_end is taken
    rpc_port_end: int = 9199
    address: str | None = None  # the address the tracker gives clients (default: as seen)


def check_config(config: ServeConfig) -> Any:
    """The board, after checking everything a job would otherwise fail on later."""
    from aot.boards import load_board

    check_key(config.key)
    for module in ("psutil", "tornado"):
        try:
            __import__(module)
        except ImportError:
            raise ToolchainError(f"aot serve needs {module}: {INSTALL_HINT}") from None
    board = load_board(config.board)
    if not board.is_host and not board.emulated:
        from aot.flash.session import require_port

        require_port(board, config.serial_port)
        _check_flash_runner(board, config.flash_runner)
    elif config.serial_port or config.flash_runner:
        kind = "this machine" if board.is_host else "emulated"
        option = "--port" if config.serial_port else "--runner"
        raise ConfigError(f"board '{board.name}' is {kind}: nothing to flash, drop {option}")
    if board.emulated:
        from aot.building.toolchain import qemu_system_arm

        qemu_system_arm()  # a missing QEMU is named now, not at the first job
    if not config.rpc_port <= config.rpc_port_end or not 0 < config.rpc_port < 65536:
        raise ConfigError(
            f"--rpc-port {config.rpc_port}: expected a TCP port up to {config.rpc_port_end}"
        )
    with TrackerConnection(config.tracker, 10.0) as tracker:
        tracker.summary()
    return board


def _check_flash_runner(board: Any, name: str | None) -> None:
    """The runner must flash from the ELF alone: a job's folder holds the ELF and
    metadata.json, not the build folder a runner like west reads."""
    from aot.flash.core import Firmware, runner_for

    flasher = runner_for(board, name)
    # Which paths the runner's command line names, seen through marker paths.
    marker = Path(tempfile.gettempdir()) / "aot-farm-marker"
    firmware = Firmware(
        elf=marker / "firmware.elf", project_dir=marker / "project", build_dir=marker / "build"
    )
    argv = flasher.command(board, firmware)
    if any(str(firmware.build_dir) in arg for arg in argv):
        raise ConfigError(
            f"board '{board.name}' flashes with '{flasher.name}', which reads the build folder "
            "that clients do not send; serve it with --runner pyocd or --runner openocd, "
            "which flash the ELF"
        )
    flasher.find_tool()  # a missing tool is named now, not at the first job


def serve(config: ServeConfig, ready: Callable[[str], None] | None = None) -> None:
    """Serves the board until interrupted (Ctrl-C, SIGTERM) or the server stops."""
    from tvm.rpc.server import Server

    board = check_config(config)
    callback = functools.partial(
        _init_worker, json.dumps(_config_json(config, board.name)), os.getpid()
    )
    try:
        server = Server(
            host=config.host,
            port=config.rpc_port,
            port_end=config.rpc_port_end + 1,
            tracker_addr=(config.tracker.host, config.tracker.port),
            key=config.key,
            custom_addr=config.address,
            silent=True,
            server_init_callback=callback,
        )
    except Exception as err:  # TVM reports a failed bind as whatever the worker raised
        raise ConfigError(
            f"cannot start the board server on {config.host} ports {config.rpc_port}-"
            f"{config.rpc_port_end}: {_first_line(err)}; choose others with --rpc-port"
        ) from None
    try:
        _wait_registered(config, server.port)
        if ready is not None:
            ready(
                f"serving {board.name} as key '{config.key}' at tracker {config.tracker} "
                f"(RPC port {server.port}); Ctrl-C stops"
            )
        while server.proc.is_alive():
            time.sleep(0.2)
        raise DeviceError(
            f"the board server of key '{config.key}' stopped: it lost the RPC tracker at "
            f"{config.tracker} for over a minute, or crashed (see the lines above)"
        )
    finally:
        server.terminate()  # kills the worker and its sessions (and so their devices)


def _first_line(err: BaseException) -> str:
    lines = [line for line in str(err).splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(err).__name__


def _config_json(config: ServeConfig, board: str) -> dict[str, Any]:
    document = asdict(config)
    document["tracker"] = str(config.tracker)
    document["board"] = board
    return document


def _wait_registered(config: ServeConfig, rpc_port: int) -> None:
    """Returns once the tracker lists this server (clients can borrow it from then on)."""
    deadline = time.monotonic() + REGISTER_TIMEOUT_S
    while time.monotonic() < deadline:
        with TrackerConnection(config.tracker, 10.0) as tracker:
            for info in tracker.summary().get("server_info", []):
                addr = info.get("addr") or [None, None]
                if info.get("key") == f"server:{config.key}" and addr[1] == rpc_port:
                    return
        time.sleep(0.1)
    raise DeviceError(
        f"the board server did not register with the RPC tracker at {config.tracker} "
        f"within {REGISTER_TIMEOUT_S:.0f} s"
    )


# ---- in TVM's server worker and its session processes --------------------------------

_CONTEXT: jobs.BoardContext | None = None
_KEY = ""
_WORKER_PID = 0


def _die_with_parent(parent: int) -> None:
    """The kernel kills this process when its parent dies; exit now if it already has."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _init_worker(config_text: str, serve_pid: int) -> None:
    """TVM's server_init_callback: runs once in the worker before it listens."""
    import tvm_ffi

    global _CONTEXT, _KEY, _WORKER_PID
    _die_with_parent(serve_pid)
    config = json.loads(config_text)
    _CONTEXT = jobs.BoardContext(
        config["board"], config["serial_port"], config["baud"], config["flash_runner"]
    )
    _KEY = config["key"]
    _WORKER_PID = os.getpid()
    # Imported once here: every session is a fork of this process and inherits them.
    import aot.runner  # noqa: F401

    tvm_ffi.register_global_func("aot.farm.hello", _hello, override=True)
    tvm_ffi.register_global_func("aot.farm.call", _call, override=True)
    threading.Thread(target=_watch_listener, name="aot-farm-watch", daemon=True).start()


def _watch_listener() -> None:
    """Ends the worker when TVM's listening thread has died (it gives up on a tracker it
    cannot reach for a minute), so 'aot serve' notices and reports it."""
    from tvm.rpc import server as tvm_server

    while True:
        time.sleep(0.5)
        state = getattr(tvm_server.PopenRPCServerState, "current", None)
        thread = getattr(state, "thread", None)
        if thread is not None and not thread.is_alive():
            _log("the RPC server stopped listening")
            os._exit(3)


def _log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"[{stamp}] aot serve '{_KEY}': {message}", file=sys.stderr, flush=True)


def _hello() -> bytes:
    _die_with_parent(_WORKER_PID)
    assert _CONTEXT is not None
    return wire.encode_result(
        {"protocol": wire.FARM_PROTOCOL, "board": _CONTEXT.board, "key": _KEY}
    )


def _call(job_name: str, bundle: bytes, request: bytes) -> bytes:
    """One job for one client, in its session process; never raises (errors are replies)."""
    _die_with_parent(_WORKER_PID)
    assert _CONTEXT is not None
    try:
        name, params = wire.decode_request(bytes(request))
        job = jobs.get(name)
        with tempfile.TemporaryDirectory(prefix="aot-farm-") as tmp:
            folder = Path(tmp)
            inputs = wire.unpack_bundle(bytes(bundle), folder)
            manifest = _check_folder(folder)
            _log(f"running '{job.name}' of model '{manifest.name}'")
            result = job.function(folder, inputs, params, _CONTEXT)
        _log(f"'{job.name}' done")
        return wire.encode_result(result)
    except Exception as err:
        _log(f"'{job_name}' failed: {err}")
        return wire.encode_error(err)


def _check_folder(folder: Path) -> LibraryManifest:
    from aot.artifacts import read_manifest
    from aot.boards import load_board

    assert _CONTEXT is not None
    manifest = read_manifest(folder)
    built_for = load_board(manifest.board).name
    if built_for != _CONTEXT.board:
        raise ConfigError(
            f"this server's board is a {_CONTEXT.board}, the firmware was built for "
            f"{built_for}: borrow a board of that kind (another --key)"
        )
    return manifest
