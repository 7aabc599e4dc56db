"""The jobs a board server runs for a client, by name.

A job runs on the server's machine against the build folder the client sent (unpacked
into a temporary folder) and the board the server owns; it returns JSON values, which
the client turns back into the report object a local command returns. Client and server
both look jobs up here, so a new remote command is one :func:`register` call plus its
client-side wrapper.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aot.errors import ConfigError

# Time a job may need besides its device replies: unpacking, starting QEMU or the host
# process, and the RPC round trips.
SETUP_S = 30.0
# Flashing a physical board (aot.flash.core.DEFAULT_TIMEOUT_S bounds each flash).
FLASH_S = 300.0


@dataclass(frozen=True)
class BoardContext:
    """What the server knows about its board: passed to every job."""

    board: str  # the board's aot name
    serial_port: str | None  # physical boards: their serial port
    baud: int | None
    flash_runner: str | None = None  # physical boards: the runner that flashes the ELF


JobFunction = Callable[[Path, list[np.ndarray], dict[str, Any], BoardContext], dict[str, Any]]


@dataclass(frozen=True)
class Job:
    name: str
    function: JobFunction
    # Device replies the job waits for, each bounded by the client's timeout: with SETUP_S
    # (and FLASH_S) the bound of the whole session.
    replies: Callable[[dict[str, Any]], int]


_JOBS: dict[str, Job] = {}


def register(name: str, function: JobFunction, replies: Callable[[dict[str, Any]], int]) -> None:
    _JOBS[name] = Job(name, function, replies)


def get(name: str) -> Job:
    try:
        return _JOBS[name]
    except KeyError:
        known = ", ".join(sorted(_JOBS))
        raise ConfigError(f"unknown board-farm job '{name}' (known: {known})") from None


def session_seconds(job: Job, params: dict[str, Any], timeout: float, board: Any) -> float:
    """How long a session running ``job`` may last before the client gives up on it."""
    flash = 0.0 if board.is_host or board.emulated else FLASH_S
    return SETUP_S + flash + job.replies(params) * timeout


def _run(
    folder: Path, inputs: list[np.ndarray], params: dict[str, Any], ctx: BoardContext
) -> dict[str, Any]:
    from aot.device.client import check_repeats, check_timeout
    from aot.farm.wire import run_report_to_wire
    from aot.runner import run_model

    report = run_model(
        folder,
        inputs,
        repeats=check_repeats(params.get("repeats", 1)),
        timeout=check_timeout(params.get("timeout", 60.0)),
        port=ctx.serial_port,
        baud=ctx.baud,
        runner=ctx.flash_runner,
    )
    return run_report_to_wire(report)


def _runs(
    folder: Path, inputs: list[np.ndarray], params: dict[str, Any], ctx: BoardContext
) -> dict[str, Any]:
    """Many input sets, one device session (one QEMU start, one flash): ``inputs`` is the
    sets one after the other, ``params["per_set"]`` arrays each."""
    from aot.artifacts import read_manifest
    from aot.boards import load_build_board
    from aot.device.client import check_timeout
    from aot.device.process import sigterm_unwinds
    from aot.farm.wire import encode_array
    from aot.runner import connect

    timeout = check_timeout(params.get("timeout", 60.0))
    per_set = int(params.get("per_set", 1))
    if per_set < 1 or len(inputs) % per_set:
        raise ConfigError(f"{len(inputs)} input arrays do not make sets of {per_set}")
    manifest = read_manifest(folder)
    board = load_build_board(manifest)
    outputs = []
    with (
        sigterm_unwinds(),
        connect(
            folder, manifest, board, timeout, ctx.serial_port, ctx.baud, ctx.flash_runner
        ) as client,
    ):
        for start in range(0, len(inputs), per_set):
            result = client.run(inputs[start : start + per_set], timeout=timeout)
            outputs.append([encode_array(o) for o in result.outputs])
        client.quit()
    return {"outputs": outputs}


def _bench(
    folder: Path, inputs: list[np.ndarray], params: dict[str, Any], ctx: BoardContext
) -> dict[str, Any]:
    """``aot.bench.bench_folder`` on this board: the BenchReport as JSON."""
    from aot.bench import bench_folder
    from aot.device.client import check_repeats, check_timeout
    from aot.runner import connect

    def open_device(output: Path, manifest: Any, board: Any, timeout: float) -> Any:
        return connect(
            output, manifest, board, timeout, ctx.serial_port, ctx.baud, ctx.flash_runner
        )

    report = bench_folder(
        folder,
        check_repeats(params.get("repeats", 10)),
        check_timeout(params.get("timeout", 60.0)),
        connect=open_device,
        inputs=inputs or None,
    )
    return report.to_json()


# HELLO, the run itself, and the outputs and statistics that follow it.
register("run", _run, lambda params: 3)
# HELLO, then one run (inputs in, outputs back) per set.
register("runs", _runs, lambda params: 2 + int(params.get("sets", 1)))
# HELLO, then per repeat its run and its profile, then the statistics.
register("bench", _bench, lambda params: 2 + 2 * int(params.get("repeats", 10)))
