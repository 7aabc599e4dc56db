"""Random and corrupted traffic against the server under ASan/UBSan: it must answer every
frame with a well-formed reply and keep serving.

Two drivers: 100,000 frames fed in-process (fixtures/fuzz_driver.c, through the
server's write callback: seconds, not minutes), and a few hundred through the real host
executable's pipes."""

from __future__ import annotations

import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from device_c_build import C_FLAGS, FIXTURES, INCLUDES, RUNTIME, HostBuilder, compile_c

from aot.device import PipeTransport
from aot.device import protocol as p

pytestmark = pytest.mark.toolchain

SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def _sanitizers_work(tmp_path: Path) -> bool:
    gcc = shutil.which("gcc")
    if gcc is None:
        return False
    src = tmp_path / "probe.c"
    src.write_text("int main(void) { return 0; }\n")
    probe = subprocess.run([gcc, *SANITIZE, str(src), "-o", str(tmp_path / "probe")])
    return probe.returncode == 0


FUZZ_FRAMES = 100_000


def test_parser_and_server_take_100000_corrupt_frames_in_process(tmp_path: Path) -> None:
    if not _sanitizers_work(tmp_path):
        pytest.skip("gcc cannot build with -fsanitize=address,undefined here")
    exe = tmp_path / "fuzz_driver"
    # The server without main.c and without a port: the driver's serial hooks abort, so
    # every reply must come through the write callback given to aot_server_init.
    sources = [RUNTIME / "src" / f for f in ("server.c", "frame.c", "stack.c")]
    sources += [RUNTIME / "src" / "platform_defaults.c", FIXTURES / "mul_add_model.c"]
    sources += [FIXTURES / "fuzz_driver.c"]
    compile_c(
        ["gcc", *C_FLAGS, "-O1", "-g", *SANITIZE, *INCLUDES, *map(str, sources), "-o", str(exe)]
    )
    result = subprocess.run(
        [str(exe), "1234", str(FUZZ_FRAMES)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "runtime error" not in result.stderr and "Sanitizer" not in result.stderr
    assert result.stdout.startswith(f"fuzz: {FUZZ_FRAMES} frames, ")
    assert f"{FUZZ_FRAMES} probes answered" in result.stdout and "session ok" in result.stdout


def _mutate(rng: random.Random, wire: bytes) -> bytes:
    data = bytearray(wire)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(5)
        at = rng.randrange(len(data))
        if choice == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif choice == 1:
            del data[at:]
        elif choice == 2:
            data.insert(at, 0)
        elif choice == 3:
            data[at:at] = rng.randbytes(rng.randint(1, 40))
        else:
            data[at:at] = b"\x01" * rng.randint(200, 1200)
        if not data:
            data = bytearray(b"\x01")
    return bytes(data)


def _random_frame(rng: random.Random) -> bytes:
    command = rng.choice([*range(0, 9), 0x55, 0xFF])
    payload = rng.randbytes(rng.choice([0, 1, 2, 4, 5, 7, 9, rng.randint(0, 600)]))
    if command == p.Command.QUIT:
        command = p.Command.STATS  # keep the server running
    if command == p.Command.RUN and len(payload) == 4:
        payload = p.RUN_REQUEST.pack(rng.randint(0, 3))  # a valid huge count runs for hours
    return p.Frame(command, rng.randrange(1, 256), payload).encode()


def test_server_survives_random_traffic(host_app: HostBuilder, tmp_path: Path) -> None:
    if not _sanitizers_work(tmp_path):
        pytest.skip("gcc cannot build with -fsanitize=address,undefined here")
    exe = host_app("mul_add_model", *SANITIZE, "-DAOT_APP_MAX_PAYLOAD=256")
    transport = PipeTransport.spawn([str(exe)])
    decoder = p.FrameDecoder()
    rng = random.Random(1234)
    try:
        for i in range(400):
            wire = _random_frame(rng)
            if rng.random() < 0.7:
                wire = _mutate(rng, wire)
            # Terminate whatever was sent, then ask for STATS with a marker sequence number.
            probe_seq = i % 255 + 1
            transport.write(wire + b"\x00" + p.Frame(p.Command.STATS, probe_seq, b"").encode())
            deadline = time.monotonic() + 10.0
            while True:
                frames = decoder.feed(transport.read(65536, deadline - time.monotonic()))
                for frame in frames:
                    assert isinstance(frame, p.Frame), f"device sent a corrupt frame: {frame}"
                    assert frame.type == p.FRAME_ERROR or frame.type & p.REPLY_BIT
                if any(
                    isinstance(f, p.Frame)
                    and f.type == p.Command.STATS | p.REPLY_BIT
                    and f.seq == probe_seq
                    and p.split_status(f.payload)[0] == 0
                    for f in frames
                ):
                    break
        transport.write(p.Frame(p.Command.QUIT, 1, b"").encode())
        assert transport.wait(10.0) == 0
    finally:
        transport.close()
