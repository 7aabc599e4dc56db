"""The TFLite Micro peer of the benchmarks (benchmarks/tflm_peer.py, benchmarks/tflm/).

The unit tests read TFLM's headers and the models but build nothing. The ``tflm`` tier
links the runner against TFLM's library for mps2_an386 (built once into the cache, about
6 minutes on 2 cores when it is not there yet; left out of scripts/test.sh unless asked
for: ``bash scripts/test.sh -m tflm``) and runs it under QEMU next to aot's firmware.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from aot.testing.shared import mlperf_tiny, shared_path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_qemu  # noqa: E402
import tflm_peer  # noqa: E402


def shared_library(kernels: str = "cmsis_nn") -> tflm_peer.Library:
    """A Library over the shared tree's headers (no archive: nothing is linked)."""
    tree = shared_path("tflm", "tflite-micro")
    return tflm_peer.Library(Path("unused.a"), tree, "cortex-m4+fp", kernels, ())


@pytest.mark.unit
def test_every_builtin_of_the_reference_models_has_its_resolver_method() -> None:
    methods = tflm_peer.resolver_methods(shared_library())
    assert methods["CONV_2D"] == "AddConv2D"
    assert methods["DEPTHWISE_CONV_2D"] == "AddDepthwiseConv2D"
    assert methods["UNIDIRECTIONAL_SEQUENCE_LSTM"] == "AddUnidirectionalSequenceLSTM"
    assert "CUSTOM" not in methods
    for name in ("ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"):
        for op in tflm_peer.model_operators(mlperf_tiny(name).read_bytes()):
            assert op in methods, (name, op)


@pytest.mark.unit
def test_model_data_registers_exactly_the_models_operators(tmp_path: Path) -> None:
    model = mlperf_tiny("kws_ref_model").read_bytes()
    x = np.load(mlperf_tiny("kws_ref_model", ".input.npy"))
    tflm_peer.write_model_data(tmp_path, shared_library(), model, [x])
    tflm_peer.write_arena(tmp_path, 4096)
    source = (tmp_path / "model_data.cc").read_text()
    assert "MicroMutableOpResolver<6>" in source
    assert source.count("resolver.Add") == 6
    assert f"const size_t aot_tflm_input_bytes[] = {{{x.nbytes}}};" in source
    assert "aot_tflm_arena[4096]" in (tmp_path / "arena.cc").read_text()
    before = (tmp_path / "model_data.cc").stat().st_mtime_ns
    tflm_peer.write_model_data(tmp_path, shared_library(), model, [x])
    assert (tmp_path / "model_data.cc").stat().st_mtime_ns == before  # make rebuilds nothing


