"""The inputs of a validation: seeded random ones, or a folder of .npy files.

Random input ``i`` of a run with seed ``S`` is drawn with seed ``S + i`` by the function
behind ``aot run --fill spread``, so ``aot run DIR --fill spread --seed S+i`` reproduces it
alone. The seed also picks the spread (the whole range, or within 32, 8 or 2 steps of the
input's zero point): full-range inputs saturate a classifier, and its outputs then say
little about its weights.

A folder holds one ``NAME.npy`` per input set for a model with one input, and
``NAME.K.npy`` (K = 0, 1, ... the input's position) for a model with several; ``--save``
writes the failing inputs in that same layout, so the folder can be validated again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aot.artifacts.manifest import IOTensor
from aot.errors import ConfigError
from aot.runner import fill_inputs, read_input


@dataclass(frozen=True)
class Sample:
    """One set of model inputs and where it came from."""

    index: int
    arrays: list[np.ndarray]
    seed: int | None = None  # random inputs
    files: tuple[str, ...] = ()  # inputs read from a folder


def random_samples(specs: Sequence[IOTensor], count: int, seed: int) -> Iterator[Sample]:
    for index in range(count):
        yield Sample(index, fill_inputs(specs, "spread", seed + index), seed=seed + index)


def folder_samples(folder: str | Path, specs: Sequence[IOTensor]) -> list[Sample]:
    """Every input set in ``folder``, sorted by name; each file checked against the model."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is not a folder"
        raise ConfigError(f"inputs folder {folder} {what}; give a folder of .npy files")
    files = sorted(p for p in folder.iterdir() if p.suffix == ".npy" and p.is_file())
    if not files:
        raise ConfigError(f"inputs folder {folder} holds no .npy files")
    if len(specs) == 1:
        groups = [(f.stem, [f]) for f in files]
    else:
        groups = _grouped(folder, files, len(specs))
    samples = []
    for index, (_, paths) in enumerate(groups):
        arrays = [read_input(path, spec) for path, spec in zip(paths, specs, strict=True)]
        samples.append(Sample(index, arrays, files=tuple(str(p) for p in paths)))
    return samples


def _grouped(folder: Path, files: list[Path], count: int) -> list[tuple[str, list[Path]]]:
    groups: dict[str, dict[int, Path]] = {}
    for path in files:
        name, _, position = path.stem.rpartition(".")
        if not name or not position.isdigit() or int(position) >= count:
            raise ConfigError(
                f"inputs folder {folder}: {path.name} is not named NAME.K.npy with K from 0 "
                f"to {count - 1}; the model has {count} inputs, one file each per input set"
            )
        groups.setdefault(name, {})[int(position)] = path
    result = []
    for name, members in sorted(groups.items()):
        missing = [k for k in range(count) if k not in members]
        if missing:
            absent = ", ".join(f"{name}.{k}.npy" for k in missing)
            raise ConfigError(f"inputs folder {folder}: input set '{name}' lacks {absent}")
        result.append((name, [members[k] for k in range(count)]))
    return result


def save_sample(folder: Path, sample: Sample) -> list[str]:
    """Write one input set in the folder layout; returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"input_{sample.index:04d}" + ("" if sample.seed is None else f"_seed{sample.seed}")
    if len(sample.arrays) == 1:
        names = [f"{stem}.npy"]
    else:
        names = [f"{stem}.{k}.npy" for k in range(len(sample.arrays))]
    written = []
    for name, array in zip(names, sample.arrays, strict=True):
        np.save(folder / name, array)
        written.append(str(folder / name))
    return written
