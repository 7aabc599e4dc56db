"""Seeded fuzzing of the importer with damaged copies of real models (docs/robustness.md).

Every mutant must either be rejected with one AotError line or import; the default tier
imports a bounded number per mutation class in-process and builds a sample of the ones
that pass under ASan/UBSan. The soak tier (bash scripts/test.sh -m soak tests/robustness,
about 10-20 minutes) runs at least 300 mutants per class end to end
through ``aot build`` (and builds and runs every one that passes, sanitized).
"""

from __future__ import annotations

import contextlib
import io
import random
import time
from pathlib import Path

import pytest
from mutate import CLASSES, field_map, mutate
from robustness_helpers import build_and_run_sanitized, import_outcome, sanitizers_work, seed_models

DEFAULT_PER_CLASS = 60
DEFAULT_SECONDS = 6.0  # per class: keeps the default tier bounded on a slow machine
SLOW_PER_CLASS = 300


def mutants(kind: str, count: int, seed: int):
    """(label, bytes) for ``count`` mutants of class ``kind``, spread over the seed models."""
    models = seed_models()
    maps = {name: field_map(data) for name, data in models.items()}
    rng = random.Random(f"{seed}:{kind}")
    names = sorted(models)
    made = 0
    attempts = 0
    while made < count and attempts < count * 20:
        attempts += 1
        name = names[attempts % len(names)]
        data = mutate(models[name], maps[name], kind, rng)
        if data is None or data == models[name]:
            continue
        made += 1
        yield f"{name}-{kind}-{made}", data


@pytest.mark.unit
@pytest.mark.parametrize("kind", CLASSES)
def test_mutants_are_rejected_in_one_line_or_import(kind: str, tmp_path: Path) -> None:
    deadline = time.monotonic() + DEFAULT_SECONDS
    outcomes: dict[str, str] = {}
    for label, data in mutants(kind, DEFAULT_PER_CLASS, seed=2026):
        path = tmp_path / f"{label}.tflite"
        path.write_bytes(data)
        outcomes[label] = import_outcome(path)  # any non-AotError fails the test here
        if time.monotonic() > deadline:
            break
    assert len(outcomes) >= 10, f"only {len(outcomes)} mutants of class {kind} in time"
    rejected = [m for m in outcomes.values() if m != "imported"]
    # Each class damages the file in a way the validation must see most of the time.
    assert len(rejected) >= len(outcomes) // 2, (kind, outcomes)


@pytest.mark.toolchain
def test_a_mutant_that_passes_validation_runs_clean_under_sanitizers(tmp_path: Path) -> None:
    """Some damaged scales stay finite, positive and in the kernels' range: such a model
    imports, and must build into memory-safe firmware."""
    if not sanitizers_work(tmp_path):
        pytest.skip("the C compiler cannot build with ASan/UBSan here")
    for label, data in mutants("scale", 40, seed=7):
        if not label.startswith("ad01"):
            continue
        path = tmp_path / f"{label}.tflite"
        path.write_bytes(data)
        if import_outcome(path) == "imported":
            build_and_run_sanitized(path, tmp_path / "out")
            return
    pytest.fail("no ad01 scale mutant passed validation with this seed: pick another seed")


@pytest.mark.soak
@pytest.mark.toolchain
@pytest.mark.parametrize("kind", CLASSES)
def test_fuzz_end_to_end(kind: str, tmp_path: Path) -> None:
    """SLOW_PER_CLASS mutants through ``aot build``: one error line, or a build whose
    firmware runs clean under ASan/UBSan."""
    import os

    from aot.cli import main

    if not sanitizers_work(tmp_path):
        pytest.skip("the C compiler cannot build with ASan/UBSan here")
    count = int(os.environ.get("AOT_FUZZ_PER_CLASS", SLOW_PER_CLASS))
    built = 0
    for label, data in mutants(kind, count, seed=1):
        path = tmp_path / f"{label}.tflite"
        path.write_bytes(data)
        if import_outcome(path) == "imported":
            build_and_run_sanitized(path, tmp_path / label)
            built += 1
            continue
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            code = main(["build", str(path), "--board", "host", "-o", str(tmp_path / label),
                         "--json"])  # fmt: skip
        lines = stderr.getvalue().splitlines()
        assert code in (3, 4), (label, stderr.getvalue())
        assert len(lines) == 1 and lines[0].startswith("error: "), (label, lines)
        path.unlink()
    print(f"{kind}: {count} mutants, {built} built and ran clean under ASan/UBSan")
