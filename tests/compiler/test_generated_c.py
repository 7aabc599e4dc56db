"""The generated model library is plain, portable C: checked by compiling it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aot.testing.harness import build
from aot.testing.shared import mlperf_tiny, shared_dir

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
MLPERF = shared_dir() / "models" / "mlperf_tiny"
MODELS = {
    "tiny_kws_int8": ROOT / "examples" / "tiny_kws_int8.tflite",
    "tiny_kws_float": ROOT / "examples" / "tiny_kws_float.tflite",
    **{
        name: MLPERF / f"{name}.tflite"
        for name in ("ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8")
    },
}
MAX_KERNEL_FRAME_BYTES = 1024
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-Wvla", "-pedantic"]
CORTEX_M4 = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]


@pytest.fixture(scope="module", params=sorted(MODELS))
def library(request, tmp_path_factory) -> Path:
    model = MODELS[request.param]
    if not model.is_file():
        mlperf_tiny(request.param)  # missing shared data fails here, loudly
    out = tmp_path_factory.mktemp(request.param) / "out"
    build(model, out, "host", "--no-build", "--name", "net")
    return out / "model"


def compile_sources(compiler: str, flags: list[str], library: Path, tmp: Path) -> None:
    """Compile every library source into ``tmp``; stack usage lands next to the objects."""
    if shutil.which(compiler) is None:
        pytest.fail(f"{compiler} is missing: run 'bash scripts/setup.sh'")
    for source in sorted((library / "src").glob("*.c")):
        result = subprocess.run(
            [
                compiler,
                *STRICT,
                *flags,
                "-O2",
                "-fstack-usage",
                "-I",
                str(library / "include"),
                "-I",
                str(library / "src"),
                "-c",
                str(source),
                "-o",
                str(tmp / (source.stem + ".o")),
            ],
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr


def test_compiles_with_host_gcc(library: Path, tmp_path: Path) -> None:
    compile_sources("gcc", [], library, tmp_path)


def test_compiles_for_cortex_m4_hard_float(library: Path, tmp_path: Path) -> None:
    compile_sources("arm-none-eabi-gcc", CORTEX_M4, library, tmp_path)


def test_public_header_compiles_on_its_own(library: Path, tmp_path: Path) -> None:
    source = tmp_path / "use.c"
    source.write_text('#include "aot_net.h"\nint f(void) { return AOT_NET_WORKSPACE_SIZE > 0; }\n')
    result = subprocess.run(
        [
            "gcc",
            *STRICT,
            "-I",
            str(library / "include"),
            "-c",
            str(source),
            "-o",
            str(tmp_path / "use.o"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_no_runtime_dependencies(library: Path) -> None:
    text = "\n".join(p.read_text() for p in (library / "src").glob("*"))
    text += "\n".join(p.read_text() for p in (library / "include").glob("*.h"))
    includes = set(re.findall(r'#include [<"]([^>"]+)[>"]', text))
    assert includes <= {
        "math.h",
        "stdint.h",
        "stddef.h",
        "aot/error.h",
        "aot/model.h",
        "aot_net.h",
        "aot_net_internal.h",
    }, includes
    for forbidden in ("malloc", "calloc", "free(", "tvm", "TVM", "alloca"):
        assert forbidden not in text, forbidden


def test_constants_and_pools_are_in_named_sections(library: Path, tmp_path: Path) -> None:
    compile_sources("arm-none-eabi-gcc", CORTEX_M4, library, tmp_path)
    sections = subprocess.run(
        ["arm-none-eabi-objdump", "-h", *map(str, tmp_path.glob("*.o"))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".rodata.aot.net.constants" in sections
    assert ".bss.aot.net.workspace" in sections
    # Every global symbol the library defines is prefixed by the model name.
    symbols = subprocess.run(
        ["arm-none-eabi-nm", "-g", "--defined-only", *map(str, tmp_path.glob("*.o"))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = [line.split()[-1] for line in symbols.splitlines() if len(line.split()) == 3]
    assert names
    assert all(name.startswith("aot_net_") for name in names), names


def test_no_kernel_frame_reaches_1_kib_on_cortex_m4(library: Path, tmp_path: Path) -> None:
    """Kernel-internal buffers live in the planned pools, not on the stack."""
    compile_sources("arm-none-eabi-gcc", CORTEX_M4, library, tmp_path)
    frames = {}
    for usage in tmp_path.glob("*.su"):
        for line in usage.read_text().splitlines():
            location, size, kind = line.split("\t")
            frames[location.rsplit(":", 1)[-1]] = (int(size), kind)
    assert frames
    deepest = max(frames.items(), key=lambda item: item[1][0])
    assert deepest[1][0] < MAX_KERNEL_FRAME_BYTES, deepest
    assert all(kind.startswith("static") for _, kind in frames.values()), frames
