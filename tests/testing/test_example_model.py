"""The shipped example models are reproducible and their sample outputs are right."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from aot.testing import run_tflite_reference

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEMS = ("tiny_kws_int8", "tiny_kws_float")


def _load_script() -> ModuleType:
    # examples/ is not a package; load the script by path as a user would run it.
    spec = importlib.util.spec_from_file_location(
        "make_example_model", EXAMPLES / "make_example_model.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("examples")
    _load_script().write_examples(out)
    return out


@pytest.mark.parametrize("stem", STEMS)
def test_regenerating_gives_identical_model_and_input(regenerated: Path, stem: str) -> None:
    for suffix in (".tflite", ".input.npy"):
        committed = (EXAMPLES / f"{stem}{suffix}").read_bytes()
        assert (regenerated / f"{stem}{suffix}").read_bytes() == committed, (
            f"examples/{stem}{suffix} differs from a fresh run of "
            "examples/make_example_model.py; rerun it and commit the result"
        )


@pytest.mark.parametrize("stem", STEMS)
def test_regenerated_output_matches(regenerated: Path, stem: str) -> None:
    committed = np.load(EXAMPLES / f"{stem}.output.npy")
    fresh = np.load(regenerated / f"{stem}.output.npy")
    if committed.dtype == np.int8:
        np.testing.assert_array_equal(fresh, committed)
    else:
        # Float kernels may round differently on another CPU; int8 ones may not.
        np.testing.assert_allclose(fresh, committed, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("stem", STEMS)
def test_shipped_output_is_the_reference_output(stem: str) -> None:
    model = (EXAMPLES / f"{stem}.tflite").read_bytes()
    x = np.load(EXAMPLES / f"{stem}.input.npy")
    expected = np.load(EXAMPLES / f"{stem}.output.npy")
    (y,) = run_tflite_reference(model, [x])
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    assert y.shape == (1, 4)


def test_int8_and_float_models_agree_on_the_sample() -> None:
    q = np.load(EXAMPLES / "tiny_kws_int8.output.npy").astype(np.float64)
    probs_int8 = (q + 128) / 256
    probs_float = np.load(EXAMPLES / "tiny_kws_float.output.npy")
    np.testing.assert_allclose(probs_int8, probs_float, atol=0.05)
    assert probs_float.argmax() == probs_int8.argmax()


def test_int8_outputs_vary_across_inputs() -> None:
    script = _load_script()
    model = (EXAMPLES / "tiny_kws_int8.tflite").read_bytes()
    inputs = script.make_inputs(np.random.default_rng(7), 16)
    probs = np.stack([run_tflite_reference(model, [x])[0][0] for x in inputs]).astype(np.int32)
    assert len(np.unique(probs.argmax(axis=1))) >= 2
    assert np.ptp(probs, axis=0).min() >= 10  # every class moves by >= 10/256
