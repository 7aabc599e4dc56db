"""Which clock a run was timed with (aot/timing.py), its resolution, and the profile
rows too short for it: marked 'coarse' instead of given a share."""

from __future__ import annotations

import pytest

from aot.bench import BenchReport, OperatorProfile, format_report
from aot.boards import load_board
from aot.timing import describe_clock, resolved, time_unit

pytestmark = pytest.mark.unit


def test_emulated_board_counts_instructions() -> None:
    clock = describe_clock(load_board("mps2_an385"), "cmsis", 25_000_000, 40)
    assert clock.name == "the FPGAIO counter under QEMU -icount"
    assert clock.resolution == "40 instructions"
    # A rate that is not the board counter's: QEMU's SysTick, not instructions.
    other = describe_clock(load_board("mps3_an547"), "cmsis", 25_000_000, 50)
    assert other.name.startswith("the system timer at 25000000 Hz under QEMU")


def test_hardware_dwt_or_the_system_timer() -> None:
    nrf = load_board("nrf5340dk_nrf5340_cpuapp")
    zephyr = "zephyr"
    dwt = describe_clock(nrf, zephyr, 128_000_000, 1)
    assert dwt.name == "the DWT cycle counter (128000000 Hz)" and dwt.resolution == "1 cycle"
    rtc = describe_clock(nrf, zephyr, 32_768, 1)
    assert rtc.name.startswith("the system timer at 32768 Hz") and rtc.resolution == "30.5 us"
    assert describe_clock(load_board("host"), "host", 1_000_000_000, 1).resolution == "1 ns"


def test_the_unit_follows_the_clock_the_firmware_announced() -> None:
    nrf = load_board("nrf5340dk_nrf5340_cpuapp")  # board data: the 32768 Hz RTC, "time"
    assert time_unit(nrf, 32_768) == "time"
    assert time_unit(nrf, 128_000_000) == "cycles"  # a running DWT at the CPU clock
    assert time_unit(nrf, 1_000_000) == "time"  # neither: the board data's unit stands
    nucleo = load_board("nucleo_f746zg")  # board data: cycles already
    assert time_unit(nucleo, 1_000_000) == nucleo.ticks.unit
    an385 = load_board("mps2_an385")  # under QEMU: the board data's unit, whatever the rate
    assert time_unit(an385, 25_000_000) == an385.ticks.unit == "instructions"
    assert time_unit(load_board("host"), 1_000_000_000) == "ns"


def test_an_operator_under_100_ticks_is_coarse() -> None:
    assert resolved(4000, 40) and not resolved(3999, 40)
    operators = [
        OperatorProfile(0, "conv", "CONV_2D #0", [], 1_000_000, 0.998, 0, True),
        OperatorProfile(1, "reshape", "RESHAPE #1", [], 2_000, 0.002, 0, False),
    ]
    report = BenchReport(
        model="m", board="mps2_an385", time_unit="instructions", units_per_tick=40,
        ticks_per_second=25_000_000, repeats=1, times=[1_002_000], profile=True,
        operators=operators, clock="the FPGAIO counter under QEMU -icount",
        clock_resolution="40 instructions",
    )  # fmt: skip
    lines = format_report(report)
    assert "clock: the FPGAIO counter under QEMU -icount, one tick 40 instructions" in lines[0]
    (conv,) = [line for line in lines if "CONV_2D #0" in line]
    (reshape,) = [line for line in lines if "RESHAPE #1" in line]
    assert "99.8%" in conv and "coarse" in reshape and "0.2%" not in reshape
    assert any("1 operator(s) marked 'coarse'" in line for line in lines)
