"""Who reaches which pool on a board: the board's accelerators, used by aot build."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aot.boards import BOARDS_DIR
from aot.planning.model import PoolSpec
from aot.planning.pools_file import targets_reaching, with_reach

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tiny_kws_int8.tflite"


@pytest.mark.unit
def test_pools_gain_the_targets_that_reach_their_memory() -> None:
    pools = (PoolSpec("blockram", 16384), PoolSpec("psram", None, ("cpu", "dma")))
    reaches = {"npu": ("psram", "ssram1")}
    assert with_reach(pools, reaches) == (
        PoolSpec("blockram", 16384, ("cpu",)),
        PoolSpec("psram", None, ("cpu", "dma", "npu")),
    )
    assert targets_reaching("ssram1", reaches) == ("cpu", "npu")
    assert targets_reaching("ssram23", reaches) == ("cpu",)


def _board(tmp_path: Path, memories: list[str]) -> Path:
    """mps2_an386 with tinynpu declared, reaching ``memories`` (a copy; the shipped file
    is not touched)."""
    data = yaml.safe_load((BOARDS_DIR / "mps2_an386.yaml").read_text())
    data["accelerators"] = [{"name": "tinynpu", "memories": memories}]
    path = tmp_path / "mps2_an386.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _build(plugin_env, tmp_path: Path, board: Path, *extra: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "aot", "build", str(EXAMPLE), "-o", str(tmp_path / "out")]
    argv += ["--board", str(board), "--accelerator", "tinynpu", "--no-build", "-q", *extra]
    return subprocess.run(argv, capture_output=True, text=True, env=plugin_env, cwd=ROOT)


@pytest.mark.unit
def test_build_places_what_tinynpu_touches_where_it_reaches(plugin_env, tmp_path: Path) -> None:
    board = _board(tmp_path, ["psram", "ssram1"])
    pools = ["--pool", "blockram:16K", "--pool", "psram:1M"]
    done = _build(plugin_env, tmp_path, board, *pools)
    assert done.returncode == 0, done.stderr
    metadata = json.loads((tmp_path / "out" / "metadata.json").read_text())
    targets = {p["name"]: p["targets"] for p in metadata["memory"]["pools"]}
    assert targets == {"blockram": ["cpu"], "psram": ["cpu", "tinynpu"]}
    assert metadata["memory"]["constants_targets"] == ["cpu", "tinynpu"]  # ssram1
    on_npu = {op["index"] for op in metadata["operators"] if op["target"] == "tinynpu"}
    assert on_npu
    for buffer in metadata["memory"]["buffers"]:
        if any(u["step"] in on_npu for u in buffer["touched_by"]):
            assert buffer["pool"] == "psram" and "tinynpu" in buffer["targets"]


@pytest.mark.unit
def test_constants_out_of_the_accelerators_reach(plugin_env, tmp_path: Path) -> None:
    board = _board(tmp_path, ["psram"])  # not ssram1, where the constants go
    done = _build(plugin_env, tmp_path, board, "--pool", "psram:1M")
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: constant 'tensor_")
    assert "which cannot reach the constants memory 'ssram1' (cpu)" in line
    assert "--allow-copies" in line
    done = _build(plugin_env, tmp_path, board, "--pool", "psram:1M", "--allow-copies", "--force")
    assert done.returncode == 0, done.stderr
    memory = json.loads((tmp_path / "out" / "metadata.json").read_text())["memory"]
    assert memory["copies"] and all(c["dst"].endswith("__copy0") for c in memory["copies"])
    source = (tmp_path / "out" / "model" / "src").glob("*.c")
    assert any("aot_platform_copy(" in f.read_text() for f in source)


@pytest.mark.emulator
def test_copies_run_bit_exact_in_firmware_under_qemu(plugin_env, tmp_path: Path) -> None:
    """tinynpu's buffers in a pool the CPU may not use, its constants staged out of flash:
    the firmware's copy steps (the runtime's weak memcpy) keep the outputs exact."""
    import numpy as np

    board = _board(tmp_path, ["psram"])
    pools = ["--pool", "ssram23:256K", "--pool", "psram:1M:tinynpu", "--allow-copies"]
    argv = [sys.executable, "-m", "aot", "build", str(EXAMPLE), "-o", str(tmp_path / "out")]
    argv += ["--board", str(board), "--accelerator", "tinynpu", "-q", *pools]
    built = subprocess.run(argv, capture_output=True, text=True, env=plugin_env, cwd=ROOT)
    assert built.returncode == 0, built.stderr
    memory = json.loads((tmp_path / "out" / "metadata.json").read_text())["memory"]
    targets = {p["name"]: p["targets"] for p in memory["pools"]}
    assert targets == {"ssram23": ["cpu"], "psram": ["tinynpu"]}
    assert any(c["src"].startswith("tensor_") and "const" not in c["src"] for c in memory["copies"])
    assert any("const" in c["src"] for c in memory["copies"])  # staged out of ssram1
    argv = [sys.executable, "-m", "aot", "run", str(tmp_path / "out"), "-q"]
    argv += ["-i", str(EXAMPLE.with_suffix(".input.npy")), "--save", str(tmp_path / "res")]
    ran = subprocess.run(argv, capture_output=True, text=True, env=plugin_env, cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    got = np.load(tmp_path / "res" / "output_0.npy")
    expected = np.load(EXAMPLE.with_suffix(".output.npy"))
    np.testing.assert_array_equal(got, expected.reshape(got.shape))


def _one_conv(tmp_path: Path) -> Path:
    """A stride-1 convolution between the model's input and output: tinynpu reads the
    caller's input and writes the caller's output directly."""
    import numpy as np

    from aot.testing.tflite_builder import TFLiteModelBuilder

    b = TFLiteModelBuilder()
    x = b.add_input("x", (1, 6, 6, 2), "int8", scale=0.05, zero_point=3)
    w = b.add_constant("w", np.ones((3, 3, 3, 2), np.int8), scale=[0.01] * 3, zero_point=[0] * 3)
    bias = b.add_constant("b", np.zeros(3, np.int32), scale=[0.0005] * 3, zero_point=[0] * 3)
    y = b.add_tensor("y", (1, 6, 6, 3), "int8", scale=0.1, zero_point=-2)
    b.add_operator("CONV_2D", inputs=[x, w, bias], outputs=[y], options={"padding": "SAME"})
    b.mark_output(y)
    path = tmp_path / "one_conv.tflite"
    path.write_bytes(b.build())
    return path


def _build_model(plugin_env, tmp_path: Path, model: Path, board: Path, *extra: str):
    argv = [sys.executable, "-m", "aot", "build", str(model), "-o", str(tmp_path / "out")]
    argv += ["--board", str(board), "--accelerator", "tinynpu", "--no-build", "-q", *extra]
    return subprocess.run(argv, capture_output=True, text=True, env=plugin_env, cwd=ROOT)


@pytest.mark.unit
def test_caller_inputs_and_outputs_out_of_reach(plugin_env, tmp_path: Path) -> None:
    """The caller's tensors live in the board's data memory (ssram23), which tinynpu does
    not reach: a one-line error naming the input and the fixes; with --allow-copies a copy
    in before the convolution and one out after it; with --io-in-pool no copy."""
    model = _one_conv(tmp_path)
    board = _board(tmp_path, ["psram", "ssram1"])
    done = _build_model(plugin_env, tmp_path, model, board)
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: model input 'tensor_0_x' (72 bytes) (and 1 more)")
    assert "only cpu reaches, but read directly by 'step 0 (CONV_2D #0)' on tinynpu" in line
    assert "--io-in-pool" in line and "--allow-copies" in line

    done = _build_model(plugin_env, tmp_path, model, board, "--allow-copies")
    assert done.returncode == 0, done.stderr
    metadata = json.loads((tmp_path / "out" / "metadata.json").read_text())
    copies = [(c["src"], c["dst"], c["before_step"]) for c in metadata["memory"]["copies"]]
    assert copies == [
        ("tensor_0_x", "tensor_0_x__copy0", 0),
        ("tensor_3_y__copy0", "tensor_3_y", 1),  # after the last step
    ]
    staged = {b["buffer"]: b for b in metadata["memory"]["buffers"]}
    assert staged["tensor_3_y__copy0"]["copy_of"] == "tensor_3_y"
    assert {staged[n]["pool"] for n in ("tensor_0_x__copy0", "tensor_3_y__copy0")} == {"psram"}
    executor = (tmp_path / "out" / "model" / "src" / "aot_one_conv.c").read_text()
    assert re.search(
        r"aot_platform_copy\(aot_one_conv_pool_psram \+ \d+, inputs->x, 72u\);", executor
    )
    assert re.search(
        r"aot_platform_copy\(outputs->y, aot_one_conv_pool_psram \+ \d+, 108u\);", executor
    )

    done = _build_model(plugin_env, tmp_path, model, board, "--io-in-pool", "--force")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "metadata.json").read_text())["memory"]["copies"] == []


@pytest.mark.unit
def test_caller_memory_the_accelerator_reaches_needs_no_copy(plugin_env, tmp_path: Path) -> None:
    """A board whose accelerator reaches the data memory (ssram23) reaches the caller's
    tensors: they are read and written in place."""
    board = _board(tmp_path, ["ssram23", "ssram1"])
    done = _build_model(plugin_env, tmp_path, _one_conv(tmp_path), board)
    assert done.returncode == 0, done.stderr
    memory = json.loads((tmp_path / "out" / "metadata.json").read_text())["memory"]
    assert memory["io_targets"] == ["cpu", "tinynpu"] and memory["copies"] == []
