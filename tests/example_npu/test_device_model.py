"""The example NPU's device model (aot/runtime_c/npu/example_npu.c), compiled with host gcc.

Random CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED descriptors must give LiteRT's
reference output bit for bit, natively and under AddressSanitizer + UBSan; an operand
outside the device's region must fail with AOT_ERR_NPU_ADDRESS_OUT_OF_REGION and write
nothing; malformed streams and descriptors fail with their own codes.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import numpy as np
import pytest

from aot.device.error_codes import ERROR_CODES
from aot.device.fault import OPERANDS as HOST_OPERANDS
from tests.example_npu.harness import (
    DEVICE_SOURCE,
    OPERANDS,
    RUNTIME,
    SANITIZE,
    Case,
    build_and_run,
    conv_case,
    fc_case,
    parse,
    program,
)

pytestmark = pytest.mark.toolchain

CODES = {v.name: k for k, v in ERROR_CODES.items()}
OK = CODES["AOT_OK"]
OUT_OF_REGION = CODES["AOT_ERR_NPU_ADDRESS_OUT_OF_REGION"]


@pytest.fixture(scope="module")
def random_cases() -> list[Case]:
    cases = [conv_case(seed, depthwise=False) for seed in range(12)]
    cases += [conv_case(seed, depthwise=True) for seed in range(12)]
    return cases + [fc_case(seed) for seed in range(12)]


@pytest.mark.parametrize("flags", [[], SANITIZE], ids=["native", "asan-ubsan"])
def test_random_descriptors_match_litert(
    random_cases: list[Case], flags: list[str], tmp_path: Path
) -> None:
    lines = build_and_run(program(random_cases), tmp_path, flags)
    assert len(lines) == len(random_cases)
    for index, (case, line) in enumerate(zip(random_cases, lines)):
        status, output = parse(line)
        assert status == OK, f"case {index} ({case.desc}): status {status:#06x}"
        np.testing.assert_array_equal(output, case.expected, err_msg=f"case {index}")


@pytest.mark.parametrize("operand", OPERANDS)
def test_operand_outside_region_fails_and_writes_nothing(operand: str, tmp_path: Path) -> None:
    pool = [conv_case(s, False) for s in range(4)] + [conv_case(s, True) for s in range(4)]
    pool += [fc_case(s) for s in range(4)]
    having = [c for c in pool if operand in c.arrays]
    assert having, f"no case has a {operand} operand"
    cases = [dataclasses.replace(c, outside=frozenset({operand})) for c in having]
    lines = build_and_run(program(cases), tmp_path, SANITIZE)
    assert len(lines) == len(cases)
    for line in lines:
        status, output = parse(line)
        assert status == OUT_OF_REGION, f"{operand}: status {status:#06x}"
        assert not output.any()  # the output buffer kept its zeros


def test_a_region_fault_names_the_operand_its_address_and_the_region(tmp_path: Path) -> None:
    """aot_npu_fault() (the RUN reply's fault record): per operand, one stream with only
    that operand outside; the code is the one the host names (aot.device.fault.OPERANDS)."""
    pool = [conv_case(s, False) for s in range(4)] + [conv_case(s, True) for s in range(4)]
    pool += [fc_case(s) for s in range(4)]
    cases = []
    for operand in OPERANDS:
        case = next(c for c in pool if operand in c.arrays)
        cases.append(dataclasses.replace(case, outside=frozenset({operand})))
    source = program(cases)
    marker = "aot_npu_configure((uintptr_t)region, "
    start = source.index(marker) + len(marker)
    region_size = int(source[start : source.index("u);", start)])
    report = (
        "  struct aot_fault f;\n  aot_npu_fault(&f);\n"
        '  printf(" fault %u %u %u %d %u", (unsigned)f.descriptor, (unsigned)f.operand, '
        "(unsigned)(f.address - (uint64_t)(uintptr_t)outside), "
        "f.region_base == (uint64_t)(uintptr_t)region, (unsigned)f.region_size);\n"
    )
    source = source.replace('  printf("\\n");\n', report + '  printf("\\n");\n')
    lines = build_and_run(source, tmp_path, SANITIZE)
    assert len(lines) == len(OPERANDS)
    offset = 0  # program() puts each case's outside operand after the previous one's
    for case, operand, line in zip(cases, OPERANDS, lines, strict=True):
        status, fault = line.split(" fault ")
        assert int(status.split()[0], 16) == OUT_OF_REGION
        descriptor, code, at, in_region, size = (int(v) for v in fault.split())
        assert HOST_OPERANDS[code] == operand
        assert (descriptor, at, in_region, size) == (0, offset, 1, region_size), operand
        offset += -(-case.arrays[operand].nbytes // 16) * 16


@pytest.mark.parametrize("short_by", [1, 0], ids=["one-byte-short", "exact"])
def test_region_end_is_checked_to_the_byte(short_by: int, tmp_path: Path) -> None:
    """The last operand in the region ends exactly at the region's end (runs) or one
    byte past it (fails)."""
    case = fc_case(0)
    last = [name for name in OPERANDS if name in case.arrays][-1]
    nbytes = case.arrays[last].nbytes
    source = program([case])
    marker = "aot_npu_configure((uintptr_t)region, "
    start = source.index(marker) + len(marker)
    end = source.index("u);", start)
    padded_size = int(source[start:end])  # each operand starts 16-byte aligned
    size = padded_size - (-(-nbytes // 16) * 16) + nbytes - short_by
    status, _ = parse(build_and_run(source[:start] + str(size) + source[end:], tmp_path, [])[0])
    assert status == (OUT_OF_REGION if short_by else OK)


BAD_STREAM = """
static aot_error_t submit_fc(uint32_t magic, uint32_t version, uint16_t size, uint16_t op) {
  static int8_t* base;
  base = (int8_t*)region;
  struct aot_npu_fully_connected d;
  memset(&d, 0, sizeof d);
  d.header.op = op;
  d.header.size = size;
  const struct aot_npu_desc_header* list[1] = {&d.header};
  struct aot_npu_stream s = {magic, version, 1u, list};
  (void)base;
  return aot_npu_submit(&s);
}
"""


def test_bad_streams_and_descriptors_have_their_own_codes(tmp_path: Path) -> None:
    case = fc_case(2)
    bad_shift = dataclasses.replace(
        case.desc, requant=dataclasses.replace(case.desc.requant, act_min=100, act_max=-100)
    )
    source = program([dataclasses.replace(case, desc=bad_shift)], preamble=BAD_STREAM)
    checks = """
  printf("%04x\\n", (unsigned)submit_fc(0x1234u, AOT_NPU_STREAM_VERSION,
         (uint16_t)sizeof(struct aot_npu_fully_connected), AOT_NPU_OP_FULLY_CONNECTED));
  printf("%04x\\n", (unsigned)submit_fc(AOT_NPU_STREAM_MAGIC, 2u,
         (uint16_t)sizeof(struct aot_npu_fully_connected), AOT_NPU_OP_FULLY_CONNECTED));
  printf("%04x\\n", (unsigned)submit_fc(AOT_NPU_STREAM_MAGIC, AOT_NPU_STREAM_VERSION,
         (uint16_t)sizeof(struct aot_npu_conv2d), AOT_NPU_OP_FULLY_CONNECTED));
  printf("%04x\\n", (unsigned)submit_fc(AOT_NPU_STREAM_MAGIC, AOT_NPU_STREAM_VERSION,
         (uint16_t)sizeof(struct aot_npu_fully_connected), 9u));
  printf("%04x\\n", (unsigned)aot_npu_submit(NULL));
  aot_npu_configure(0u, 0u);
  printf("%04x\\n", (unsigned)submit_fc(AOT_NPU_STREAM_MAGIC, AOT_NPU_STREAM_VERSION,
         (uint16_t)sizeof(struct aot_npu_fully_connected), AOT_NPU_OP_FULLY_CONNECTED));
  return 0;
"""
    source = source.replace("  return 0;\n}", checks + "}")
    lines = build_and_run(source, tmp_path, SANITIZE)
    assert parse(lines[0])[0] == CODES["AOT_ERR_NPU_BAD_DESCRIPTOR"]
    bad_stream = CODES["AOT_ERR_NPU_BAD_STREAM"]
    assert [int(x, 16) for x in lines[1:]] == [bad_stream] * 5 + [
        CODES["AOT_ERR_NPU_NOT_CONFIGURED"]
    ]


@pytest.mark.parametrize("cpu", ["cortex-m4", "cortex-m55"], ids=["mps2_an386", "mps3_an547"])
def test_device_model_cross_compiles(cpu: str, tmp_path: Path) -> None:
    """The firmware builds it with the region from board data as defines."""
    subprocess.run(
        ["arm-none-eabi-gcc", "-std=c99", "-Os", "-Wall", "-Wextra", "-Werror", "-mthumb",
         f"-mcpu={cpu}", f"-I{RUNTIME / 'include'}", f"-I{RUNTIME / 'npu'}",
         "-DAOT_ACCEL_EXAMPLE_NPU_MEMORY0_BASE=0x21000000u",
         "-DAOT_ACCEL_EXAMPLE_NPU_MEMORY0_SIZE=0x1000000u", "-c", str(DEVICE_SOURCE),
         "-o", str(tmp_path / "npu.o")],
        check=True, capture_output=True, text=True,
    )  # fmt: skip


def test_fully_connected_rounds_like_litert(tmp_path: Path) -> None:
    """LiteRT's FULLY_CONNECTED rounds once (docs/int8.md); double rounding differs from
    it only now and then, so these cases are many rows of random inputs."""
    cases = [fc_case(seed, batches=64) for seed in (0, 2, 3, 4, 6, 7)]
    for case, line in zip(cases, build_and_run(program(cases), tmp_path, [])):
        status, output = parse(line)
        assert status == OK
        np.testing.assert_array_equal(output, case.expected)
