"""-v and --quiet anywhere on the command line; the model name comes from the file name."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from aot.cli import build_parser, log_level, main
from aot.naming import model_name_from_path

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tiny_kws_int8.tflite"


@pytest.mark.parametrize(
    "argv",
    [
        ["-v", "inspect", "out"],
        ["inspect", "out", "-v"],
        ["inspect", "-v", "out"],
        ["boards", "--verbose"],
    ],
)
def test_verbose_before_or_after_the_subcommand(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert args.verbose is True and args.quiet is False
    assert log_level(args) == logging.DEBUG


def test_quiet_after_the_subcommand() -> None:
    args = build_parser().parse_args(["run", "out", "--quiet"])
    assert (args.verbose, args.quiet) == (False, True)
    assert log_level(args) == logging.WARNING
    assert log_level(build_parser().parse_args(["run", "out"])) == logging.INFO


def test_verbose_and_quiet_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["-v", "boards", "--quiet"])
    assert exit_info.value.code == 2
    assert "exclude each other" in capsys.readouterr().err


def test_quiet_silences_progress_but_not_results_or_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["build", str(EXAMPLE), "--board", "host", "--no-build", "--force"]
    assert main([*argv, "-o", str(tmp_path / "loud")]) == 0
    loud = capsys.readouterr()
    assert "] importing" in loud.err and loud.out.startswith("built ")
    assert main([*argv, "-o", str(tmp_path / "quiet"), "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == "" and quiet.out.startswith("built ")
    assert main(["build", str(tmp_path / "none.tflite"), "-o", str(tmp_path / "x"), "-q"]) != 0
    assert capsys.readouterr().err.startswith("error: ")
    # The default name is the model file's: symbols say which model they belong to.
    header = tmp_path / "quiet" / "model" / "include" / "aot_tiny_kws_int8.h"
    assert "aot_tiny_kws_int8_run(" in header.read_text()


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("models/vww_96_int8.tflite", "vww_96_int8"),
        ("My-Net v2.onnx", "my_net_v2"),
        ("2stage.tflite", "m_2stage"),
        ("---.tflite", "model"),
        ("a" * 40 + ".tflite", "a" * 32),
        ("model.tflite", "model"),
        # a runtime prefix (aot_app_model, aot_platform_copy) would clash at link time
        ("app.tflite", "app_model"),
        ("Platform.onnx", "platform_model"),
    ],
)
def test_default_name_from_the_file_name(path: str, name: str) -> None:
    assert model_name_from_path(path) == name


def test_a_model_name_that_clashes_with_the_runtime_is_one_line_error() -> None:
    from aot.compiler import CompileOptions
    from aot.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        CompileOptions(name="server")
    message = str(info.value)
    assert "\n" not in message and "aot_server_*" in message and "--name" in message


@pytest.mark.toolchain
def test_a_model_named_model_builds_and_runs_on_the_host(tmp_path: Path) -> None:
    # aot_model.h once took aot/model.h's include guard, so the library did not compile.
    model = tmp_path / "model.tflite"
    model.write_bytes(EXAMPLE.read_bytes())
    out = tmp_path / "out"
    assert main(["build", str(model), "--board", "host", "-o", str(out), "-q"]) == 0
    header = (out / "model" / "include" / "aot_model.h").read_text()
    assert "#ifndef AOT_LIB_MODEL_H_" in header and "aot_model_run(" in header
    assert main(["run", str(out), "--fill", "zeros", "-q"]) == 0
