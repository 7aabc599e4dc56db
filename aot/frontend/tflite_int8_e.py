"""More int8 operators of the TFLite importer (issue 13, group E): TRANSPOSE_CONV and
L2_NORMALIZATION.

Registered into ``tflite_int8``'s handler table when that module loads; the arithmetic of
each is written down in docs/int8.md ("Transposed convolution and normalization").
"""

from __future__ import annotations

from typing import Any

from aot.frontend.tflite_int8 import (
    _bias,
    _conv_requant,
    _handler,
    _Importer,
    _required_options,
    _TensorInfo,
)


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


@_handler("TRANSPOSE_CONV")
def _transpose_conv(imp: _Importer, bb: Any, op: Any, ins: list[int], out: _TensorInfo) -> Any:
    from aot.ops import int8_e

    if len(ins) < 3:
        raise imp.unsupported(f"expected 3 or 4 inputs, found {len(ins)}")
    w, x = imp.tensors[ins[1]], imp.tensors[ins[2]]
    imp.expect(x, ["int8"], "input")
    imp.expect(w, ["int8"], "weights")
    imp.expect(out, ["int8"], "output")
    imp.per_tensor(x, "input")
    imp.per_tensor(out, "output")
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
    act_min, act_max = imp.activation(opts, out)
    requant = _conv_requant(imp, x, w, out, out_c)
    bias = _bias(imp, [ins[2], ins[1], ins[3]] if len(ins) > 3 else [], out_c)
    return imp.emit(
        bb, int8_e.transpose_conv2d, imp.value(ins[2]), imp.value(ins[1]), bias,
        requant["multiplier"], requant["shift"], packed_shift_base=requant["packed_shift_base"],
        name="transpose_conv2d_int8", out_shape=out.shape, strides=strides, padding=padding,
        input_zp=x.zp, output_zp=out.zp, act_min=act_min, act_max=act_max,
    )  # fmt: skip
