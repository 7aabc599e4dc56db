"""The partition stage: Relax pattern fusion over the int8 importer's typed operators."""

from __future__ import annotations

from pathlib import Path

import pytest

from aot.backends import Backend, OperatorPattern
from aot.frontend import import_model
from aot.operators import ConvParams
from aot.partition import partition, region_operators

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class Takes(Backend):
    """A backend for partition tests: takes the given kinds when ``check`` holds."""

    def __init__(self, name: str, kinds: tuple[str, ...], check=None) -> None:
        super().__init__()
        self.name = name  # type: ignore[misc]
        self._patterns = [OperatorPattern("ops", kinds, check)]

    def patterns(self):
        return self._patterns


@pytest.fixture(scope="module")
def tiny():
    return import_model(EXAMPLES / "tiny_kws_int8.tflite", "auto")


def test_operators_carry_kind_and_typed_quantization(tiny) -> None:
    func = tiny.relax_module["conv2d_int8"]
    assert str(func.attrs["aot.operator"]) == "conv2d_int8"
    seen = []
    backend = Takes("probe", ("conv2d_int8",), lambda op: seen.append(op) or False)
    assert partition(tiny, [backend]).regions == {}  # the check said no to each
    first = seen[0]
    assert isinstance(first.params, ConvParams)
    assert first.params.strides == (2, 2) and first.params.output_zp == -128
    assert first.params.operands == ("data", "weight", "bias", "multiplier")
    assert first.inputs[1].is_constant and first.inputs[1].dtype == "int8"
    assert first.output.shape == (1, 8, 8, 8)


def test_without_accelerators_the_module_is_untouched(tiny) -> None:
    partitioned = partition(tiny, [])
    assert partitioned.module.same_as(tiny.relax_module) and partitioned.regions == {}


def test_predicate_selects_by_parameters(tiny) -> None:
    backend = Takes("acc", ("conv2d_int8",), lambda op: op.params.strides == (1, 1))
    partitioned = partition(tiny, [backend])
    assert list(partitioned.regions.values()) == ["acc"]
    (region,) = partitioned.regions
    (op,) = region_operators(partitioned.module, partitioned.module[region], tiny.sources)
    assert op.source.label == "CONV_2D #2" and op.wiring[0] == ("param", 0)


def test_first_accelerator_wins(tiny) -> None:
    a = Takes("first", ("conv2d_int8",))
    b = Takes("second", ("conv2d_int8", "softmax_int8"))
    assert sorted(partition(tiny, [a, b]).regions.values()) == ["first", "first", "second"]
    assert sorted(partition(tiny, [b, a]).regions.values()) == ["second"] * 3


def test_neighbours_merge_into_one_region_with_wiring(tiny) -> None:
    backend = Takes("npu", ("depthwise_conv2d_int8", "conv2d_int8"))
    partitioned = partition(tiny, [backend])
    (region,) = partitioned.regions  # CONV #0, DW #1, CONV #2 run back to back
    ops = region_operators(partitioned.module, partitioned.module[region], tiny.sources)
    assert [op.source.label for op in ops] == ["CONV_2D #0", "DEPTHWISE_CONV_2D #1", "CONV_2D #2"]
    assert ops[1].wiring[0] == ("op", 0) and ops[2].wiring[0] == ("op", 1)
    assert all(kind == "param" for kind, _ in ops[0].wiring)


def test_float_models_have_nothing_to_match() -> None:
    imported = import_model(EXAMPLES / "tiny_kws_float.tflite", "auto")
    backend = Takes("acc", ("conv2d_int8",))
    assert partition(imported, [backend]).regions == {}


@pytest.mark.parametrize("model", ["kws_ref_model", "vww_96_int8"])
def test_region_operators_name_each_source_operator_once_in_order(model: str) -> None:
    """MergeCompositeFunctions calls one Composite function for every use of a shared
    PrimFunc, so the spans alone would name its first operator for all of them
    ("CONV_2D #2 + DEPTHWISE_CONV_2D #1 + CONV_2D #2 ..."). Each region's operators name
    their own source operators, and with the CPU's steps every one appears exactly once."""
    from aot.backends import get_backend
    from aot.lowering import lower
    from aot.testing.shared import mlperf_tiny

    imported = import_model(mlperf_tiny(model), "auto")
    parted = partition(imported, [get_backend("example_npu")])
    region = next(iter(parted.regions))  # the convolutions; the fully connected layer next
    ops = region_operators(parted.module, parted.module[region], imported.sources)
    indices = [op.source.index for op in ops]
    assert indices == sorted(set(indices)) == list(range(len(ops)))
    assert [op.source.type for op in ops[:3]] == ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D"]
    steps = lower(parted, "m").steps
    labels = [op.label for step in steps for op in step.source]
    assert labels == [op.label for op in imported.sources if op.type != "RESHAPE"]
    assert steps[0].label == " + ".join(op.label for op in imported.sources[: len(ops)])
    # metadata.json's operators (what aot inspect and memory.svg show): that label, and
    # where the step runs.
    from aot.artifacts.assemble import operator_entries
    from aot.planning.schedule import schedule

    entry = operator_entries(schedule(lower(parted, "m")))[0]
    assert entry.label == steps[0].label
    assert (entry.backend, entry.target) == ("example_npu", "example_npu")
    assert [s.index for s in entry.source_operators] == indices


def test_a_region_function_shared_by_several_calls_is_copied_per_call() -> None:
    """kws's four 1x1 convolutions, one region each, are structurally equal: partitioning
    binds one function for all four. Each call gets its own, naming its own operator."""
    from aot.testing.shared import mlperf_tiny

    imported = import_model(mlperf_tiny("kws_ref_model"), "auto")
    one_by_one = Takes("npu", ("conv2d_int8",), lambda op: op.inputs[1].shape[1:3] == (1, 1))
    parted = partition(imported, [one_by_one])
    assert len(parted.regions) == 4 and set(parted.regions.values()) == {"npu"}
    labels = [
        [op.source.label for op in region_operators(parted.module, parted.module[name],
                                                    imported.sources)]
        for name in parted.regions
    ]  # fmt: skip
    assert labels == [["CONV_2D #2"], ["CONV_2D #4"], ["CONV_2D #6"], ["CONV_2D #8"]]


@pytest.mark.slow  # lowers the whole model: about 17 s
def test_a_cpu_operator_between_regions_names_its_own_source_operator() -> None:
    """pretrainedResnet_quant's first ADD, between the example NPU's first two regions,
    reads two of the first region's outputs: the CPU's FuseOps groups it with those tuple
    reads into a new call without the importer's span, and after partitioning its Relax
    variable has the name CONV_2D #2's had, so it was labelled CONV_2D #2. Every step
    names its own source operators, each exactly once, in order."""
    from aot.backends import get_backend
    from aot.lowering import lower
    from aot.testing.shared import mlperf_tiny

    imported = import_model(mlperf_tiny("pretrainedResnet_quant"), "auto")
    parted = partition(imported, [get_backend("example_npu")])
    steps = lower(parted, "m").steps
    labels = [op.label for step in steps for op in step.source]
    assert labels == [op.label for op in imported.sources if op.type != "RESHAPE"]
    assert [s.label for s in steps if "add" in s.kernel.lower()][:1] == ["ADD #3"]
