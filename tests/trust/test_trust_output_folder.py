"""``aot build -o DIR --force`` replaces only a folder an earlier ``aot build`` wrote.

Every refusal leaves every file exactly as it was (a listing with hashes before and after).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import aot.library
from aot.cli import main
from aot.errors import ConfigError, FileSystemError
from aot.library import (
    FILES_LIST,
    GENERATOR,
    METADATA_FILE,
    check_replaceable,
    read_metadata,
    staged_output,
    write_files_list,
)

pytestmark = pytest.mark.unit

MODEL = Path(__file__).resolve().parents[2] / "examples" / "tiny_kws_int8.tflite"


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` (itself included) with the sha256 of each file."""
    listing = {}
    for path in [root, *sorted(root.rglob("*"))]:
        key = str(path.relative_to(root.parent))
        if path.is_symlink():
            listing[key] = f"-> {path.readlink()}"
        elif path.is_dir():
            listing[key] = "dir"
        else:
            listing[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return listing


def aot_build(capsys, *args: str) -> tuple[int, str]:
    code = main(["build", *args])
    return code, capsys.readouterr().err


def fake_build_folder(folder: Path, **metadata) -> Path:
    """The top level of a folder 'aot build' wrote (contents do not matter to --force)."""
    (folder / "model" / "src").mkdir(parents=True)
    (folder / "model" / "src" / "kernels.c").write_text("/* kernels */\n")
    (folder / "project").mkdir()
    document = {"schema_version": 1, "generator": GENERATOR, **metadata}
    (folder / METADATA_FILE).write_text(json.dumps(document))
    write_files_list(folder)  # what a build writes last: the list of its paths
    return folder


def folder_with_notes(tmp: Path) -> tuple[Path, list[str]]:
    folder = tmp / "notes"
    (folder / "drafts").mkdir(parents=True)
    (folder / "todo.txt").write_text("buy milk\n")
    (folder / "drafts" / "paper.tex").write_text("\\section{x}\n")
    return folder, ["not a folder written by 'aot build'"]


def folder_holding_the_model(tmp: Path) -> tuple[Path, list[str]]:
    # Even a real build folder is refused when the model being compiled is inside it.
    folder = fake_build_folder(tmp / "d")
    shutil.copy(MODEL, folder / "model" / "m.tflite")
    return folder, ["contains the input file", "m.tflite"]


def build_folder_with_foreign_entries(tmp: Path) -> tuple[Path, list[str]]:
    folder = fake_build_folder(tmp / "out")
    (folder / "results").mkdir()
    (folder / "results" / "output_0.npy").write_bytes(b"\x93NUMPY")
    (folder / "NOTES.md").write_text("my measurements\n")
    return folder, ["NOTES.md, results/", "did not write"]


def build_folder_with_a_file_of_the_user_inside(tmp: Path) -> tuple[Path, list[str]]:
    # Deep inside an aot folder: only the list of what the build wrote can tell it apart.
    folder = fake_build_folder(tmp / "out")
    (folder / "project" / "build").mkdir()
    (folder / "project" / "build" / "firmware.elf").write_bytes(b"\x7fELF")
    write_files_list(folder)  # the build's own firmware is listed
    (folder / "project" / "build" / "mine.txt").write_text("keep me\n")
    (folder / "project" / "mydir").mkdir()
    (folder / "project" / "mydir" / "notes.txt").write_text("and me\n")
    return folder, ["project/build/mine.txt, project/mydir/", "did not write"]


def build_folder_without_its_files_list(tmp: Path) -> tuple[Path, list[str]]:
    folder = fake_build_folder(tmp / "out")
    (folder / FILES_LIST).unlink()
    return folder, [f"has no {FILES_LIST}"]


def folder_of_an_older_aot(tmp: Path) -> tuple[Path, list[str]]:
    folder = fake_build_folder(tmp / "out")
    document = json.loads((folder / METADATA_FILE).read_text())
    del document["generator"]
    (folder / METADATA_FILE).write_text(json.dumps(document))
    return folder, ['"generator": "aot build"']


def folder_with_corrupt_metadata(tmp: Path) -> tuple[Path, list[str]]:
    folder = fake_build_folder(tmp / "out")
    (folder / METADATA_FILE).write_text("{not json")
    return folder, ["not a folder written by 'aot build'"]


def a_file(tmp: Path) -> tuple[Path, list[str]]:
    path = tmp / "out"
    path.write_text("precious\n")
    return path, ["is a file"]


def a_symlink(tmp: Path) -> tuple[Path, list[str]]:
    target = fake_build_folder(tmp / "real")
    link = tmp / "out"
    link.symlink_to(target, target_is_directory=True)
    return link, ["symbolic link"]


REFUSED = [
    folder_with_notes,
    folder_holding_the_model,
    build_folder_with_foreign_entries,
    build_folder_with_a_file_of_the_user_inside,
    build_folder_without_its_files_list,
    folder_of_an_older_aot,
    folder_with_corrupt_metadata,
    a_file,
    a_symlink,
]


@pytest.mark.parametrize("make", REFUSED, ids=lambda make: make.__name__)
def test_force_refuses_and_leaves_every_file_in_place(make, tmp_path: Path, capsys) -> None:
    tmp = tmp_path / "area"
    tmp.mkdir()
    output, words = make(tmp)
    model = output / "model" / "m.tflite" if make is folder_holding_the_model else MODEL
    before = snapshot(tmp)
    code, err = aot_build(capsys, str(model), "--board", "host", "-o", str(output), "--force")
    assert code == ConfigError.exit_code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --force refuses to replace"), err
    for word in words:
        assert word in lines[0], lines[0]
    assert snapshot(tmp) == before


def test_force_refuses_the_folder_holding_the_current_directory(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    output = fake_build_folder(tmp_path / "out")
    (output / "project" / "build").mkdir()
    monkeypatch.chdir(output / "project" / "build")
    before = snapshot(output)
    code, err = aot_build(capsys, str(MODEL), "--board", "host", "-o", str(output), "--force")
    assert code == ConfigError.exit_code
    assert "contains the current directory" in err
    assert snapshot(output) == before


def test_force_refuses_the_home_folder(tmp_path: Path, capsys, monkeypatch) -> None:
    home = tmp_path / "home"
    fake_build_folder(home)  # even one that looks like a build folder
    monkeypatch.setenv("HOME", str(home))
    before = snapshot(home)
    code, err = aot_build(capsys, str(MODEL), "--board", "host", "-o", str(home), "--force")
    assert code == ConfigError.exit_code
    assert "contains your home folder" in err
    assert snapshot(home) == before


@pytest.mark.parametrize(
    "output", [Path("/"), Path(__file__).resolve().parents[2]], ids=["root", "checkout"]
)
def test_force_refuses_root_and_the_checkout(output: Path) -> None:
    # Checked on the function alone: a broken check must not get near deleting these.
    with pytest.raises(ConfigError, match="--force refuses to replace"):
        check_replaceable(output, force=True)


def test_force_refuses_the_pool_file_s_folder(tmp_path: Path) -> None:
    output = fake_build_folder(tmp_path / "out")
    pools = output / "model" / "pools.json"
    pools.write_text("[]")
    with pytest.raises(ConfigError, match="contains the input file"):
        check_replaceable(output, force=True, reads=[MODEL, pools])


def test_existing_folder_without_force_is_refused(tmp_path: Path, capsys) -> None:
    output = fake_build_folder(tmp_path / "out")
    before = snapshot(output)
    code, err = aot_build(capsys, str(MODEL), "--board", "host", "-o", str(output))
    assert code == ConfigError.exit_code
    assert "already exists; use --force" in err
    assert snapshot(output) == before


def test_force_replaces_an_empty_folder_then_its_own_build(tmp_path: Path, capsys) -> None:
    output = tmp_path / "out"
    output.mkdir()
    args = [str(MODEL), "--board", "host", "-o", str(output), "--force", "--no-build"]
    code, err = aot_build(capsys, *args)
    assert code == 0, err
    assert read_metadata(output)["generator"] == GENERATOR
    (output / "memory.svg").write_text("<svg/>")  # what 'aot inspect' rewrites
    code, err = aot_build(capsys, *args)
    assert code == 0, err
    assert (output / "memory.svg").read_text().startswith("<svg xmlns")  # drawn afresh
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing aside or staged
    # A file the user added, even among the generated sources, stops the next --force.
    (output / "model" / "src" / "mine.c").write_text("/* my own kernel */\n")
    code, err = aot_build(capsys, *args)
    assert code == ConfigError.exit_code
    assert err.strip() == (
        f"error: --force refuses to replace {output}: it holds model/src/mine.c, which "
        "'aot build' did not write; move them out or choose another -o"
    )
    assert (output / "model" / "src" / "mine.c").read_text() == "/* my own kernel */\n"


def test_a_failed_swap_puts_the_old_folder_back(tmp_path: Path, monkeypatch) -> None:
    output = fake_build_folder(tmp_path / "out")
    before = snapshot(output)

    def list_then_lose_the_staging_folder(folder: Path) -> None:
        write_files_list(folder)
        shutil.rmtree(folder)  # the rename of the new folder into place will fail

    monkeypatch.setattr(aot.library, "write_files_list", list_then_lose_the_staging_folder)
    with (
        pytest.raises(FileSystemError, match="nothing was written"),
        staged_output(output, force=True),
    ):
        pass
    assert snapshot(output) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_build_removes_the_parents_it_created(tmp_path: Path) -> None:
    output = tmp_path / "a" / "b" / "out"
    with pytest.raises(RuntimeError), staged_output(output, force=False) as staging:
        (staging / "metadata.json").write_text("{}")
        raise RuntimeError("the build failed")
    assert list(tmp_path.iterdir()) == []
