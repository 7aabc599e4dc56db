"""The typed manifest (aot/artifacts): metadata.json read into frozen dataclasses and
written back byte for byte, the one-line errors of a folder it cannot read, and the
assembly of a real build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aot.artifacts import LibraryManifest, read_manifest, write_manifest
from aot.artifacts.manifest import METADATA_FILE, IOTensor
from aot.errors import ConfigError, ModelError
from aot.testing.harness import build
from aot.testing.shared import CHECKOUT

EXAMPLE = CHECKOUT / "examples" / "tiny_kws_int8.tflite"


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("traced") / "out"
    return build(EXAMPLE, out, "host", "--trace", "--profile", "--no-build")


@pytest.fixture(scope="module")
def npu(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("npu") / "out"
    return build(EXAMPLE, out, "mps2_an386", "--accelerator", "example_npu", "--no-build")


@pytest.mark.parametrize("folder", ["traced", "npu"])
def test_the_manifest_writes_back_what_it_read_byte_for_byte(folder, request, tmp_path) -> None:
    built = request.getfixturevalue(folder)
    text = (built / METADATA_FILE).read_text()
    manifest = read_manifest(built)
    assert manifest.text() == text
    write_manifest(tmp_path, manifest)
    assert (tmp_path / METADATA_FILE).read_text() == text
    assert LibraryManifest.from_json(json.loads(text)) == manifest


def test_a_build_reads_as_typed_fields(traced: Path) -> None:
    manifest = read_manifest(traced)
    assert manifest.name == "tiny_kws_int8" and manifest.board == "host"
    assert manifest.library.header_name == "aot_tiny_kws_int8.h"
    assert manifest.library.descriptor == "aot_tiny_kws_int8_model"
    assert manifest.library.profile and manifest.trace is not None
    assert len(manifest.trace.steps) == len(manifest.operators)
    (spec,) = manifest.inputs
    assert isinstance(spec, IOTensor) and spec.shape == (1, 16, 16, 1) and spec.dtype == "int8"
    assert manifest.project is not None and manifest.project.template == "host"
    assert manifest.build is None and manifest.executable is None  # --no-build
    assert manifest.constants.section == ".rodata.aot.tiny_kws_int8.constants"


def test_what_a_build_has_not_is_left_out(npu: Path) -> None:
    document = json.loads((npu / METADATA_FILE).read_text())
    assert "trace" not in document and "build" not in document
    manifest = read_manifest(npu)
    assert manifest.trace is None and manifest.board == "mps2_an386"
    assert [b.name for b in manifest.backends] == ["example_npu", "kernels", "cpu"]
    assert "defines" not in document["library"] and manifest.library.defines == {}
    assert {op.target for op in manifest.operators} >= {"example_npu"}


def test_a_folder_it_cannot_read_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not an aot build folder"):
        read_manifest(tmp_path)
    (tmp_path / METADATA_FILE).write_text(json.dumps({"schema_version": 7}))
    with pytest.raises(ConfigError, match="schema version 7; this aot reads version 1"):
        read_manifest(tmp_path)
    (tmp_path / METADATA_FILE).write_text(json.dumps({"schema_version": 1, "memory": {}}))
    with pytest.raises(ModelError, match=r"metadata.json has no 'model'; rebuild the folder"):
        read_manifest(tmp_path)
    broken = {"schema_version": 1, "model": {"name": "m"}, "memory": {"pools": [{"name": 3}]}}
    (tmp_path / METADATA_FILE).write_text(json.dumps(broken))
    with pytest.raises(ModelError, match=r"memory pools\[0\] name is 3, not a str"):
        read_manifest(tmp_path)
