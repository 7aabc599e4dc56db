"""What travels between a farm client and a board server, as bytes.

A request is a *bundle* (an uncompressed tar: ``metadata.json``, the firmware at the path
the metadata records, and the inputs as ``inputs/<n>.npy``) plus a small JSON document
naming the job and its parameters. A reply is one JSON document: ``{"result": ...}`` or
``{"error": {"type": ..., "message": ...}}``. Arrays travel as base64 of their ``.npy``
bytes, so dtype and shape come back exactly; nothing is ever unpickled.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import tarfile
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from aot import errors
from aot.artifacts import LibraryManifest
from aot.errors import AotError, ConfigError, InternalError, ProtocolError

# Bumped when a reply or bundle changes incompatibly; client and server compare it.
FARM_PROTOCOL = 1
METADATA = "metadata.json"
INPUTS = "inputs"


def firmware_path(folder: Path, manifest: LibraryManifest) -> PurePosixPath:
    """The firmware's path inside ``folder``, as the manifest records it; a missing file
    gets the same message as a local run."""
    from aot.flash import firmware_from_metadata
    from aot.flash.core import missing_firmware_message

    firmware = firmware_from_metadata(folder, manifest)
    if not firmware.elf.is_file():
        raise ConfigError(missing_firmware_message(firmware))
    return PurePosixPath(firmware.elf.relative_to(folder).as_posix())


def pack_bundle(folder: Path, manifest: LibraryManifest, inputs: list[np.ndarray]) -> bytes:
    """metadata.json, the firmware and the inputs of one job, as tar bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(folder / METADATA, arcname=METADATA)
        relative = firmware_path(folder, manifest)
        tar.add(folder / relative, arcname=str(relative))
        for index, array in enumerate(inputs):
            data = array_bytes(array)
            info = tarfile.TarInfo(f"{INPUTS}/{index}.npy")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def unpack_bundle(blob: bytes, folder: Path) -> list[np.ndarray]:
    """Writes the bundle's files into ``folder`` and returns its inputs in order."""
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:") as tar:
            # The data filter refuses absolute paths, '..', links out of the folder and
            # device files: a bundle can only write inside ``folder``.
            tar.extractall(folder, filter="data")
    except (tarfile.TarError, OSError) as err:
        raise ProtocolError(
            f"the firmware bundle sent to the board server is corrupt: {err}"
        ) from None
    inputs_dir = folder / INPUTS
    count = len(list(inputs_dir.glob("*.npy"))) if inputs_dir.is_dir() else 0
    return [_load_array((inputs_dir / f"{i}.npy").read_bytes()) for i in range(count)]


def array_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def _load_array(data: bytes) -> np.ndarray:
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise ProtocolError(f"an array from the board farm is corrupt: {err}") from None


def encode_array(array: np.ndarray) -> str:
    return base64.b64encode(array_bytes(array)).decode("ascii")


def decode_array(text: str) -> np.ndarray:
    return _load_array(base64.b64decode(text))


def encode_request(job: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"protocol": FARM_PROTOCOL, "job": job, "params": params}).encode()


def decode_request(data: bytes) -> tuple[str, dict[str, Any]]:
    document = _load_json(data, "request")
    if document.get("protocol") != FARM_PROTOCOL:
        raise ProtocolError(
            f"the client speaks farm protocol {document.get('protocol')}, this board server "
            f"speaks {FARM_PROTOCOL}: use the same aot version on both sides"
        )
    return str(document["job"]), dict(document.get("params") or {})


def encode_result(result: dict[str, Any]) -> bytes:
    return json.dumps({"result": result}).encode()


def encode_error(err: BaseException) -> bytes:
    """An AotError keeps its class and message; anything else is a bug in the server."""
    if isinstance(err, AotError):
        kind, message = type(err).__name__, str(err)
    else:
        kind = "InternalError"
        message = f"internal error in the board server ({type(err).__name__}); see its log"
    # Subclasses defined outside aot.errors travel as their nearest class there.
    for cls in type(err).__mro__:
        if cls.__module__ == errors.__name__ and issubclass(cls, AotError):
            kind = cls.__name__
            break
    return json.dumps({"error": {"type": kind, "message": message}}).encode()


def decode_reply(data: bytes, where: str) -> dict[str, Any]:
    """The result of a reply, or its error raised as the same AotError class, its message
    prefixed with ``where`` (which board answered)."""
    document = _load_json(data, "reply")
    if "error" in document:
        error = document["error"]
        cls = getattr(errors, str(error.get("type")), None)
        if not (isinstance(cls, type) and issubclass(cls, AotError)):
            cls = InternalError
        raise cls(f"{where}: {error.get('message')}")
    return dict(document["result"])


def _load_json(data: bytes, what: str) -> dict[str, Any]:
    try:
        document = json.loads(bytes(data))
    except (ValueError, UnicodeDecodeError) as err:
        raise ProtocolError(f"the board farm sent a corrupt {what}: {err}") from None
    if not isinstance(document, dict):
        raise ProtocolError(f"the board farm sent a {what} that is not a JSON object")
    return document


def run_report_to_wire(report: Any) -> dict[str, Any]:
    """An ``aot.runner.RunReport`` as JSON values (every field, outputs as arrays)."""
    result = report.result
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    fields["outputs"] = [encode_array(o) for o in result.outputs]
    return {
        "outputs": [encode_array(o) for o in report.outputs],
        "result": fields,
        "stats": report.stats,
        "board": report.board,
        "time_unit": report.time_unit,
        "units_per_tick": report.units_per_tick,
        "per_run_ticks": list(report.per_run_ticks),
    }


def run_report_from_wire(document: dict[str, Any]) -> Any:
    """The ``aot.runner.RunReport`` a local run would have returned."""
    from aot.device.client import RunResult
    from aot.runner import RunReport

    fields = dict(document["result"])
    fields["outputs"] = [decode_array(o) for o in fields["outputs"]]
    known = {f.name for f in dataclasses.fields(RunResult)}
    result = RunResult(**{k: v for k, v in fields.items() if k in known})
    return RunReport(
        outputs=[decode_array(o) for o in document["outputs"]],
        result=result,
        stats=dict(document["stats"]),
        board=str(document["board"]),
        time_unit=str(document["time_unit"]),
        units_per_tick=int(document["units_per_tick"]),
        per_run_ticks=tuple(int(t) for t in document.get("per_run_ticks", ())),
        server=document.get("server"),
    )
