"""The file system's refusals are one line naming the path and the cause, never an
internal error; nothing half-written is left, and a killed build's leftovers are cleaned.

Read-only and full file systems are real ones: a tmpfs mounted in a private mount
namespace (``unshare -m``) that vanishes with the command, so nothing of the machine's
mounts changes. Those tests skip where the namespace cannot be made (not root).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from aot.errors import ConfigError, FileSystemError, ResourceError, UnsupportedError
from aot.library import remove_stale_staging

CHECKOUT = Path(__file__).resolve().parents[2]
MODEL = CHECKOUT / "examples" / "tiny_kws_int8.tflite"
INPUT = CHECKOUT / "examples" / "tiny_kws_int8.input.npy"


def aot(*args: str, timeout: float = 300, prefix: str = "") -> subprocess.CompletedProcess:
    """``python3 -m aot ARGS`` in a fresh process (a shell ``prefix`` may wrap it)."""
    command = shlex.join([sys.executable, "-m", "aot", *args])
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    return subprocess.run(
        f"{prefix}{command}",
        shell=True,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def one_error_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "internal error" not in lines[0], lines[0]
    return lines[0]


def can_mount_privately() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k none /mnt"],
        capture_output=True,
    )
    return probe.returncode == 0


needs_mounts = pytest.mark.skipif(
    not can_mount_privately(), reason="needs 'unshare -m' and mount (root) for a tmpfs"
)


@pytest.fixture(scope="module")
def host_build(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fs") / "out"
    result = aot("build", str(MODEL), "--board", "host", "-o", str(folder), "-q")
    assert result.returncode == 0, result.stderr
    return folder


# -- output folders -------------------------------------------------------------------


@pytest.mark.unit
def test_output_under_proc_is_one_line() -> None:
    result = aot("build", str(MODEL), "--board", "host", "-o", "/proc/aot-out", "-q")
    assert result.returncode == FileSystemError.exit_code
    line = one_error_line(result)
    assert line.startswith("error: cannot create the output folder /proc/aot-out: ")
    assert line.endswith("choose another -o")


@pytest.mark.unit
def test_output_under_an_existing_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("mine\n")
    output = tmp_path / "afile" / "out"
    result = aot("build", str(MODEL), "--board", "host", "-o", str(output), "-q")
    assert result.returncode == FileSystemError.exit_code
    assert one_error_line(result) == (
        f"error: cannot create the output folder {output}: {tmp_path / 'afile'} is a file, "
        "not a folder; choose another -o"
    )
    assert (tmp_path / "afile").read_text() == "mine\n"


def build_on_a_private_tmpfs(mount: Path, options: str) -> subprocess.CompletedProcess:
    """``aot build -o MOUNT/out`` with a tmpfs mounted at MOUNT (``options``) in a private
    mount namespace; afterwards the command prints what is left on the tmpfs."""
    mount.mkdir()
    script = (
        f'mount -t tmpfs -o {options} none {mount} && "$0" "$@"; rc=$?; ls -A {mount}; exit $rc'
    )
    return aot(
        "build", str(MODEL), "--board", "host", "-o", str(mount / "out"), "-q",
        prefix=f"unshare -m sh -c {shlex.quote(script)} ",
    )  # fmt: skip


@pytest.mark.unit
@needs_mounts
def test_output_on_a_read_only_file_system(tmp_path: Path) -> None:
    mount = tmp_path / "ro"
    result = build_on_a_private_tmpfs(mount, "ro")
    assert result.returncode == FileSystemError.exit_code, result.stderr
    line = one_error_line(result)
    assert f"cannot write in {mount}" in line and "Read-only file system" in line, line


@pytest.mark.toolchain
@needs_mounts
def test_a_full_disk_mid_build_leaves_nothing(tmp_path: Path) -> None:
    # 64 KiB: room for the first sources, not for the whole build folder.
    result = build_on_a_private_tmpfs(tmp_path / "full", "size=64k")
    assert result.returncode == FileSystemError.exit_code, result.stderr
    line = one_error_line(result)
    assert "No space left on device" in line and "nothing was written to" in line, line
    assert result.stdout.strip() == ""  # what was left on the tmpfs: nothing at all


# -- saved outputs --------------------------------------------------------------------


@pytest.mark.toolchain
def test_save_under_proc_fails_before_the_run(host_build: Path) -> None:
    result = aot("run", str(host_build), "-i", str(INPUT), "--save", "/proc/aot-save")
    assert result.returncode == FileSystemError.exit_code
    line = one_error_line(result)
    assert line.startswith("error: cannot use the folder /proc/aot-save: ")
    assert line.endswith("choose another --save")
    assert result.stdout == ""  # refused before running


@pytest.mark.toolchain
def test_save_under_an_existing_file(host_build: Path, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("mine\n")
    target = tmp_path / "afile" / "results"
    result = aot("run", str(host_build), "-i", str(INPUT), "--save", str(target))
    assert result.returncode == FileSystemError.exit_code
    assert one_error_line(result) == (
        f"error: cannot save to {target}: {tmp_path / 'afile'} is a file, not a folder; "
        "choose another --save"
    )


@pytest.mark.toolchain
def test_save_writes_whole_files_with_the_usual_permissions(host_build, tmp_path) -> None:
    result = aot("run", str(host_build), "-i", str(INPUT), "--save", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["output_0.npy"]
    saved = tmp_path / "r" / "output_0.npy"
    assert np.load(saved).shape == (1, 4)
    umask = os.umask(0)
    os.umask(umask)
    assert saved.stat().st_mode & 0o777 == 0o666 & ~umask


# -- inputs and models that cannot be read ---------------------------------------------


@pytest.mark.toolchain
def test_npy_header_claiming_1e11_elements(host_build: Path, tmp_path: Path) -> None:
    header = "{'descr': '|i1', 'fortran_order': False, 'shape': (100000000000,), }"
    header += " " * (63 - len(header) % 64) + "\n"
    huge = tmp_path / "huge.npy"
    huge.write_bytes(
        b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 16
    )
    result = aot("run", str(host_build), "-i", str(huge))
    assert result.returncode == ConfigError.exit_code
    assert one_error_line(result) == (
        f"error: input {huge} is a truncated .npy file: its header claims a int8 array of "
        "shape (100000000000,) (100000000000 bytes) but it holds 16 bytes of data; write it "
        "with numpy.save(path, array)"
    )


def sparse_file(path: Path, size: int, head: bytes = b"") -> Path:
    with path.open("wb") as f:
        f.write(head)
        f.truncate(size)
    return path


@pytest.mark.unit
@pytest.mark.parametrize(
    ("name", "head", "expected"),
    [
        ("zeros.tflite", b"", "is not a TFLite model (no 'TFL3' file identifier)"),
        ("bad_root.tflite", b"xxxxTFL3", "the model table lies outside the file"),
        ("zeros.onnx", b"", "its first byte 0x00 starts no field of an ONNX ModelProto"),
    ],
)
def test_a_huge_file_that_cannot_be_a_model_is_refused_at_once(
    tmp_path: Path, name: str, head: bytes, expected: str
) -> None:
    path = sparse_file(tmp_path / name, 1900 * 2**20, head)  # 1.9 GB, no disk used
    started = time.monotonic()
    result = aot("build", str(path), "--board", "host", "-o", str(tmp_path / "out"), "-q")
    assert result.returncode == 3  # ModelError
    assert expected in one_error_line(result)
    # Reading 1.9 GB takes many seconds; the check reads a few bytes (the rest is start-up).
    assert time.monotonic() - started < 60
    assert not (tmp_path / "out").exists()


@pytest.mark.unit
def test_a_file_beyond_the_format_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    path = sparse_file(tmp_path / "big.tflite", 2**31)
    result = aot("build", str(path), "--board", "host", "-o", str(tmp_path / "out"), "-q")
    assert result.returncode == UnsupportedError.exit_code
    assert one_error_line(result) == (
        f"error: {path} is {2**31} bytes; a TFLite model file aot reads is at most "
        "2147483647 bytes (2 GiB, the format's limit), and no microcontroller holds such a model"
    )


@pytest.mark.unit
def test_a_huge_model_under_a_memory_limit(tmp_path: Path) -> None:
    # A header that passes the cheap checks (root table and vtable in place), then 1.5 GB:
    # reading it under a 1.5 GB address-space limit runs out of memory.
    head = struct.pack("<I", 12) + b"TFL3" + struct.pack("<HHi", 4, 8, 4)
    path = sparse_file(tmp_path / "big.tflite", 1500 * 2**20, head)
    result = aot(
        "build", str(path), "--board", "host", "-o", str(tmp_path / "out"), "-q",
        prefix="ulimit -v 1500000; ",
    )  # fmt: skip
    assert result.returncode == ResourceError.exit_code, result.stderr
    assert one_error_line(result) == (
        f"error: out of memory reading the model {path} ({1500 * 2**20} bytes): it is far "
        "larger than a model for a microcontroller, or this process's memory limit "
        "(ulimit -v) is too low"
    )


# -- what a killed build leaves --------------------------------------------------------


@pytest.mark.toolchain
def test_a_build_killed_by_sigkill_is_cleaned_up_by_the_next(tmp_path: Path) -> None:
    output = tmp_path / "out"
    command = [sys.executable, "-m", "aot", "build", str(MODEL), "--board", "host"]
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    build = subprocess.Popen(
        [*command, "-o", str(output), "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".out.staging-*")) and time.monotonic() < deadline:
        if build.poll() is not None:
            pytest.fail("the build finished before it could be killed")
        time.sleep(0.02)
    build.send_signal(signal.SIGKILL)
    build.wait()
    left = list(tmp_path.glob(".out.staging-*"))
    assert len(left) == 1 and f".staging-{build.pid}-" in left[0].name
    assert not output.exists()
    result = aot("build", str(MODEL), "--board", "host", "-o", str(output), "-q")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.unit
def test_only_staging_folders_of_dead_processes_are_removed(tmp_path: Path) -> None:
    output = tmp_path / "out"
    dead = subprocess.Popen(["true"])
    dead.wait()
    of_the_dead = tmp_path / f".out.staging-{dead.pid}-abc"
    (of_the_dead / "model").mkdir(parents=True)
    of_the_living = tmp_path / f".out.staging-{os.getppid()}-def"
    of_the_living.mkdir()
    older_empty = tmp_path / ".out.staging-x1y2"
    older_empty.mkdir()
    older_full = tmp_path / ".out.staging-z3w4"
    (older_full / "kept.txt").parent.mkdir()
    (older_full / "kept.txt").write_text("?")
    other_output = tmp_path / f".other.staging-{dead.pid}-ghi"
    other_output.mkdir()
    removed = remove_stale_staging(output)
    assert sorted(removed) == sorted([of_the_dead, older_empty])
    assert of_the_living.exists() and older_full.exists() and other_output.exists()
