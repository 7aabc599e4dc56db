"""The int8 ONNX converter fixtures (tests/fixtures/converters/onnx, made by
scripts/make_onnx_models.py: PyTorch models quantized by onnxruntime's quantize_static)
against the pinned onnxruntime: on the host and on mps2_an386, bit for bit. Plus the Add
forms that quantizer writes, over every pair of 8-bit values."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from tests.onnx_int8.helpers import (
    assert_same,
    compile_vm,
    make_model,
    ort_session,
    run_vm,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "converters" / "onnx"
MODELS = json.loads((FIXTURES / "models.json").read_text())["models"]
BY_NAME = {m["name"]: m for m in MODELS}

# Every CNN and MLP in both formats, per tensor and per channel, runs on the board; the
# MLP is the one whose Linear layers export as MatMul + Add (bias DequantizeLinear in
# QDQ, QLinearAdd with a constant input in QOperator).
BOARD_MODELS = [
    f"{stem}_{fmt}_int8_{scheme}"
    for stem in ("cnn", "mlp_tokens")
    for fmt in ("qdq", "qop")
    for scheme in ("per_tensor", "per_channel")
]


def _pinned_onnxruntime() -> dict[str, str]:
    """extra -> the onnxruntime version pyproject.toml pins in it."""
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pins = {}
    for extra in ("validate", "dev"):
        found = [r for r in extras[extra] if re.match(r"onnxruntime\b", r)]
        assert len(found) == 1 and "==" in found[0], (
            f"the '{extra}' extra must pin onnxruntime with ==: {found}"
        )
        pins[extra] = found[0].split("==", 1)[1].strip()
    return pins


def _inputs(model: dict, count: int, seed: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    shape = model["input_shape"]
    # A wider spread than the calibration data, so the input QuantizeLinear saturates too.
    return [[rng.normal(0, 1.5, shape).astype(np.float32)] for _ in range(count)]


def _expected(path: Path, batches) -> list[list[np.ndarray]]:
    session = ort_session(path)
    return [session.run(None, {"x": b[0]}) for b in batches]


@pytest.mark.unit
def test_the_reference_is_the_pinned_onnxruntime() -> None:
    """The expected results are the pinned release's (docs/int8.md): another onnxruntime
    is not the defined reference (its integer results changed between releases)."""
    import onnxruntime

    pins = _pinned_onnxruntime()
    assert pins["validate"] == pins["dev"], pins
    assert onnxruntime.__version__ == pins["validate"], (
        f"onnxruntime {onnxruntime.__version__} is installed; the reference is "
        f"{pins['validate']} (pip install -e '.[dev]')"
    )
    made_with = {m["versions"]["onnxruntime"] for m in MODELS}
    assert made_with == {pins["validate"]}, made_with


@pytest.mark.unit
def test_the_fixtures_cover_every_family_format_and_scheme() -> None:
    combos = {(m["family"], m["format"], m["per_channel"]) for m in MODELS}
    assert combos == {
        (family, fmt, pc) for family in ("cnn", "mlp") for fmt in ("qdq", "qop")
        for pc in (False, True)
    }  # fmt: skip
    assert {m["activation"] for m in MODELS} == {"int8", "uint8"}
    for m in MODELS:
        assert (FIXTURES / f"{m['name']}.onnx").is_file(), m["name"]
    assert set(BOARD_MODELS) <= set(BY_NAME)


def _pair_grid(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    values = np.arange(256, dtype=np.uint8).view(dtype)
    a, b = np.meshgrid(values, values, indexing="ij")
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


# Scales where QLinearAdd on the int8 values, QLinearAdd on their uint8 form and the float
# Add do not all agree (found by search over all value pairs).
SA, SB, SY = np.float32(0.098170035), np.float32(0.096357435), np.float32(0.07385504)
ZA, ZB, ZY = -1, -9, 1


def _qdq_pair(name: str, scale: str, zp: str) -> list:
    return [
        helper.make_node("QuantizeLinear", [name, scale, zp], [f"{name}_q"]),
        helper.make_node("DequantizeLinear", [f"{name}_q", scale, zp], [f"{name}_dq"]),
    ]


@pytest.mark.unit
def test_an_int8_qdq_add_of_two_activations_is_onnxruntimes_uint8_qlinear_add(tmp_path) -> None:
    """quantize_static's int8 Add: every tensor a QuantizeLinear -> DequantizeLinear pair.
    onnxruntime's x86 optimizer makes the pairs uint8 and fuses a QLinearAdd on the
    uint8 values; aot computes that, on all 65536 input pairs."""
    zp = lambda v: np.array(v, np.int8)  # noqa: E731
    inits = {"sa": SA, "za": zp(ZA), "sb": SB, "zb": zp(ZB), "sy": SY, "zy": zp(ZY)}
    nodes = [
        *_qdq_pair("a", "sa", "za"), *_qdq_pair("b", "sb", "zb"),
        helper.make_node("Add", ["a_dq", "b_dq"], ["s"]), *_qdq_pair("s", "sy", "zy"),
    ]  # fmt: skip
    nodes[-1].output[0] = "y"
    shape = [256, 256]
    path = make_model(nodes, [("a", "float32", shape), ("b", "float32", shape)],
                      [("y", "float32", shape)], inits, tmp_path / "add.onnx")  # fmt: skip
    qa, qb = _pair_grid("int8")
    a = ((qa.astype(np.int32) - ZA).astype(np.float32) * SA).astype(np.float32)
    b = ((qb.astype(np.int32) - ZB).astype(np.float32) * SB).astype(np.float32)
    imported, vm = compile_vm(path)
    assert "qlinear_add" in str(imported.relax_module)
    expected = ort_session(path).run(None, {"a": a, "b": b})
    assert_same(run_vm(vm, [a, b]), expected, "int8 QDQ Add, all pairs")


@pytest.mark.unit
def test_an_int8_qdq_add_of_a_constant_is_onnxruntimes_float_add(tmp_path) -> None:
    """An int8 constant DequantizeLinear beside a pair onnxruntime makes uint8: the types
    differ, so onnxruntime adds in float32 (so does aot), on all 65536 value pairs; at
    these scales both QLinearAdd forms give 2 other results."""
    sa, sb, sy = np.float32(0.09231342), np.float32(0.083548404), np.float32(0.089124426)
    za, zb, zy = 6, -18, 6
    zp = lambda v: np.array(v, np.int8)  # noqa: E731
    constant = np.arange(256, dtype=np.uint8).view(np.int8).reshape(256, 1)
    inits = {"sa": sa, "za": zp(za), "c": constant, "sb": sb, "zb": zp(zb), "sy": sy,
             "zy": zp(zy)}  # fmt: skip
    nodes = [
        *_qdq_pair("a", "sa", "za"),
        helper.make_node("DequantizeLinear", ["c", "sb", "zb"], ["c_dq"]),
        helper.make_node("Add", ["a_dq", "c_dq"], ["s"]), *_qdq_pair("s", "sy", "zy"),
    ]  # fmt: skip
    nodes[-1].output[0] = "y"
    path = make_model(nodes, [("a", "float32", [1, 256])], [("y", "float32", [256, 256])],
                      inits, tmp_path / "add_const.onnx")  # fmt: skip
    qa = np.arange(256, dtype=np.uint8).view(np.int8).reshape(1, 256)
    a = ((qa.astype(np.int32) - za).astype(np.float32) * sa).astype(np.float32)
    imported, vm = compile_vm(path)
    assert "dequantized_add" in str(imported.relax_module)
    expected = ort_session(path).run(None, {"a": a})
    assert_same(run_vm(vm, [a]), expected, "int8 QDQ Add of a constant, all pairs")


@pytest.mark.unit
@pytest.mark.parametrize("second", ["pair", "constant"])
def test_an_int8_qdq_mul_follows_onnxruntimes_fusion(second: str, tmp_path) -> None:
    """Mul as Add: two pairs that onnxruntime makes uint8 fuse into QLinearMul on the
    uint8 values, a constant beside a pair stays float32; all 65536 value pairs, at
    scales where the int8 QLinearMul, the uint8 one and the float Mul all differ."""
    sa, sb, sy = np.float32(0.06980448), np.float32(0.07608575), np.float32(0.88689977)
    za, zb, zy = 5, -1, 16
    zp = lambda v: np.array(v, np.int8)  # noqa: E731
    values = np.arange(256, dtype=np.uint8).view(np.int8)
    inits = {"sa": sa, "za": zp(za), "sb": sb, "zb": zp(zb), "sy": sy, "zy": zp(zy)}
    nodes = _qdq_pair("a", "sa", "za")
    inputs = [("a", "float32", [1, 256])]
    if second == "pair":
        nodes += _qdq_pair("b", "sb", "zb")
        inputs.append(("b", "float32", [256, 1]))
    else:
        inits["b"] = values.reshape(256, 1)
        nodes.append(helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["b_dq"]))
    nodes += [helper.make_node("Mul", ["a_dq", "b_dq"], ["s"]), *_qdq_pair("s", "sy", "zy")]
    nodes[-1].output[0] = "y"
    path = make_model(nodes, inputs, [("y", "float32", [256, 256])], inits,
                      tmp_path / "mul.onnx")  # fmt: skip
    feeds = {"a": ((values.reshape(1, 256).astype(np.int32) - za) * sa).astype(np.float32)}
    if second == "pair":
        feeds["b"] = ((values.reshape(256, 1).astype(np.int32) - zb) * sb).astype(np.float32)
    imported, vm = compile_vm(path)
    kernel = "qlinear_mul" if second == "pair" else "dequantized_mul"
    assert kernel in str(imported.relax_module)
    expected = ort_session(path).run(None, feeds)
    assert_same(run_vm(vm, list(feeds.values())), expected, f"int8 QDQ Mul of a {second}")


def _matmul_add(path: Path, bias_dtype: str, dtype: str = "int8") -> Path:
    """x -> Q -> DQ -> MatMul (constant DQ weight) -> Q -> DQ -> Add (constant DQ bias)
    -> Q -> DQ: a Linear on a [1, tokens, features] input as quantize_static writes it,
    with the bias int8/uint8 (its own scale) or int32 (scale x_s * w_s)."""
    rng = np.random.default_rng(21)
    zp = lambda v: np.array(v, dtype)  # noqa: E731
    base = 0 if dtype == "int8" else 128
    weight = rng.integers(-60, 61, (16, 24)).astype(np.int8)
    if bias_dtype == "int32":
        bias, bias_scale, bias_zp = (rng.integers(-3000, 3000, 24).astype(np.int32),
                                     np.float32(0.04 * 0.011), np.array(0, np.int32))  # fmt: skip
    else:
        bias = rng.integers(0 if dtype == "uint8" else -128, 128, 24).astype(bias_dtype)
        bias_scale, bias_zp = np.float32(0.0083), np.array(base + 3, bias_dtype)
    inits = {
        "xs": np.float32(0.04), "xz": zp(base - 5), "w": weight, "ws": np.float32(0.011),
        "wz": np.array(0, np.int8), "ms": np.float32(0.057), "mz": zp(base + 7), "b": bias,
        "bs": bias_scale, "bz": bias_zp, "ys": np.float32(0.061), "yz": zp(base - 2),
    }  # fmt: skip
    nodes = [
        *_qdq_pair("x", "xs", "xz"),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["w_dq"]),
        helper.make_node("MatMul", ["x_dq", "w_dq"], ["m"]), *_qdq_pair("m", "ms", "mz"),
        helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["b_dq"]),
        helper.make_node("Add", ["b_dq", "m_dq"], ["s"]), *_qdq_pair("s", "ys", "yz"),
    ]  # fmt: skip
    nodes[-1].output[0] = "y"
    return make_model(nodes, [("x", "float32", [1, 64, 16])], [("y", "float32", [1, 64, 24])],
                      inits, path)  # fmt: skip


@pytest.mark.unit
@pytest.mark.parametrize(
    ("bias_dtype", "dtype"), [("int32", "int8"), ("int8", "int8"), ("uint8", "uint8")]
)
def test_matmul_add_with_a_dequantized_bias_matches_onnxruntime(bias_dtype, dtype, tmp_path):
    """The Add of a MatMul + Add whose bias is a DequantizeLinear of a constant: int32
    (onnxruntime runs it in float), int8 (the other input's pair becomes uint8 on x86,
    so the types differ: float) and uint8 (fused into QLinearAdd)."""
    path = _matmul_add(tmp_path / "mm.onnx", bias_dtype, dtype)
    imported, vm = compile_vm(path)
    assert list(imported.operators) == [
        "QuantizeLinear", "MatMul", "Add", "DequantizeLinear"
    ]  # fmt: skip
    kernel = "qlinear_add" if bias_dtype == "uint8" else "dequantized_add"
    assert kernel in str(imported.relax_module)
    session = ort_session(path)
    rng = np.random.default_rng(22)
    for k in range(20):
        x = rng.normal(0, 1.5, (1, 64, 16)).astype(np.float32)
        assert_same(run_vm(vm, [x]), session.run(None, {"x": x}), f"{bias_dtype} input {k}")


@pytest.mark.unit
def test_qlinear_add_and_mul_take_a_constant_input(tmp_path) -> None:
    """QOperator QLinearAdd/QLinearMul with an initializer as either input, broadcast."""
    rng = np.random.default_rng(23)
    q = {"s1": np.float32(0.05), "z1": np.array(3, np.int8), "s2": np.float32(0.031),
         "z2": np.array(-4, np.int8), "s3": np.float32(0.07), "z3": np.array(1, np.int8),
         "c": rng.integers(-128, 128, 32).astype(np.int8)}  # fmt: skip
    ms = "com.microsoft"
    nodes = [
        helper.make_node("QLinearAdd", ["c", "s2", "z2", "x", "s1", "z1", "s3", "z3"], ["a"],
                         domain=ms),
        helper.make_node("QLinearMul", ["a", "s3", "z3", "c", "s2", "z2", "s1", "z1"], ["y"],
                         domain=ms),
    ]  # fmt: skip
    path = make_model(nodes, [("x", "int8", [1, 8, 32])], [("y", "int8", [1, 8, 32])], q,
                      tmp_path / "qop.onnx")  # fmt: skip
    imported, vm = compile_vm(path)
    assert list(imported.operators) == ["QLinearAdd", "QLinearMul"]
    session = ort_session(path)
    for k in range(20):
        x = rng.integers(-128, 128, (1, 8, 32)).astype(np.int8)
        assert_same(run_vm(vm, [x]), session.run(None, {"x": x}), f"input {k}")


# -- the fixtures, as C ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def build_folder():
    with tempfile.TemporaryDirectory(prefix="onnx_fixtures_") as tmp:
        yield Path(tmp)


@pytest.mark.toolchain
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_fixture_on_the_host_matches_onnxruntime(name: str, build_folder: Path) -> None:
    from aot.testing.harness import build, run_many

    if shutil.which("gcc") is None:
        pytest.skip("gcc not found on PATH (bash scripts/setup.sh installs it)")
    path = FIXTURES / f"{name}.onnx"
    folder = build(path, build_folder / f"host-{name}", "host")
    batches = _inputs(BY_NAME[name], 30, seed=31)
    for k, (got, expected) in enumerate(zip(run_many(folder, batches), _expected(path, batches))):
        assert_same(got, expected, f"{name} host input {k}")


@pytest.mark.emulator
@pytest.mark.parametrize("name", BOARD_MODELS)
def test_fixture_on_mps2_an386_matches_onnxruntime(name: str, build_folder: Path) -> None:
    from aot.testing.harness import build, run_many

    for tool in ("arm-none-eabi-gcc", "make", "qemu-system-arm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found on PATH (bash scripts/setup.sh installs it)")
    path = FIXTURES / f"{name}.onnx"
    folder = build(path, build_folder / f"m4-{name}", "mps2_an386")
    batches = _inputs(BY_NAME[name], 20, seed=32)
    for k, (got, expected) in enumerate(zip(run_many(folder, batches), _expected(path, batches))):
        assert_same(got, expected, f"{name} mps2_an386 input {k}")
