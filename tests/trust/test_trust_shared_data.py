"""Reference data is found relative to the checkout (or $AOT_SHARED_DIR), never by a path
that exists on one machine only, and missing data fails loudly instead of skipping."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aot.testing import shared
from aot.testing.shared import SharedDataMissing, mlperf_tiny, shared_dir, shared_path

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
# A path to the shared data spelled out instead of asked from aot.testing.shared.
HARD_CODED = re.compile(r"""/work/shared|["']shared["']\s*/|["']\.\./shared""")


def test_the_default_is_shared_beside_the_checkout(monkeypatch) -> None:
    monkeypatch.delenv(shared.ENV_VAR, raising=False)
    assert shared_dir() == REPO.parent / "shared"


def test_the_environment_variable_points_elsewhere(monkeypatch, tmp_path: Path) -> None:
    (tmp_path / "models" / "mlperf_tiny").mkdir(parents=True)
    (tmp_path / "models" / "mlperf_tiny" / "m.tflite").write_bytes(b"TFL3")
    monkeypatch.setenv(shared.ENV_VAR, str(tmp_path))
    assert mlperf_tiny("m") == tmp_path / "models" / "mlperf_tiny" / "m.tflite"


def test_missing_data_is_an_error_naming_the_path_and_the_variable(
    monkeypatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(shared.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(SharedDataMissing) as error:
        shared_path("models", "mlperf_tiny", "kws_ref_model.tflite")
    message = str(error.value)
    assert str(tmp_path / "nowhere" / "models" / "mlperf_tiny" / "kws_ref_model.tflite") in message
    assert "AOT_SHARED_DIR" in message


def test_the_reference_models_are_there() -> None:
    # Fails (not skips) on a machine without the shared folder: CI must have it.
    for name in shared.MLPERF_TINY:
        for suffix in (".tflite", ".input.npy", ".output.npy", ".json"):
            assert mlperf_tiny(name, suffix).is_file()


def test_no_test_or_benchmark_spells_out_where_the_shared_data_is() -> None:
    offenders = []
    for folder in ("tests", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if HARD_CODED.search(line):
                    offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "use aot.testing.shared instead:\n" + "\n".join(offenders)
