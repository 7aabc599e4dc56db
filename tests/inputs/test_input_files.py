"""Bad model paths and bad -i files each give one line that names the problem."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aot.artifacts import LibraryManifest
from aot.cli import main
from aot.errors import ConfigError
from aot.frontend import import_model
from aot.runner import load_inputs

pytestmark = pytest.mark.unit

METADATA = LibraryManifest.from_json(
    {
        "model": {"name": "m"},
        "memory": {},
        "inputs": [{"name": "x", "shape": [2, 3], "dtype": "float32"}],
    }
)


def one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> str:
    assert main(argv) == code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_directory_as_model_names_the_files_inside(tmp_path: Path, capsys) -> None:
    (tmp_path / "kws.tflite").write_bytes(b"\0" * 16)
    (tmp_path / "notes.txt").write_text("x")
    line = one_error_line(capsys, ["build", str(tmp_path), "-o", str(tmp_path / "out")], 2)
    assert f"model path {tmp_path} is a directory, not a model file" in line
    assert "kws.tflite" in line and "notes.txt" not in line
    assert not (tmp_path / "out").exists()


def test_empty_directory_as_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"is a directory, not a model file: give the \.tflite"):
        import_model(tmp_path)


def test_missing_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        import_model(tmp_path / "nope.onnx")


def npy_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_inputs([str(path)], METADATA)
    message = str(info.value)
    assert "\n" not in message and "allow_pickle" not in message, message
    assert str(path) in message
    return message


def test_text_file_named_npy(tmp_path: Path) -> None:
    path = tmp_path / "input.npy"
    path.write_text("0.1, 0.2, 0.3\n0.4, 0.5, 0.6\n")
    assert "is a text file, not a .npy array; write it with numpy.save" in npy_error(path)


def test_pickled_object_array_is_refused_without_unpickling(tmp_path: Path) -> None:
    path = tmp_path / "objects.npy"
    np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    assert "holds Python objects (dtype object), not numbers" in npy_error(path)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "is an empty file"),
        (bytes(range(256)), "is a binary file, not a .npy array"),
        (b"\x93NUMPY\x01\x00v\x00{", "has a corrupt .npy header"),
        (b"PK\x03\x04" + b"\0" * 40, "is a .npz archive; give one .npy file per -i option"),
    ],
)
def test_not_an_npy(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "input.npy"
    path.write_bytes(content)
    assert expected in npy_error(path)


def test_truncated_npy(tmp_path: Path) -> None:
    path = tmp_path / "input.npy"
    np.save(path, np.zeros((2, 3), np.float32))
    path.write_bytes(path.read_bytes()[:-5])
    assert "is a truncated .npy file" in npy_error(path)


def test_directory_and_missing_input(tmp_path: Path) -> None:
    assert "is a directory, not a .npy file" in npy_error(tmp_path)
    assert "does not exist" in npy_error(tmp_path / "missing.npy")


def test_good_npy_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "input.npy"
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(path, data)
    (loaded,) = load_inputs([str(path)], METADATA)
    np.testing.assert_array_equal(loaded, data)
