"""orchestrate/cli.py: ``main`` itself, the parser built from the table of commands and what every command
shares (one-line errors and their exit codes, Ctrl-C and SIGTERM, a full disk). Each command's own behaviour
is tested beside its module, in ``tests/unit/orchestrate/commands/``."""

from __future__ import annotations

import argparse
import errno
import os
import signal
from collections.abc import Callable

import pytest

import orchestrate.cli
from orchestrate.cli import main
from orchestrate.commands import COMMANDS
from orchestrate.errors import ResultsError


def test_version_and_a_help_for_users(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("tokenswarm ")
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "Load-test llama.cpp's server" in text and "examples:" in text and "noise-floor" in text


def test_no_command_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


def test_the_commands_in_the_order_help_lists_them() -> None:
    assert [name for name, *_ in COMMANDS] == ["run", "validate", "plan", "worker", "report", "compare", "export",
                                               "serve-synthetic", "calibrate", "capacity", "tune", "noise-floor"]


def with_command(monkeypatch: pytest.MonkeyPatch, name: str, fn: Callable[[argparse.Namespace], int]) -> None:
    """``tokenswarm NAME`` runs ``fn`` (the table holds only it)."""
    monkeypatch.setattr(orchestrate.cli, "COMMANDS", ((name, "a stand-in", lambda p: None, fn),))


def raising(exc: BaseException) -> Callable[[argparse.Namespace], int]:
    def fn(args: argparse.Namespace) -> int:
        raise exc
    return fn


def test_a_tokenswarm_error_is_one_line_and_its_exit_code(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with_command(monkeypatch, "x", raising(ResultsError("r: no results")))
    assert main(["x"]) == 2
    assert capsys.readouterr().err == "tokenswarm: error: r: no results\n"


@pytest.mark.parametrize("name, message", [
    ("run", "tokenswarm: interrupted; servers stopped, results so far kept"),
    ("worker", "tokenswarm: worker interrupted; it left its master (which counts the requests it had in flight as "
     "lost)"),
])
def test_ctrl_c_is_exit_130_with_what_was_kept(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                               name: str, message: str) -> None:
    with_command(monkeypatch, name, raising(KeyboardInterrupt()))
    assert main([name]) == 130
    assert capsys.readouterr().err == message + "\n"


def test_sigterm_cleans_up_like_ctrl_c(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def killed(args: argparse.Namespace) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        return 0

    with_command(monkeypatch, "run", killed)
    before = signal.getsignal(signal.SIGTERM)
    try:
        assert main(["run"]) == 130
    finally:
        signal.signal(signal.SIGTERM, before)
    assert "interrupted; servers stopped" in capsys.readouterr().err


def test_a_full_disk_is_one_line_and_other_os_errors_are_not_hidden(monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with_command(monkeypatch, "run", raising(OSError(errno.ENOSPC, "No space left on device", "/r/x.json")))
    assert main(["run"]) == 2
    assert capsys.readouterr().err == ("tokenswarm: error: cannot write /r/x.json: No space left on device; what was "
                                       "written before is kept\n")
    with_command(monkeypatch, "run", raising(OSError(errno.ECONNRESET, "Connection reset by peer")))
    with pytest.raises(ConnectionResetError):
        main(["run"])