@pytest.mark.unit
def test_a_changed_flag_or_compiler_is_another_cache_folder(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("AOT_TFLM_CACHE", str(tmp_path))
    gcc = Path("/usr/bin/arm-none-eabi-gcc")
    reference = tflm_peer.make_args("cortex-m4+fp", "reference", gcc)
    cmsis = tflm_peer.make_args("cortex-m4+fp", "cmsis_nn", gcc)
    assert "OPTIMIZED_KERNEL_DIR=cmsis_nn" in cmsis
    assert not any(a.startswith("OPTIMIZED_KERNEL_DIR") for a in reference)
    one = tflm_peer.library_folder("cortex-m4+fp", "cmsis_nn", cmsis, "gcc 12")
    assert one.parent == tmp_path
    assert one.name.startswith(f"{tflm_peer.TFLM_COMMIT}-cortex-m4+fp-cmsis_nn-")
    assert tflm_peer.library_folder("cortex-m4+fp", "cmsis_nn", cmsis, "gcc 13") != one
    assert tflm_peer.library_folder("cortex-m4+fp", "cmsis_nn", (*cmsis, "X=1"), "gcc 12") != one


@pytest.mark.unit
def test_the_target_arch_of_every_emulated_core_matches_its_float_abi() -> None:
    from aot.boards import load_all_boards

    for board in load_all_boards():
        if not board.emulated:
            continue
        arch = tflm_peer.tflm_arch(board.core)
        hard = "-mfloat-abi=hard" in board.gcc_flags()
        # TFLM's cortex_m_generic: "+fp" and cortex-m55 are hard float, the others soft.
        assert hard == (arch.endswith("+fp") or arch == "cortex-m55"), board.name
        if not board.features.dsp:
            assert "nodsp" in arch or board.core == "cortex-m3", board.name


@pytest.mark.unit
def test_the_runner_lines_are_read_and_a_failure_is_named() -> None:
    lines = [
        "tflm ready",
        "tflm arena_bytes 4640 arena_used 4620 arena_given 1048576",
        "tflm ticks_per_second 25000000",
        "tflm ticks 14500",
        "tflm ticks 14500",
        "tflm output 0 80ff7f",
        "tflm done",
    ]
    result = tflm_peer.parse_lines("mps2_an386", lines)
    assert result.ticks == (14500, 14500)
    assert (result.arena_bytes, result.arena_used) == (4640, 4620)
    assert result.outputs == (bytes([0x80, 0xFF, 0x7F]),)
    with pytest.raises(RuntimeError, match="allocate"):
        tflm_peer.parse_lines("mps2_an386", ["tflm ready", "tflm error allocate 1", "tflm done"])
    with pytest.raises(RuntimeError, match="failed"):
        tflm_peer.parse_lines("mps2_an386", ["tflm ready"])


@pytest.mark.unit
def test_outputs_are_compared_as_the_models_values() -> None:
    ours = [np.array([[-128, 0, 127]], dtype=np.int8)]
    assert bench_qemu.compare(ours, [bytes([0x80, 0x00, 0x7F])]) == 0
    assert bench_qemu.compare(ours, [bytes([0x81, 0x00, 0x7F])]) == 1
    assert bench_qemu.compare(ours, [bytes(2)]) is None


@pytest.mark.tflm
@pytest.mark.toolchain
@pytest.mark.emulator
def test_tflm_on_the_m4_gives_its_own_outputs_next_to_aots(tmp_path: Path) -> None:
    """kws: TFLM + CMSIS-NN on mps2_an386 gives aot's outputs bit for bit. ad01: TFLM
    rounds FULLY_CONNECTED twice, LiteRT (aot's reference) once; on the board TFLM gives
    what TFLM's host interpreter gives, and differs from aot exactly where the two
    reference interpreters differ (docs/int8.md)."""
    from aot.boards import load_board

    board = load_board("mps2_an386")
    for name in ("kws_ref_model", "ad01_int8"):
        x = np.load(mlperf_tiny(name, ".input.npy"))
        aot, _, outputs = bench_qemu.aot_run(mlperf_tiny(name), board.name, tmp_path / name, "auto")
        assert aot["bit_exact"]  # aot == LiteRT's reference kernels
        peer = tflm_peer.measure(mlperf_tiny(name), board, "cmsis_nn", [x], tmp_path / "tflm")
        assert peer.instructions > 0
        assert peer.arena_bytes >= peer.arena_used_bytes > aot["workspace_bytes"]
        (ours,) = outputs
        theirs = np.frombuffer(peer.outputs[0], dtype=np.int8).reshape(ours.shape)
        host_tflm = np.load(mlperf_tiny(name, ".output_tflm.npy"), allow_pickle=True)
        np.testing.assert_array_equal(theirs, host_tflm.astype(np.int8))
        if name == "kws_ref_model":
            np.testing.assert_array_equal(theirs, ours)
        else:
            litert = np.load(mlperf_tiny(name, ".output.npy"))
            assert not np.array_equal(theirs, ours)
            np.testing.assert_array_equal(theirs != ours, host_tflm.astype(np.int8) != litert)
            assert bench_qemu.compare(outputs, peer.outputs) == 1
