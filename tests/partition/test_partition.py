"""The partition stage: Relax pattern fusion over the int8 importer's typed operators."""

from __future__ import annotations

from pathlib import Path

import pytest

from aot.backends import Backend, OperatorPattern
from aot.frontend import import_model
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
    assert first.params["strides"] == (2, 2) and first.params["output_zp"] == -128
    assert first.params["operands"] == ("data", "weight", "bias", "multiplier")
    assert first.inputs[1].is_constant and first.inputs[1].dtype == "int8"
    assert first.output.shape == (1, 8, 8, 8)


def test_without_accelerators_the_module_is_untouched(tiny) -> None:
    partitioned = partition(tiny, [])
    assert partitioned.module.same_as(tiny.relax_module) and partitioned.regions == {}


def test_predicate_selects_by_parameters(tiny) -> None:
    backend = Takes("acc", ("conv2d_int8",), lambda op: op.params["strides"] == (1, 1))
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
