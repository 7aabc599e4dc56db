"""validate_folder: many inputs through the built model on its board and through the
reference runtime, compared output by output."""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from aot.artifacts import LibraryManifest, read_manifest
from aot.errors import ConfigError
from aot.validate.compare import OutputComparison, Tolerance
from aot.validate.inputs import Sample, folder_samples, random_samples, save_sample
from aot.validate.reference import Reference, open_reference
from aot.validate.report import OutputReport, SampleRef, ValidationReport

MAX_COUNT = 1_000_000


class RunOutputs(Protocol):
    outputs: list[np.ndarray]


class Session(Protocol):
    """An open device session: what ``aot.runner.open_session`` yields (a DeviceClient), or
    anything with the same ``run`` (a board reached through a tracker). ``run`` is called
    once per input set, all in this one session."""

    def run(self, inputs: list[np.ndarray], timeout: float | None = None) -> RunOutputs: ...


def validate_folder(
    folder: str | Path,
    model: str | Path,
    count: int = 100,
    seed: int = 0,
    inputs_dir: str | Path | None = None,
    session: Session | None = None,
    *,
    tolerance: Tolerance | None = None,
    save: str | Path | None = None,
    timeout: float = 120.0,
    port: str | None = None,
    baud: int | None = None,
    progress: Callable[[str], None] | None = None,
    progress_every: float = 2.0,
    labels: str | Path | None = None,
    float_model: str | Path | None = None,
    layers: bool = False,
) -> ValidationReport:
    """Run ``count`` seeded random input sets (or every set in ``inputs_dir``) on the
    folder's board and through ``model`` in its reference runtime; compare each output.

    ``session``: an open device session to use; without one, the folder's own board is
    started (host process, QEMU) or flashed (``port``/``baud``) once for all inputs.
    ``save``: a folder to write the failing input sets to. ``progress`` gets a line at the
    start and then at most every ``progress_every`` seconds. A reference whose inputs or
    outputs differ in number, dtype or shape from the built model's is a ConfigError; one
    that only computes different values gives a report that did not pass. ``labels`` (with
    ``inputs_dir``) adds top-1 accuracy, and ``float_model`` the float model's
    (aot.validate.accuracy). ``layers`` then compares every step's output on one input
    set, the first failing one or else the first (a ``--trace`` build;
    aot.validate.layers)."""
    folder = Path(folder)
    tolerance = tolerance or Tolerance()
    manifest = read_manifest(folder)
    reference = open_reference(model)
    check_signature(manifest, reference, Path(model))
    if layers:
        check_layers(manifest, reference, session, folder)
    specs = manifest.inputs
    if inputs_dir is not None:
        listed = folder_samples(inputs_dir, specs)
        samples: Iterable[Sample] = listed
        count = len(listed)
        seed_used: int | None = None
    else:
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
            raise ConfigError(f"--count must be a whole number from 1 to {MAX_COUNT}, got {count}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError(f"--seed must be a whole number >= 0, got {seed}")
        samples = random_samples(specs, count, seed)
        seed_used = seed
    accuracy = _accuracy_count(manifest, inputs_dir, labels, float_model)
    if save is not None:
        from aot.user_files import check_save_folder

        check_save_folder(save)  # before the runs: a path that cannot be written fails now
    comparisons = [OutputComparison(spec, tolerance) for spec in manifest.outputs]
    refs: dict[int, SampleRef] = {}
    saved: list[str] = []
    samples_passed = 0
    say = progress or (lambda _message: None)
    say(f"validating {count} input set(s) on {manifest.board} against {reference.runtime}")
    last = time.monotonic()
    distinct: set[bytes] = set()  # the board's output sets, to judge what the inputs told
    traced: Sample | None = None  # the input set --layers looks into
    traced_ok = True
    layer_report = None
    with _session(folder, session, timeout, port, baud) as device:
        for done, sample in enumerate(samples, start=1):
            got = device.run(sample.arrays, timeout=timeout).outputs
            distinct.add(b"".join(np.ascontiguousarray(g).tobytes() for g in got))
            expected = reference.run(sample.arrays)
            if accuracy is not None:
                accuracy.add(sample, got, expected)
            results = [
                c.add(sample.index, g, e)
                for c, g, e in zip(comparisons, got, expected, strict=True)
            ]
            ok = all(results)
            samples_passed += ok
            if layers and (traced is None or (not ok and traced_ok)):
                traced, traced_ok = sample, ok
            if any(sample.index in (c.first_mismatch, c.first_failure) for c in comparisons):
                refs.setdefault(sample.index, SampleRef(sample.index, sample.seed, sample.files))
            if not ok and save is not None:
                saved += save_sample(Path(save), sample)
            if done < count and time.monotonic() - last >= progress_every:
                last = time.monotonic()
                say(f"{done}/{count} input sets, {done - samples_passed} outside the tolerance")
        if traced is not None:
            layer_report = _layers(manifest, reference, device, traced, tolerance, timeout, say)
    return ValidationReport(
        folder=str(folder),
        model=str(model),
        model_name=manifest.name,
        board=manifest.board,
        reference=reference.runtime,
        same_model_as_build=_same_source(manifest, Path(model)),
        inputs="random" if inputs_dir is None else str(inputs_dir),
        seed=seed_used,
        samples=count,
        samples_passed=samples_passed,
        tolerance=tolerance.to_json(),
        outputs=tuple(_output_report(c, refs) for c in comparisons),
        saved=tuple(saved),
        distinct_outputs=len(distinct),
        warnings=information_warnings(len(distinct), count),
        accuracy=None if accuracy is None else accuracy.result(labels),  # type: ignore[arg-type]
        layers=layer_report,
    )


def check_layers(
    manifest: LibraryManifest, reference: Reference, session: Session | None, folder: Path
) -> None:
    """--layers needs a --trace build, a reference that keeps every tensor and the board
    itself; said before any input runs."""
    if manifest.trace is None:
        raise ConfigError(
            f"--layers needs a build whose model can stop after each operator; {folder} was "
            "built without it: rebuild it with 'aot build ... --trace'"
        )
    if not reference.keeps_tensors:
        reference.intermediates([])  # its own one-line refusal
    if session is not None and not hasattr(session, "trace"):
        raise ConfigError(LAYERS_NOT_ON_FARM)


LAYERS_NOT_ON_FARM = (
    "--layers reads each operator's output from the board itself; a board of the farm "
    "returns only the model's outputs: validate without --layers, or on a local board"
)


def _layers(
    manifest: LibraryManifest,
    reference: Reference,
    device: Any,
    sample: Sample,
    tolerance: Tolerance,
    timeout: float,
    say: Callable[[str], None],
) -> Any:
    from aot.validate.layers import compare_layers

    steps = len(manifest.trace.steps) if manifest.trace is not None else 0
    say(f"comparing the outputs of {steps} steps with the reference on input set {sample.index}")
    if getattr(device, "supports_reset", False):
        device.reset()  # the reference starts from the initial state; TRACE changes none
    return compare_layers(
        manifest,
        SampleRef(sample.index, sample.seed, sample.files),
        lambda step: device.trace(sample.arrays, step, timeout=timeout),
        reference.intermediates(sample.arrays),
        tolerance,
        progress=say,
    )


def _accuracy_count(
    manifest: LibraryManifest,
    inputs_dir: str | Path | None,
    labels: str | Path | None,
    float_model: str | Path | None,
) -> Any:
    from aot.validate.accuracy import (
        AccuracyCount,
        classifier_output,
        open_float_model,
        read_labels,
    )

    if labels is None:
        if float_model is not None:
            raise ConfigError("--float-model is compared on labelled inputs: add --labels FILE")
        return None
    if inputs_dir is None:
        raise ConfigError("--labels labels the sets of an inputs folder: add --inputs DIR")
    output = classifier_output(manifest.outputs)
    return AccuracyCount(
        labels=read_labels(labels),
        output=output,
        output_name=manifest.outputs[output].name,
        inputs=len(manifest.inputs),
        float_reference=None if float_model is None else open_float_model(float_model, manifest),
        float_model=None if float_model is None else str(float_model),
        input_specs=manifest.inputs,
    )


# Fewer distinct output sets than this share of the input sets: the outputs carry too
# little information for a comparison to catch a wrong weight.
MIN_DISTINCT_SHARE = 0.25


def information_warnings(distinct: int, samples: int) -> tuple[str, ...]:
    if samples < 8 or distinct >= MIN_DISTINCT_SHARE * samples:
        return ()
    return (
        f"the {samples} input sets gave only {distinct} distinct output(s): the outputs say "
        "little about the weights (a saturated softmax, a constant output), so a wrong weight "
        "can pass; validate with real inputs too (--inputs DIR)",
    )


@contextlib.contextmanager
def _session(
    folder: Path, session: Session | None, timeout: float, port: str | None, baud: int | None
) -> Iterator[Session]:
    if session is not None:
        yield session
        return
    from aot.runner import open_session

    with open_session(folder, timeout, port, baud) as client:
        yield client


def check_signature(manifest: LibraryManifest, reference: Reference, model: Path) -> None:
    """The reference must take and give what the built model does, in number, dtype and
    shape; otherwise it is the wrong model, said in one line."""
    for kind, built, declared in (
        ("input", manifest.inputs, reference.inputs),
        ("output", manifest.outputs, reference.outputs),
    ):
        if len(built) != len(declared):
            raise ConfigError(
                f"reference {model} has {len(declared)} {kind}(s), the model in the folder "
                f"{len(built)}; give the model the folder was built from"
            )
        for index, (spec, sig) in enumerate(zip(built, declared, strict=True)):
            if not sig.fits(spec.dtype, spec.shape):
                raise ConfigError(
                    f"reference {model}: {kind} {index} '{sig.name}' is {sig.describe()}, "
                    f"the built model's '{spec.name}' is {spec.dtype}{list(spec.shape)}"
                    "; give the model the folder was built from"
                )


def _same_source(manifest: LibraryManifest, model: Path) -> bool | None:
    recorded = manifest.model.source_sha256
    if not recorded:
        return None
    return hashlib.sha256(model.read_bytes()).hexdigest() == recorded


def _output_report(c: OutputComparison, refs: dict[int, SampleRef]) -> OutputReport:
    spec = c.spec
    return OutputReport(
        name=spec.name,
        dtype=spec.dtype,
        shape=tuple(spec.shape),
        quantized=spec.quantization is not None and bool(spec.quantization.scale),
        samples=c.samples,
        exact=c.exact,
        passed=c.passed,
        max_abs_error=c.max_abs_error,
        max_abs_error_real=c.max_abs_error_real,
        mean_abs_error=c.mean_abs_error,
        rmse=c.rmse,
        min_cosine=c.min_cosine,
        first_mismatch=None if c.first_mismatch is None else refs[c.first_mismatch],
        first_failure=None if c.first_failure is None else refs[c.first_failure],
        top1_agreement=c.top1_agreed if c.is_classifier else None,
    )
