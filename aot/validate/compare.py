"""Comparing one output of the device with the reference, accumulated over many inputs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from aot.artifacts.manifest import IOTensor
from aot.errors import ConfigError


@dataclass(frozen=True)
class Tolerance:
    """When an output counts as passed.

    Integer outputs pass only when exact, unless ``max_steps`` allows that many quantized
    steps. Float outputs pass when every element is within ``atol + rtol * |reference|``
    (numpy.isclose) and the cosine similarity with the reference is at least
    ``min_cosine``; NaN passes only where the reference is NaN too."""

    max_steps: int = 0
    atol: float = 1e-5
    rtol: float = 1e-4
    min_cosine: float = 0.9999

    def __post_init__(self) -> None:
        if isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int):
            raise ConfigError(f"--max-steps must be a whole number, got {self.max_steps!r}")
        if self.max_steps < 0:
            raise ConfigError(f"--max-steps must be 0 or more, got {self.max_steps}")
        for name, value in (("--atol", self.atol), ("--rtol", self.rtol)):
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"{name} must be a finite number >= 0, got {value:g}")
        if not -1.0 <= self.min_cosine <= 1.0:
            raise ConfigError(f"--min-cosine must be from -1 to 1, got {self.min_cosine:g}")

    def to_json(self) -> dict[str, Any]:
        return {
            "max_steps": self.max_steps,
            "atol": self.atol,
            "rtol": self.rtol,
            "min_cosine": self.min_cosine,
        }


def cosine(got: np.ndarray, ref: np.ndarray) -> float:
    """Cosine similarity of two tensors as flat vectors; two zero tensors are identical (1),
    one zero tensor against a non-zero one has nothing in common (0)."""
    a = got.astype(np.float64).reshape(-1)
    b = ref.astype(np.float64).reshape(-1)
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 1.0 if na == nb else 0.0
    return float(np.dot(a, b) / (na * nb))


def _scales(spec: IOTensor, shape: tuple[int, ...]) -> np.ndarray | None:
    """Each element's quantization scale (broadcastable to ``shape``), None if unquantized."""
    quant = spec.quantization
    if quant is None or not quant.scale:
        return None
    values = np.asarray(quant.scale, dtype=np.float64)
    axis = quant.axis
    if axis is None or values.size == 1:
        return values[:1].reshape(())
    view = [1] * len(shape)
    view[axis] = values.size
    return values.reshape(view)


def is_classifier_output(shape: tuple[int, ...]) -> bool:
    """One row of several scores ([N], [1, N], [1, 1, N] ...): a classifier's output."""
    return len(shape) >= 1 and shape[-1] > 1 and int(np.prod(shape[:-1])) == 1


def top1(scores: np.ndarray) -> int:
    """The best class (the first of equal ones, as numpy's argmax)."""
    return int(np.argmax(np.asarray(scores).reshape(-1)))


class OutputComparison:
    """Running totals for one output over all inputs; :meth:`add` says if it passed."""

    def __init__(self, spec: IOTensor, tolerance: Tolerance) -> None:
        self.spec = spec
        self.tolerance = tolerance
        self.dtype = np.dtype(spec.dtype)
        self.is_float = self.dtype.kind == "f"
        self.samples = 0
        self.exact = 0
        self.passed = 0
        self.max_abs_error = 0.0  # quantized steps for integer outputs
        self.max_abs_error_real: float | None = None  # dequantized, quantized outputs only
        self.abs_sum = 0.0
        self.square_sum = 0.0
        self.elements = 0
        self.min_cosine: float | None = None
        self.first_mismatch: int | None = None  # sample index of the first inexact output
        self.first_failure: int | None = None  # ... and of the first failed one
        # A classifier's output (one row of several scores): how often the board's best
        # class is the reference's. Exact outputs agree; this tells how much a mismatch costs.
        self.is_classifier = is_classifier_output(tuple(spec.shape))
        self.top1_agreed = 0

    def add(self, index: int, got: np.ndarray, ref: np.ndarray) -> bool:
        ref = np.asarray(ref)
        got = np.asarray(got).reshape(ref.shape) if np.size(got) == np.size(ref) else got
        if got.shape != ref.shape:
            raise ConfigError(
                f"output '{self.spec.name}': the device returned shape {got.shape}, the "
                f"reference {ref.shape}; give the model the folder was built from"
            )
        self.samples += 1
        if self.is_classifier:
            self.top1_agreed += top1(got) == top1(ref)
        exact = bool(np.array_equal(got, ref, equal_nan=self.is_float))
        passed = self._add_float(got, ref, exact) if self.is_float else self._add_int(got, ref)
        self.exact += exact
        self.passed += passed
        if not exact and self.first_mismatch is None:
            self.first_mismatch = index
        if not passed and self.first_failure is None:
            self.first_failure = index
        return passed

    def _add_int(self, got: np.ndarray, ref: np.ndarray) -> bool:
        diff = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        steps = int(diff.max()) if diff.size else 0
        self.max_abs_error = max(self.max_abs_error, steps)
        scales = _scales(self.spec, ref.shape)
        if scales is not None:
            real = float((diff * scales).max()) if diff.size else 0.0
            self.max_abs_error_real = max(self.max_abs_error_real or 0.0, real)
        return steps <= self.tolerance.max_steps

    def _add_float(self, got: np.ndarray, ref: np.ndarray, exact: bool) -> bool:
        a, b = got.astype(np.float64), ref.astype(np.float64)
        both_nan = np.isnan(a) & np.isnan(b)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.where(both_nan | (a == b), 0.0, np.abs(a - b))
        diff = np.where(np.isnan(diff), math.inf, diff)  # NaN against a number, inf - inf
        if diff.size:
            self.max_abs_error = max(self.max_abs_error, float(diff.max()))
            self.abs_sum += float(diff.sum())
            self.square_sum += float(np.square(diff).sum())
        self.elements += diff.size
        finite = ~both_nan
        similarity = cosine(np.where(finite, a, 0.0), np.where(finite, b, 0.0))
        if not np.isfinite(a[finite]).all() or not np.isfinite(b[finite]).all():
            similarity = 1.0 if exact else -1.0
        self.min_cosine = (
            similarity if self.min_cosine is None else min(self.min_cosine, similarity)
        )
        tol = self.tolerance
        close = bool(np.isclose(a, b, rtol=tol.rtol, atol=tol.atol, equal_nan=True).all())
        return exact or (close and similarity >= tol.min_cosine)

    @property
    def mean_abs_error(self) -> float | None:
        return self.abs_sum / self.elements if self.is_float and self.elements else None

    @property
    def rmse(self) -> float | None:
        return (
            math.sqrt(self.square_sum / self.elements) if self.is_float and self.elements else None
        )
