"""One small model that uses every group-D operator of issue 13 (comparisons, logical
operators, SELECT_V2, REDUCE_MIN and the copies), for the C pipeline on the host and on mps2_an386
(tests/int8/test_ops_d_pipeline.py, tests/emulator/test_ops_d_on_board.py)."""

from __future__ import annotations

import numpy as np

from aot.testing.tflite_builder import TFLiteModelBuilder

OPERATORS = (
    "EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL", "LOGICAL_AND",
    "LOGICAL_OR", "LOGICAL_NOT", "SELECT_V2", "REDUCE_MIN", "MIRROR_PAD", "SPACE_TO_BATCH_ND",
    "BATCH_TO_SPACE_ND", "REVERSE_V2", "GATHER_ND", "BROADCAST_TO",
)  # fmt: skip


def multi_operator_model() -> bytes:
    """Inputs: x int8 (1, 6, 6, 4), y int8 (1, 6, 6, 4) quantized unlike x (a scale below
    1/256, so neighbouring values compare equal) and ids int32 (8,); outputs: a selection
    between x and its REDUCE_MIN (1, 6, 6, 4), that minimum (1, 1, 1, 4), an int32
    selection (8,), and the selection moved by the copies: mirror-padded, to batches and
    back, reversed (1, 9, 9, 4), gathered (5, 4), and the minimum broadcast (2, 3, 1, 4).
    The bool tensors live only between operators."""
    b = TFLiteModelBuilder()
    qx = {"scale": 0.05, "zero_point": -3}
    qy = {"scale": 0.003, "zero_point": 10}
    shape = (1, 6, 6, 4)
    x = b.add_input("x", shape, "int8", **qx)
    y = b.add_input("y", shape, "int8", **qy)
    ids = b.add_input("ids", (8,), "int32")

    def flag(name: str, op: str, lhs: int, rhs: int, out_shape=shape) -> int:
        t = b.add_tensor(name, out_shape, "bool")
        b.add_operator(op, [lhs, rhs], [t])
        return t

    limit = b.add_constant("limit", np.array([[[[-40, 0, 12, 90]]]], dtype=np.int8), **qx)
    gt = flag("gt", "GREATER", x, y)
    le = flag("le", "LESS_EQUAL", x, limit)
    eq = flag("eq", "EQUAL", x, y)
    lt = flag("lt", "LESS", y, x)
    ne = flag("ne", "NOT_EQUAL", y, x)
    ge = flag("ge", "GREATER_EQUAL", x, limit)
    both = flag("both", "LOGICAL_AND", gt, le)
    either = flag("either", "LOGICAL_OR", eq, lt)
    neither = b.add_tensor("neither", shape, "bool")
    b.add_operator("LOGICAL_NOT", [either], [neither])
    mixed = flag("mixed", "LOGICAL_AND", ne, ge)
    cond = flag("cond", "LOGICAL_OR", both, neither)
    cond2 = flag("cond2", "LOGICAL_AND", cond, mixed)

    low = b.add_tensor("low", (1, 1, 1, 4), "int8", **qx)
    axes = b.add_constant("axes", np.array([1, 2], dtype=np.int32))
    b.add_operator("REDUCE_MIN", [x, axes], [low], {"keep_dims": True})
    picked = b.add_tensor("picked", shape, "int8", **qx)
    b.add_operator("SELECT_V2", [cond2, x, low], [picked])

    floor = b.add_constant("floor", np.array([3], dtype=np.int32))
    keep = flag("keep", "GREATER_EQUAL", ids, floor, (8,))
    clipped = b.add_tensor("clipped", (8,), "int32")
    b.add_operator("SELECT_V2", [keep, ids, floor], [clipped])

    def i32(name: str, values) -> int:
        return b.add_constant(name, np.array(values, dtype=np.int32))

    padded = b.add_tensor("padded", (1, 8, 8, 4), "int8", **qx)
    b.add_operator("MIRROR_PAD", [picked, i32("pads", [[0, 0], [1, 1], [1, 1], [0, 0]])],
                   [padded], {"mode": "REFLECT"})  # fmt: skip
    batched = b.add_tensor("batched", (4, 5, 5, 4), "int8", **qx)
    b.add_operator("SPACE_TO_BATCH_ND", [padded, i32("block", [2, 2]),
                   i32("s2b_pads", [[1, 1], [0, 2]])], [batched])  # fmt: skip
    back = b.add_tensor("back", (1, 9, 9, 4), "int8", **qx)
    b.add_operator("BATCH_TO_SPACE_ND", [batched, i32("block2", [2, 2]),
                   i32("crops", [[0, 1], [1, 0]])], [back])  # fmt: skip
    reversed_ = b.add_tensor("reversed", (1, 9, 9, 4), "int8", **qx)
    b.add_operator("REVERSE_V2", [back, i32("rev_axes", [1, 2])], [reversed_])
    gathered = b.add_tensor("gathered", (5, 4), "int8", **qx)
    where = i32("where", [[0, 0, 0], [0, 8, 8], [0, 3, 5], [0, 8, 0], [0, 4, 4]])
    b.add_operator("GATHER_ND", [reversed_, where], [gathered])
    spread = b.add_tensor("spread", (2, 3, 1, 4), "int8", **qx)
    b.add_operator("BROADCAST_TO", [low, i32("to", [2, 3, 1, 4])], [spread], version=2)
    for t in (picked, low, clipped, reversed_, gathered, spread):
        b.mark_output(t)
    return b.build()


def random_inputs(rng: np.random.Generator, count: int) -> list[list[np.ndarray]]:
    return [
        [
            rng.integers(-128, 128, (1, 6, 6, 4), dtype=np.int8),
            rng.integers(-128, 128, (1, 6, 6, 4), dtype=np.int8),
            rng.integers(-10, 10, (8,), dtype=np.int32),
        ]
        for _ in range(count)
    ]
