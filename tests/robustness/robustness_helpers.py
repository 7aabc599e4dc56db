"""Helpers of the robustness tests: the seed models, importing a mutant and judging
the outcome, and building + running a model under ASan/UBSan on the host."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from aot.testing.shared import mlperf_tiny, shared_path

REPO = Path(__file__).resolve().parents[2]
# Missing shared data fails (SharedDataMissing), never skips: see aot/testing/shared.py.
ROBUSTNESS = shared_path("robustness")
MODELS = {
    "ad01": mlperf_tiny("ad01_int8"),
    "kws": mlperf_tiny("kws_ref_model"),
    "tiny_kws": REPO / "examples" / "tiny_kws_int8.tflite",
}
SANITIZE = "-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"


def seed_models() -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in MODELS.items()}


def import_outcome(path: Path) -> str:
    """'imported', or the one-line message of the AotError that rejected the file.

    Any other exception propagates: that is the failure the fuzz tests look for.
    """
    from aot.errors import ModelError, UnsupportedError
    from aot.frontend import import_model

    try:
        import_model(path)
    except (ModelError, UnsupportedError) as err:
        message = str(err)
        assert "\n" not in message, message
        assert message.startswith(str(path)), message
        return message
    return "imported"


def sanitizers_work(tmp_path: Path) -> bool:
    gcc = shutil.which("cc") or shutil.which("gcc")
    if gcc is None:
        return False
    src = tmp_path / "probe.c"
    src.write_text("int main(void) { return 0; }\n")
    probe = subprocess.run([gcc, *SANITIZE.split(), str(src), "-o", str(tmp_path / "probe")])
    return probe.returncode == 0


def build_and_run_sanitized(model: Path, out: Path, runs: int = 3) -> None:
    """``aot build`` for the host with ASan/UBSan (the host Makefile takes CFLAGS from the
    environment), then run on seeded random inputs: a sanitizer report aborts the
    executable, and the run fails with a DeviceError."""
    import json
    import os

    from aot.testing.harness import build, random_inputs, run_many

    old = os.environ.get("CFLAGS")
    os.environ["CFLAGS"] = SANITIZE
    try:
        build(model, out, "host")
    finally:
        if old is None:
            del os.environ["CFLAGS"]
        else:
            os.environ["CFLAGS"] = old
    metadata = json.loads((out / "metadata.json").read_text())
    executable = out / metadata["build"]["executable"]
    symbols = subprocess.run(["nm", str(executable)], capture_output=True, text=True).stdout
    assert "__asan_init" in symbols and "__ubsan_handle" in symbols, "not a sanitized build"
    run_many(out, random_inputs(metadata["inputs"], runs, seed=9), timeout=120)
