"""locustfiles/__main__.py: the flags ``locust --help`` cannot list (it prints before loading a locustfile)."""

from __future__ import annotations

import pytest

from locustfiles.__main__ import main


def test_it_lists_tokenswarms_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    text = capsys.readouterr().out
    for flag in ("--prompts-file", "--dataset", "--num-prompts", "--records-file", "--rate", "--stages", "--mode"):
        assert flag in text, flag
    assert text.startswith("usage: locust -f locustfiles/locustfile.py")
