"""The board's memory order and the capacity check of aot/planning/memory_map.py.

The metadata here is what ``aot build`` writes (constants, pools with the bytes the plan
used, inputs and outputs, operators with their targets), reduced to the fields the map
reads; tests/example_npu/test_shared_region.py runs the same check on real builds."""

from __future__ import annotations

import pytest

from aot.artifacts import LibraryManifest
from aot.boards import load_board
from aot.errors import ConfigError, PlanningError
from aot.planning.memory_map import BoardMemories, MemoryMap, Placed, constants_section_bytes

pytestmark = pytest.mark.unit

AN547 = BoardMemories.of(load_board("mps3_an547"))
K = 1024


def metadata(
    constants: int,
    pools: dict[str, int],
    memory: str | None = None,
    *,
    targets: tuple[str, ...] = ("cpu",),
    allow_copies: bool = False,
) -> LibraryManifest:
    return LibraryManifest.from_json(
        {
            "model": {"name": "m"},
            "constants": {"bytes": constants, "section_bytes": constants, "memory": memory},
            "memory": {
                "pools": [
                    {"name": n, "size_limit": None, "used_bytes": b} for n, b in pools.items()
                ],
                "io_in_pool": False,
                "allow_copies": allow_copies,
            },
            "inputs": [
                {"name": "x", "shape": [1, 96, 96, 3], "dtype": "int8", "size_bytes": 27648}
            ],
            "outputs": [{"name": "y", "shape": [1, 1000], "dtype": "int8", "size_bytes": 1000}],
            "operators": [
                {"index": i, "name": f"op_{i}", "target": t} for i, t in enumerate(targets)
            ],
        }
    )


def test_section_bytes_align_every_array() -> None:
    assert constants_section_bytes([(3, 16), (5, 16), (16, 4), (1, 64)]) == 65
    assert constants_section_bytes([]) == 0


def test_memories_in_board_order_by_what_they_may_hold() -> None:
    memory_map = MemoryMap(AN547)
    assert [m.name for m in memory_map.holding("constants")] == ["itcm", "sram", "qspi", "ddr"]
    assert [m.name for m in memory_map.holding("workspace")] == ["dtcm", "sram", "isram", "ddr"]
    assert [m.name for m in memory_map.holding("code")] == ["itcm", "sram"]


def test_constants_go_to_the_first_memory_where_they_fit() -> None:
    memory_map = MemoryMap(AN547)
    assert memory_map.place_constants(metadata(100 * K, {"dtcm": 64 * K}, "itcm"), None) == "itcm"
    # MobileNetV2 0.35's 1.7 MB: past the 512 KiB ITCM, into the 2 MiB SRAM.
    big = metadata(1_782_864, {"dtcm": 138_240}, "itcm")
    assert memory_map.place_constants(big, None) == "sram"
    # A pool in the SRAM leaves them too little room there: the QSPI flash is next.
    shared = metadata(1_782_864, {"dtcm": 64 * K, "sram": 512 * K}, "itcm")
    assert memory_map.place_constants(shared, None) == "qspi"
    # --constants-memory is kept, even where they do not fit (the check then says so).
    assert memory_map.place_constants(big, "itcm") == "itcm"
    with pytest.raises(ConfigError, match=r"^memory 'dtcm' of board 'mps3_an547' may not hold"):
        memory_map.place_constants(big, "dtcm")


def test_an_accelerator_keeps_the_constants_where_it_reaches() -> None:
    """The example NPU reaches the SRAM only: the constants may move only among memories
    the same targets reach, so the plan made for them stays valid."""
    memory_map = MemoryMap(AN547, {"example_npu": ("sram",)})
    assert [m.name for m in memory_map.constants_choices("sram")] == ["sram"]
    assert [m.name for m in memory_map.constants_choices("itcm")] == ["itcm", "qspi", "ddr"]


def test_placed_lists_every_section_aot_puts_in_a_memory() -> None:
    placed = MemoryMap(AN547).placed(metadata(1000, {"dtcm": 2000, "sram": 3000}, "sram"))
    assert placed["sram"] == [Placed("constants", 1000), Placed("pool 'sram'", 3000)]
    assert placed["dtcm"] == [Placed("pool 'dtcm'", 2000), Placed("inputs and outputs", 28656)]
    assert placed["itcm"] == placed["qspi"] == []


def test_capacity_error_names_memory_contents_and_the_option() -> None:
    with pytest.raises(PlanningError) as info:
        MemoryMap(AN547).check_capacity(metadata(1_782_864, {"dtcm": 138_240}, "itcm"))
    assert str(info.value) == (
        "memory 'itcm' of board 'mps3_an547' (524288 bytes) cannot hold what the plan puts "
        "in it: constants 1782864 B, 1258576 bytes over; move the constants with "
        "--constants-memory sram"
    )


