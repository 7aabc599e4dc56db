"""The Ethos-U backend's hooks on real Vela output: what it takes, lower, emit, runtime."""

from __future__ import annotations

import numpy as np
import pytest
from ethos_u_helpers import mixed_model, npu_cpu_npu_model

from aot.backends import (
    EmitContext,
    LowerContext,
    OperatorInfo,
    Region,
    TensorInfo,
    backends,
    get_backend,
)
from aot.backends.ethos_u import EthosUBackend
from aot.backends.ethos_u.backend import INT8_KINDS, EthosUContext
from aot.boards import load_board
from aot.errors import ConfigError, ToolchainError, UnsupportedError
from aot.frontend.model import ImportedModel, SourceOperator
from aot.operators import GenericParams
from aot.testing.shared import shared_path

pytestmark = pytest.mark.unit

ACT = TensorInfo((1, 8, 8, 4), "int8")


def op(index: int, kind: str, tflite: str, output: str) -> OperatorInfo:
    return OperatorInfo(
        kind=kind,
        params=GenericParams(),
        inputs=(ACT,),
        output=ACT,
        source=SourceOperator(index, tflite, output),
    )


CONV1 = op(0, "conv2d_int8", "CONV_2D", "conv1")
L2 = op(1, "l2_normalization_int8", "L2_NORMALIZATION", "l2")
CONV2 = op(2, "conv2d_int8", "CONV_2D", "conv2")


@pytest.fixture(scope="module")
def backend() -> EthosUBackend:
    return get_backend("ethos-u55-128")


@pytest.fixture(scope="module")
def prepared(backend: EthosUBackend) -> EthosUContext:
    """What prepare() returns for the mixed model: the context the other hooks take."""
    return backend.prepare_tflite(mixed_model(), name="mixed")


def test_registered_by_name() -> None:
    assert backends.get("ethos-u55-128") is EthosUBackend
    assert get_backend("ethos-u55-256").name == "ethos-u55-256"


def test_takes_what_vela_puts_on_the_npu(backend: EthosUBackend, prepared: EthosUContext) -> None:
    (pattern,) = backend.patterns(prepared)
    assert set(pattern.kinds) == set(INT8_KINDS)
    assert pattern.check(CONV1) and pattern.check(CONV2)
    assert not pattern.check(L2)  # Vela leaves it to the CPU
    # An operator aot cannot tie to a source tensor is never claimed.
    assert not pattern.check(OperatorInfo("conv2d_int8", GenericParams(), (ACT,), ACT, None))


def test_lower_embeds_the_subgraph_vela_compiled(
    backend: EthosUBackend, prepared: EthosUContext
) -> None:
    weights = TensorInfo((4, 3, 3, 4), "int8", data=np.ones((4, 3, 3, 4), np.int8))
    region = Region("npu0", backend.name, (CONV2,), params=(ACT, weights), outputs=(ACT,))
    artifact = backend.lower(region, LowerContext(prepared))
    subgraph = prepared.vela.subgraphs[1]
    assert artifact.scratch_bytes == subgraph.scratch_bytes
    cms, ro = artifact.constants
    assert cms.data.tobytes() == subgraph.command_stream and cms.alignment == 16
    assert ro.data.tobytes() == subgraph.read_only
    # The model's weights are Vela's business: the step does not take them.
    assert artifact.unused_params == (1,) and artifact.payload.activations == (0,)
    # The feature maps (param 0, output 0 = operand 2) are the CPU glue's: it copies them
    # into the arena, which both touch. So the caller's input needs no NPU reach.
    assert artifact.cpu_operands == (0, 2) and artifact.cpu_scratch

    code = backend.emit(
        None,
        artifact,
        EmitContext(
            model="mixed",
            args=("t_l2", "t_out", "c_cms", "c_ro"),
            arg_types=("int8_t", "int8_t", "uint8_t", "uint8_t"),
            scratch="scratch0",
            error_prefix="AOT_ERR_MODEL",
        ),
    )
    (function,) = code.functions
    assert "aot_ethosu_invoke(command_stream, " in function
    assert f"memcpy(arena + {subgraph.inputs[0].offset}u, in0, 256u);" in function
    assert f"memcpy(out0, arena + {subgraph.outputs[0].offset}u, 256u);" in function
    call = "\n".join(code.call)
    assert (
        "aot_mixed_ethosu1(t_l2, t_out, (const uint8_t *)c_cms, (const uint8_t *)c_ro, "
        "(uint8_t *)scratch0)" in call
    )
    assert '"aot_ethos_u.h"' in code.includes


