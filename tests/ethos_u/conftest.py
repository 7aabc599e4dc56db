"""Fixtures for the Ethos-U tests: Vela's output for the reference models, built once."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ethos_u_helpers import ACCELERATOR

from aot.backends.ethos_u.vela import VelaResult, compile_model
from aot.testing.shared import mlperf_tiny


@pytest.fixture(scope="session")
def vela_reference() -> Callable[[str], VelaResult]:
    """vela_reference(model) -> Vela's result for ../shared/models/mlperf_tiny/<model>."""
    cache: dict[str, VelaResult] = {}

    def get(name: str) -> VelaResult:
        if name not in cache:
            cache[name] = compile_model(mlperf_tiny(name).read_bytes(), ACCELERATOR, name=name)
        return cache[name]

    return get
