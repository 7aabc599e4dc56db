"""Random one-operator cases for the example NPU's device model, and a C program that runs them.

A case is a random TFLite model (``aot.testing.tflite_builder``) with its LiteRT
``BUILTIN_REF`` output on a random input, plus the NPU descriptor for the same operator
(quantization computed as TFLite's ``Prepare`` does, through ``aot.ops.fixedpoint``). The
C program copies every operand into one static region, configures the device with it,
submits one descriptor per case and prints the status and output bytes.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aot.backends.example_npu.descriptors import (
    Conv2D,
    Descriptor,
    FullyConnected,
    Operands,
    Requant,
    c_array,
    c_initializer,
    c_type,
)
from aot.ops import fixedpoint as fp
from aot.ops.int8 import pack_requant
from aot.testing.reference import run_tflite_reference
from aot.testing.tflite_builder import TFLiteModelBuilder

RUNTIME = Path(__file__).resolve().parents[2] / "aot" / "runtime_c"
DEVICE_SOURCE = RUNTIME / "npu" / "example_npu.c"
ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
OPERANDS = ("input", "weights", "bias", "output", "multiplier", "shift")


@dataclass
class Case:
    desc: Descriptor
    arrays: dict[str, np.ndarray]  # operand -> data (output: zeros of its size)
    expected: np.ndarray  # LiteRT's output, flat int8
    outside: frozenset[str] = field(default_factory=frozenset)  # operands put outside the region


def _zp(rng: np.random.Generator) -> int:
    return int(rng.choice([-128, 127, 0, int(rng.integers(-128, 128))]))


def _scale(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def _out_size(size: int, k: int, stride: int, dilation: int, same: bool) -> int:
    effective = (k - 1) * dilation + 1
    return (size + stride - 1) // stride if same else (size - effective + stride) // stride


def _pad(size: int, out: int, k: int, stride: int, dilation: int) -> int:
    return max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0) // 2


def _requant(
    real: list[float], out_scale: float, out_zp: int, act: str, rounding: str
) -> tuple[Requant, dict[str, np.ndarray]]:
    """The requantization in the importer's form (per tensor when the channels agree,
    packed when the shifts allow, else per channel) and its operand arrays."""
    with fp.rounding_mode(rounding):
        pairs = [fp.quantize_multiplier(r) for r in real]
    multipliers, shifts = [m for m, _ in pairs], [s for _, s in pairs]
    lo, hi = fp.activation_range(act, out_scale, out_zp)
    common = {"output_offset": out_zp, "act_min": lo, "act_max": hi, "rounding": rounding}
    if len(set(pairs)) == 1:
        return Requant("per_tensor", multiplier0=multipliers[0], shift0=shifts[0], **common), {}
    packed = pack_requant(multipliers, shifts)
    if packed is not None:
        return Requant("packed", shift0=min(shifts), **common), {"multiplier": packed}
    arrays = {
        "multiplier": np.asarray(multipliers, np.int32),
        "shift": np.asarray(shifts, np.int8),
    }
    return Requant("per_channel", **common), arrays


def _fold(bias: np.ndarray | None, weights: np.ndarray, zp: int, axes: tuple[int, ...]):
    """The bias with the input zero point folded in, as the importer may emit it."""
    base = np.zeros(weights.shape[0 if axes[0] else -1], np.int64) if bias is None else bias
    folded = base.astype(np.int64) - zp * weights.astype(np.int64).sum(axis=axes)
    return folded.astype(np.int32)


def conv_case(seed: int, depthwise: bool) -> Case:
    """A random CONV_2D or DEPTHWISE_CONV_2D: shapes, strides, dilation, SAME/VALID,
    per-tensor or per-channel weights, zero points at the extremes, all activations."""
    rng = np.random.default_rng(1000 * (2 if depthwise else 1) + seed)
    batches = 1 if seed % 3 else 2
    h, w = (int(v) for v in rng.integers(3, 10, 2))
    in_c = int(rng.integers(1, 6))
    mult = int(rng.integers(1, 3)) if depthwise else 1
    out_c = in_c * mult if depthwise else int(rng.integers(1, 7))
    k_h, k_w = (int(v) for v in rng.integers(1, 4, 2))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dilation = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) if seed % 2 else (1, 1)
    same = bool(seed % 4 < 2)
    out_h = _out_size(h, k_h, stride[0], dilation[0], same)
    out_w = _out_size(w, k_w, stride[1], dilation[1], same)
    if out_h < 1 or out_w < 1:
        same, out_h, out_w = True, -(-h // stride[0]), -(-w // stride[1])
    act = ACTIVATIONS[seed % 4]
    in_scale, in_zp = _scale(rng, 0.01, 0.2), _zp(rng)
    out_scale, out_zp = _scale(rng, 0.01, 0.5), _zp(rng)
    w_shape = (1, k_h, k_w, out_c) if depthwise else (out_c, k_h, k_w, in_c)
    weights = rng.integers(-127, 128, size=w_shape, dtype=np.int8)
    per_channel = seed % 3 != 1
    w_scales = [_scale(rng, 1e-3, 0.05) for _ in range(out_c if per_channel else 1)]
    channel_scales = w_scales if per_channel else w_scales * out_c
    bias = rng.integers(-20000, 20000, size=out_c, dtype=np.int32)

    b = TFLiteModelBuilder()
    x = b.add_input("x", (batches, h, w, in_c), "int8", scale=in_scale, zero_point=in_zp)
    wt = b.add_constant(
        "w", weights, scale=w_scales, zero_point=[0] * len(w_scales),
        quantized_dimension=3 if depthwise else 0,
    )  # fmt: skip
    bias_scales = [float(np.float32(in_scale) * np.float32(s)) for s in channel_scales]
    bt = b.add_constant("b", bias, scale=bias_scales, zero_point=[0] * out_c)
    y = b.add_tensor(
        "y", (batches, out_h, out_w, out_c), "int8", scale=out_scale, zero_point=out_zp
    )
    options = {
        "padding": "SAME" if same else "VALID",
        "stride_h": stride[0], "stride_w": stride[1],
        "dilation_h_factor": dilation[0], "dilation_w_factor": dilation[1],
        "fused_activation_function": act,
    }  # fmt: skip
    if depthwise:
        options["depth_multiplier"] = mult
    b.add_operator(
        "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", inputs=[x, wt, bt], outputs=[y],
        options=options,
    )  # fmt: skip
    b.mark_output(y)
    data = rng.integers(-128, 128, size=(batches, h, w, in_c), dtype=np.int8)
    expected = run_tflite_reference(b.build(), [data])[0]

    # TFLite's PopulateConvolutionQuantizationParams: the scale ratio in double.
    real = [in_scale * s / out_scale for s in channel_scales]
    requant, arrays = _requant(real, out_scale, out_zp, act, "double")
    folded = seed % 2 == 0  # both forms of the zero point: in the bias, or per tap
    if folded:
        bias = _fold(bias, weights, in_zp, (0, 1, 2) if depthwise else (1, 2, 3))
    desc = Conv2D(
        depthwise=depthwise, batches=batches, in_h=h, in_w=w, in_c=in_c,
        out_h=out_h, out_w=out_w, out_c=out_c, k_h=k_h, k_w=k_w, stride=stride,
        dilation=dilation,
        padding=(_pad(h, out_h, k_h, stride[0], dilation[0]) if same else 0,
                 _pad(w, out_w, k_w, stride[1], dilation[1]) if same else 0),
        depth_multiplier=mult, input_offset=0 if folded else -in_zp, pad_value=in_zp,
        requant=requant,
    )  # fmt: skip
    arrays.update(_arrays(desc, data, weights, bias))
    return Case(desc, arrays, expected.reshape(-1))


def fc_case(seed: int, batches: int | None = None) -> Case:
    """A random FULLY_CONNECTED: batches, per-tensor or per-channel weights, with and
    without bias, all activations (LiteRT's single rounding)."""
    rng = np.random.default_rng(3000 + seed)
    depth, out_c = int(rng.integers(1, 48)), int(rng.integers(1, 20))
    batches = batches or [1, 3, 1, 2][seed % 4]
    act = ACTIVATIONS[seed % 4]
    in_scale, in_zp = _scale(rng, 0.01, 0.2), _zp(rng)
    out_scale, out_zp = _scale(rng, 0.01, 0.5), _zp(rng)
    weights = rng.integers(-127, 128, size=(out_c, depth), dtype=np.int8)
    per_channel = seed % 4 == 3
    w_scales = [_scale(rng, 1e-3, 0.05) for _ in range(out_c if per_channel else 1)]
    with_bias = seed % 4 != 1
    bias = rng.integers(-9000, 9000, size=out_c, dtype=np.int32)

    b = TFLiteModelBuilder()
    x = b.add_input("x", (batches, depth), "int8", scale=in_scale, zero_point=in_zp)
    wt = b.add_constant("w", weights, scale=w_scales, zero_point=[0] * len(w_scales))
    inputs = [x, wt, -1]
    if with_bias:
        scales = [float(np.float32(in_scale) * np.float32(s)) for s in w_scales]
        inputs[2] = b.add_constant("b", bias, scale=scales, zero_point=[0] * len(scales))
    y = b.add_tensor("y", (batches, out_c), "int8", scale=out_scale, zero_point=out_zp)
    b.add_operator(
        "FULLY_CONNECTED", inputs=inputs, outputs=[y],
        options={"fused_activation_function": act},
    )  # fmt: skip
    b.mark_output(y)
    data = rng.integers(-128, 128, size=(batches, depth), dtype=np.int8)
    expected = run_tflite_reference(b.build(), [data])[0]

    if per_channel:
        real = [in_scale * s / out_scale for s in w_scales]
    else:  # GetQuantizedConvolutionMultipler: the scale product in float32
        real = [float(np.float32(in_scale) * np.float32(w_scales[0])) / out_scale] * out_c
    requant, arrays = _requant(real, out_scale, out_zp, act, "single")
    folded = seed % 3 == 0
    fc_bias = bias if with_bias else None
    if folded:
        fc_bias = _fold(fc_bias, weights, in_zp, (1,))
    desc = FullyConnected(
        batches=batches, depth=depth, out_c=out_c, input_offset=0 if folded else -in_zp,
        weight_offset=0, requant=requant,
    )  # fmt: skip
    arrays.update(_arrays(desc, data, weights, fc_bias))
    return Case(desc, arrays, expected.reshape(-1))


def _arrays(desc: Descriptor, data, weights, bias) -> dict[str, np.ndarray]:
    arrays = {
        "input": np.ascontiguousarray(data).reshape(-1),
        "weights": np.ascontiguousarray(weights).reshape(-1),
        "output": np.zeros(desc.output_bytes, np.int8),
    }
    if bias is not None:
        arrays["bias"] = np.asarray(bias, np.int32)
    return arrays


_CTYPES = {np.dtype(np.int8): "int8_t", np.dtype(np.int32): "int32_t"}


def program(cases: list[Case], *, region_slack: int = 0, preamble: str = "") -> str:
    """C source: every case's operands laid out in ``region`` (16-byte aligned each),
    operands named in ``case.outside`` in a separate array instead; prints one line per
    case: ``<status hex> <output bytes hex>``. One function per case keeps the compile
    under sanitizers fast."""
    head = [
        "#include <stdio.h>", "#include <stdint.h>", "#include <string.h>",
        '#include "example_npu.h"', "",
    ]  # fmt: skip
    arrays: list[str] = []
    functions: list[str] = []
    offset, outside_offset = 0, 0
    for i, case in enumerate(cases):
        exprs, copies = {}, []
        for name in OPERANDS:
            if name not in case.arrays:
                continue
            array = case.arrays[name]
            ctype = _CTYPES[array.dtype]
            symbol = f"case{i}_{name}"
            arrays.append(c_array(ctype, symbol, array))
            if name in case.outside:
                base, at = "outside", outside_offset
                outside_offset += -(-array.nbytes // 16) * 16
            else:
                base, at = "region", offset
                offset += -(-array.nbytes // 16) * 16
            target = f"({ctype}*)(void*)({base} + {at})"
            copies.append(f"  memcpy({target}, {symbol}, sizeof {symbol});")
            exprs[name] = target
        desc = case.desc
        initializer = c_initializer(desc, Operands(**exprs)).replace("\n", "\n  ")
        functions += [
            f"static void run_case{i}(void) {{",
            *copies,
            f"  struct {c_type(desc)} d = {initializer};",
            "  const struct aot_npu_desc_header* list[1] = {&d.header};",
            "  struct aot_npu_stream s = {AOT_NPU_STREAM_MAGIC, AOT_NPU_STREAM_VERSION, 1u, list};",
            "  aot_error_t err = aot_npu_submit(&s);",
            f"  const int8_t* y = {exprs['output']};",
            '  printf("%04x", (unsigned)err);',
            f"  for (size_t k = 0; k < {desc.output_bytes}u; ++k) "
            'printf(" %02x", (unsigned)(uint8_t)y[k]);',
            '  printf("\\n");',
            "}",
        ]
    region = [
        f"static uint8_t region[{offset + region_slack + 16}] __attribute__((aligned(16)));",
        f"static uint8_t outside[{outside_offset + 16}] __attribute__((aligned(16), unused));",
    ]
    main = [
        "int main(void) {",
        f"  aot_npu_configure((uintptr_t)region, {offset + region_slack}u);",
        *(f"  run_case{i}();" for i in range(len(cases))),
        "  return 0;",
        "}",
    ]
    return "\n".join([*head, *arrays, *region, preamble, *functions, *main]) + "\n"


def build_and_run(source: str, tmp: Path, flags: list[str], name: str = "npu") -> list[str]:
    """Compile ``source`` with the device model (C99, -Werror) and run it; stdout lines."""
    c_file = tmp / f"{name}.c"
    c_file.write_text(source)
    exe = tmp / name
    subprocess.run(
        ["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", *flags,
         f"-I{RUNTIME / 'include'}", f"-I{RUNTIME / 'npu'}", str(c_file), str(DEVICE_SOURCE),
         "-o", str(exe)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    run = subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=60)
    return run.stdout.splitlines()


def parse(line: str) -> tuple[int, np.ndarray]:
    status, *values = line.split()
    return int(status, 16), np.array([int(v, 16) for v in values], np.uint8).view(np.int8)
