"""Build folders for the inspect tests: a hand-made one (pure Python) and a real kws build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_helpers import KWS, synthetic_metadata

from aot.testing.shared import mlperf_tiny


@pytest.fixture
def synthetic_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "synthetic"
    folder.mkdir()
    (folder / "metadata.json").write_text(json.dumps(synthetic_metadata(), indent=2))
    return folder


@pytest.fixture(scope="session")
def kws_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kws for the host with two pools, C generated but not compiled."""
    from aot.testing.harness import build

    mlperf_tiny("kws_ref_model")  # missing shared data fails here, loudly
    out = tmp_path_factory.mktemp("kws") / "out"
    return build(KWS, out, "host", "--no-build", "--pool", "fast:16K:cpu,npu", "--pool", "big:1M")
