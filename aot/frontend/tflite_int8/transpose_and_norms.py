"""More int8 operators of the TFLite importer (issue 13, group E): TRANSPOSE_CONV,
LOG_SOFTMAX and L2_NORMALIZATION, and the 16x8 CONV_2D and DEPTHWISE_CONV_2D.

Registered into ``tflite_int8``'s handler table when that module loads; the arithmetic of
each is written down in docs/int8.md ("Transposed convolution, LOG_SOFTMAX and
L2_NORMALIZATION").
"""

from __future__ import annotations

from typing import Any

from aot.frontend.tflite_int8 import int16 as tflite_int16
from aot.frontend.tflite_int8.importer import (
    _HANDLERS,
    _bias,
    _conv_requant,
    _handler,
    _Importer,
    _required_options,
    _TensorInfo,
)
from aot.ops import fixedpoint as fp


def transpose_conv_padding(
    out_hw: tuple[int, int], filt: tuple[int, int], strides: tuple[int, int], same: bool
) -> tuple[int, int]:
    """transpose_conv.cc's Prepare: ``ComputePaddingHeightWidth`` with the *output* size in
    the input's place (the forward convolution that this one transposes), dilation 1."""
    pads = []
    for size, f, s in zip(out_hw, filt, strides):
        conv_out = (size + s - 1) // s if same else (size - f + s) // s
        pads.append(max(((conv_out - 1) * s + f - size) // 2, 0))
    return pads[0], pads[1]


def _transpose_conv_geometry(
    imp: _Importer, op: Any, ins: list[int], x: _TensorInfo, w: _TensorInfo, out: _TensorInfo
) -> tuple[Any, tuple[int, int], tuple[int, int]]:
    """TRANSPOSE_CONV's options, strides and padding, once its output-shape operand and the
    input, weight and output shapes are checked to fit (int8 and 16x8 alike)."""
    shape = imp.constant(ins[0], "the output shape")
    if [int(d) for d in shape.reshape(-1)] != list(out.shape):
        raise imp.unsupported(
            f"output shape operand {shape.reshape(-1).tolist()} differs from the output "
            f"tensor's shape {list(out.shape)}"
        )
    opts = _required_options(imp, op, "TransposeConvOptions")
    if len(x.shape) != 4 or len(w.shape) != 4 or len(out.shape) != 4:
        raise imp.unsupported("expected 4-D NHWC input and output and OHWI weights")
    out_c, k_h, k_w, in_c = w.shape
    if x.shape[3] != in_c or out.shape[3] != out_c or x.shape[0] != out.shape[0]:
        raise imp.unsupported(
            f"input {list(x.shape)}, weights {list(w.shape)} and output {list(out.shape)} "
            "do not fit"
        )
    strides = (opts.StrideH(), opts.StrideW())
    padding = transpose_conv_padding(out.shape[1:3], (k_h, k_w), strides, opts.Padding() == 0)
    return opts, strides, padding


@_handler("TRANSPOSE_CONV")
def _transpose_conv(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import transpose_and_norms as tn

    if len(ins) < 3:
        raise imp.unsupported(f"expected 3 or 4 inputs, found {len(ins)}")
    w, x = imp.tensors[ins[1]], imp.tensors[ins[2]]
    imp.expect(x, ["int8"], "input")
    imp.expect(w, ["int8"], "weights")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    imp.per_tensor(out, "output")
    opts, strides, padding = _transpose_conv_geometry(imp, op, ins, x, w, out)
    out_c = w.shape[0]
    act_min, act_max = imp.activation(opts, out)
    requant = _conv_requant(imp, x, w, out, out_c)
    # TRANSPOSE_CONV's bias is its fourth input; ``_bias`` reads the third of CONV_2D's.
    bias = _bias(imp, [ins[2], ins[1], ins[3]] if len(ins) > 3 else [], out_c)
    return imp.emit(
        bb, tn.transpose_conv2d, imp.value(ins[2]), imp.value(ins[1]), bias,
        requant["multiplier"], requant["shift"], packed_shift_base=requant["packed_shift_base"],
        name="transpose_conv2d_int8", out_shape=out.shape, strides=strides, padding=padding,
        input_zp=x.zp, output_zp=out.zp, act_min=act_min, act_max=act_max,
    )  # fmt: skip


@_handler("LOG_SOFTMAX")
def _log_softmax(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import transpose_and_norms as tn

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    # LogSoftmaxPrepare's checks: the output covers [-16, 0] exactly.
    if out.zp != 127 or out.s != 16 / 256:
        raise imp.unsupported("the int8 output must have zero point 127 and scale 16/256")
    if out.shape != x.shape or not x.shape:
        raise imp.unsupported(f"input {list(x.shape)} and output {list(out.shape)} differ")
    # PreprocessLogSoftmaxScalingExp with beta 1 and 5 integer bits, as SOFTMAX's scaling.
    cap = (1 << 30) - 1.0 if fp.single_rounding() else (1 << 31) - 1.0
    mult, left_shift = fp.quantize_multiplier_greater_than_one(min(x.s * (1 << 26), cap))
    reverse = (1 << (31 - left_shift)) / mult
    reverse_mult, reverse_shift = fp.quantize_multiplier_smaller_than_one(reverse)
    diff_min = -fp.calculate_input_radius(5, left_shift)
    return imp.emit(
        bb, tn.log_softmax, imp.value(ins[0]), name="log_softmax_int8",
        input_multiplier=mult, input_shift=left_shift, reverse_multiplier=reverse_mult,
        reverse_shift=reverse_shift, diff_min=diff_min,
    )  # fmt: skip


@_handler("L2_NORMALIZATION")
def _l2_normalization(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.frontend.tflite_int8.importer import _ACTIVATIONS, _options
    from aot.ops import transpose_and_norms as tn

    x = imp.tensors[ins[0]]
    imp.expect(x, ["int8"], "input")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    # l2norm.cc's Prepare: output in [-1, 127/128], no fused activation.
    if out.zp != 0 or out.s != 1 / 128:
        raise imp.unsupported("the int8 output must have zero point 0 and scale 1/128")
    opts = _options(op, "L2NormOptions")
    if opts is not None and opts.FusedActivationFunction() != 0:
        name = _ACTIVATIONS.get(opts.FusedActivationFunction(), "?")
        raise imp.unsupported(f"fused activation {name} is not supported (TFLite takes NONE)")
    if out.shape != x.shape or not x.shape:
        raise imp.unsupported(f"input {list(x.shape)} and output {list(out.shape)} differ")
    # The int32 sum of squares, up to depth * 255^2, must not overflow (it would in TFLite).
    if x.shape[-1] * 255 * 255 >= 1 << 31:
        raise imp.unsupported(f"the last dimension {x.shape[-1]} is above 33025")
    return imp.emit(
        bb, tn.l2_normalization, imp.value(ins[0]), name="l2_normalization_int8",
        input_zp=x.zp,
    )  # fmt: skip


def _requant_16x8(
    imp: _Importer, x: _TensorInfo, w: _TensorInfo, out: _TensorInfo, out_c: int
) -> tuple[Any, Any]:
    """The per-channel int32 multipliers and shifts of a 16x8 (transposed) convolution, as
    PopulateConvolutionQuantizationParams computes them (the double product of the float32
    scales); the weights' zero points must be 0."""
    import numpy as np
    from tvm import relax

    if any(z != 0 for z in w.zero_point):
        raise imp.unsupported(f"weights {w.name!r} have a nonzero zero point")
    scales = w.scale if len(w.scale) > 1 else w.scale * out_c
    if len(scales) != out_c:
        raise imp.unsupported(f"weights {w.name!r} have {len(scales)} scales for {out_c} channels")
    pairs = [fp.checked_quantize_multiplier(x.s * s / out.s) for s in scales]
    multiplier = relax.const(np.asarray([m for m, _ in pairs], "int32"))
    shift = relax.const(np.asarray([s for _, s in pairs], "int32"))
    return multiplier, shift


def _conv_16x8(
    imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo, depthwise: bool
) -> Any:
    import numpy as np
    from tvm import relax

    from aot.frontend.tflite_int8.importer import _padding
    from aot.ops import transpose_and_norms as tn

    x, w = imp.tensors[ins[0]], imp.tensors[ins[1]]
    tflite_int16._symmetric(imp, x, "input")
    tflite_int16._symmetric(imp, out, "output")
    imp.expect(w, ["int8"], "weights")
    table = "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions"
    opts = _required_options(imp, op, table)
    if len(x.shape) != 4 or len(w.shape) != 4 or (depthwise and w.shape[0] != 1):
        raise imp.unsupported("expected 4-D NHWC input and OHWI ([1, H, W, C] depthwise) weights")
    out_c = w.shape[3] if depthwise else w.shape[0]
    k_h, k_w = w.shape[1], w.shape[2]
    if depthwise and out_c % x.shape[3]:
        raise imp.unsupported(f"{out_c} output channels for {x.shape[3]} input channels")
    if not depthwise and (x.shape[3] % w.shape[3] or out_c % (x.shape[3] // w.shape[3])):
        raise imp.unsupported(f"input channels {x.shape[3]} do not fit weights {list(w.shape)}")
    strides = (opts.StrideH(), opts.StrideW())
    dilation = (opts.DilationHFactor(), opts.DilationWFactor())
    padding = _padding(imp, opts, x.shape[1:3], (k_h, k_w), strides, dilation, out.shape[1:3])
    act_min, act_max = tflite_int16._int16_activation(imp, opts, out)
    multiplier, shift = _requant_16x8(imp, x, w, out, out_c)
    bias = None
    if len(ins) > 2 and ins[2] >= 0:
        b = imp.tensors[ins[2]]
        # LiteRT's depthwise refuses an int32 bias, and its CONV_2D reads one differently.
        if b.dtype != "int64":
            raise imp.unsupported(f"bias {b.name!r} is {b.dtype}; a 16x8 bias must be int64")
        data = imp.constant(ins[2], "the bias")
        if data.size != out_c:
            raise imp.unsupported(f"bias {b.name!r} has {data.size} values for {out_c} channels")
        bias = relax.const(np.ascontiguousarray(data.reshape(out_c)))
    depth_multiplier = out_c // x.shape[3] if depthwise else 1
    name = "depthwise_conv2d_int16" if depthwise else "conv2d_int16"
    return imp.emit(
        bb, tn.conv2d_16x8, imp.value(ins[0]), imp.value(ins[1]), bias, multiplier, shift,
        name=name, out_shape=out.shape, strides=strides, dilation=dilation, padding=padding,
        depthwise=depthwise, depth_multiplier=depth_multiplier, act_min=act_min,
        act_max=act_max,
    )  # fmt: skip


def _conv2d_16x8(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    return _conv_16x8(imp, bb, op, ins, out, depthwise=False)


def _depthwise_16x8(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    return _conv_16x8(imp, bb, op, ins, out, depthwise=True)


def _transpose_conv_16x8(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    import numpy as np
    from tvm import relax

    from aot.ops import transpose_and_norms as tn

    if len(ins) < 3:
        raise imp.unsupported(f"expected 3 or 4 inputs, found {len(ins)}")
    w, x = imp.tensors[ins[1]], imp.tensors[ins[2]]
    tflite_int16._symmetric(imp, x, "input")
    tflite_int16._symmetric(imp, out, "output")
    imp.expect(w, ["int8"], "weights")
    opts, strides, padding = _transpose_conv_geometry(imp, op, ins, x, w, out)
    out_c = w.shape[0]
    act_min, act_max = tflite_int16._int16_activation(imp, opts, out)
    # transpose_conv.cc's Prepare calls PopulateConvolutionQuantizationParams, as CONV_2D.
    multiplier, shift = _requant_16x8(imp, x, w, out, out_c)
    # LiteRT picks the kernel's accumulator by quantized_bias_type: int64 unless INT32.
    int32_bias = opts.QuantizedBiasType() == tflite_int16._TENSOR_TYPE_INT32
    bias = None
    if len(ins) > 3 and ins[3] >= 0:
        b = imp.tensors[ins[3]]
        expected = "int32" if int32_bias else "int64"
        if b.dtype != expected:
            raise imp.unsupported(
                f"bias {b.name!r} is {b.dtype}; with quantized_bias_type "
                f"{'INT32' if int32_bias else 'unset'} a 16x8 bias must be {expected}"
            )
        data = imp.constant(ins[3], "the bias")
        if data.size != out_c:
            raise imp.unsupported(f"bias {b.name!r} has {data.size} values for {out_c} channels")
        bias = relax.const(np.ascontiguousarray(data.reshape(out_c)))
    return imp.emit(
        bb, tn.transpose_conv2d_16x8, imp.value(ins[2]), imp.value(ins[1]), bias, multiplier,
        shift, name="transpose_conv2d_int16", out_shape=out.shape, strides=strides,
        padding=padding, accumulator="int32" if int32_bias else "int64", act_min=act_min,
        act_max=act_max,
    )  # fmt: skip


def _route_transpose_conv(
    imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo
) -> Any:
    # The data is TRANSPOSE_CONV's third input (the first is the output shape).
    if len(ins) > 2 and imp.tensors[ins[2]].dtype == "int16":
        return _transpose_conv_16x8(imp, bb, op, ins, out)
    return _transpose_conv(imp, bb, op, ins, out)


def _mul_16x8(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.frontend.tflite_int8.importer import _broadcast_shape, _options
    from aot.ops import transpose_and_norms as tn

    a, b = imp.tensors[ins[0]], imp.tensors[ins[1]]
    for t, role in ((a, "input 1"), (b, "input 2"), (out, "output")):
        tflite_int16._symmetric(imp, t, role)
    _broadcast_shape(imp, a.shape, b.shape, out.shape)
    act_min, act_max = tflite_int16._int16_activation(imp, _options(op, "MulOptions"), out)
    # mul.cc's Prepare, as for int8: the double product of the float scales.
    m, s = fp.checked_quantize_multiplier(a.s * b.s / out.s)
    return imp.emit(
        bb, tn.mul_16x8, imp.value(ins[0]), imp.value(ins[1]), name="mul_int16",
        out_shape=out.shape, output_multiplier=m, output_shift=s, act_min=act_min,
        act_max=act_max,
    )  # fmt: skip


# The 16x8 operators take an operator whose input is int16; the int8 handlers the rest.
tflite_int16._by_input_dtype("CONV_2D", _conv2d_16x8)
tflite_int16._by_input_dtype("DEPTHWISE_CONV_2D", _depthwise_16x8)
tflite_int16._by_input_dtype("MUL", _mul_16x8)
_HANDLERS["TRANSPOSE_CONV"] = _route_transpose_conv
