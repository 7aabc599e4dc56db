"""The build-time limits of the C server at their extremes: AOT_APP_MAX_PAYLOAD at 64 and
65535 and AOT_APP_MAX_REPEATS at 1 and 2^32 - 1 compile under the project's warning flags,
values outside fail to compile, and sessions at both payload limits are clean under
AddressSanitizer and UndefinedBehaviorSanitizer."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from device_c_build import C_FLAGS, INCLUDES, RUNTIME, HostBuilder, compile_c

from aot.device import DeviceClient, PipeTransport
from aot.device import protocol as p
from aot.errors import ProtocolError

pytestmark = pytest.mark.toolchain

SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
REVERSE_N = 70000  # fixtures/reverse_model.c
REVERSE_NAME = "reverse_bytes_with_a_name_longer_than_small_frames"
SERVER = RUNTIME / "src" / "server.c"


def _gcc() -> str:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("host gcc not found; install it with: apt-get install gcc")
    return gcc


@pytest.mark.parametrize(
    "define",
    [
        "AOT_APP_MAX_PAYLOAD=64",
        "AOT_APP_MAX_PAYLOAD=65535",
        "AOT_APP_MAX_REPEATS=1",
        "AOT_APP_MAX_REPEATS=4294967295",
    ],
)
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_limits_compile_with_the_project_warnings(define: str, opt: str, tmp_path: Path) -> None:
    # -Wextra holds -Wtype-limits: a check that is always false at a limit is an error.
    argv = [_gcc(), *C_FLAGS, opt, "-Wtype-limits", *INCLUDES, f"-D{define}"]
    compile_c([*argv, "-c", str(SERVER), "-o", str(tmp_path / "server.o")])


@pytest.mark.parametrize(
    ("define", "check"),
    [
        ("AOT_APP_MAX_PAYLOAD=63", "aot_check_max_payload"),
        ("AOT_APP_MAX_PAYLOAD=65536", "aot_check_max_payload"),
        ("AOT_APP_MAX_REPEATS=0", "aot_check_max_repeats"),
        ("AOT_APP_MAX_REPEATS=4294967296", "aot_check_max_repeats"),
    ],
)
def test_limits_outside_the_range_do_not_compile(define: str, check: str, tmp_path: Path) -> None:
    argv = [_gcc(), *C_FLAGS, *INCLUDES, f"-D{define}", "-c", str(SERVER), "-o", "/dev/null"]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode != 0
    assert check in result.stderr, result.stderr


@pytest.mark.parametrize("limit", [64, 65535])
def test_sessions_at_the_payload_limits_are_clean_under_sanitizers(
    host_app: HostBuilder, limit: int
) -> None:
    exe = host_app(
        "reverse_model", f"-DAOT_APP_MAX_PAYLOAD={limit}", "-DAOT_APP_IO_BYTES=140000", *SANITIZE
    )
    # A sanitizer finding aborts the program (no recovery): the exit code tells.
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0"}
    transport = PipeTransport.spawn([str(exe)], env=env)
    with DeviceClient(transport, timeout=30.0) as client:
        info = client.hello()
        assert info.max_payload == limit and info.max_repeats == 10000
        # At 64 the name is cut to what fits beside the fields, max_repeats and features.
        room = limit - 2 - p.HelloReply.FORMAT.size - 1 - 4 - 4
        assert info.name == REVERSE_NAME[:room]
        x = np.random.default_rng(limit).integers(0, 256, (1, REVERSE_N), dtype=np.uint8)
        np.testing.assert_array_equal(client.run([x]).outputs[0], x[:, ::-1])
        # A frame of exactly the limit is a frame; the request in it is out of range.
        full = p.SET_INPUT_HEAD.pack(0, REVERSE_N) + b"\x01" * (limit - p.SET_INPUT_HEAD.size)
        with pytest.raises(ProtocolError, match="OUT_OF_RANGE"):
            client.request(p.Command.SET_INPUT, full)
        if limit < p.MAX_MAX_PAYLOAD:  # a u16 length cannot say more than 65535
            with pytest.raises(ProtocolError, match="FRAME_TOO_LONG"):
                client.request(p.Command.SET_INPUT, full + b"\x01")
        # The largest GET_OUTPUT reply fills the transmit buffer; one byte more is refused.
        body = client.request(p.Command.GET_OUTPUT, p.GET_OUTPUT_REQUEST.pack(0, 0, limit - 2))
        assert body == x[0, ::-1][: limit - 2].tobytes()
        with pytest.raises(ProtocolError, match=f"BAD_PAYLOAD.*detail {limit - 2}"):
            client.request(p.Command.GET_OUTPUT, p.GET_OUTPUT_REQUEST.pack(0, 0, limit - 1))
        client.quit()
        code = transport.wait(10.0)
        assert transport.process.stderr is not None
        assert code == 0, transport.process.stderr.read().decode(errors="replace")
