"""The fixtures of the commands' tests: the run loop monkeypatched out, the API key's variable unset."""

from __future__ import annotations

import pytest

import orchestrate.runloop
from orchestrate.server.preflight import API_KEY_ENV
from tests.unit.orchestrate.commands.helpers import FakeRunLoop


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> FakeRunLoop:
    fake = FakeRunLoop()
    monkeypatch.setattr(orchestrate.runloop, "run_scenario", fake)
    return fake


@pytest.fixture
def no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """``TOKENSWARM_API_KEY`` unset, and after the test back as it was, whatever the test set."""
    monkeypatch.setenv(API_KEY_ENV, "")  # recorded first, so the teardown restores it (or removes it)
    monkeypatch.delenv(API_KEY_ENV)
