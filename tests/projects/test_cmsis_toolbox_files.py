"""The CMSIS-Toolbox files of a cmsis project are ones the real project manager accepts:
valid against the official JSON schemas (../shared/cmsis-toolbox-schemas, resolved
locally), named the way csolution requires, and pointing at files that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from projects_helpers import build, shared

from aot.boards import load_all_boards

pytestmark = pytest.mark.unit

CMSIS_BOARDS = [b.name for b in load_all_boards() if "cmsis" in b.ports]
KINDS = ("csolution", "cproject", "clayer")
# csolution reads <name>.csolution.yml, <name>.cproject.yml and <name>.clayer.yml only,
# and takes the project and layer names from the file names.
FILE_NAME = re.compile(r"^(?P<name>[A-Za-z0-9_-]+)\.(?P<kind>csolution|cproject|clayer)\.yml$")


def validators() -> dict[str, object]:
    import jsonschema
    from referencing import Registry, Resource

    folder = shared("cmsis-toolbox-schemas")
    resources = [
        Resource.from_contents(json.loads(path.read_text()))
        for path in sorted(folder.glob("*.schema.json"))
    ]
    # Every $ref (./common.schema.json#/...) resolves against these by $id: offline.
    registry = Registry().with_resources((r.id(), r) for r in resources)
    return {
        kind: jsonschema.Draft7Validator(
            json.loads((folder / f"{kind}.schema.json").read_text()), registry=registry
        )
        for kind in KINDS
    }


@pytest.fixture(scope="module")
def schema_validators() -> dict[str, object]:
    return validators()


@pytest.fixture(scope="module", params=CMSIS_BOARDS)
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp(request.param) / "out"
    return build(out, request.param, "--no-build") / "project"


def toolbox_files(project: Path) -> dict[str, list[Path]]:
    files: dict[str, list[Path]] = {kind: [] for kind in KINDS}
    for path in sorted(project.glob("*.yml")):
        for kind in KINDS:
            if path.name.endswith(f"{kind}.yml"):
                files[kind].append(path)
    return files


def test_files_are_valid_against_the_official_schemas(project: Path, schema_validators) -> None:
    files = toolbox_files(project)
    assert all(files.values()), files
    for kind, paths in files.items():
        for path in paths:
            errors = [
                f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
                for e in schema_validators[kind].iter_errors(yaml.safe_load(path.read_text()))
            ]
            assert not errors, f"{path.name}:\n" + "\n".join(errors)


def test_file_names_follow_the_project_manager_rules(project: Path) -> None:
    files = toolbox_files(project)
    for paths in files.values():
        for path in paths:
            assert FILE_NAME.match(path.name), f"{path.name} is not <name>.<kind>.yml"
    assert len(files["csolution"]) == 1, "one solution per project folder"
    solution = yaml.safe_load(files["csolution"][0].read_text())["solution"]
    projects = [project / entry["project"] for entry in solution["projects"]]
    assert projects == files["cproject"]
    for cproject in projects:
        layers = yaml.safe_load(cproject.read_text())["project"].get("layers", [])
        assert [cproject.parent / entry["layer"] for entry in layers] == files["clayer"]


def test_referenced_files_exist(project: Path) -> None:
    files = toolbox_files(project)
    cproject = yaml.safe_load(files["cproject"][0].read_text())["project"]
    for entry in cproject["linker"]:
        assert (project / entry["script"]).is_file(), entry
    layer = yaml.safe_load(files["clayer"][0].read_text())["layer"]
    for path in layer["add-path"]:
        assert (project / path).is_dir(), path
    for group in [*cproject["groups"], *layer["groups"]]:
        for entry in group["files"]:
            assert (project / entry["file"]).is_file(), entry["file"]


def test_the_device_is_in_its_pack(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """csolution resolves target-types' device in the listed packs; ../shared/cmsis-packs
    holds ARM::Cortex_DFP's PDSC, the pack every emulated board names."""
    pytest.importorskip("cmsis_pack_manager")
    from aot.boards import CmsisDevice
    from aot.boards.packs import pack_device

    monkeypatch.setenv("AOT_CMSIS_PACKS", str(shared("cmsis-packs")))
    solution = yaml.safe_load(next(project.glob("*.csolution.yml")).read_text())["solution"]
    (target,) = solution["target-types"]
    (pack,) = [entry["pack"] for entry in solution["packs"]]
    vendor, device = target["device"].split("::")
    assert pack.startswith(f"{vendor}::")
    assert pack_device(CmsisDevice(device, pack)).name == device
