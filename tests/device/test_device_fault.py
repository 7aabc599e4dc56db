"""Feature FAULT: a failing RUN's reply ends with where the model stopped, and the host
says it in one line (docs/protocol.md, "Fault record"). The fake device and the C server
(fixtures/faulting_model.c) play a model with accelerator steps;
tests/example_npu/test_models.py runs the real firmware under QEMU."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from fake_device import FakeDevice, FakeModel, FakeTensor, FakeTransport

from aot.device import DeviceClient, spec
from aot.device import protocol as p
from aot.device.fault import FaultContext
from aot.errors import DeviceError, ProtocolError

OUT_OF_REGION = 0x0504
BAD_DESCRIPTOR = 0x0503
# Step 2, descriptor 1, its weights (operand 2) at 0x20001000, region [0x60000000, +1 MiB).
WEIGHTS_OUTSIDE = p.RunFault(2, 1, 2, 0x20001000, 0x60000000, 0x100000)
CONTEXT = FaultContext(
    steps=(
        ("CONV_2D #0", "example_npu"),
        ("AVERAGE_POOL_2D #1", "cpu"),
        ("CONV_2D #2", "example_npu"),
    ),
    memories=(("sram", 0x20000000, 0x40000), ("psram", 0x60000000, 0x100000)),
)


def _failing_model(status: int) -> FakeModel:
    def compute(inputs: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
        return status, []

    t = FakeTensor("x", 0, (1, 4))
    return FakeModel("m", [t], [FakeTensor("y", 0, (1, 4))], compute)


def _client(status: int, context: FaultContext | None = CONTEXT, **kwargs: object) -> DeviceClient:
    device = FakeDevice(_failing_model(status), **kwargs)
    client = DeviceClient(FakeTransport(device), timeout=0.1)
    client.fault_context = context
    return client


def _message(client: DeviceClient) -> str:
    with pytest.raises(DeviceError) as info:
        client.run([np.zeros((1, 4), np.int8)])
    return str(info.value)


@pytest.mark.unit
def test_record_fits_the_smallest_payload() -> None:
    assert p.RunFault.FORMAT.size == spec.RUN_FAULT_BYTES
    assert 2 + p.RunReply.FORMAT.size + spec.RUN_FAULT_BYTES <= 64  # AOT_APP_MAX_PAYLOAD >= 64


@pytest.mark.unit
def test_an_operand_outside_the_region_is_named_with_step_descriptor_and_region() -> None:
    client = _client(OUT_OF_REGION, fault=WEIGHTS_OUTSIDE)
    assert "FAULT" in client.hello().features
    assert _message(client) == (
        "model 'm' failed in run 1 of 1 at step 2 (CONV_2D #2) on example_npu: "
        "AOT_ERR_NPU_ADDRESS_OUT_OF_REGION: descriptor 1, operand 'weights' address "
        "0x20001000 is outside region 'psram' [0x60000000, 0x60100000)"
    )


@pytest.mark.unit
def test_an_operand_running_past_the_end_is_not_called_outside() -> None:
    fault = p.RunFault(0, 0, 4, 0x600FFFF0, 0x60000000, 0x100000)
    assert _message(_client(OUT_OF_REGION, fault=fault)) == (
        "model 'm' failed in run 1 of 1 at step 0 (CONV_2D #0) on example_npu: "
        "AOT_ERR_NPU_ADDRESS_OUT_OF_REGION: descriptor 0, operand 'output' address "
        "0x600ffff0 does not fit region 'psram' [0x60000000, 0x60100000) (it runs past its "
        "end or is misaligned)"
    )


@pytest.mark.unit
def test_without_the_build_the_step_and_region_are_numbers_only() -> None:
    assert _message(_client(OUT_OF_REGION, context=None, fault=WEIGHTS_OUTSIDE)) == (
        "model 'm' failed in run 1 of 1 at step 2: AOT_ERR_NPU_ADDRESS_OUT_OF_REGION: "
        "descriptor 1, operand 'weights' address 0x20001000 is outside the region "
        "[0x60000000, 0x60100000)"
    )


@pytest.mark.unit
def test_a_failure_that_is_not_an_address_names_step_and_descriptor() -> None:
    fault = p.RunFault(0, 3, 0, 0, 0x60000000, 0x100000)
    assert _message(_client(BAD_DESCRIPTOR, fault=fault)) == (
        "model 'm' failed in run 1 of 1 at step 0 (CONV_2D #0) on example_npu: "
        "AOT_ERR_NPU_BAD_DESCRIPTOR (0x0503): a descriptor's shapes or parameters are "
        "invalid: descriptor 3"
    )


@pytest.mark.unit
def test_a_failure_before_any_step_has_no_step() -> None:
    fault = p.RunFault(p.FAULT_NONE, p.FAULT_NONE, 0, 0, 0, 0)
    message = _message(_client(0x0101, fault=fault))
    assert message == (
        "model 'm' failed in run 1 of 1: AOT_ERR_MODEL_BAD_ARGUMENT (0x0101): NULL or "
        "misaligned input/output pointer"
    )


@pytest.mark.unit
def test_a_device_without_the_feature_sends_and_gets_todays_line() -> None:
    client = _client(OUT_OF_REGION)
    assert "FAULT" not in client.hello().features
    assert _message(client) == (
        "model 'm' on fake device failed in run 1 of 1: AOT_ERR_NPU_ADDRESS_OUT_OF_REGION "
        "(0x0504): an operand lies outside the NPU's memory"
    )


@pytest.mark.unit
def test_an_older_host_reads_the_fields_before_the_record() -> None:
    reply = p.RunReply(OUT_OF_REGION, 1, 10, 10, 10, 1000, WEIGHTS_OUTSIDE).pack()
    body = reply[2:]  # after the status
    old = p.RunReply.unpack(body)  # a host that does not know FAULT
    assert (old.model_status, old.runs, old.ticks_total, old.fault) == (OUT_OF_REGION, 1, 10, None)
    assert p.RunReply.unpack(body, faults=True).fault == WEIGHTS_OUTSIDE


@pytest.mark.unit
def test_a_fault_device_whose_failing_reply_lacks_the_record_is_refused() -> None:
    body = p.RunReply(OUT_OF_REGION, 1, 10, 10, 10, 1000).pack()[2:]
    with pytest.raises(ProtocolError, match="too short for its fault record: 28 bytes"):
        p.RunReply.unpack(body, faults=True)
    # A run that succeeded carries no record.
    assert (
        p.RunReply.unpack(p.RunReply(0, 1, 10, 10, 10, 1000).pack()[2:], faults=True).fault is None
    )


@pytest.mark.toolchain
def test_the_c_server_appends_the_record_of_a_failing_run(
    start: Callable[..., DeviceClient],
) -> None:
    client = start("faulting_model")
    client.fault_context = CONTEXT
    assert "FAULT" in client.hello().features
    ok = client.run([np.array([[1, 2, 3, 4]], np.int8)])
    np.testing.assert_array_equal(ok.outputs[0], [[1, 2, 3, 4]])
    with pytest.raises(DeviceError) as info:
        client.run([np.array([[-128, 0, 0, 0]], np.int8)], repeats=3)
    assert str(info.value) == (
        "model 'faulting' failed in run 1 of 3 at step 2 (CONV_2D #2) on example_npu: "
        "AOT_ERR_NPU_ADDRESS_OUT_OF_REGION: descriptor 1, operand 'weights' address "
        "0x123456789a is outside the region [0x60000000, 0x15fffffff)"
    )
    # What a host without the FAULT bit reads: the fields before the record, unchanged.
    body = client.request(p.Command.RUN, p.RUN_REQUEST.pack(1))
    assert len(body) == p.RunReply.FORMAT.size + spec.RUN_FAULT_BYTES
    old = p.RunReply.unpack(body)
    assert (old.model_status, old.runs, old.fault) == (OUT_OF_REGION, 1, None)
    assert p.RunReply.unpack(body, faults=True).fault == p.RunFault(
        2, 1, 2, 0x123456789A, 0x60000000, 0xFFFFFFFF
    )


@pytest.mark.toolchain
def test_the_c_server_without_a_record_sends_todays_reply(
    start: Callable[..., DeviceClient],
) -> None:
    client = start("add_one_model")
    assert "FAULT" not in client.hello().features
    client.set_input(0, bytes(4))
    body = client.request(p.Command.RUN, p.RUN_REQUEST.pack(1))
    assert len(body) == p.RunReply.FORMAT.size
