"""Build a model and run it on many inputs in one device session (tests and benchmarks)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from aot.artifacts.manifest import LibraryManifest
from aot.errors import AotError


def build(model: str | Path, output: str | Path, board: str = "host", *extra: str) -> Path:
    """``aot build`` in-process; raises on failure instead of printing."""
    import argparse

    from aot.cli import build as build_cli

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    build_cli.add_parser(sub)
    args = parser.parse_args(
        ["build", str(model), "--board", board, "-o", str(output), "--force", "--json", *extra]
    )
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        build_cli.run(args)
    return Path(output)


def run_many(
    folder: str | Path, batches: Sequence[Sequence[np.ndarray]], timeout: float = 120.0
) -> list[list[np.ndarray]]:
    """Run the built model once per entry of ``batches`` in a single device session."""
    from aot.artifacts import read_manifest
    from aot.boards import load_build_board
    from aot.runner import connect

    folder = Path(folder)
    manifest = read_manifest(folder)
    board = load_build_board(manifest)
    results: list[list[np.ndarray]] = []
    with connect(folder, manifest, board, timeout) as client:
        for inputs in batches:
            results.append(client.run(list(inputs), timeout=timeout).outputs)
        client.quit()
    return results


RESET = "reset"  # an entry of run_session's plan: restore the model's state


def run_session(
    folder: str | Path, plan: Sequence[Sequence[np.ndarray] | str], timeout: float = 120.0
) -> list[list[np.ndarray]]:
    """Run a stateful model over ``plan`` in one device session: each entry is an input
    set (one inference, state carried to the next) or ``RESET``; returns the outputs of
    the inferences in order."""
    from aot.artifacts import read_manifest
    from aot.boards import load_build_board
    from aot.runner import connect

    folder = Path(folder)
    manifest = read_manifest(folder)
    board = load_build_board(manifest)
    results: list[list[np.ndarray]] = []
    with connect(folder, manifest, board, timeout) as client:
        client.hello()
        for entry in plan:
            if isinstance(entry, str):
                client.reset()
            else:
                results.append(client.run(list(entry), timeout=timeout).outputs)
        client.quit()
    return results


def random_inputs(specs: Sequence[dict], count: int, seed: int) -> list[list[np.ndarray]]:
    """Seeded random inputs over each input's full range (ints) or N(0, 1) (floats);
    ``specs``: metadata.json's inputs as JSON data (what tests read from the file)."""
    return _random_batches([(tuple(s["shape"]), s["dtype"]) for s in specs], count, seed)


def random_manifest_inputs(
    manifest: LibraryManifest, count: int, seed: int
) -> list[list[np.ndarray]]:
    """:func:`random_inputs` for the inputs of a build's typed manifest."""
    return _random_batches([(t.shape, t.dtype) for t in manifest.inputs], count, seed)


def _random_batches(
    specs: Sequence[tuple[tuple[int, ...], str]], count: int, seed: int
) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        batch = []
        for shape, dtype_name in specs:
            dtype = np.dtype(dtype_name)
            if dtype.kind in "iu":
                info = np.iinfo(dtype)
                batch.append(rng.integers(info.min, info.max + 1, size=shape, dtype=dtype))
            else:
                batch.append(rng.standard_normal(shape).astype(dtype))
        batches.append(batch)
    return batches


__all__ = [
    "RESET",
    "AotError",
    "build",
    "random_inputs",
    "random_manifest_inputs",
    "run_many",
    "run_session",
]