def test_capacity_error_for_constants_beside_an_npu_pool() -> None:
    """Constants and the NPU's pool in one 32 KiB PSRAM: moving the constants needs copies
    for the NPU, which does not reach the other memories; a smaller pool needs them too."""
    board = load_board("mps2_an386")
    psram = next(m for m in board.memories if m.name == "psram")
    from dataclasses import replace

    small = replace(board, memories=tuple(
        replace(m, size=32 * K) if m is psram else m for m in board.memories
    ))  # fmt: skip
    memory_map = MemoryMap(BoardMemories.of(small), {"example_npu": ("psram",)})
    built = metadata(26672, {"ssram23": 9000, "psram": 24496}, "psram",
                     targets=("example_npu", "cpu"))  # fmt: skip
    with pytest.raises(PlanningError) as info:
        memory_map.check_capacity(built)
    assert str(info.value) == (
        "memory 'psram' of board 'mps2_an386' (32768 bytes) cannot hold what the plan puts "
        "in it: constants 26672 B + pool 'psram' 24496 B = 51168 B, 18400 bytes over; move "
        "the constants with --constants-memory ssram1 --allow-copies (example_npu cannot "
        "reach it); or give pool 'psram' at most 5K (--pool psram:5K with the other pools, "
        "and --allow-copies)"
    )


def test_a_plan_that_fits_passes() -> None:
    MemoryMap(AN547).check_capacity(metadata(1_782_864, {"dtcm": 138_240}, "sram"))


def test_link_overflow_names_what_moves_and_never_pools_that_are_elsewhere() -> None:
    message = MemoryMap(AN547).link_overflow_message(
        "itcm", 7624, metadata(500 * K, {"dtcm": 64 * K}, "itcm")
    )
    assert message == (
        "the firmware does not fit memory 'itcm' of board 'mps3_an547' (524288 bytes): 7624 "
        "bytes over at link time; it holds the code, constants 512000 B; move the constants "
        "with --constants-memory sram"
    )
    assert "--pool" not in message
    # Nothing of aot's there to move: no option is offered that could not help.
    code_only = MemoryMap(AN547).link_overflow_message(
        "itcm", 100, metadata(500 * K, {"dtcm": 64 * K}, "sram")
    )
    assert code_only.endswith(
        "100 bytes over at link time; it holds the code; use a smaller model or a board with "
        "more memory"
    )


AN386 = load_board("mps2_an386")
HOST = load_board("host")


def test_the_map_of_a_board_build_checks_and_fills_in_the_pools() -> None:
    """What reaches what, from the board alone: the default pool, then the pool aot adds
    for an accelerator that reaches none, the constants where every target reaches them."""
    from aot.planning.model import PoolSpec

    plain = MemoryMap.for_build(AN386, [])
    assert plain.pools == (PoolSpec("ssram23", 4 * K * K, ("cpu",)),)
    assert (plain.constants_memory, plain.constants_targets) == ("ssram1", ("cpu",))
    assert plain.io_targets == ("cpu",) and plain.constants_requested is None

    npu = MemoryMap.for_build(AN386, ["example_npu"])
    assert [(p.name, p.targets) for p in npu.pools] == [
        ("ssram23", ("cpu",)),
        ("psram", ("cpu", "example_npu")),
    ]
    assert npu.constants_memory == npu.constants_requested == "psram"
    assert npu.constants_targets == ("cpu", "example_npu") and npu.io_targets == ("cpu",)

    # The user's pools are kept (an unbounded one gets its memory's size), with the
    # accelerators that reach them.
    given = MemoryMap.for_build(AN386, ["example_npu"], [PoolSpec("psram", None)])
    assert given.pools == (PoolSpec("psram", 16 * K * K, ("cpu", "example_npu")),)
    assert given.constants_memory == "ssram1" and given.constants_requested is None


def test_the_host_has_no_memory_map() -> None:
    from aot.planning.model import PoolSpec

    host = MemoryMap.for_build(HOST, [], [PoolSpec("fast", 16 * K, ("cpu", "npu"))])
    assert not host.mapped and host.pools == (PoolSpec("fast", 16 * K, ("cpu", "npu")),)
    assert host.constants_targets is None and host.io_targets is None
    assert host.constants_placement(metadata(0, {})) is None
    with pytest.raises(ConfigError, match=r"^--constants-memory needs a board with a memory map"):
        MemoryMap.for_build(HOST, [], None, "sram").constants_placement(metadata(0, {}))


def test_the_map_refuses_pools_and_accelerators_the_board_has_not() -> None:
    from aot.planning.model import PoolSpec

    with pytest.raises(ConfigError, match=r"^pool 'psrm' is not a memory of board 'mps2_an386'; "
                       r"did you mean 'psram'"):  # fmt: skip
        MemoryMap.for_build(AN386, [], [PoolSpec("psrm", None)])
    with pytest.raises(ConfigError, match=r"^memory 'ssram1' of board 'mps2_an386' may not hold"):
        MemoryMap.for_build(AN386, [], [PoolSpec("ssram1", None)])
    with pytest.raises(PlanningError, match=r"^pool 'blockram' .* 16384 bytes over"):
        MemoryMap.for_build(AN386, [], [PoolSpec("blockram", 32 * K)])
    with pytest.raises(ConfigError, match=r"^'cpu' is not an --accelerator"):
        MemoryMap.for_build(AN386, ["cpu"])
    with pytest.raises(ConfigError, match=r"^board host has no accelerator 'example_npu'"):
        MemoryMap.for_build(HOST, ["example_npu"])
