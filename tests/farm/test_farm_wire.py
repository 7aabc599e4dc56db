"""What travels between farm clients and board servers, without a network: bundles,
reports, errors, and the options that choose a farm."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from aot.artifacts import LibraryManifest
from aot.cli import main
from aot.device.client import RunResult
from aot.errors import ConfigError, DeviceError, InternalError, ProtocolError
from aot.farm import jobs, wire
from aot.farm.client import TrackerAddress, check_key, key_status, parse_tracker
from aot.runner import RunReport

pytestmark = pytest.mark.unit


def _folder(tmp_path: Path) -> tuple[Path, dict]:
    """A build folder as far as the farm reads it: metadata.json and the executable."""
    folder = tmp_path / "out"
    (folder / "project" / "build").mkdir(parents=True)
    executable = folder / "project" / "build" / "aot_app"
    executable.write_bytes(b"\x7fELF fake")
    executable.chmod(0o755)
    metadata = {
        "schema_version": 1,
        "model": {"name": "m"},
        "memory": {"pools": [], "buffers": []},
        "board": "host",
        "project": {
            "template": "host",
            "port": "host",
            "dir": "project",
            "executable": "project/build/aot_app",
        },
        "build": {"executable": "project/build/aot_app"},
    }
    (folder / "metadata.json").write_text(json.dumps(metadata))
    return folder, LibraryManifest.from_json(metadata)


def test_a_bundle_carries_metadata_firmware_and_inputs(tmp_path: Path) -> None:
    folder, metadata = _folder(tmp_path)
    inputs = [np.arange(6, dtype=np.int8).reshape(2, 3), np.ones((4,), np.float64)]
    blob = wire.pack_bundle(folder, metadata, inputs)
    target = tmp_path / "server"
    target.mkdir()
    got = wire.unpack_bundle(blob, target)
    assert (target / "metadata.json").read_text() == (folder / "metadata.json").read_text()
    executable = target / "project" / "build" / "aot_app"
    assert executable.read_bytes() == b"\x7fELF fake"
    assert executable.stat().st_mode & 0o100  # still executable on the server
    assert [a.dtype for a in got] == [np.int8, np.float64]
    for mine, theirs in zip(inputs, got, strict=True):
        np.testing.assert_array_equal(mine, theirs)
        assert mine.shape == theirs.shape


def test_a_missing_firmware_is_named_as_for_a_local_run(tmp_path: Path) -> None:
    folder, metadata = _folder(tmp_path)
    (folder / "project" / "build" / "aot_app").unlink()
    with pytest.raises(ConfigError, match=r"firmware .*aot_app not found; build the project"):
        wire.pack_bundle(folder, metadata, [])


def _tar(name: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    return buffer.getvalue()


def test_a_bundle_cannot_write_outside_its_folder(tmp_path: Path) -> None:
    target = tmp_path / "server"
    target.mkdir()
    with pytest.raises(ProtocolError, match="bundle sent to the board server is corrupt"):
        wire.unpack_bundle(_tar("../escape"), target)
    assert not (tmp_path / "escape").exists()
    # An absolute path lands inside the folder, never at that path.
    outside = tmp_path / "absolute"
    wire.unpack_bundle(_tar(str(outside)), target)
    assert not outside.exists()
    assert (target / str(outside).lstrip("/")).read_bytes() == b"x"


def test_a_run_report_comes_back_equal(tmp_path: Path) -> None:
    outputs = [np.array([[-77, -96, -79, -5]], np.int8), np.linspace(0, 1, 5, dtype=np.float32)]
    result = RunResult(outputs, ticks=90, ticks_per_second=25_000_000, status=0, runs=3,
                       ticks_min=29, ticks_max=31)  # fmt: skip
    stats = {"peak_stack_bytes": 304, "model_stack_bytes": 200, "stack_exhausted": False}
    report = RunReport(outputs, result, stats, "mps2_an386", "instructions", 40)
    # Through real JSON text, as over the network.
    back = wire.run_report_from_wire(json.loads(json.dumps(wire.run_report_to_wire(report))))
    assert back.result.ticks == 90 and back.result.runs == 3 and back.result.ticks_max == 31
    assert (back.board, back.time_unit, back.units_per_tick) == ("mps2_an386", "instructions", 40)
    assert back.stats == stats and back.time_per_run == report.time_per_run
    for mine, theirs in zip(outputs, back.outputs, strict=True):
        assert theirs.dtype == mine.dtype and theirs.shape == mine.shape
        np.testing.assert_array_equal(mine, theirs)


def test_errors_keep_their_class_and_name_the_board() -> None:
    reply = wire.encode_error(DeviceError("no answer from QEMU within 2 s"))
    with pytest.raises(DeviceError) as caught:
        wire.decode_reply(reply, "board 'm4' at 10.0.0.2:9091")
    assert type(caught.value) is DeviceError
    assert str(caught.value) == "board 'm4' at 10.0.0.2:9091: no answer from QEMU within 2 s"
    # A bug in the server says so, without its Python text.
    reply = wire.encode_error(KeyError("secret internals"))
    with pytest.raises(InternalError, match=r"internal error in the board server \(KeyError\)"):
        wire.decode_reply(reply, "board")
    assert b"secret" not in reply
    with pytest.raises(ProtocolError, match="corrupt reply"):
        wire.decode_reply(b"\x00not json", "board")


def test_a_request_of_another_farm_protocol_is_refused() -> None:
    job, params = wire.decode_request(wire.encode_request("run", {"repeats": 2}))
    assert (job, params) == ("run", {"repeats": 2})
    with pytest.raises(ProtocolError, match="use the same aot version on both sides"):
        wire.decode_request(json.dumps({"protocol": 99, "job": "run"}).encode())
    with pytest.raises(ConfigError, match=r"unknown board-farm job 'nope' \(known: .*run"):
        jobs.get("nope")


def test_tracker_addresses_and_keys() -> None:
    assert parse_tracker("127.0.0.1:9190") == TrackerAddress("127.0.0.1", 9190)
    assert parse_tracker("[::1]:9190") == TrackerAddress("::1", 9190)
    assert str(parse_tracker("lab.example:9190")) == "lab.example:9190"
    for bad in ("lab", "lab:", ":9190", "lab:99999", "lab:0", "a b:1"):
        with pytest.raises(ConfigError, match="expected HOST:PORT of an RPC tracker"):
            parse_tracker(bad)
    assert check_key("m4") == "m4"
    for bad in ("", "a:b", "a b"):
        with pytest.raises(ConfigError, match="without ':' or spaces"):
            check_key(bad)


def test_the_tracker_summary_per_key() -> None:
    summary = {
        "server_info": [
            {"key": "server:m4", "addr": ["10.0.0.2", 9091]},
            {"key": "server:m4", "addr": ["10.0.0.3", 9091]},
            {"key": "server:f746", "addr": ["10.0.0.4", 9091]},
        ],
        "queue_info": {"m4": {"free": 0, "pending": 3}, "f746": {"free": 1, "pending": 0}},
    }
    status = key_status(summary, "m4")
    assert (status.boards, status.free, status.waiting) == (2, 0, 3)
    assert status.keys == ("f746", "m4")
    assert status.describe() == "2 board(s) of that key, 0 free, 3 waiting"
    assert key_status(summary, "other").boards == 0


def test_the_session_bound_grows_with_the_timeout_and_flashing() -> None:
    from aot.boards import load_board

    run = jobs.get("run")
    host = jobs.session_seconds(run, {}, 10.0, load_board("host"))
    assert host == jobs.SETUP_S + 3 * 10.0
    physical = jobs.session_seconds(run, {}, 10.0, load_board("nucleo_f746zg"))
    assert physical == host + jobs.FLASH_S


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--key", "m4"], "error: --key names boards of a farm: give --tracker HOST:PORT too"),
        (["--tracker", "lab:9190"], "error: --tracker needs --key KEY: the key the farm's"),
        (["--tracker", "lab", "--key", "m4"], "error: --tracker 'lab': expected HOST:PORT"),
        (["--tracker", "lab:9190", "--key", "m:4"], "error: --key 'm:4': expected a board key"),
        (
            ["--tracker", "lab:9190", "--key", "m4", "--port", "/dev/ttyACM0"],
            "error: --port is for a board on this machine; with --tracker the farm's server",
        ),
    ],
)
def test_farm_options_of_aot_run(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Checked before the folder is read: no build needed.
    assert main(["run", str(tmp_path), "--fill", "zeros", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert len(err.strip().splitlines()) == 1


def test_aot_serve_checks_its_board_before_the_tracker(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["serve", "--tracker", "127.0.0.1:1", "--key", "m4"]
    assert main([*base, "--board", "mps2_an38"]) == 2
    assert "did you mean" in capsys.readouterr().err
    assert main([*base, "--board", "nucleo_f746zg"]) == 2
    assert "give its serial port with --port" in capsys.readouterr().err
    assert main([*base, "--board", "host", "--port", "/dev/ttyACM0"]) == 2
    assert "is this machine: nothing to flash, drop --port" in capsys.readouterr().err
    assert main([*base, "--board", "mps2_an386", "--runner", "pyocd"]) == 2
    assert "is emulated: nothing to flash, drop --runner" in capsys.readouterr().err
    # west flashes from the Zephyr build folder, which a farm client does not send.
    physical = [*base, "--board", "nucleo_f746zg", "--port", "/dev/ttyACM0"]
    assert main(physical) == 2
    assert capsys.readouterr().err.strip() == (
        "error: board 'nucleo_f746zg' flashes with 'west', which reads the build folder that "
        "clients do not send; serve it with --runner pyocd or --runner openocd, which flash "
        "the ELF"
    )
    assert main([*physical, "--runner", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_a_remote_call_is_bounded_and_its_failures_are_named() -> None:
    import time

    from aot.farm.client import _bounded

    start = time.monotonic()
    with pytest.raises(DeviceError, match=r"^board 'm4' at h:1 did not answer within 1 s"):
        _bounded(time.sleep, (30,), 1.0, "board 'm4' at h:1")  # a frozen server
    assert time.monotonic() - start < 5

    def timed_out() -> bytes:
        raise RuntimeError("RPCSessionTimeoutError: Your 33s session has expired")

    def closed() -> bytes:
        raise RuntimeError("Check failed: (code == RPCCode::kReturn) is false: code=kShutdown")

    with pytest.raises(DeviceError, match="ended the session after its limit of 33 s"):
        _bounded(timed_out, (), 33.0, "board")
    with pytest.raises(DeviceError, match="closed the connection before answering") as caught:
        _bounded(closed, (), 33.0, "board")
    assert "kShutdown" not in str(caught.value)
    assert _bounded(lambda x: x, ("reply",), 5.0, "board") == "reply"
