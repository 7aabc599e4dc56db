"""The last-resort guard: a bug in aot is one line and exit 70, the traceback only with -v."""

from __future__ import annotations

import pytest

import aot.cli.boards
from aot.cli import main
from aot.errors import InternalError

pytestmark = pytest.mark.unit

LINE = (
    "error: internal error in aot (ZeroDivisionError); please report it with the output of "
    "'aot -v ...'"
)


def broken(args) -> int:
    return 1 // 0


def test_an_unexpected_exception_is_one_line_and_exit_70(monkeypatch, capsys) -> None:
    monkeypatch.setattr(aot.cli.boards, "run", broken)
    assert main(["boards"]) == InternalError.exit_code == 70
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [LINE]
    assert "Traceback" not in captured.err and "integer division" not in captured.err


def test_verbose_adds_the_traceback(monkeypatch, capsys) -> None:
    monkeypatch.setattr(aot.cli.boards, "run", broken)
    assert main(["-v", "boards"]) == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError: integer division" in err
    assert err.splitlines()[-1] == LINE


def test_an_aot_error_keeps_its_own_line_and_code(monkeypatch, capsys) -> None:
    def unsupported(args) -> int:
        from aot.errors import UnsupportedError

        raise UnsupportedError("operator FOO is not supported; see docs/int8.md")

    monkeypatch.setattr(aot.cli.boards, "run", unsupported)
    assert main(["boards"]) == 4
    assert capsys.readouterr().err.splitlines() == [
        "error: operator FOO is not supported; see docs/int8.md"
    ]


def test_a_keyboard_interrupt_from_a_command_is_130(monkeypatch, capsys) -> None:
    def interrupted(args) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(aot.cli.boards, "run", interrupted)
    assert main(["boards"]) == 130
    assert capsys.readouterr().err.splitlines() == ["error: interrupted"]