def test_regions_without_source_names_match_in_order() -> None:
    """The earlier artifacts in the context say which of Vela's subgraphs are taken: the
    backend keeps no state between lower() calls."""
    backend = EthosUBackend()
    prepared = backend.prepare_tflite(mixed_model(), name="mixed")
    anonymous = OperatorInfo("conv2d_int8", GenericParams(), (ACT,), ACT, None)
    first = Region("r0", backend.name, (anonymous,), params=(ACT,), outputs=(ACT,))
    second = Region("r1", backend.name, (anonymous,), params=(ACT,), outputs=(ACT,))
    one = backend.lower(first, LowerContext(prepared))
    assert one.payload.subgraph.index == 0
    assert backend.lower(second, LowerContext(prepared, (one,))).payload.subgraph.index == 1
    # The same call again gives the same answer: nothing was remembered.
    assert backend.lower(first, LowerContext(prepared)).payload.subgraph.index == 0
    odd = Region(
        "r2", backend.name, (anonymous,), params=(TensorInfo((1, 4), "int8"),), outputs=(ACT,)
    )
    with pytest.raises(UnsupportedError, match="is not one of the NPU subgraphs Vela made"):
        backend.lower(odd, LowerContext(prepared))
    with pytest.raises(Exception, match="used before prepare"):
        backend.lower(first)


def test_a_region_that_is_not_a_vela_subgraph(
    backend: EthosUBackend, prepared: EthosUContext
) -> None:
    region = Region("npu0", backend.name, (L2,), params=(ACT,), outputs=(ACT,))
    with pytest.raises(UnsupportedError, match="is not one NPU subgraph of Vela's"):
        backend.lower(region, LowerContext(prepared))


def test_only_tflite_models() -> None:
    model = ImportedModel(None, (), (), "m.onnx", "onnx", "relax-onnx")
    with pytest.raises(UnsupportedError, match="compiles TFLite int8 models through Vela"):
        EthosUBackend().prepare(model)


def test_runtime_files_come_from_the_board_and_the_driver(monkeypatch) -> None:
    board = load_board("mps3_an547")
    monkeypatch.setenv("ETHOSU_DRIVER_DIR", str(shared_path("ethos-u-core-driver")))
    monkeypatch.setenv("CMSIS_CORE_DIR", str(shared_path("cmsis-core")))
    files = EthosUBackend().runtime(EthosUContext(None, board=board))
    assert [p.name for p in files.sources] == ["ethos_u.c", "ethos_u_driver.c"]
    assert files.defines["AOT_ETHOSU_BASE"] == "0x58102000u"
    assert files.defines["AOT_ETHOSU_SECURE"] == "1"
    assert shared_path("ethos-u-core-driver").resolve() / "include" in files.include_dirs

    monkeypatch.delenv("CMSIS_CORE_DIR")
    with pytest.raises(ToolchainError, match=r"^CMSIS_CORE_DIR is not set"):
        EthosUBackend().runtime(EthosUContext(None, board=board))
    with pytest.raises(ConfigError, match="board mps2_an386 has no accelerator 'ethos-u55-128'"):
        EthosUBackend().runtime(EthosUContext(None, board=load_board("mps2_an386")))


def test_partitioned_regions_get_their_own_subgraph(tmp_path) -> None:
    """Through the real partition and lowering stages: each region embeds the command
    stream and weights Vela compiled for exactly its operators."""
    from aot.frontend import import_model
    from aot.lowering import lower
    from aot.partition import partition

    path = tmp_path / "m3.tflite"
    path.write_bytes(npu_cpu_npu_model())
    model = import_model(str(path))
    backend = EthosUBackend()
    prepared = backend.prepare(model)
    lowered = lower(partition(model, [backend], contexts={backend.name: prepared}), "m3")
    steps = [s for s in lowered.steps if s.backend == backend.name]
    assert [s.label for s in steps] == ["CONV_2D #0", "CONV_2D #2"]
    subgraphs = prepared.vela.subgraphs
    # Vela keeps one read-only tensor for the whole model; each command stream addresses
    # its own layer's weights in it, so the command streams tell the subgraphs apart.
    assert subgraphs[0].read_only == subgraphs[1].read_only
    assert subgraphs[0].command_stream != subgraphs[1].command_stream
    for step, subgraph in zip(steps, subgraphs, strict=True):
        artifact = lowered.artifact(step.kernel)
        assert artifact.payload.subgraph is subgraph
        assert artifact.constants[0].data.tobytes() == subgraph.command_stream
