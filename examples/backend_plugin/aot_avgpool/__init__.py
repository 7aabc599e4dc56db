"""An aot backend in one class: int8 AVERAGE_POOL_2D without padding, run by avgpool.c."""

from pathlib import Path

from aot.backends import Artifact, Backend, EmittedCode, OperatorPattern, RuntimeFiles
from aot.operators import PoolParams, operator_params

HERE = Path(__file__).parent


def takes(op):
    # Batch 1, VALID padding: every window has all its taps, so the divisor is constant.
    p = operator_params(op, PoolParams)  # the typed parameters; None for another family
    return p is not None and op.output.shape[0] == 1 and p.padding == (0, 0)


class AvgPool(Backend):
    name = "avgpool"
    description = "example plug-in: int8 AVERAGE_POOL_2D (VALID) in its own C kernel"
    target_name = "cpu"  # the kernel runs on the CPU: no board needs to declare it
    merge_regions = False  # one step per operator

    def patterns(self):
        return [OperatorPattern("valid", ("average_pool2d_int8",), takes)]

    def lower(self, region, ctx=None):
        (op,) = region.operators
        _, height, width, channels = op.inputs[0].shape
        _, out_h, out_w, _ = op.output.shape
        p = op.params  # PoolParams: takes() said so
        dims = (height, width, channels, out_h, out_w, *p.filter_size, *p.strides)
        return Artifact(region.symbol, payload=(*dims, p.act_min, p.act_max))

    def emit(self, step, artifact, ctx):
        data, output = ctx.args  # the region's one parameter, then its one output
        args = ", ".join([data, output, *map(str, artifact.payload)])
        return EmittedCode(
            call=(f"if (avgpool_s8({args}) != 0) return {ctx.error_prefix}_KERNEL_FAILED;",),
            includes=('"avgpool.h"',),
        )

    def runtime(self):
        return RuntimeFiles(sources=(HERE / "avgpool.c",), headers=(HERE / "avgpool.h",))
